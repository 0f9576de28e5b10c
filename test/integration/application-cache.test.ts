// The application cache (src/services/applications.ts): applications by client id, unknown ids
// included, for authorize, the token endpoint, end-session, CORS and public metadata. A change through
// the service applies at once in this process, by NOTIFY on other instances, and after 60 s otherwise.
import t from 'tap';
import { sql } from 'kysely';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest } from '../helpers/flow.js';

const { app, database } = await buildTestApp(t);
const actor = { actor: 'test' };
const redirectUri = 'https://cached.example.com/cb';
const newClient = (name: string, clientId?: string) =>
  app.services.applications.create(
    {
      ...(clientId && { clientId }),
      clientName: name,
      redirectUris: [redirectUri],
      allowedScopes: ['openid', 'offline_access'],
    },
    actor,
  );
await app.services.users.create({ email: 'apps@example.com', password: 'apps-password-1', emailVerified: true }, actor);
const flowOf = (clientId: string) => ({
  clientId,
  redirectUri,
  email: 'apps@example.com',
  password: 'apps-password-1',
  scope: 'openid offline_access',
});
const metadata = (clientId: string, server = app) =>
  server.inject({ method: 'GET', url: `/api/public/applications/${clientId}` });
const authorize = (clientId: string, server = app) =>
  server.inject({
    method: 'GET',
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeJ1t8URW8Jqx9mTa6Fw',
      code_challenge_method: 'S256',
    })}`,
    headers: { accept: 'application/json' },
  });

t.test('a disabled application stops at once, through the cache: token endpoint and authorize', async (t) => {
  const client = await newClient('Soon disabled');
  const { tokens } = await obtainTokens(app, flowOf(client.clientId));
  const refresh = (token: string) =>
    tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: client.clientId });
  const warm = await refresh(tokens.refresh_token!);
  t.equal(warm.statusCode, 200, 'the client lookup is cached now');
  t.equal((await authorize(client.clientId)).statusCode, 303, 'authorize works (signed out: to the login)');
  const res = await app.inject({
    method: 'POST',
    url: `/api/admin/applications/${client.clientId}/disable`,
    headers: adminHeaders,
  });
  t.equal(res.statusCode, 200);
  const next = await refresh(warm.json().refresh_token);
  t.equal(next.statusCode, 400, 'the very next token request fails');
  t.equal(next.json().error, 'invalid_grant');
  t.match(next.json().error_description, /disabled/);
  const render = await authorize(client.clientId);
  t.equal(render.statusCode, 400, 'authorize refuses it');
  t.equal(render.json().error, 'invalid_client');
  t.equal((await metadata(client.clientId)).statusCode, 404, 'its public metadata is gone');
});

t.test('an unknown client id is remembered, and forgotten the moment it is created', async (t) => {
  const id = 'later-created-client';
  t.equal((await metadata(id)).statusCode, 404, 'unknown (and now cached as unknown)');
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/applications',
    headers: { ...adminHeaders, 'content-type': 'application/json' },
    payload: JSON.stringify({ clientId: id, clientName: 'Late', redirectUris: [redirectUri] }),
  });
  t.equal(created.statusCode, 201);
  t.equal((await metadata(id)).statusCode, 200, 'known at once');
});

t.test('an update is served at once; a change behind the service waits for the expiry (PGlite)', async (t) => {
  const client = await newClient('Before');
  t.equal((await metadata(client.clientId)).json().clientName, 'Before');
  await app.inject({
    method: 'PATCH',
    url: `/api/admin/applications/${client.clientId}`,
    headers: { ...adminHeaders, 'content-type': 'application/json' },
    payload: JSON.stringify({ clientName: 'After' }),
  });
  t.equal((await metadata(client.clientId)).json().clientName, 'After', 'the update at once');
  if (database.engine === 'pglite') {
    await sql`update applications set name = 'Behind' where client_id = ${client.clientId}`.execute(database.db);
    t.equal((await metadata(client.clientId)).json().clientName, 'After', 'cached (the cache is really used)');
    app.services.invalidation.emit({ kind: 'reset' });
    t.equal((await metadata(client.clientId)).json().clientName, 'Behind', 'a reset (listener reconnect) drops it');
  }
});

t.test(
  'another instance on the same PostgreSQL database forgets the application (NOTIFY)',
  { skip: database.engine === 'pglite' ? 'PGlite is one process: no other instance can share it' : false },
  async (t) => {
    const second = await buildTestApp(t, { database });
    await second.app.ready();
    const client = await newClient('Shared');
    const { tokens } = await obtainTokens(app, flowOf(client.clientId));
    const warm = await tokenRequest(second.app, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.clientId,
    });
    t.equal(warm.statusCode, 200, 'the second instance has it cached');
    await app.services.applications.setEnabled(client.clientId, false, actor);
    let status = 0;
    for (let i = 0; i < 40 && status !== 404; i++) {
      status = (await metadata(client.clientId, second.app)).statusCode;
      if (status !== 404) await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(status, 404, 'disabled on the other instance within 2 s');
  },
);
