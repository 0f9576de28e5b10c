// Token introspection (RFC 7662, issue 33) at POST /api/auth/oauth2/introspect: the caller authenticates as at the
// token endpoint; a live token of its own is described (active, scope, client_id, token_type, exp, iat, sub, iss);
// everything else (unknown, expired, revoked, used, another client's, a disabled user's or application's, a token
// whose session ended) is `{ "active": false }` alone. Answers are no-store JSON; nothing is audited.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import * as jose from 'jose';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { obtainCode, obtainTokens } from '../helpers/flow.js';
import { hashToken } from '../../src/oauth/tokens.js';

// Expiry, revocation and disabled users are faked with raw SQL, which no invalidation announces: no bearer cache.
const { app, database, config } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
const redirectUri = 'https://rp.example.com/cb';
const ctx = { actor: 'test' };
const INTROSPECT = '/api/auth/oauth2/introspect';

const server = await app.services.applications.create(
  {
    clientName: 'Server RP',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'client_secret_basic',
    grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
    allowedScopes: ['openid', 'email', 'offline_access', 'permissions'],
  },
  ctx,
);
const spa = await app.services.applications.create({ clientName: 'SPA', redirectUris: [redirectUri] }, ctx);
const other = await app.services.applications.create(
  { clientName: 'Other server', redirectUris: [redirectUri], tokenEndpointAuthMethod: 'client_secret_post' },
  ctx,
);
const user = await app.services.users.create(
  { email: 'intro@example.com', password: 'intro-password-1', emailVerified: true },
  ctx,
);

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const asServer = { authorization: basic(server.clientId, server.clientSecret!) };

const post = (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(form).toString(),
  });
const introspect = (form: Record<string, string>, headers: Record<string, string> = asServer) =>
  post(INTROSPECT, form, headers);

/** The server's user tokens: a code flow, the exchange authenticated with Basic. */
async function serverTokens(scope = 'openid email offline_access') {
  const { code, verifier, jar } = await obtainCode(app, {
    clientId: server.clientId,
    redirectUri,
    email: 'intro@example.com',
    password: 'intro-password-1',
    scope,
  });
  const res = await post(
    '/api/auth/oauth2/token',
    { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri },
    asServer,
  );
  if (res.statusCode !== 200) throw new Error(`exchange: ${res.statusCode} ${res.body}`);
  return { tokens: res.json() as { access_token: string; refresh_token: string; scope: string }, jar };
}
const spaTokens = async () =>
  (
    await obtainTokens(app, {
      clientId: spa.clientId,
      redirectUri,
      email: 'intro@example.com',
      password: 'intro-password-1',
      scope: 'openid offline_access',
    })
  ).tokens;
const clientToken = async (scope = 'permissions') =>
  (await post('/api/auth/oauth2/token', { grant_type: 'client_credentials', scope }, asServer)).json()
    .access_token as string;

function inactive(t: Test, res: LightMyRequestResponse, label: string) {
  t.equal(res.statusCode, 200, `${label}: 200`);
  t.same(res.json(), { active: false }, `${label}: active false, and nothing else`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
}

function refused(
  t: Test,
  res: LightMyRequestResponse,
  expected: { status: number; error: string; description: string; challenge?: string },
) {
  t.equal(res.statusCode, expected.status);
  t.same(res.json(), { error: expected.error, error_description: expected.description });
  t.equal(res.headers['www-authenticate'], expected.challenge);
  t.equal(res.headers['cache-control'], 'no-store');
}

const auditCount = async () =>
  (await sql<{ n: number }>`select count(*)::int as n from audit_events`.execute(database.db)).rows[0]!.n;

t.test('a live access token of the caller: its metadata (RFC 7662 §2.2); nothing audited', async (t) => {
  const { tokens } = await serverTokens();
  const events = await auditCount();
  const res = await introspect({ token: tokens.access_token });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers.pragma, 'no-cache');
  const body = res.json();
  t.same(Object.keys(body).sort(), ['active', 'client_id', 'exp', 'iat', 'iss', 'scope', 'sub', 'token_type']);
  t.equal(body.active, true);
  t.equal(body.scope, 'openid email offline_access');
  t.equal(body.client_id, server.clientId);
  t.equal(body.token_type, 'Bearer');
  t.equal(body.sub, user.id, 'the ID token sub');
  t.equal(body.iss, config.issuer);
  t.ok(Math.abs(body.iat - Date.now() / 1000) < 60, 'iat: now');
  t.ok(Math.abs(body.exp - body.iat - config.ttl.accessToken) <= 1, 'exp: iat + ACCESS_TOKEN_TTL');
  t.equal(await auditCount(), events, 'an introspection records nothing');
});

t.test('a live refresh token: no token_type (it has none), its family scope and lifetime', async (t) => {
  const { tokens } = await serverTokens();
  for (const hint of [undefined, 'refresh_token', 'access_token', 'something_else']) {
    const res = await introspect({ token: tokens.refresh_token, ...(hint && { token_type_hint: hint }) });
    const body = res.json();
    t.same(Object.keys(body).sort(), ['active', 'client_id', 'exp', 'iat', 'iss', 'scope', 'sub'], `hint ${hint}`);
    t.equal(body.active, true);
    t.equal(body.scope, 'openid email offline_access');
    t.equal(body.sub, user.id);
    t.ok(Math.abs(body.exp - body.iat - config.ttl.refreshToken) <= 1, 'exp: the sliding lifetime');
  }
  // A wrong hint still finds an access token.
  const access = await introspect({ token: tokens.access_token, token_type_hint: 'refresh_token' });
  t.equal(access.json().token_type, 'Bearer');
});

t.test('a client_credentials token: no sub (no user)', async (t) => {
  const token = await clientToken('email permissions');
  const body = (await introspect({ token })).json();
  t.same(Object.keys(body).sort(), ['active', 'client_id', 'exp', 'iat', 'iss', 'scope', 'token_type']);
  t.equal(body.active, true);
  t.equal(body.scope, 'email permissions');
  t.equal(body.client_id, server.clientId);
  t.equal(body.token_type, 'Bearer');
  const empty = await post('/api/auth/oauth2/token', { grant_type: 'client_credentials' }, asServer);
  const noScope = (await introspect({ token: empty.json().access_token })).json();
  t.equal(noScope.active, true);
  t.notOk('scope' in noScope, 'no scope: no scope member');
});

t.test("another client's token is active: false, whichever way round", async (t) => {
  const mine = await serverTokens();
  const theirs = await spaTokens();
  const ccToken = await clientToken();
  const otherForm = { client_id: other.clientId, client_secret: other.clientSecret! };
  for (const token of [mine.tokens.access_token, mine.tokens.refresh_token, ccToken]) {
    inactive(t, await introspect({ token, ...otherForm }, {}), 'a confidential client, about the server');
    inactive(t, await introspect({ token, client_id: spa.clientId }, {}), 'a public client, about the server');
  }
  for (const token of [theirs.access_token, theirs.refresh_token!]) {
    inactive(t, await introspect({ token }), "the server, about the SPA's token");
  }
  // The tokens are live all the same: their own client sees them.
  t.equal((await introspect({ token: mine.tokens.access_token })).json().active, true);
  t.equal((await introspect({ token: theirs.access_token, client_id: spa.clientId }, {})).json().active, true);
});

t.test('a public client may introspect its own tokens (client_id alone)', async (t) => {
  const tokens = await spaTokens();
  const access = (await introspect({ token: tokens.access_token, client_id: spa.clientId }, {})).json();
  t.equal(access.active, true);
  t.equal(access.client_id, spa.clientId);
  t.equal(access.sub, user.id);
  const refresh = (await introspect({ token: tokens.refresh_token!, client_id: spa.clientId }, {})).json();
  t.equal(refresh.active, true);
  refused(t, await introspect({ token: tokens.access_token, client_id: spa.clientId, client_secret: 'x' }, {}), {
    status: 401,
    error: 'invalid_client',
    description: 'this client is public: send client_id alone, without a secret or an assertion',
  });
});

t.test('unknown, revoked and expired access tokens are inactive', async (t) => {
  inactive(t, await introspect({ token: 'u'.repeat(43) }), 'unknown');
  inactive(t, await introspect({ token: 'u'.repeat(257) }), 'too long to be one');
  const revoked = await serverTokens();
  await post('/api/auth/oauth2/revoke', { token: revoked.tokens.access_token }, asServer);
  inactive(t, await introspect({ token: revoked.tokens.access_token }), 'revoked access token');
  t.equal((await introspect({ token: revoked.tokens.refresh_token })).json().active, true, 'its refresh token lives');
  await post('/api/auth/oauth2/revoke', { token: revoked.tokens.refresh_token }, asServer);
  inactive(t, await introspect({ token: revoked.tokens.refresh_token }), 'revoked refresh token');

  const expired = await serverTokens();
  await sql`update access_tokens set expires_at = now() - interval '1 second' where token_hash = ${hashToken(
    expired.tokens.access_token,
  )}`.execute(database.db);
  inactive(t, await introspect({ token: expired.tokens.access_token }), 'expired access token');
  await sql`update refresh_tokens set expires_at = now() - interval '1 second' where token_hash = ${hashToken(
    expired.tokens.refresh_token,
  )}`.execute(database.db);
  inactive(t, await introspect({ token: expired.tokens.refresh_token }), 'expired refresh token');
  const absolute = await serverTokens();
  await sql`update refresh_tokens set absolute_expires_at = now() - interval '1 second' where token_hash = ${hashToken(
    absolute.tokens.refresh_token,
  )}`.execute(database.db);
  inactive(t, await introspect({ token: absolute.tokens.refresh_token }), 'past its absolute lifetime');

  const cc = await clientToken();
  await sql`update client_access_tokens set expires_at = now() - interval '1 second' where token_hash = ${hashToken(
    cc,
  )}`.execute(database.db);
  inactive(t, await introspect({ token: cc }), 'expired client_credentials token');
});

t.test('a used refresh token is inactive; its successor is active', async (t) => {
  const { tokens } = await serverTokens();
  const rotated = await post(
    '/api/auth/oauth2/token',
    { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
    asServer,
  );
  t.equal(rotated.statusCode, 200);
  inactive(t, await introspect({ token: tokens.refresh_token }), 'used');
  t.equal((await introspect({ token: rotated.json().refresh_token })).json().active, true, 'successor');
  t.equal((await introspect({ token: rotated.json().access_token })).json().active, true, 'its access token');
});

t.test("a disabled user's tokens, and a session that ended, are inactive", async (t) => {
  const { tokens } = await serverTokens();
  await sql`update users set disabled = true where id = ${user.id}`.execute(database.db);
  try {
    inactive(t, await introspect({ token: tokens.access_token }), 'disabled user: access token');
    inactive(t, await introspect({ token: tokens.refresh_token }), 'disabled user: refresh token');
  } finally {
    await sql`update users set disabled = false where id = ${user.id}`.execute(database.db);
  }
  t.equal((await introspect({ token: tokens.access_token })).json().active, true, 're-enabled (raw SQL only)');
  await sql`update sessions set revoked_at = now() where user_id = ${user.id}`.execute(database.db);
  inactive(t, await introspect({ token: tokens.access_token }), 'its session ended: the access token ends with it');
  t.equal(
    (await introspect({ token: tokens.refresh_token })).json().active,
    true,
    'the refresh token is offline: it outlives the session, as at the token endpoint',
  );
});

t.test("a disabled application's tokens are inactive", async (t) => {
  const job = await app.services.applications.create(
    {
      clientName: 'Job',
      redirectUris: [redirectUri],
      tokenEndpointAuthMethod: 'client_secret_post',
      grantTypes: ['client_credentials'],
    },
    ctx,
  );
  const form = { client_id: job.clientId, client_secret: job.clientSecret! };
  const issued = await post('/api/auth/oauth2/token', { grant_type: 'client_credentials', ...form });
  const token = issued.json().access_token as string;
  t.equal((await introspect({ token, ...form }, {})).json().active, true);
  await app.services.applications.update(job.clientId, { enabled: false }, ctx);
  inactive(t, await introspect({ token, ...form }, {}), 'the application is disabled');

  // A user's tokens too: the SPA's access and refresh tokens, asked by the SPA itself.
  const tokens = await spaTokens();
  await app.services.applications.update(spa.clientId, { enabled: false }, ctx);
  try {
    inactive(t, await introspect({ token: tokens.access_token, client_id: spa.clientId }, {}), 'access token');
    inactive(t, await introspect({ token: tokens.refresh_token!, client_id: spa.clientId }, {}), 'refresh token');
  } finally {
    await app.services.applications.update(spa.clientId, { enabled: true }, ctx);
  }
  t.equal((await introspect({ token: tokens.access_token, client_id: spa.clientId }, {})).json().active, true);
});

t.test('requests: token required, form bodies only, client authentication as at the token endpoint', async (t) => {
  refused(t, await introspect({}), { status: 400, error: 'invalid_request', description: 'token is required' });
  refused(t, await introspect({ token: '' }), {
    status: 400,
    error: 'invalid_request',
    description: 'token is required',
  });
  const json = await app.inject({
    method: 'POST',
    url: INTROSPECT,
    headers: { 'content-type': 'application/json', ...asServer },
    payload: JSON.stringify({ token: 'abc' }),
  });
  refused(t, json, {
    status: 400,
    error: 'invalid_request',
    description: 'the body must be application/x-www-form-urlencoded',
  });
  refused(t, await post(INTROSPECT, { token: 'a' }), {
    status: 400,
    error: 'invalid_request',
    description: 'client_id is required',
  });
  const repeated = await app.inject({
    method: 'POST',
    url: INTROSPECT,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...asServer },
    payload: 'token=a&token=b',
  });
  refused(t, repeated, { status: 400, error: 'invalid_request', description: 'token must not be repeated' });
  refused(t, await introspect({ token: 'a' }, { authorization: basic(server.clientId, 'wrong') }), {
    status: 401,
    error: 'invalid_client',
    description: 'client authentication failed',
    challenge: 'Basic realm="token"',
  });
  refused(t, await introspect({ token: 'a' }, { authorization: basic('nobody', 'secret') }), {
    status: 401,
    error: 'invalid_client',
    description: 'unknown client',
    challenge: 'Basic realm="token"',
  });
  refused(t, await introspect({ token: 'a', client_id: server.clientId }, {}), {
    status: 401,
    error: 'invalid_client',
    description: 'this client authenticates with client_secret_basic',
  });
  refused(t, await introspect({ token: 'a' }, { authorization: 'Bearer abc' }), {
    status: 401,
    error: 'invalid_client',
    description: 'the Authorization header is not valid Basic client authentication',
    challenge: 'Bearer realm="token"',
  });
});

t.test('rate limited like revocation (per client and IP)', async (t) => {
  const limited = await buildTestApp(t, { env: { RATE_LIMITS: 'on', RATE_LIMIT_TOKEN: '2/60' }, database });
  const call = () =>
    limited.app.inject({
      method: 'POST',
      url: INTROSPECT,
      remoteAddress: '10.9.8.7',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...asServer },
      payload: new URLSearchParams({ token: 'u'.repeat(43) }).toString(),
    });
  t.equal((await call()).statusCode, 200);
  t.equal((await call()).statusCode, 200);
  const res = await call();
  t.equal(res.statusCode, 429);
  t.equal(res.json().error, 'temporarily_unavailable');
  t.match(res.headers['retry-after'], /^\d+$/);
  t.match(res.headers['cache-control'], /no-store/);
});

t.test('private_key_jwt: the caller signs an assertion whose audience may be this endpoint', async (t) => {
  const { privateKey, publicKey } = await jose.generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: 'k1' } as { kty: string };
  const signer = await app.services.applications.create(
    {
      clientName: 'Signed service',
      redirectUris: [redirectUri],
      tokenEndpointAuthMethod: 'private_key_jwt',
      grantTypes: ['client_credentials'],
      jwks: { keys: [jwk] },
    },
    ctx,
  );
  const assertion = (aud: string) =>
    new jose.SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(signer.clientId)
      .setSubject(signer.clientId)
      .setAudience(aud)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
  const auth = async (aud: string) => ({
    client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
    client_assertion: await assertion(aud),
  });
  const issued = await post('/api/auth/oauth2/token', {
    grant_type: 'client_credentials',
    ...(await auth(`${config.issuer}/oauth2/token`)),
  });
  t.equal(issued.statusCode, 200);
  const token = issued.json().access_token as string;
  const res = await introspect({ token, ...(await auth(`${config.issuer}/oauth2/introspect`)) }, {});
  t.equal(res.json().active, true);
  t.equal(res.json().client_id, signer.clientId);
  refused(t, await introspect({ token, ...(await auth(`${config.issuer}/oauth2/revoke`)) }, {}), {
    status: 401,
    error: 'invalid_client',
    description: 'the client assertion is invalid',
  });
});
