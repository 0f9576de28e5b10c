// Runs on the engine of this run: fresh PGlite per file, or a database (and schema) of its own on PostgreSQL.
import t from 'tap';
import { sql } from 'kysely';
import { createTestDatabase, usingPostgres } from '../helpers/db.js';
import { listMigrations, migrateToLatest } from '../../db/migrate.js';
import { migrations } from '../../db/migrations/index.js';
import * as users from '../../db/repositories/users.js';
import * as apps from '../../db/repositories/applications.js';
import { appendAuditEvent, listAuditEvents } from '../../db/repositories/audit.js';

const database = await createTestDatabase();
t.teardown(() => database.dispose());
const { db } = database;

t.test(`every migration is applied (${usingPostgres ? 'PostgreSQL' : 'PGlite'})`, async (t) => {
  const list = await listMigrations(db);
  t.same(
    list.map((m) => m.name),
    Object.keys(migrations),
  );
  t.ok(list.every((m) => m.executedAt instanceof Date));
  t.same(await migrateToLatest(db), [], 'a second run has nothing to do');
});

t.test('migrations go down and up again', async (t) => {
  const other = await createTestDatabase();
  t.teardown(() => other.dispose());
  for (const name of Object.keys(migrations).reverse()) await migrations[name]!.down!(other.db);
  const tables = await sql<{ n: number }>`select count(*)::int as n from information_schema.tables
    where table_schema = current_schema() and table_name in ('users', 'applications', 'audit_events')`.execute(
    other.db,
  );
  t.equal(tables.rows[0]!.n, 0);
  for (const name of Object.keys(migrations)) await migrations[name]!.up(other.db);
  await users.insertUser(other.db, {
    id: 'u1',
    email: 'x@y.z',
    password_hash: null,
    name: null,
    given_name: null,
    family_name: null,
    picture: null,
    permissions: '[]',
  });
  t.ok(await users.findUserById(other.db, 'u1'));
});

t.test('e-mail addresses are unique case-insensitively', async (t) => {
  await users.insertUser(db, {
    id: 'a1',
    email: 'Alice@Example.com',
    password_hash: null,
    name: null,
    given_name: null,
    family_name: null,
    picture: null,
    permissions: '["read"]',
  });
  await t.rejects(
    users.insertUser(db, {
      id: 'a2',
      email: 'alice@example.COM',
      password_hash: null,
      name: null,
      given_name: null,
      family_name: null,
      picture: null,
      permissions: '[]',
    }),
    { code: '23505' },
  );
  const found = await users.findUserByEmail(db, 'ALICE@example.com');
  t.equal(found?.id, 'a1');
  t.same(found?.permissions, ['read'], 'jsonb comes back parsed');
  t.equal(found?.email_verified, false);
  t.ok(found?.created_at instanceof Date);
});

t.test('a failure inside a transaction leaves nothing behind', async (t) => {
  await t.rejects(
    db.transaction().execute(async (trx) => {
      await apps.insertApplication(trx, {
        client_id: 'rolled-back',
        name: 'X',
        description: null,
        logo_url: null,
        redirect_uris: '[]',
        allowed_web_origins: '[]',
        post_verification_redirect_path: null,
        allowed_scopes: '[]',
      });
      await appendAuditEvent(trx, { type: 'application.created', clientId: 'rolled-back' });
      throw new Error('boom');
    }),
    { message: 'boom' },
  );
  t.equal(await apps.findApplicationRow(db, 'rolled-back'), undefined);
  t.same(await listAuditEvents(db, { clientId: 'rolled-back' }), []);
});

t.test('int8 values come back as numbers on both engines', async (t) => {
  const r = await sql<{ n: unknown }>`select count(*) as n from users`.execute(db);
  t.type(r.rows[0]!.n, 'number');
  await appendAuditEvent(db, { type: 'test.event' });
  const [event] = await listAuditEvents(db, { type: 'test.event' });
  t.type(event!.id, 'number');
});

t.test('application search escapes LIKE wildcards', async (t) => {
  const base = {
    description: null,
    logo_url: null,
    redirect_uris: '["https://a.example/cb"]',
    allowed_web_origins: '[]',
    post_verification_redirect_path: null,
    allowed_scopes: '["openid"]',
  };
  await apps.insertApplication(db, { ...base, client_id: 'pct-1', name: '100% Real' });
  await apps.insertApplication(db, { ...base, client_id: 'pct-2', name: '1000 Real' });
  const found = await apps.listApplicationRows(db, { q: '0%', limit: 10 });
  t.same(
    found.map((r) => r.client_id),
    ['pct-1'],
  );
});
