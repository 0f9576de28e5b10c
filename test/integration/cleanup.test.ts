// The clean-up job removes expired rows, and only those, in batches.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens } from '../helpers/flow.js';
import { createCleanupJob } from '../../src/services/cleanup.js';

const { app, database, config } = await buildTestApp(t, { env: { CLEANUP_INTERVAL: '0' } });
const db = database.db;
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'Cleanup RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'cleo@example.com', password: 'cleo-password-1', emailVerified: true },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'cleo@example.com',
  password: 'cleo-password-1',
  scope: 'openid offline_access',
};

const count = async (table: string) =>
  Number((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)).rows[0]!.n);
const past = new Date(Date.now() - 60_000);

t.test('expired rows of every kind go, live ones stay', async (t) => {
  // Two complete flows: one will be made expired, the other stays live.
  const live = await obtainTokens(app, flow);
  await obtainTokens(app, flow); // the second flow, whose rows are expired below
  // Codes are sealed, not stored; those stored by the release before (0012-sealed-codes) are cleaned up too.
  for (const [hash, age] of [
    ['legacy-older', 20_000],
    ['legacy-newer', 10_000],
  ] as const) {
    await sql`insert into authorization_codes (code_hash, grant_id, client_id, user_id, redirect_uri, code_challenge,
        scope, auth_time, session_id, expires_at, created_at)
      select ${hash}, id, client_id, user_id, ${redirectUri}, 'challenge', 'openid', now(), session_id,
        now() + interval '60 seconds', ${new Date(Date.now() - age)}
      from grants order by created_at desc limit 1`.execute(db);
  }
  const before: Record<string, number> = {};
  for (const table of ['authorization_codes', 'authorization_requests', 'access_tokens', 'refresh_tokens', 'sessions'])
    before[table] = await count(table);
  t.ok(before.access_tokens! >= 2);

  // Expire one row of each table (the newest, which belongs to the second flow).
  for (const table of ['authorization_codes', 'authorization_requests', 'access_tokens', 'refresh_tokens']) {
    const newest = sql`(select ctid from ${sql.table(table)} order by created_at desc limit 1)`;
    await sql`update ${sql.table(table)} set expires_at = ${past} where ctid = ${newest}`.execute(db);
  }
  const newestSession = sql`(select ctid from sessions order by created_at desc limit 1)`;
  await sql`update sessions set expires_at = ${past} where ctid = ${newestSession}`.execute(db);

  const deleted = await app.services.cleanup.runOnce();
  for (const table of [
    'authorization_codes',
    'authorization_requests',
    'access_tokens',
    'refresh_tokens',
    'sessions',
  ]) {
    t.equal(deleted[table], 1, `${table}: one expired row deleted`);
    t.equal(await count(table), before[table]! - 1, `${table}: the others stay`);
  }
  const info = await app.inject({
    method: 'GET',
    url: '/api/auth/oauth2/userinfo',
    headers: { authorization: `Bearer ${live.tokens.access_token}` },
  });
  t.equal(info.statusCode, 200, 'the live flow still works');
  t.same(await app.services.cleanup.runOnce().then((d) => d.access_tokens), 0, 'a second run finds nothing');
});

t.test('idle sessions go; retired keys go once no ID token they signed can be checked', async (t) => {
  await obtainTokens(app, flow);
  await sql`update sessions set last_seen_at = ${new Date(Date.now() - (config.ttl.sessionIdle + 60) * 1000)}`.execute(
    db,
  );
  const sessions = await count('sessions');
  t.ok(sessions > 0);
  await app.services.signingKeys.rotate({ actor: 'test' }, { force: true });
  const longAgo = new Date(Date.now() - (config.ttl.idToken + 301) * 1000);
  await sql`update signing_keys set retired_at = ${longAgo} where state = 'retired'`.execute(db);
  const deleted = await app.services.cleanup.runOnce();
  t.equal(deleted.sessions, sessions);
  t.equal(deleted.signing_keys, 1);
  t.same(
    (await app.services.signingKeys.list()).map((k) => k.state),
    ['current', 'next'],
  );
});

t.test('many expired rows are removed in several small batches', async (t) => {
  await sql`insert into authorization_requests (id, client_id, params, expires_at)
    select 'bulk-' || g, ${client.clientId}, '{}'::jsonb, ${past} from generate_series(1, 1234) g`.execute(db);
  const job = createCleanupJob({ db, config, log: app.log, batchSize: 100, jwksMaxAgeSeconds: 300 });
  const deleted = await job.runOnce();
  t.equal(deleted.authorization_requests, 1234);
  const left = await sql<{
    n: number;
  }>`select count(*)::int as n from authorization_requests where id like 'bulk-%'`.execute(db);
  t.equal(left.rows[0]!.n, 0);
  t.ok((await count('authorization_requests')) > 0, 'live requests of earlier flows stay');
});

t.test('the job runs on its interval and stops with the app', async (t) => {
  const timed = await buildTestApp(t, { env: { CLEANUP_INTERVAL: '1' }, database });
  await timed.app.ready();
  const row = sql`('timed', ${client.clientId}, '{}'::jsonb, ${past})`;
  await sql`insert into authorization_requests (id, client_id, params, expires_at) values ${row}`.execute(db);
  await new Promise((r) => setTimeout(r, 2500));
  const left = await sql<{
    n: number;
  }>`select count(*)::int as n from authorization_requests where id = 'timed'`.execute(db);
  t.equal(left.rows[0]!.n, 0);
});

t.test('never-verified self-registered accounts expire after UNVERIFIED_ACCOUNT_TTL; others stay', async (t) => {
  const ttl = config.ttl.unverifiedAccount;
  t.equal(ttl, 604800, 'seven days by default');
  const old = new Date(Date.now() - (ttl + 3600) * 1000);
  const make = async (email: string, o: { selfRegistered: boolean; verified?: boolean; createdAt?: Date }) => {
    const user = await app.services.users.create(
      { email, password: 'unverified-password-1', emailVerified: o.verified ?? false },
      { actor: 'test' },
    );
    await db
      .updateTable('users')
      .set({ self_registered: o.selfRegistered, ...(o.createdAt && { created_at: o.createdAt }) })
      .where('id', '=', user.id)
      .execute();
    return user.id;
  };
  const stale = await make('stale-squatter@example.com', { selfRegistered: true, createdAt: old });
  await app.services.sessions.create(stale, { ip: null, userAgent: null });
  const young = await make('young-squatter@example.com', { selfRegistered: true });
  const operator = await make('operator-made@example.com', { selfRegistered: false, createdAt: old });
  const verified = await make('verified-self@example.com', { selfRegistered: true, verified: true, createdAt: old });
  // Pending sign-ups: an expired one goes, a live one stays.
  for (const [hash, expires] of [
    ['expired-sign-up', past],
    ['live-sign-up', new Date(Date.now() + 60_000)],
  ] as const) {
    await db
      .insertInto('sign_up_requests')
      .values({ token_hash: hash, email: `${hash}@example.com`, password_hash: 'x', expires_at: expires })
      .execute();
  }
  const deleted = await app.services.cleanup.runOnce();
  t.equal(deleted.users, 1);
  t.equal(deleted.sign_up_requests, 1);
  const left = (await db.selectFrom('users').select('id').execute()).map((u) => u.id);
  t.notOk(left.includes(stale), 'the stale never-verified self-registered account is gone');
  t.ok(left.includes(young), 'a younger one stays');
  t.ok(left.includes(operator), 'an account an operator made never expires');
  t.ok(left.includes(verified), 'a verified one stays');
  t.equal((await db.selectFrom('sessions').select('id').where('user_id', '=', stale).execute()).length, 0);
  t.same(
    (await db.selectFrom('sign_up_requests').select('token_hash').execute()).map((r) => r.token_hash),
    ['live-sign-up'],
  );
});

t.test('expired client_credentials tokens go, live ones stay', async (t) => {
  await sql`insert into client_access_tokens (token_hash, client_id, scope, expires_at)
    values ('cc-expired', ${client.clientId}, '', ${past}),
      ('cc-live', ${client.clientId}, '', now() + interval '1 hour')`.execute(db);
  const deleted = await app.services.cleanup.runOnce();
  t.equal(deleted.client_access_tokens, 1);
  const left = await sql<{ token_hash: string }>`select token_hash from client_access_tokens`.execute(db);
  t.same(
    left.rows.map((r) => r.token_hash),
    ['cc-live'],
  );
});
