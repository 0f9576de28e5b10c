// db/pglite-statements.ts: the PGlite worker's named prepared statements answer exactly as PGlite's query()
// does (rows, types, affected rows, errors), survive schema changes and transactions, and stay bounded.
// PGlite in this thread, in memory: the cache itself is under test, not the worker around it.
import t from 'tap';
import { PGlite } from '@electric-sql/pglite';
import { createStatementCache } from '../../db/pglite-statements.js';
import { trimArrayParsers } from '../../db/pglite-parsers.js';

async function fresh(t: { teardown(fn: () => unknown): void }, maxStatements?: number) {
  const db = new PGlite();
  await db.waitReady;
  await trimArrayParsers(db);
  t.teardown(() => db.close());
  await db.exec(`
    create table things (
      id uuid primary key default gen_random_uuid(), n int8, name text, ok boolean, at timestamptz,
      doc jsonb, tags text[], raw bytea, score numeric, created date default current_date
    )`);
  return { db, cache: createStatementCache(db, maxStatements) };
}

t.test('rows, types and affected rows are what query() gives', async (t) => {
  const { db, cache } = await fresh(t);
  const insert = `insert into things (n, name, ok, at, doc, tags, raw, score)
    values ($1, $2, $3, $4, $5, $6, $7, $8), ($9, $10, $11, $12, $13, $14, $15, $16) returning id`;
  const at = new Date('2026-11-24T12:00:00.123Z');
  const values = [
    ...[42, "O'Brien ✓", true, at, { a: [1, 'x'], b: null }, ['x', 'y z', '"q"'], new Uint8Array([0, 1, 255]), '1.50'],
    ...[null, null, null, null, null, null, null, null],
  ];
  const inserted = await cache.run(insert, values);
  t.equal(inserted.affectedRows, 2);
  t.equal(inserted.rows.length, 2);
  t.match(inserted.rows[0], { id: /^[0-9a-f-]{36}$/ });

  for (const sql of [
    'select n, name, ok, at, doc, tags, raw, score, created from things order by n nulls last',
    'select count(*)::int as count, max(n) as max from things where name = $1 or $1 is null',
  ]) {
    const params = sql.includes('$1') ? ["O'Brien ✓"] : [];
    const ours = await cache.run(sql, params);
    const theirs = await db.query(sql, params);
    t.same(ours.rows, theirs.rows, sql);
    t.equal(ours.affectedRows, theirs.affectedRows ?? 0);
    // The second run uses the prepared statement: the same again.
    t.same((await cache.run(sql, params)).rows, theirs.rows);
  }
  const updated = await cache.run('update things set name = $1 where n is null', ['renamed']);
  t.equal(updated.affectedRows, 1);
  t.same(updated.rows, []);
  const deleted = await cache.run('delete from things where name = $1', ['nobody']);
  t.equal(deleted.affectedRows, 0);
  t.equal(cache.size(), 5);
});

t.test(
  'errors are PostgreSQL errors with their fields, and nothing is cached for a statement that fails to parse',
  async (t) => {
    const { cache } = await fresh(t);
    const id = '00000000-0000-4000-8000-000000000001';
    await cache.run('insert into things (id) values ($1)', [id]);
    await t.rejects(cache.run('insert into things (id) values ($1)', [id]), {
      code: '23505',
      constraint: 'things_pkey',
    });
    await t.rejects(cache.run('select nope from things', []), { code: '42703' });
    await t.rejects(cache.run('select $1::int', ['x']), { code: '22P02' });
    t.equal(cache.size(), 2, 'the insert and the cast; not the statement that did not parse');
    // The session is usable afterwards (each failure ended with Sync).
    t.same((await cache.run('select $1::int as v', ['7'])).rows, [{ v: 7 }]);
  },
);

t.test('a schema change drops every prepared statement (no "cached plan must not change result type")', async (t) => {
  const { cache } = await fresh(t);
  await cache.run('insert into things (n) values ($1)', [1]);
  const before = await cache.run('select * from things', []);
  t.notOk('added' in before.rows[0]!);
  await cache.run('alter table things add column added text default $$later$$', []);
  t.equal(cache.size(), 0);
  const after = await cache.run('select * from things', []);
  t.equal(after.rows[0]!.added, 'later');

  // A failing schema change inside a transaction reports its own error, not the clean-up's.
  await cache.run('select 1', []);
  await cache.run('begin', []);
  await t.rejects(cache.run('alter table nowhere add column x text', []), { code: '42P01' });
  await cache.run('rollback', []);
  t.same((await cache.run('select count(*)::int as c from things', [])).rows, [{ c: 1 }]);
});

t.test('transactions: statements prepared inside one that rolls back stay valid', async (t) => {
  const { cache } = await fresh(t);
  await cache.run('begin', []);
  await cache.run('insert into things (n) values ($1)', [5]);
  await t.rejects(cache.run('insert into things (id) values ($1)', ['not a uuid']), { code: '22P02' });
  // Aborted: only the rollback goes through.
  await t.rejects(cache.run('select count(*) from things', []), { code: '25P02' });
  await cache.run('rollback', []);
  t.same((await cache.run('select count(*)::int as c from things', [])).rows, [{ c: 0 }]);
  await cache.run('insert into things (n) values ($1)', [6]);
  t.same((await cache.run('select n from things', [])).rows, [{ n: 6 }]);
});

t.test('bounded: past the limit the least recently used statement is closed, and runs again when asked', async (t) => {
  const { cache } = await fresh(t, 3);
  const q = (i: number) => `select ${i}::int as v, $1::text as p`;
  for (let i = 0; i < 3; i++) await cache.run(q(i), ['x']);
  await cache.run(q(0), ['x']); // 0 is now the most recent: 1 goes first
  await cache.run(q(3), ['x']);
  t.equal(cache.size(), 3);
  for (let i = 0; i < 4; i++) t.same((await cache.run(q(i), ['y'])).rows, [{ v: i, p: 'y' }]);
  t.equal(cache.size(), 3);
});
