// The bearer lookup runs as a named prepared statement on PostgreSQL. A migration applied by another
// instance (a new column) must not break it on this instance's pooled connections.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens } from '../helpers/flow.js';

t.test('the prepared bearer lookup survives a column added by a migration elsewhere', async (t) => {
  // The database lookup itself is under test: no cached answers (BEARER_CACHE_SECONDS).
  const { app } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
  const a = await app.services.applications.create(
    { clientName: 'Prepared', redirectUris: ['https://prepared.example/cb'] },
    { actor: 'test' },
  );
  await app.services.users.create(
    { email: 'prepared@example.com', password: 'prepared passphrase', emailVerified: true },
    { actor: 'test' },
  );
  const { tokens } = await obtainTokens(app, {
    clientId: a.clientId,
    redirectUri: 'https://prepared.example/cb',
    email: 'prepared@example.com',
    password: 'prepared passphrase',
    scope: 'openid email',
  });
  const me = () =>
    app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${tokens.access_token}` } });

  // Several calls, so that every pooled connection has prepared the statement.
  const before = await Promise.all(Array.from({ length: 12 }, me));
  t.same([...new Set(before.map((r) => r.statusCode))], [200]);
  await sql`alter table access_tokens add column added_later text`.execute(app.db);
  await sql`alter table users add column added_later text`.execute(app.db);
  const after = await Promise.all(Array.from({ length: 12 }, me));
  t.same([...new Set(after.map((r) => r.statusCode))], [200], 'still 200 on every connection');
  t.equal(after[0]!.json().email, 'prepared@example.com');

  // And a revocation is seen at once (the plan is cached, the data is not).
  await sql`update access_tokens set revoked_at = now()`.execute(app.db);
  t.equal((await me()).statusCode, 401);
});
