// The embedded database in its worker thread (db/pglite-worker.ts, db/pglite-client.ts, db/pglite-dialect.ts):
// real statements through Kysely, PostgreSQL's errors, transactions that run alone, the value types, a
// file-backed directory surviving close and reopen, and a thread that dies failing what was pending.
// Always PGlite, whatever engine the rest of the run uses.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Kysely, sql } from 'kysely';
import { createDatabase, type DatabaseHandle } from '../../db/create-db.js';
import { PGliteWorkerClient } from '../../db/pglite-client.js';
import { PGliteWorkerDialect } from '../../db/pglite-dialect.js';
import { pgliteSnapshot } from '../helpers/db.js';

// A table of its own, typed loosely: the test is about the driver, not the schema.
type AnyDb = Kysely<any>;

const snapshot = await pgliteSnapshot();
const handle = await createDatabase({ loadDataDir: snapshot });
t.teardown(() => handle.close());
const db = handle.db as unknown as AnyDb;

await sql`create table w_items (
  id int primary key, email text unique, at timestamptz, doc jsonb, data bytea, big int8
)`.execute(db);

const errorOf = async (promise: Promise<unknown>): Promise<Record<string, unknown>> => {
  try {
    await promise;
  } catch (error) {
    return error as Record<string, unknown>;
  }
  throw new Error('expected a rejection');
};

t.test('the migrated schema answers through the worker', async (t) => {
  t.equal(handle.engine, 'pglite');
  const users = await db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirst();
  t.equal(users?.n, 0, 'count(*) (int8) arrives as a number');
  await handle.ping();
});

t.test('Date, jsonb, bytea, int8 and null round trips', async (t) => {
  const at = new Date('2024-02-29T12:34:56.789Z');
  const doc = { a: [1, 'two', { three: true }], n: null };
  await db
    .insertInto('w_items')
    .values({ id: 1, email: 'a@example.com', at, doc: JSON.stringify(doc), data: Buffer.from([0, 1, 254, 255]) })
    .execute();
  await db
    .insertInto('w_items')
    .values({ id: 2, email: null, big: 9007199254740991, data: new Uint8Array([7]) })
    .execute();
  const rows = await db.selectFrom('w_items').selectAll().orderBy('id').execute();
  const [one, two] = [rows[0]!, rows[1]!];
  t.ok(one.at instanceof Date);
  t.equal(one.at.toISOString(), at.toISOString());
  t.same(one.doc, doc);
  t.ok(one.data instanceof Uint8Array);
  t.same([...one.data], [0, 1, 254, 255]);
  t.equal(one.big, null);
  t.equal(two.big, 9007199254740991);
  t.equal(two.email, null);
  const result = await db.updateTable('w_items').set({ big: 5 }).where('id', 'in', [1, 2]).executeTakeFirst();
  t.equal(result.numUpdatedRows, 2n);
  const none = await db.updateTable('w_items').set({ big: 5 }).where('id', '=', 99).executeTakeFirst();
  t.equal(none.numUpdatedRows, 0n);
  const bigint = await sql<{ v: number }>`select ${10n}::int8 as v`.execute(db);
  t.equal(bigint.rows[0]?.v, 10, 'a bigint parameter');
});

t.test('arrays of the usual types still arrive as arrays', async (t) => {
  const r = await sql<Record<string, unknown>>`select array[1, 2]::int4[] as i, array['a', null]::text[] as s,
    array['00000000-0000-0000-0000-000000000001']::uuid[] as u, array['{"k":1}']::jsonb[] as j,
    array[now()]::timestamptz[] as d, array[true]::bool[] as b`.execute(db);
  const row = r.rows[0]!;
  t.same(row.i, [1, 2]);
  t.same(row.s, ['a', null]);
  t.same(row.u, ['00000000-0000-0000-0000-000000000001']);
  t.same(row.j, [{ k: 1 }]);
  t.ok(Array.isArray(row.d) && row.d[0] instanceof Date);
  t.same(row.b, [true]);
});

t.test("PostgreSQL's error fields survive the thread boundary", async (t) => {
  await db.insertInto('w_items').values({ id: 10, email: 'dup@example.com' }).execute();
  const error = await errorOf(db.insertInto('w_items').values({ id: 11, email: 'dup@example.com' }).execute());
  t.ok(error instanceof Error);
  t.equal(error.code, '23505');
  t.equal(error.constraint, 'w_items_email_key');
  t.equal(error.table, 'w_items');
  t.match(error.message, /duplicate key value violates unique constraint/);
  t.match(error.detail, /Key \(email\)=\(dup@example\.com\) already exists/);
  const syntax = await errorOf(sql`selec 1`.execute(db));
  t.equal(syntax.code, '42601');
});

t.test('a unique violation inside a transaction rolls all of it back', async (t) => {
  const error = await errorOf(
    db.transaction().execute(async (trx) => {
      await trx.insertInto('w_items').values({ id: 20, email: 'first@example.com' }).execute();
      await trx.insertInto('w_items').values({ id: 21, email: 'dup@example.com' }).execute();
    }),
  );
  t.equal(error.code, '23505');
  t.equal(await db.selectFrom('w_items').select('id').where('id', '=', 20).executeTakeFirst(), undefined);
  // The session is usable again: no transaction was left open.
  await db.insertInto('w_items').values({ id: 20, email: 'first@example.com' }).execute();
  t.ok(await db.selectFrom('w_items').select('id').where('id', '=', 20).executeTakeFirst());
});

t.test('a thrown error rolls back; savepoints work', async (t) => {
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await trx.insertInto('w_items').values({ id: 30 }).execute();
      throw new Error('changed my mind');
    }),
    /changed my mind/,
  );
  t.equal(await db.selectFrom('w_items').select('id').where('id', '=', 30).executeTakeFirst(), undefined);

  const trx = await db.startTransaction().execute();
  await trx.insertInto('w_items').values({ id: 31 }).execute();
  const sp = await trx.savepoint('sp1').execute();
  await sp.insertInto('w_items').values({ id: 32 }).execute();
  await sp.rollbackToSavepoint('sp1').execute();
  await trx.commit().execute();
  const ids = await db.selectFrom('w_items').select('id').where('id', 'in', [31, 32]).execute();
  t.same(
    ids.map((r) => r.id),
    [31],
  );
});

t.test('concurrent transactions run one at a time; others wait for them', async (t) => {
  await db.insertInto('w_items').values({ id: 40, big: 0 }).execute();
  // Read-modify-write without locks: only correct if no two transactions interleave.
  await Promise.all(
    Array.from({ length: 25 }, () =>
      db.transaction().execute(async (trx) => {
        const row = await trx.selectFrom('w_items').select('big').where('id', '=', 40).executeTakeFirstOrThrow();
        await new Promise((resolve) => setImmediate(resolve));
        await trx
          .updateTable('w_items')
          .set({ big: row.big + 1 })
          .where('id', '=', 40)
          .execute();
      }),
    ),
  );
  const row = await db.selectFrom('w_items').select('big').where('id', '=', 40).executeTakeFirstOrThrow();
  t.equal(row.big, 25);

  // A statement outside the transaction, sent while it runs, waits for its commit.
  const order: string[] = [];
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tx = db.transaction().execute(async (trx) => {
    await trx.insertInto('w_items').values({ id: 41 }).execute();
    await gate;
    order.push('commit');
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const outside = db
    .selectFrom('w_items')
    .select('id')
    .where('id', '=', 41)
    .executeTakeFirst()
    .then((row) => {
      order.push('outside');
      return row;
    });
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(order, [], 'the outside statement has not run yet');
  release();
  await tx;
  t.ok(await outside, 'and it sees the committed row');
  t.same(order, ['commit', 'outside']);
});

t.test('a parameter that cannot be cloned fails alone', async (t) => {
  const error = await errorOf(sql`select ${sql.val(Symbol('not cloneable'))} as f`.execute(db));
  t.match(String(error.message), /could not be cloned/);
  t.equal((await sql<{ v: number }>`select 1 as v`.execute(db)).rows[0]?.v, 1);
});

t.test('dumpDataDir through the worker starts another database', async (t) => {
  const client = await PGliteWorkerClient.start({ loadDataDir: snapshot });
  t.teardown(() => client.close());
  await client.query(1, 'create table dumped (v text)', []);
  await client.query(1, "insert into dumped values ('kept')", []);
  const dump = await client.dumpDataDir('none');
  t.ok(dump.size > 0);
  const copy = await createDatabase({ loadDataDir: dump });
  t.teardown(() => copy.close());
  const rows = await sql<{ v: string }>`select v from dumped`.execute(copy.db);
  t.same(rows.rows, [{ v: 'kept' }]);
});

t.test('a file-backed directory keeps its data across close and reopen', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pglite-worker-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let first: DatabaseHandle | undefined = await createDatabase({ dataDir: dir });
  t.teardown(() => first?.close());
  await sql`create table kept (id int primary key, at timestamptz)`.execute(first.db);
  const at = new Date('2030-01-01T00:00:00Z');
  // A statement already sent when close is called still runs: close queues behind it.
  const pending = sql`insert into kept values (1, ${at})`.execute(first.db);
  await new Promise((resolve) => setImmediate(resolve)); // Kysely hands it to the driver
  await first.close();
  await pending;
  await t.rejects(handleQuery(first), /closed|destroyed/, 'a closed database refuses statements');
  await t.rejects(first.ping(), /closed/);
  first = undefined;

  const second = await createDatabase({ dataDir: dir });
  t.teardown(() => second.close());
  const rows = await sql<{ id: number; at: Date }>`select id, at from kept`.execute(second.db);
  t.equal(rows.rows.length, 1);
  t.equal(rows.rows[0]?.at.toISOString(), at.toISOString());
});

function handleQuery(h: DatabaseHandle) {
  return sql`select 1`.execute(h.db);
}

t.test('close lets a transaction in progress finish first', async (t) => {
  const client = await PGliteWorkerClient.start({ loadDataDir: snapshot });
  const kdb: AnyDb = new Kysely({ dialect: new PGliteWorkerDialect(client) });
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const tx = kdb.transaction().execute(async (trx) => {
    await sql`select 1`.execute(trx);
    await gate;
    return (await sql<{ v: number }>`select 2 as v`.execute(trx)).rows[0]?.v;
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const closing = kdb.destroy();
  await t.rejects(sql`select 3`.execute(kdb), /closed|destroyed/, 'new statements are refused while closing');
  await t.rejects(client.query(99, 'select 3', []), /closed/);
  release();
  t.equal(await tx, 2, 'the transaction committed');
  await closing;
  t.ok(client.closed);
});

t.test('a worker that dies fails every pending statement instead of hanging', async (t) => {
  const client = await PGliteWorkerClient.start({ loadDataDir: snapshot });
  const kdb: AnyDb = new Kysely({ dialect: new PGliteWorkerDialect(client) });
  const slow = sql`select count(*) from generate_series(1, 50000000)`.execute(kdb);
  const queued = Array.from({ length: 5 }, (_, i) => sql`select ${i}::int as i`.execute(kdb));
  const inTx = kdb.transaction().execute(async (trx) => sql`select 1`.execute(trx));
  await new Promise((resolve) => setTimeout(resolve, 100));
  await client.terminate();
  const outcomes = await Promise.allSettled([slow, ...queued, inTx]);
  t.ok(
    outcomes.every((o) => o.status === 'rejected'),
    'all pending statements rejected',
  );
  t.match(String((outcomes[0] as PromiseRejectedResult).reason), /PGlite worker stopped/);
  await t.rejects(sql`select 1`.execute(kdb), /closed|stopped/, 'later statements fail at once');
  t.ok(client.closed);
  await kdb.destroy();
});
