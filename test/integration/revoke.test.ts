// RFC 7009 revocation, and the end of a browser session ending its (non-offline) access tokens.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

// These tests fake expiry, revocation and impossible rows with raw SQL, which no invalidation announces: the
// bearer cache is off so that every request asks the database (the cache: test/integration/bearer-cache.test.ts).
const { app, database } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'Revoke RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
const other = await app.services.applications.create(
  { clientName: 'Other RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'rev@example.com', password: 'rev-password-1', emailVerified: true },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'rev@example.com',
  password: 'rev-password-1',
  scope: 'openid offline_access',
};

const revoke = (form: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });

t.test('revoking a refresh token revokes its family and its access tokens', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const res = await revoke({
    client_id: client.clientId,
    token: tokens.refresh_token!,
    token_type_hint: 'refresh_token',
  });
  t.equal(res.statusCode, 200);
  t.equal(res.body, '');
  t.equal(res.headers['cache-control'], 'no-store');
  const refreshed = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refreshed.json().error, 'invalid_grant');
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401);
  t.ok(
    (await listAuditEvents(database.db, { type: 'token.revoked' })).some(
      (e) => (e.detail as { kind?: string }).kind === 'refresh_token',
    ),
  );
});

t.test('revoking an access token ends only that token; a wrong hint still finds it', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const res = await revoke({
    client_id: client.clientId,
    token: tokens.access_token,
    token_type_hint: 'refresh_token',
  });
  t.equal(res.statusCode, 200);
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401);
  const refreshed = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refreshed.statusCode, 200, 'the refresh token lives on');
});

t.test('unknown tokens and tokens of another client get 200 and change nothing', async (t) => {
  t.equal((await revoke({ client_id: client.clientId, token: 'unknown-token' })).statusCode, 200);
  const { tokens } = await obtainTokens(app, flow);
  t.equal((await revoke({ client_id: other.clientId, token: tokens.refresh_token! })).statusCode, 200);
  t.equal(
    (await revoke({ client_id: other.clientId, token: tokens.access_token, token_type_hint: 'access_token' }))
      .statusCode,
    200,
  );
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 200, 'another client cannot revoke it');
});

t.test('request errors', async (t) => {
  const noClient = await revoke({ token: 'x' });
  t.equal(noClient.statusCode, 400);
  t.same(noClient.json(), { error: 'invalid_request', error_description: 'client_id is required' });
  const unknown = await revoke({ client_id: 'nope', token: 'x' });
  t.equal(unknown.statusCode, 401);
  t.equal(unknown.json().error, 'invalid_client');
  const noToken = await revoke({ client_id: client.clientId });
  t.same(noToken.json(), { error: 'invalid_request', error_description: 'token is required' });
  const json = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    payload: { client_id: client.clientId, token: 'x' },
  });
  t.equal(json.statusCode, 400);
  t.equal(json.json().error, 'invalid_request');
});

t.test('sign-out ends the access tokens of that session; offline tokens from refresh survive', async (t) => {
  const { tokens, jar } = await obtainTokens(app, flow);
  const refreshed = (
    await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.clientId,
    })
  ).json();
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 200);
  const out = await app.inject({ method: 'POST', url: '/api/auth/sign-out', cookies: jar });
  t.equal(out.statusCode, 204);
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, 'the session-bound access token is inactive');
  t.equal((await userinfo(app, refreshed.access_token)).statusCode, 200, 'the offline access token lives on');
  const again = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: refreshed.refresh_token,
    client_id: client.clientId,
  });
  t.equal(again.statusCode, 200, 'offline refresh tokens survive sign-out');
});

t.test('session expiry ends the access tokens of that session', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  await database.db
    .updateTable('sessions')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .execute();
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401);
});

t.test('discovery advertises the revocation endpoint and the refresh grant', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration' })).json();
  t.equal(doc.revocation_endpoint, 'http://localhost:3000/api/auth/oauth2/revoke');
  // client_credentials since issue 33 (confidential clients).
  t.same(doc.grant_types_supported, ['authorization_code', 'refresh_token', 'client_credentials']);
});
