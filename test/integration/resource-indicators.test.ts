// Resource indicators (RFC 8707) and JWT access tokens (RFC 9068) on the issuing side (issue 36): `resource` at
// authorize (repeatable, each checked: invalid_target), the scopes of resource servers (invalid_scope naming the
// resource to add), the grant and the sealed code recording the resources, and at the token endpoint (code, refresh,
// client_credentials) one resource per access token: its audience, its share of the scopes, its lifetime and format.
// A JWT access token is checked here with jose exactly as RFC 9068 §4 tells a resource server to.
import t, { type Test } from 'tap';
import * as jose from 'jose';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { obtainCode, signInWithInject, tokenRequest, userinfo } from '../helpers/flow.js';
import { openCode, redirectUriHash, sealCode } from '../../src/oauth/sealed-code.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { hashToken } from '../../src/oauth/tokens.js';

const { app, database, config } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
const ctx = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const rp = await app.services.applications.create(
  {
    clientName: 'Agent RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  ctx,
);
const service = await app.services.applications.create(
  {
    clientName: 'Batch job',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'client_secret_basic',
    grantTypes: ['client_credentials'],
    allowedScopes: ['openid', 'profile', 'permissions'],
  },
  ctx,
);
const serviceAuth = {
  authorization: `Basic ${Buffer.from(`${service.clientId}:${service.clientSecret}`).toString('base64')}`,
};
const user = await app.services.users.create(
  { email: 'ria@example.com', password: 'ria-password-1', emailVerified: true, name: 'Ria' },
  ctx,
);

const API_A = 'https://api-a.example.com';
const API_J = 'https://api-j.example.com/mcp';
const OTHER = 'https://other.example.com';
const OFF = 'urn:example:off';
const BUILT_IN = app.services.resourceServers.builtIn.identifier;
await app.services.resourceServers.create(
  {
    identifier: API_A,
    name: 'API A',
    scopes: [
      { name: 'a:read', label: 'Read A', consentDescription: 'Read your A' },
      { name: 'a:write', label: 'Write A', consentDescription: 'Change your A' },
    ],
    accessTokenTtl: 600,
    allowedClients: [rp.clientId],
  },
  ctx,
);
await app.services.resourceServers.create(
  {
    identifier: API_J,
    name: 'MCP server',
    scopes: [{ name: 'j:tools', label: 'Tools', consentDescription: 'Use the tools' }],
    accessTokenFormat: 'jwt',
    accessTokenTtl: 900,
    allowedClients: [rp.clientId, service.clientId],
  },
  ctx,
);
await app.services.resourceServers.create(
  {
    identifier: OTHER,
    name: 'Someone else',
    scopes: [{ name: 'o:all', label: 'All', consentDescription: 'All of it' }],
  },
  ctx,
);
await app.services.resourceServers.create(
  { identifier: OFF, name: 'Off', enabled: false, allowedClients: [rp.clientId] },
  ctx,
);

const flow = (scope: string, resource: string[] = []) => ({
  clientId: rp.clientId,
  redirectUri,
  email: 'ria@example.com',
  password: 'ria-password-1',
  scope,
  resource,
});
const exchange = (code: { code: string; verifier: string }, extra: Record<string, string> = {}) =>
  tokenRequest(app, {
    grant_type: 'authorization_code',
    code: code.code,
    code_verifier: code.verifier,
    client_id: rp.clientId,
    redirect_uri: redirectUri,
    ...extra,
  });
/** A form body with `resource` sent once per value. */
const formWith = (form: Record<string, string>, resources: string[]) => {
  const body = new URLSearchParams(form);
  for (const r of resources) body.append('resource', r);
  return body.toString();
};
const refresh = (refreshToken: string, extra: Record<string, string> = {}, resources: string[] = []) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: formWith(
      { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: rp.clientId, ...extra },
      resources,
    ),
  });
const clientCredentials = (form: Record<string, string>, resources: string[] = []) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...serviceAuth },
    payload: formWith({ grant_type: 'client_credentials', ...form }, resources),
  });

function refused(t: Test, res: LightMyRequestResponse, error: string, description: string) {
  t.equal(res.statusCode, 400, `${error}: 400`);
  t.same(res.json(), { error, error_description: description });
  t.equal(res.headers['cache-control'], 'no-store');
}

const accessRow = async (token: string) =>
  (
    await sql<{ audience: string | null; scope: string; expires_at: Date; revoked_at: Date | null; grant_id: string }>`
      select audience, scope, expires_at, revoked_at, grant_id from access_tokens
      where token_hash = ${hashToken(token)}`.execute(database.db)
  ).rows[0];
const grantResources = async (grantId: string) =>
  (await sql<{ resources: string[] }>`select resources from grants where id = ${grantId}`.execute(database.db)).rows[0]
    ?.resources;

// A signed-in browser (its session cookie) for the authorize error cases.
const { jar } = await signInWithInject(app, 'ria@example.com', 'ria-password-1');
const verifier = 'v'.repeat(43);
/** GET authorize with the usual parameters plus `extra` (pairs: a name may repeat); the redirect's query. */
async function authorize(extra: Array<[string, string]>, scope = 'openid') {
  const query = new URLSearchParams({
    client_id: rp.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope,
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
    state: 'st-1',
  });
  for (const [k, v] of extra) query.append(k, v);
  const res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
  t.equal(res.statusCode, 303);
  const location = new URL(res.headers.location as string, 'http://localhost');
  return { location, params: Object.fromEntries(location.searchParams) };
}

const MALFORMED = 'resource must be an absolute URI without a fragment or query (RFC 8707 section 2)';

t.test('authorize: every RFC 8707 error is invalid_target, redirected with state and iss', async (t) => {
  const cases: Array<[string, string[], string]> = [
    ['an unknown resource', ['https://unknown.example.com'], 'resource names no resource server known here'],
    ['a resource the application may not use', [OTHER], 'this client may not ask for this resource'],
    ['a disabled resource', [OFF], 'resource names a resource server that is disabled'],
    ['a relative URI', ['api-a.example.com'], MALFORMED],
    ['not a URI at all', ['not a uri'], MALFORMED],
    ['a fragment', [`${API_A}#part`], MALFORMED],
    ['a query', [`${API_A}?x=1`], MALFORMED],
    [
      'a good one, then an unknown one',
      [API_A, 'https://unknown.example.com'],
      'resource names no resource server known here',
    ],
    ['an empty one among several', [API_A, ''], MALFORMED],
  ];
  for (const [what, resources, description] of cases) {
    const { location, params } = await authorize(resources.map((r) => ['resource', r]));
    t.equal(`${location.origin}${location.pathname}`, redirectUri, `${what}: back to the client`);
    t.same(
      params,
      { error: 'invalid_target', error_description: description, state: 'st-1', iss: config.issuer },
      what,
    );
  }
});

t.test('authorize: resource is the only parameter that may repeat', async (t) => {
  const repeated = await authorize([
    ['resource', API_A],
    ['resource', API_J],
    ['resource', API_A],
  ]);
  t.notOk(repeated.params.error, 'several resources (one twice) are accepted');
  const scope = await authorize([['scope', 'openid']]);
  t.same(scope.params.error, 'invalid_request', 'a repeated scope is still refused');
  t.equal(scope.params.error_description, 'scope must not be repeated');
});

t.test('authorize: a scope of a resource server needs that resource (invalid_scope names it)', async (t) => {
  const without = await authorize([], 'openid a:read');
  t.same(without.params, {
    error: 'invalid_scope',
    error_description: `scope has a value of a resource server that was not requested; add resource=${API_A}`,
    state: 'st-1',
    iss: config.issuer,
  });
  const another = await authorize([['resource', API_A]], 'openid a:read j:tools');
  t.equal(
    another.params.error_description,
    `scope has a value of a resource server that was not requested; add resource=${API_J}`,
  );
  const unknown = await authorize([['resource', API_A]], 'openid nope:x');
  t.same(unknown.params.error, 'invalid_scope');
  t.equal(unknown.params.error_description, 'scope contains a value that is not known here');
  // Resource scopes are not limited by the application's allowedScopes (the resource's allowedClients are).
  const allowed = await authorize([['resource', API_A]], 'openid a:read a:write');
  t.notOk(allowed.params.error);
});

t.test('the sealed code and the grant record the resources; one resource: its token, scope and lifetime', async (t) => {
  const code = await obtainCode(app, flow('openid profile offline_access a:read a:write', [API_A]));
  const opened = openCode(code.code, config.secretKey!)!;
  t.same(opened.resources, [API_A], 'the code carries the resources');
  t.equal(opened.scope, 'openid profile offline_access a:read a:write');
  const res = await exchange(code);
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.scope, 'a:read a:write', "the access token's scope: the grant's share of the resource");
  t.equal(body.expires_in, 600, "the resource's lifetime");
  t.ok(body.id_token, 'openid was granted: an ID token');
  t.ok(body.refresh_token, 'offline_access was granted: a refresh token');
  const row = (await accessRow(body.access_token))!;
  t.equal(row.audience, API_A);
  t.equal(row.scope, 'a:read a:write');
  const lifetime = (new Date(row.expires_at).getTime() - Date.now()) / 1000;
  t.ok(lifetime > 590 && lifetime <= 600, `stored lifetime ${lifetime}`);
  t.same(await grantResources(row.grant_id), [API_A]);
  t.equal(body.access_token.split('.').length, 1, 'opaque');
});

t.test('no resource anywhere: as before (audience null, every granted scope)', async (t) => {
  const code = await obtainCode(app, flow('openid profile offline_access'));
  t.same(openCode(code.code, config.secretKey!)!.resources, []);
  const refusedFirst = await exchange(code, { resource: API_A });
  refused(t, refusedFirst, 'invalid_target', 'resource is not one of the resources of the grant');
  const res = await exchange(code);
  t.equal(res.statusCode, 200, 'the refused request did not spend the code');
  const body = res.json();
  t.equal(body.scope, 'openid profile offline_access');
  t.equal(body.expires_in, config.ttl.accessToken);
  const row = (await accessRow(body.access_token))!;
  t.equal(row.audience, null);
  t.same(await grantResources(row.grant_id), []);
  t.equal((await userinfo(app, body.access_token)).statusCode, 200);
  // The refresh fast path: as before, no audience.
  const next = await refresh(body.refresh_token);
  t.equal(next.statusCode, 200);
  t.equal((await accessRow(next.json().access_token))!.audience, null);
  refused(
    t,
    await refresh(next.json().refresh_token, { resource: BUILT_IN }),
    'invalid_target',
    'resource is not one of the resources of the grant',
  );
});

t.test('the built-in resource named: its identifier is the audience, the built-in scopes the scope', async (t) => {
  const code = await obtainCode(app, flow('openid profile', [BUILT_IN]));
  const res = await exchange(code);
  t.equal(res.statusCode, 200);
  t.equal(res.json().scope, 'openid profile');
  t.equal((await accessRow(res.json().access_token))!.audience, BUILT_IN);
});

t.test('token endpoint: every RFC 8707 error is invalid_target, checked before the code is spent', async (t) => {
  const code = await obtainCode(app, flow('openid offline_access a:read j:tools', [API_A, API_J]));
  t.same(openCode(code.code, config.secretKey!)!.resources, [API_A, API_J]);
  refused(
    t,
    await exchange(code),
    'invalid_target',
    'several resources were granted: name one of the granted resources with resource',
  );
  refused(
    t,
    await exchange(code, { resource: OTHER }),
    'invalid_target',
    'resource is not one of the resources of the grant',
  );
  refused(
    t,
    await exchange(code, { resource: BUILT_IN }),
    'invalid_target',
    'resource is not one of the resources of the grant',
  );
  refused(t, await exchange(code, { resource: `${API_A}#x` }), 'invalid_target', MALFORMED);
  const repeated = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: formWith(
      {
        grant_type: 'authorization_code',
        code: code.code,
        code_verifier: code.verifier,
        client_id: rp.clientId,
        redirect_uri: redirectUri,
      },
      [API_A, API_J],
    ),
  });
  refused(t, repeated, 'invalid_target', 'name at most one resource at the token endpoint');
  // Another client's parameter repeated is still invalid_request.
  const scopeTwice = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=authorization_code&scope=a&scope=b',
  });
  refused(t, scopeTwice, 'invalid_request', 'scope must not be repeated');
  const ok = await exchange(code, { resource: API_A });
  t.equal(ok.statusCode, 200, 'the code was not spent by any refusal');
  t.equal(ok.json().scope, 'a:read');
  refused(
    t,
    await exchange(code, { resource: API_A }),
    'invalid_grant',
    'the authorization code is invalid, expired or already used',
  );
});

/** RFC 9068 §4, step by step, with jose: typ, iss, aud, signature (keys of the JWKS endpoint), exp, and claims. */
async function validateJwtAccessToken(t: Test, token: string, audience: string) {
  const discovery = (await app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration' })).json() as {
    jwks_uri: string;
    issuer: string;
  };
  const jwks = (await app.inject({ method: 'GET', url: new URL(discovery.jwks_uri).pathname })).json();
  const header = jose.decodeProtectedHeader(token);
  const { payload, protectedHeader } = await jose.jwtVerify(token, jose.createLocalJWKSet(jwks), {
    // §4 step 1: typ at+jwt (application/at+jwt).
    typ: 'at+jwt',
    // Step 2: iss exactly the authorization server's issuer (from its metadata).
    issuer: discovery.issuer,
    // Step 3: aud contains the resource server's own identifier.
    audience,
    // Step 4: the alg is one the resource server expects (the ID token's), never "none".
    algorithms: [header.alg as string],
    // Step 5: exp is checked by jwtVerify (no tolerance here).
  });
  t.equal(protectedHeader.typ, 'at+jwt');
  t.ok(protectedHeader.kid, 'the kid of a key of the JWKS');
  t.equal(payload.iss, config.issuer);
  t.equal(payload.aud, audience);
  t.type(payload.exp, 'number');
  t.type(payload.iat, 'number');
  t.type(payload.jti, 'string');
  t.type(payload.client_id, 'string');
  return payload;
}

t.test('a JWT access token (RFC 9068), validated as §4 says; another audience is refused', async (t) => {
  const code = await obtainCode(app, flow('openid offline_access a:read j:tools', [API_A, API_J]));
  const res = await exchange(code, { resource: API_J });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.scope, 'j:tools');
  t.equal(body.expires_in, 900);
  t.ok(body.id_token);
  const claims = await validateJwtAccessToken(t, body.access_token, API_J);
  t.equal(claims.sub, user.id);
  t.equal(claims.client_id, rp.clientId);
  t.equal(claims.scope, 'j:tools');
  t.equal((claims.exp as number) - (claims.iat as number), 900);
  t.type(claims.auth_time, 'number');
  t.same(claims.amr, ['pwd']);
  t.type(claims.acr, 'string');
  await t.rejects(
    jose.jwtVerify(
      body.access_token,
      jose.createLocalJWKSet((await app.inject({ method: 'GET', url: '/api/auth/jwks' })).json()),
      { audience: API_A, issuer: config.issuer, typ: 'at+jwt' },
    ),
    { code: 'ERR_JWT_CLAIM_VALIDATION_FAILED' },
    'a resource server checking its own aud refuses a token for another',
  );
  const row = (await accessRow(body.access_token))!;
  t.equal(row.audience, API_J, 'stored by the SHA-256 of the JWT, with its audience');
  t.equal(Math.floor(new Date(row.expires_at).getTime() / 1000), claims.exp, 'the stored expiry is the JWT exp');
});

t.test('refresh: resource switches the audience between the granted resources', async (t) => {
  const code = await obtainCode(app, flow('openid offline_access a:read a:write j:tools', [API_A, API_J]));
  const first = (await exchange(code, { resource: API_A })).json();
  t.equal(first.scope, 'a:read a:write');
  refused(
    t,
    await refresh(first.refresh_token),
    'invalid_target',
    'several resources were granted: name one of the granted resources with resource',
  );
  refused(
    t,
    await refresh(first.refresh_token, { resource: OTHER }),
    'invalid_target',
    'resource is not one of the resources of the grant',
  );
  refused(
    t,
    await refresh(first.refresh_token, {}, [API_A, API_J]),
    'invalid_target',
    'name at most one resource at the token endpoint',
  );
  // The refusals spent nothing: the refresh token is still current.
  const toJ = await refresh(first.refresh_token, { resource: API_J });
  t.equal(toJ.statusCode, 200);
  const j = toJ.json();
  t.equal(j.scope, 'j:tools');
  t.equal(j.expires_in, 900);
  t.ok(j.id_token, 'openid granted: an ID token with each refresh');
  const claims = await validateJwtAccessToken(t, j.access_token, API_J);
  t.equal(claims.sub, user.id);
  t.equal((await accessRow(j.access_token))!.audience, API_J);
  const toA = await refresh(j.refresh_token, { resource: API_A, scope: 'a:read openid' });
  t.equal(toA.statusCode, 200);
  t.equal(toA.json().scope, 'a:read', 'narrowed by scope, then to the resource');
  t.equal(toA.json().expires_in, 600);
  const a = (await accessRow(toA.json().access_token))!;
  t.equal(a.audience, API_A);
  t.equal(a.scope, 'a:read');
  // The refresh token keeps the grant's scope: a later refresh can get a:write again.
  const again = await refresh(toA.json().refresh_token, { resource: API_A });
  t.equal(again.json().scope, 'a:read a:write');
  // The used token presented again is reuse: the family is revoked.
  refused(
    t,
    await refresh(j.refresh_token, { resource: API_J }),
    'invalid_grant',
    'the refresh token was already used; the whole grant is revoked',
  );
  t.ok((await accessRow(j.access_token))!.revoked_at, 'the JWT access token of the family is revoked too');
});

t.test('a resource disabled, or no longer allowing the client, after the grant: invalid_target', async (t) => {
  await app.services.resourceServers.create(
    {
      identifier: 'https://later.example.com',
      name: 'Later',
      scopes: [{ name: 'l:x', label: 'L', consentDescription: 'L' }],
      allowedClients: [rp.clientId],
    },
    ctx,
  );
  const code = await obtainCode(app, flow('openid offline_access l:x', ['https://later.example.com']));
  await app.services.resourceServers.update('https://later.example.com', { enabled: false }, ctx);
  refused(t, await exchange(code), 'invalid_target', 'resource names a resource server that is disabled');
  await app.services.resourceServers.update('https://later.example.com', { enabled: true, allowedClients: [] }, ctx);
  refused(t, await exchange(code), 'invalid_target', 'this client may not ask for this resource');
  await app.services.resourceServers.update('https://later.example.com', { allowedClients: [rp.clientId] }, ctx);
  const ok = await exchange(code);
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().scope, 'l:x');
  await app.services.resourceServers.remove('https://later.example.com', ctx);
  refused(t, await refresh(ok.json().refresh_token), 'invalid_target', 'resource names no resource server known here');
});

t.test('client_credentials with resource: audience, scope, lifetime and format of the resource', async (t) => {
  const res = await clientCredentials({ resource: API_J, scope: 'j:tools' });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type']);
  t.equal(body.scope, 'j:tools');
  t.equal(body.expires_in, 900);
  const claims = await validateJwtAccessToken(t, body.access_token, API_J);
  t.equal(claims.sub, service.clientId, 'RFC 9068 §2.2: sub is the client when no user is involved');
  t.equal(claims.client_id, service.clientId);
  t.notOk('auth_time' in claims);
  const row = (
    await sql<{ audience: string | null; scope: string }>`select audience, scope from client_access_tokens
      where token_hash = ${hashToken(body.access_token)}`.execute(database.db)
  ).rows[0];
  t.same(row, { audience: API_J, scope: 'j:tools' });
  const noScope = await clientCredentials({ resource: API_J });
  t.equal(noScope.statusCode, 200);
  t.notOk('scope' in noScope.json(), 'no scope asked: none granted');
  const builtIn = await clientCredentials({ resource: BUILT_IN, scope: 'profile' });
  t.equal(builtIn.statusCode, 200);
  t.equal(builtIn.json().scope, 'profile');

  refused(
    t,
    await clientCredentials({ resource: API_A }),
    'invalid_target',
    'this client may not ask for this resource',
  );
  refused(
    t,
    await clientCredentials({ resource: 'https://unknown.example.com' }),
    'invalid_target',
    'resource names no resource server known here',
  );
  refused(
    t,
    await clientCredentials({ resource: OFF }),
    'invalid_target',
    'resource names a resource server that is disabled',
  );
  refused(t, await clientCredentials({ resource: 'relative/path' }), 'invalid_target', MALFORMED);
  refused(
    t,
    await clientCredentials({}, [API_J, BUILT_IN]),
    'invalid_target',
    'name at most one resource at the token endpoint',
  );
  refused(
    t,
    await clientCredentials({ resource: API_J, scope: 'j:tools profile' }),
    'invalid_scope',
    'scope has a value that is not one of the scopes of the requested resource',
  );
  refused(
    t,
    await clientCredentials({ scope: 'j:tools' }),
    'invalid_scope',
    `scope has a value of a resource server that was not requested; add resource=${API_J}`,
  );
});

t.test('revoking a JWT access token (RFC 7009) works, for user and client tokens', async (t) => {
  const code = await obtainCode(app, flow('openid j:tools', [API_J]));
  const jwt = (await exchange(code)).json().access_token as string;
  t.equal(jwt.split('.').length, 3);
  t.notOk((await accessRow(jwt))!.revoked_at);
  const revoked = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token: jwt, token_type_hint: 'access_token', client_id: rp.clientId }).toString(),
  });
  t.equal(revoked.statusCode, 200);
  t.ok((await accessRow(jwt))!.revoked_at, 'the stored token (by SHA-256 of the JWT) is revoked');

  const clientJwt = (await clientCredentials({ resource: API_J, scope: 'j:tools' })).json().access_token as string;
  const revokedClient = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...serviceAuth },
    payload: new URLSearchParams({ token: clientJwt, token_type_hint: 'access_token' }).toString(),
  });
  t.equal(revokedClient.statusCode, 200);
  const row = (
    await sql<{ revoked_at: Date | null }>`select revoked_at from client_access_tokens
      where token_hash = ${hashToken(clientJwt)}`.execute(database.db)
  ).rows[0];
  t.ok(row?.revoked_at, 'the client token is revoked');
  const introspected = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/introspect',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...serviceAuth },
    payload: new URLSearchParams({ token: clientJwt }).toString(),
  });
  t.same(introspected.json(), { active: false }, 'introspection says it is no longer active');
});

t.test('sealed codes of every shape open: before amr, before resources, with resources', async (t) => {
  const base = {
    grantId: 'g',
    clientId: 'c',
    userId: 'u',
    sessionId: 's',
    authTime: new Date(1_700_000_000_000),
    issuedAt: '2026-01-01 00:00:00+00',
    expiresAt: new Date(Date.now() + 60_000),
    redirectUriHash: redirectUriHash(redirectUri),
    codeChallenge: null,
    nonce: null,
    scope: 'openid',
  };
  const key = config.secretKey!;
  t.same(openCode(sealCode({ ...base, amr: null }, key), key)?.resources, [], 'eleven members');
  t.same(openCode(sealCode({ ...base, amr: ['pwd'] }, key), key)?.resources, [], 'twelve members');
  const both = openCode(sealCode({ ...base, amr: null, resources: [API_A] }, key), key)!;
  t.same([both.amr, both.resources], [null, [API_A]], 'thirteen members, amr unknown');
  const all = openCode(sealCode({ ...base, amr: ['pwd', 'otp'], resources: [API_A, API_J] }, key), key)!;
  t.same(
    [all.amr, all.resources],
    [
      ['pwd', 'otp'],
      [API_A, API_J],
    ],
  );
});

t.test('the pending request names its resource servers for the consent page', async (t) => {
  // A browser that is not signed in: the request is stored and the sign-in page is next.
  const query = new URLSearchParams({
    client_id: rp.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid a:read',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  });
  query.append('resource', API_A);
  query.append('resource', API_J);
  const res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}` });
  const requestId = new URL(res.headers.location as string, 'http://x').searchParams.get('request')!;
  const browser = Object.values(
    Object.fromEntries((res.cookies as Array<{ name: string; value: string }>).map((c) => [c.name, c.value])),
  );
  let found: Awaited<ReturnType<typeof app.services.authorization.pendingRequest>>;
  for (const value of browser) found ??= await app.services.authorization.pendingRequest(requestId, value);
  t.ok(found, 'found with the binding cookie');
  t.same(found!.request.params.resource, [API_A, API_J]);
  t.same(found!.request.params.scope, ['openid', 'a:read']);
  t.same(
    found!.resources.map((r) => r.name),
    ['API A', 'MCP server'],
  );
});

t.test(
  'the refresh grace window: a retry for the same resource gets the same pair; another resource is reuse',
  async (t) => {
    const graced = await buildTestApp(t, { env: { REFRESH_TOKEN_GRACE: '30' } });
    const other = graced.app;
    const client = await other.services.applications.create(
      { clientName: 'Grace RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
      ctx,
    );
    await other.services.users.create(
      { email: 'gus@example.com', password: 'gus-password-1', emailVerified: true },
      ctx,
    );
    for (const [identifier, format] of [
      [API_A, 'opaque'],
      [API_J, 'jwt'],
    ] as const)
      await other.services.resourceServers.create(
        {
          identifier,
          name: identifier,
          scopes: [{ name: `${format}:x`, label: 'X', consentDescription: 'X' }],
          accessTokenFormat: format,
          allowedClients: [client.clientId],
        },
        ctx,
      );
    const code = await obtainCode(other, {
      clientId: client.clientId,
      redirectUri,
      email: 'gus@example.com',
      password: 'gus-password-1',
      scope: 'openid offline_access opaque:x jwt:x',
      resource: [API_A, API_J],
    });
    const first = await tokenRequest(other, {
      grant_type: 'authorization_code',
      code: code.code,
      code_verifier: code.verifier,
      client_id: client.clientId,
      redirect_uri: redirectUri,
      resource: API_A,
    });
    t.equal(first.statusCode, 200);
    const again = (resource: string) =>
      tokenRequest(other, {
        grant_type: 'refresh_token',
        refresh_token: first.json().refresh_token,
        client_id: client.clientId,
        resource,
      });
    const rotated = await again(API_J);
    t.equal(rotated.statusCode, 200);
    t.equal(rotated.json().access_token.split('.').length, 3, 'a JWT for the JWT resource');
    const retry = await again(API_J);
    t.equal(retry.statusCode, 200);
    t.equal(retry.json().access_token, rotated.json().access_token, 'the same access token');
    t.equal(retry.json().refresh_token, rotated.json().refresh_token, 'the same refresh token');
    t.equal(retry.json().scope, 'jwt:x');
    const switched = await again(API_A);
    refused(t, switched, 'invalid_grant', 'the refresh token was already used; the whole grant is revoked');
    const next = await tokenRequest(other, {
      grant_type: 'refresh_token',
      refresh_token: rotated.json().refresh_token,
      client_id: client.clientId,
      resource: API_J,
    });
    t.equal(next.statusCode, 400, 'the family is revoked');
  },
);
