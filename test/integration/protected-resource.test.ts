// The resource side of issue 36: /api/external/* and UserInfo accept only tokens with no audience or the built-in
// one (a token for another API is 401 invalid_token there); introspection shows a registered resource server's
// introspection clients the tokens whose audience it is, with `aud`; /api/external's protected-resource metadata
// (RFC 9728) and the resource_metadata attribute of its challenges.
//
// Tokens with an audience: these tests issue ordinary tokens through the real flow and then write the audience into
// their rows (access_tokens.audience, client_access_tokens.audience) with SQL, exactly as the token endpoint stores
// it, so that every audience can be tried, those no authorization request can produce today included (a deleted
// resource server's, near misses of the built-in identifier). What is under test here reads only the row. Tokens
// issued with `resource` by the real flow, opaque and JWT, are refused by /api/external in
// test/e2e/protect-api-docs.test.ts.
import t, { type Test } from 'tap';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { hashToken } from '../../src/oauth/tokens.js';

// Audiences are written with raw SQL, which no invalidation announces: no bearer cache (its own test is below).
const { app, database, config } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
const ctx = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const BUILT_IN = `${config.baseUrl}/api/external`;
const METADATA_PATH = '/.well-known/oauth-protected-resource/api/external';
const METADATA = `${config.baseUrl}${METADATA_PATH}`;
const API = 'https://api.example.com/v1';
const OTHER_API = 'urn:example:other-api';

const spa = await app.services.applications.create(
  {
    clientName: 'SPA',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'email', 'offline_access'],
  },
  ctx,
);
const confidential = (clientName: string, more: Record<string, unknown> = {}) =>
  app.services.applications.create(
    { clientName, redirectUris: [redirectUri], tokenEndpointAuthMethod: 'client_secret_post', ...more },
    ctx,
  );
// The API's own credentials (introspection only), another server that is not listed, and a service that gets
// client_credentials tokens.
const apiClient = await confidential('Example API');
const stranger = await confidential('Another server');
const service = await confidential('Service', {
  grantTypes: ['client_credentials'],
  allowedScopes: ['openid', 'permissions'],
});
// A public client listed as an introspection client: it proves only its client_id, so it is never let in.
const publicListed = await app.services.applications.create({ clientName: 'Public', redirectUris: [redirectUri] }, ctx);
await app.services.users.create({ email: 'rs@example.com', password: 'rs-password-1', emailVerified: true }, ctx);

await app.services.resourceServers.create({
  identifier: API,
  name: 'Example API',
  scopes: [{ name: 'api:read', label: 'Read', consentDescription: 'Read your things' }],
  allowedClients: [spa.clientId, service.clientId],
  introspectionClients: [apiClient.clientId, publicListed.clientId],
});
await app.services.resourceServers.create({
  identifier: OTHER_API,
  name: 'Other API',
  allowedClients: [spa.clientId],
  introspectionClients: [stranger.clientId],
});

/** The SPA's tokens by the real flow, then the access token's audience as the token endpoint will store it. */
async function userTokens(audience: string | null) {
  const { tokens } = await obtainTokens(app, {
    clientId: spa.clientId,
    redirectUri,
    email: 'rs@example.com',
    password: 'rs-password-1',
    scope: 'openid email offline_access',
  });
  const hash = hashToken(tokens.access_token);
  await sql`update access_tokens set audience = ${audience} where token_hash = ${hash}`.execute(database.db);
  return tokens;
}

/** A client_credentials token of the service, its audience set as the token endpoint will store it. */
async function serviceToken(audience: string | null) {
  const res = await tokenRequest(app, {
    grant_type: 'client_credentials',
    scope: 'permissions',
    client_id: service.clientId,
    client_secret: service.clientSecret!,
  });
  t.equal(res.statusCode, 200, 'client_credentials token');
  const token = res.json().access_token as string;
  await sql`update client_access_tokens set audience = ${audience} where token_hash = ${hashToken(token)}`.execute(
    database.db,
  );
  return token;
}

const external = (token: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
const introspect = (token: string, client: { clientId: string; clientSecret?: string | null }) =>
  tokenRequestTo('/api/auth/oauth2/introspect', {
    token,
    client_id: client.clientId,
    ...(client.clientSecret && { client_secret: client.clientSecret }),
  });
const tokenRequestTo = (url: string, form: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });

function refusedAsUnknown(t: Test, res: LightMyRequestResponse, challenge: string, label: string) {
  t.equal(res.statusCode, 401, `${label}: 401`);
  t.same(res.json(), { error: 'UNAUTHORIZED' }, label);
  t.equal(res.headers['www-authenticate'], challenge, `${label}: challenge`);
  t.equal(res.headers['cache-control'], 'no-store', label);
}

t.test('/api/external/* and UserInfo: no audience or the built-in one is accepted, another API is not', async (t) => {
  for (const audience of [null, BUILT_IN]) {
    const tokens = await userTokens(audience);
    t.equal((await external(tokens.access_token)).statusCode, 200, `audience ${audience}: /api/external/me`);
    t.equal((await userinfo(app, tokens.access_token)).statusCode, 200, `audience ${audience}: UserInfo`);
  }
  // A registered API's token, another registered API's, one whose resource server was removed since, and strings
  // that are near the built-in identifier but not it (exact comparison).
  for (const audience of [API, OTHER_API, 'https://gone.example.com', `${BUILT_IN}/`, `${BUILT_IN}/me`]) {
    const tokens = await userTokens(audience);
    refusedAsUnknown(
      t,
      await external(tokens.access_token),
      `Bearer error="invalid_token", resource_metadata="${METADATA}"`,
      `audience ${audience}: /api/external/me`,
    );
    refusedAsUnknown(
      t,
      await userinfo(app, tokens.access_token),
      'Bearer error="invalid_token"',
      `audience ${audience}: UserInfo (GET)`,
    );
    const posted = await tokenRequestTo('/api/auth/oauth2/userinfo', { access_token: tokens.access_token });
    refusedAsUnknown(t, posted, 'Bearer error="invalid_token"', `audience ${audience}: UserInfo (token in the body)`);
    // The token itself is live: its own client and the API's introspection clients still see it.
    t.equal((await introspect(tokens.access_token, spa)).json().active, true, `audience ${audience}: still live`);
  }
});

t.test('the bearer cache keeps the audience: a cached API token is still refused', async (t) => {
  const cached = await buildTestApp(t, { database, env: { BEARER_CACHE_SECONDS: '60' } });
  const tokens = await userTokens(API);
  for (const round of ['first', 'cached']) {
    const res = await cached.app.inject({
      method: 'GET',
      url: '/api/external/me',
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    t.equal(res.statusCode, 401, `${round} call`);
  }
  // Issued by this very app (so its cache is seeded from the issuing statement) with no audience: accepted.
  const plain = await obtainTokens(cached.app, {
    clientId: spa.clientId,
    redirectUri,
    email: 'rs@example.com',
    password: 'rs-password-1',
  });
  const ok = await cached.app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { authorization: `Bearer ${plain.tokens.access_token}` },
  });
  t.equal(ok.statusCode, 200);
});

t.test("introspection: the resource server's introspection client sees its tokens, with aud", async (t) => {
  const tokens = await userTokens(API);
  const seen = await introspect(tokens.access_token, apiClient);
  t.equal(seen.statusCode, 200);
  const body = seen.json();
  t.match(body, { active: true, client_id: spa.clientId, token_type: 'Bearer', aud: API, iss: config.issuer });
  t.equal(body.scope, 'openid email offline_access');
  t.type(body.sub, 'string');
  t.same((await introspect(tokens.access_token, spa)).json(), body, 'the token’s own client sees the same answer');
  t.same((await introspect(tokens.access_token, stranger)).json(), { active: false }, 'another confidential client');
  t.same(
    (await introspect(tokens.access_token, publicListed)).json(),
    { active: false },
    'a public client, even listed: it proves no more than its client_id',
  );
  t.same(
    (await introspect(tokens.refresh_token!, apiClient)).json(),
    { active: false },
    'the refresh token is the client’s alone',
  );

  const other = await userTokens(OTHER_API);
  t.same((await introspect(other.access_token, apiClient)).json(), { active: false }, 'another API’s token');
  t.equal((await introspect(other.access_token, stranger)).json().aud, OTHER_API, 'seen by that API’s client');
  for (const audience of [null, BUILT_IN]) {
    const mine = await userTokens(audience);
    t.same((await introspect(mine.access_token, apiClient)).json(), { active: false }, `audience ${audience}`);
  }
  const builtIn = await userTokens(BUILT_IN);
  t.equal((await introspect(builtIn.access_token, spa)).json().aud, BUILT_IN, 'the built-in audience is named');
  const none = await userTokens(null);
  t.notOk('aud' in (await introspect(none.access_token, spa)).json(), 'no audience: no aud');
});

t.test('introspection: a client_credentials token for the API', async (t) => {
  const token = await serviceToken(API);
  const body = (await introspect(token, apiClient)).json();
  t.match(body, { active: true, client_id: service.clientId, aud: API, scope: 'permissions', token_type: 'Bearer' });
  t.notOk('sub' in body, 'no user');
  t.same((await introspect(token, service)).json(), body, 'its own client');
  t.same((await introspect(token, stranger)).json(), { active: false }, 'another confidential client');
  const bare = await serviceToken(null);
  t.same((await introspect(bare, apiClient)).json(), { active: false }, 'no audience: the client’s alone');
  t.notOk('aud' in (await introspect(bare, service)).json());
  t.equal((await external(token)).statusCode, 401, 'never a bearer of /api/external (no user)');
});

t.test('introspection: the rule follows the registry and the caller', async (t) => {
  const tokens = await userTokens(API);
  const token = tokens.access_token;
  await app.services.resourceServers.update(API, { enabled: false }, ctx);
  t.equal(
    (await introspect(token, apiClient)).json().active,
    true,
    'a disabled resource server gets no new tokens, but its API can still check the live ones',
  );
  await app.services.resourceServers.update(API, { enabled: true, introspectionClients: [] }, ctx);
  t.same((await introspect(token, apiClient)).json(), { active: false }, 'no longer listed: at once');
  await app.services.resourceServers.update(API, { introspectionClients: [apiClient.clientId] }, ctx);
  t.equal((await introspect(token, apiClient)).json().active, true, 'listed again');
  await app.services.applications.update(apiClient.clientId, { enabled: false }, ctx);
  const disabled = await introspect(token, apiClient);
  t.same(disabled.json(), { active: false }, 'a disabled introspection client sees nothing');
  await app.services.applications.update(apiClient.clientId, { enabled: true }, ctx);
  t.equal((await introspect(token, { ...apiClient, clientSecret: 'wrong' })).statusCode, 401, 'a wrong secret');
  await app.services.resourceServers.remove(API, ctx);
  t.same((await introspect(token, apiClient)).json(), { active: false }, 'removed: only the token’s client sees it');
  t.equal((await introspect(token, spa)).json().aud, API, 'which still sees its audience');
  t.equal((await external(token)).statusCode, 401, 'and it is still not a token for /api/external');
});

t.test('protected-resource metadata of /api/external (RFC 9728)', async (t) => {
  const res = await app.inject({ method: 'GET', url: METADATA_PATH, headers: { origin: 'https://anyone.example' } });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'public, max-age=300');
  t.equal(res.headers['access-control-allow-origin'], '*');
  t.same(res.json(), {
    resource: BUILT_IN,
    authorization_servers: [config.issuer],
    scopes_supported: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
    bearer_methods_supported: ['header'],
    resource_name: 'External API',
  });
  // RFC 9728 §3.3: the resource in it is the identifier the URL was made from; RFC 8414: its AS is the issuer.
  const as = await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server/api/auth' });
  t.equal(as.json().issuer, res.json().authorization_servers[0]);
  for (const url of [
    '/.well-known/oauth-protected-resource',
    '/.well-known/oauth-protected-resource/api/other',
    '/api/external/.well-known/oauth-protected-resource',
  ]) {
    t.equal((await app.inject({ method: 'GET', url })).statusCode, 404, `${url}: no such resource here`);
  }
  t.equal((await app.inject({ method: 'HEAD', url: METADATA_PATH })).statusCode, 200, 'HEAD');
});

t.test('every 401 and 403 of /api/external/* names the metadata; UserInfo does not', async (t) => {
  const m = `resource_metadata="${METADATA}"`;
  const me = (headers: Record<string, string>, url = '/api/external/me') => app.inject({ method: 'GET', url, headers });
  t.equal((await me({})).headers['www-authenticate'], `Bearer ${m}`, 'no token');
  t.equal((await me({ authorization: 'Basic YTpi' })).headers['www-authenticate'], `Bearer ${m}`, 'another scheme');
  t.equal(
    (await me({ authorization: 'Bearer nope' })).headers['www-authenticate'],
    `Bearer error="invalid_token", ${m}`,
    'an unknown token',
  );
  const twice = await me({ authorization: 'Bearer nope' }, '/api/external/me?access_token=nope');
  t.equal(twice.statusCode, 401);
  t.match(twice.headers['www-authenticate'], /^Bearer error="invalid_request", error_description="[^"]+", /);
  t.match(twice.headers['www-authenticate'], new RegExp(`, ${m.replace(/[.?*+()[\]]/g, '\\$&')}$`));
  const noOpenid = await obtainTokens(app, {
    clientId: spa.clientId,
    redirectUri,
    email: 'rs@example.com',
    password: 'rs-password-1',
    scope: 'openid email offline_access',
  });
  const narrowed = await tokenRequestTo('/api/auth/oauth2/token', {
    grant_type: 'refresh_token',
    refresh_token: noOpenid.tokens.refresh_token!,
    client_id: spa.clientId,
    scope: 'email',
  });
  const forbidden = await me({ authorization: `Bearer ${narrowed.json().access_token}` });
  t.equal(forbidden.statusCode, 403);
  t.equal(forbidden.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="openid", ${m}`);
  t.equal((await userinfo(app, 'nope')).headers['www-authenticate'], 'Bearer error="invalid_token"', 'UserInfo');
});

t.test('BASE_URL with a path: the path is kept after the well-known segment (RFC 9728 §3.1)', async (t) => {
  const second = await buildTestApp(t, { database, env: { BASE_URL: 'https://id.example.com/tenant' } });
  const url = '/.well-known/oauth-protected-resource/tenant/api/external';
  const res = await second.app.inject({ method: 'GET', url });
  t.equal(res.statusCode, 200);
  t.equal(res.json().resource, 'https://id.example.com/tenant/api/external');
  t.same(res.json().authorization_servers, ['https://id.example.com/tenant/api/auth']);
  t.equal((await second.app.inject({ method: 'GET', url: METADATA_PATH })).statusCode, 404, 'not without the path');
  const challenge = (await second.app.inject({ method: 'GET', url: '/api/external/me' })).headers['www-authenticate'];
  t.equal(challenge, `Bearer resource_metadata="https://id.example.com${url}"`);
  // This app's built-in resource is the tenant's: a token naming the other app's built-in identifier is refused.
  const tokens = await userTokens(BUILT_IN);
  const refused = await second.app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(refused.statusCode, 401);
});
