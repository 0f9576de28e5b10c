// Discovery metadata, the JWKS (public members, RFC 7638 kids, keys shared through the database) and
// UserInfo (Bearer header only, RFC 6750 WWW-Authenticate, scope-gated claims).
import t, { type Test } from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import * as jose from 'jose';
import { buildTestApp } from '../helpers/app.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken, hashToken } from '../../src/oauth/tokens.js';
import { KeyStore } from '../../src/services/key-store.js';
import { cookiesOf } from '../helpers/flow.js';

// These tests fake expiry, revocation and impossible rows with raw SQL, which no invalidation announces: the
// bearer cache is off so that every request asks the database (the cache: test/integration/bearer-cache.test.ts).
const { app, database, config } = await buildTestApp(t, { env: { BEARER_CACHE_SECONDS: '0' } });
const actor = { actor: 'test' };
const BASE_URL = 'http://localhost:3000';
const ISSUER = `${BASE_URL}/api/auth`;
const DISCOVERY = '/api/auth/.well-known/openid-configuration';
const USERINFO = '/api/auth/oauth2/userinfo';
const REDIRECT = 'https://rp.example.com/callback';
const PASSWORD = 'correct horse battery staple';
const PUBLIC_MEMBERS = new Set(['kty', 'crv', 'x', 'y', 'n', 'e', 'kid', 'alg', 'use']);
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const client = await app.services.applications.create(
  {
    clientName: 'UserInfo RP',
    redirectUris: [REDIRECT],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  },
  actor,
);

type Jar = Record<string, string>;

let counter = 0;
/** A user signed in through the hosted sign-in form. */
async function signedInUser(label: string, fields: { name?: string; givenName?: string; permissions?: string[] } = {}) {
  const email = `${label}-${++counter}@example.com`;
  const user = await app.services.users.create({ email, password: PASSWORD, emailVerified: true, ...fields }, actor);
  const page = await app.inject({ method: 'GET', url: '/login/sign-in' });
  const jar = cookiesOf(page);
  const res = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      ...BrowserClient.hiddenFields(page.body, '/login/sign-in'),
      email,
      password: PASSWORD,
    }).toString(),
  });
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode}`);
  return { user, email, jar: { ...jar, ...cookiesOf(res) } };
}

/** Authorize (consenting when asked) and exchange the code: the token response. */
async function tokensFor(
  jar: Jar,
  scope: string,
  server: FastifyInstance = app,
): Promise<{ access_token: string; id_token: string; scope: string }> {
  const verifier = generateToken();
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope,
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  });
  let res = await server.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
  // The pending request is bound to this browser by a cookie set here.
  jar = { ...jar, ...cookiesOf(res) };
  let location = new URL(String(res.headers.location));
  if (location.pathname === '/login/consent') {
    const page = await server.inject({ method: 'GET', url: `${location.pathname}${location.search}`, cookies: jar });
    res = await server.inject({
      method: 'POST',
      url: '/login/consent',
      cookies: { ...jar, ...cookiesOf(page) },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        ...BrowserClient.hiddenFields(page.body, '/login/consent'),
        decision: 'allow',
      }).toString(),
    });
    location = new URL(String(res.headers.location));
  }
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${res.headers.location}`);
  const exchanged = await server.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: client.clientId,
    }).toString(),
  });
  if (exchanged.statusCode !== 200) throw new Error(`token: ${exchanged.statusCode} ${exchanged.body}`);
  return exchanged.json();
}

async function userinfo(
  headers: Record<string, string> = {},
  options: { method?: 'GET' | 'POST'; url?: string; payload?: string } = {},
) {
  return app.inject({
    method: options.method ?? 'GET',
    url: options.url ?? USERINFO,
    headers,
    ...(options.payload !== undefined && { payload: options.payload }),
  });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

function expect401(t: Test, res: LightMyRequestResponse, options: { tokenSent: boolean; label: string }) {
  const { label } = options;
  t.equal(res.statusCode, 401, `${label}: 401`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  const challenge = String(res.headers['www-authenticate']);
  if (options.tokenSent) {
    t.match(challenge, /^Bearer /, `${label}: a Bearer challenge`);
    t.match(challenge, /error="invalid_token"/, `${label}: error="invalid_token"`);
  } else {
    t.equal(challenge, 'Bearer', `${label}: exactly "Bearer" when no token was sent (RFC 6750 §3.1)`);
  }
  t.notMatch(res.body, /"sub"/, `${label}: no claims`);
}

t.test('discovery: issuer and every URL derive from BASE_URL', async (t) => {
  const res = await app.inject({ method: 'GET', url: DISCOVERY });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.match(res.headers['cache-control'], /max-age=\d+/, 'cacheable');
  t.equal(res.headers['access-control-allow-origin'], '*', 'any origin may read it');
  const doc = res.json();
  t.equal(doc.issuer, ISSUER, 'issuer is exactly ${BASE_URL}/api/auth');
  t.equal(config.issuer, ISSUER);
  t.equal(doc.authorization_endpoint, `${ISSUER}/oauth2/authorize`);
  t.equal(doc.token_endpoint, `${ISSUER}/oauth2/token`);
  t.equal(doc.userinfo_endpoint, `${ISSUER}/oauth2/userinfo`);
  t.equal(doc.jwks_uri, `${ISSUER}/jwks`);
  t.same(doc.response_types_supported, ['code']);
  t.same(doc.response_modes_supported, ['query', 'form_post']);
  t.same(doc.code_challenge_methods_supported, ['S256']);
  // Issue 33: public clients (none) and confidential ones, the same methods at every client endpoint.
  const methods = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'];
  const algs = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
  for (const endpoint of ['token', 'revocation', 'introspection']) {
    t.same(doc[`${endpoint}_endpoint_auth_methods_supported`], methods, `${endpoint}: auth methods`);
    t.same(doc[`${endpoint}_endpoint_auth_signing_alg_values_supported`], algs, `${endpoint}: asymmetric algs only`);
  }
  t.equal(doc.revocation_endpoint, `${ISSUER}/oauth2/revoke`);
  t.equal(doc.introspection_endpoint, `${ISSUER}/oauth2/introspect`);
  t.same(doc.subject_types_supported, ['public']);
  t.equal(doc.authorization_response_iss_parameter_supported, true);
  t.same(doc.scopes_supported, ['openid', 'profile', 'email', 'offline_access', 'permissions']);
  t.ok(doc.grant_types_supported.includes('authorization_code'));
  t.ok(doc.id_token_signing_alg_values_supported.includes('RS256'), 'RS256 (OIDC Discovery requires it)');
  for (const claim of [
    'sub',
    'email',
    'email_verified',
    'name',
    'given_name',
    'family_name',
    'picture',
    'permissions',
  ]) {
    t.ok(doc.claims_supported.includes(claim), `claims_supported has ${claim}`);
  }
  t.equal(doc.request_parameter_supported, false, 'request objects are refused (request_not_supported)');
  t.equal(doc.request_uri_parameter_supported, false);

  // Every advertised endpoint exists on this app (the issuer origin is this app's).
  for (const [name, value] of Object.entries(doc)) {
    if (!/_(endpoint|uri)$/.test(name) || typeof value !== 'string') continue;
    t.ok(value.startsWith(`${ISSUER}/`), `${name} is under the issuer`);
    const path = new URL(value).pathname;
    const get = await app.inject({ method: 'GET', url: path });
    const post = await app.inject({
      method: 'POST',
      url: path,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: '',
    });
    t.ok(get.statusCode !== 404 || post.statusCode !== 404, `${name} (${path}) exists`);
  }
});

t.test('RFC 8414 metadata: under the issuer path and at the host root, the same document', async (t) => {
  const discovery = await app.inject({ method: 'GET', url: DISCOVERY });
  for (const url of [
    '/.well-known/oauth-authorization-server/api/auth',
    '/api/auth/.well-known/oauth-authorization-server',
  ]) {
    const res = await app.inject({ method: 'GET', url, headers: { origin: 'https://anyone.example' } });
    t.equal(res.statusCode, 200, url);
    t.match(res.headers['content-type'], /^application\/json/);
    t.equal(res.headers['cache-control'], 'public, max-age=300');
    t.equal(res.headers['access-control-allow-origin'], '*');
    t.equal(res.body, discovery.body, `${url}: the discovery document`);
    t.equal(res.json().issuer, ISSUER, 'RFC 8414 §3.3: the issuer exactly');
  }
  const root = await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
  t.equal(root.statusCode, 404, 'not at the bare root: the issuer has a path (RFC 8414 §3)');
  const other = await app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server/api/other' });
  t.equal(other.statusCode, 404, 'another path names another issuer');

  // BASE_URL with a path: the well-known segment goes between the host and the whole issuer path.
  const second = await buildTestApp(t, { database, env: { BASE_URL: 'https://id.example.com/tenant' } });
  const issuer = 'https://id.example.com/tenant/api/auth';
  const meta = await second.app.inject({
    method: 'GET',
    url: '/.well-known/oauth-authorization-server/tenant/api/auth',
  });
  t.equal(meta.statusCode, 200);
  t.equal(meta.json().issuer, issuer);
  t.equal(meta.json().token_endpoint, `${issuer}/oauth2/token`);
  const underIssuer = await second.app.inject({
    method: 'GET',
    url: '/tenant/api/auth/.well-known/oauth-authorization-server',
  });
  t.equal(underIssuer.body, meta.body);
});

t.test('discovery: the issuer does not follow the Host or X-Forwarded-* headers', async (t) => {
  const plain = (await app.inject({ method: 'GET', url: DISCOVERY })).body;
  for (const headers of [
    { host: 'evil.example.com' },
    { host: 'evil.example.com:8443', 'x-forwarded-host': 'evil.example.com', 'x-forwarded-proto': 'https' },
    { 'x-forwarded-host': 'evil.example.com', forwarded: 'host=evil.example.com;proto=https' },
  ]) {
    const res = await app.inject({ method: 'GET', url: DISCOVERY, headers });
    t.equal(res.statusCode, 200);
    t.equal(res.body, plain, `unchanged with ${JSON.stringify(headers)}`);
    t.notMatch(res.body, /evil/);
  }
  // The same holds for the iss of authorization responses.
  const res = await app.inject({
    method: 'GET',
    url:
      '/api/auth/oauth2/authorize?' +
      `${new URLSearchParams({ client_id: client.clientId, redirect_uri: REDIRECT, response_type: 'token' })}`,
    headers: { host: 'evil.example.com', 'x-forwarded-host': 'evil.example.com' },
  });
  t.equal(new URL(String(res.headers.location)).searchParams.get('iss'), ISSUER);
});

t.test('JWKS: public members only, kid is the RFC 7638 thumbprint', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/auth/jwks' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/jwk-set\+json/);
  t.match(res.headers['cache-control'], /max-age=\d+/);
  t.equal(res.headers['access-control-allow-origin'], '*');
  const { keys, ...rest } = res.json();
  t.same(rest, {}, 'only "keys"');
  t.ok(keys.length >= 1);
  for (const key of keys as jose.JWK[]) {
    for (const m of Object.keys(key)) t.ok(PUBLIC_MEMBERS.has(m), `${key.kid}: ${m} is a public member`);
    for (const m of PRIVATE_MEMBERS) t.notOk(m in key, `${key.kid}: no ${m}`);
    t.equal(key.kid, await jose.calculateJwkThumbprint(key, 'sha256'), 'kid = SHA-256 JWK thumbprint');
    t.equal(key.use, 'sig');
    t.equal(key.kty, 'RSA');
    t.equal(key.alg, 'RS256');
    await t.resolves(jose.importJWK(key, key.alg), 'importable');
  }
  t.notMatch(res.body, /"d"\s*:/, 'no private exponent anywhere in the body');

  // The current key signs ID tokens and is in the set.
  const { jar } = await signedInUser('jwks');
  const tokens = await tokensFor(jar, 'openid');
  const header = jose.decodeProtectedHeader(tokens.id_token);
  t.ok(
    keys.some((k: jose.JWK) => k.kid === header.kid),
    'the ID token kid is published',
  );
  await t.resolves(
    jose.jwtVerify(tokens.id_token, jose.createLocalJWKSet({ keys }), { issuer: ISSUER, audience: client.clientId }),
  );

  // The JWKS is exactly the stored keys (current and next), each with its private part encrypted.
  const rows = await database.db.selectFrom('signing_keys').selectAll().execute();
  t.same(
    rows.map((r) => r.kid).sort(),
    keys.map((k: jose.JWK) => k.kid).sort(),
    'every stored key is published, nothing else',
  );
  t.equal(rows.filter((r) => r.state === 'current').length, 1, 'one current key');
  t.equal(rows.find((r) => r.state === 'current')!.kid, header.kid, 'the current key signs');
  for (const row of rows) {
    t.match(row.private_jwk, /^v1\./, `${row.kid}: sealed`);
    t.notMatch(row.private_jwk, /"d"/, `${row.kid}: not in clear`);
    t.notOk('d' in (row.public_jwk as Record<string, unknown>), `${row.kid}: the public JWK has no d`);
  }
});

t.test('two apps on the same database share one key; BASE_URL with a path moves the issuer', async (t) => {
  const keysBefore = (await app.inject({ method: 'GET', url: '/api/auth/jwks' })).json();
  const second = await buildTestApp(t, { database, env: { BASE_URL: 'https://id.example.com/tenant/' } });
  const issuer = 'https://id.example.com/tenant/api/auth';
  t.equal(second.config.issuer, issuer, 'trailing slash stripped');
  const doc = (
    await second.app.inject({ method: 'GET', url: '/tenant/api/auth/.well-known/openid-configuration' })
  ).json();
  t.equal(doc.issuer, issuer);
  t.equal(doc.jwks_uri, `${issuer}/jwks`);
  t.equal(doc.authorization_endpoint, `${issuer}/oauth2/authorize`);
  const keysAfter = (await second.app.inject({ method: 'GET', url: '/tenant/api/auth/jwks' })).json();
  t.same(keysAfter, keysBefore, 'the same JWKS');
  const rows = await database.db.selectFrom('signing_keys').select(['kid', 'state']).execute();
  t.same(
    rows.map((r) => r.state).sort(),
    ['current', 'next'],
    'still one current (and one next) key: the second start generated none',
  );
  const currentKid = rows.find((r) => r.state === 'current')!.kid;
  t.equal((await app.services.keys.currentKey()).kid, currentKid);
  t.equal((await second.app.services.keys.currentKey()).kid, currentKid, 'both sign with the same key');
});

t.test('key stores starting at once on a database without keys agree on one key', async (t) => {
  // Inside a transaction that is rolled back, so the file's own key stays as it is.
  class Rollback extends Error {}
  const kidsOf = async () =>
    (await database.db.selectFrom('signing_keys').select('kid').orderBy('kid').execute()).map((r) => r.kid);
  const before = await kidsOf();
  const result = await database.db
    .transaction()
    .execute(async (trx) => {
      await trx.deleteFrom('signing_keys').execute();
      const stores = [1, 2, 3].map(() => new KeyStore(trx, config.secretKey!));
      await Promise.all(stores.map((s) => s.init()));
      const rows = await trx.selectFrom('signing_keys').select(['kid', 'state']).execute();
      const kids = await Promise.all(stores.map(async (s) => (await s.currentKey()).kid));
      const sets = await Promise.all(stores.map(async (s) => JSON.stringify(await s.jwks())));
      throw Object.assign(new Rollback(), { rows, kids, sets });
    })
    .catch((error: unknown) => {
      if (error instanceof Rollback)
        return error as Rollback & { rows: Array<{ kid: string; state: string }>; kids: string[]; sets: string[] };
      throw error;
    });
  t.equal(result.rows.length, 1, 'one key was stored');
  t.equal(result.rows[0]!.state, 'current');
  t.same(result.kids, [result.rows[0]!.kid, result.rows[0]!.kid, result.rows[0]!.kid], 'every store signs with it');
  t.equal(new Set(result.sets).size, 1, 'every store publishes the same JWKS');
  t.same(await kidsOf(), before, 'rolled back: the file keys are as they were');
});

t.test('userinfo: the claims of the granted scopes, no-store, by GET or POST', async (t) => {
  const { user, email, jar } = await signedInUser('claims', {
    name: 'Uma User',
    givenName: 'Uma',
    permissions: ['a:read'],
  });
  const all = await tokensFor(jar, 'openid profile email permissions');
  const res = await userinfo(bearer(all.access_token));
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.same(res.json(), {
    sub: user.id,
    name: 'Uma User',
    given_name: 'Uma',
    email,
    email_verified: true,
    permissions: ['a:read'],
  });
  t.equal(res.json().sub, jose.decodeJwt(all.id_token).sub, 'sub matches the ID token');

  const post = await userinfo(bearer(all.access_token), { method: 'POST' });
  t.equal(post.statusCode, 200, 'POST with the header');
  t.same(post.json(), res.json());
  const postForm = await userinfo(
    { ...bearer(all.access_token), 'content-type': 'application/x-www-form-urlencoded' },
    { method: 'POST', payload: 'x=1' },
  );
  t.equal(postForm.statusCode, 200, 'POST with a form body and the header');

  t.same(
    (await userinfo({ authorization: `bearer ${all.access_token}` })).json().sub,
    user.id,
    'the scheme is case-insensitive (RFC 7235)',
  );
  const narrow = await tokensFor(jar, 'openid email');
  t.same(
    (await userinfo(bearer(narrow.access_token))).json(),
    { sub: user.id, email, email_verified: true },
    'only what was granted',
  );
});

t.test('userinfo: a missing token is 401 with exactly "WWW-Authenticate: Bearer"', async (t) => {
  expect401(t, await userinfo(), { tokenSent: false, label: 'no header' });
  expect401(t, await userinfo({}, { method: 'POST' }), { tokenSent: false, label: 'POST without header' });
  expect401(t, await userinfo({ authorization: '' }), { tokenSent: false, label: 'empty header' });
});

t.test(
  'userinfo: another scheme (a bare Bearer challenge), a malformed header, ' +
    'unknown, expired and revoked tokens (invalid_token) are 401',
  async (t) => {
    const { jar } = await signedInUser('bad-tokens');
    const good = await tokensFor(jar, 'openid');
    t.equal((await userinfo(bearer(good.access_token))).statusCode, 200);

    expect401(t, await userinfo({ authorization: `Basic ${Buffer.from('user:pass').toString('base64')}` }), {
      tokenSent: false,
      label: 'Basic scheme',
    });
    expect401(t, await userinfo({ authorization: `Basic ${good.access_token}` }), {
      tokenSent: false,
      label: 'a valid token under Basic',
    });
    expect401(t, await userinfo({ authorization: 'Bearer' }), { tokenSent: true, label: 'Bearer without a token' });
    expect401(t, await userinfo({ authorization: `Bearer ${good.access_token} extra` }), {
      tokenSent: true,
      label: 'two tokens',
    });
    expect401(t, await userinfo({ authorization: `Bearer "${good.access_token}"` }), {
      tokenSent: true,
      label: 'a quoted token',
    });
    expect401(t, await userinfo({ authorization: `Token ${good.access_token}` }), {
      tokenSent: false,
      label: 'Token scheme',
    });
    expect401(t, await userinfo(bearer(generateToken())), { tokenSent: true, label: 'unknown token' });
    expect401(t, await userinfo(bearer('x'.repeat(300))), { tokenSent: true, label: 'a very long token' });
    expect401(t, await userinfo(bearer(hashToken(good.access_token))), { tokenSent: true, label: 'the stored hash' });
    expect401(t, await userinfo(bearer(good.id_token)), { tokenSent: true, label: 'the ID token' });

    const expired = await tokensFor(jar, 'openid');
    await database.db
      .updateTable('access_tokens')
      .set({ expires_at: sql`now() - interval '1 second'` })
      .where('token_hash', '=', hashToken(expired.access_token))
      .execute();
    expect401(t, await userinfo(bearer(expired.access_token)), { tokenSent: true, label: 'expired token' });

    const revoked = await tokensFor(jar, 'openid');
    await database.db
      .updateTable('access_tokens')
      .set({ revoked_at: sql`now()` })
      .where('token_hash', '=', hashToken(revoked.access_token))
      .execute();
    expect401(t, await userinfo(bearer(revoked.access_token)), { tokenSent: true, label: 'revoked token' });

    t.equal((await userinfo(bearer(good.access_token))).statusCode, 200, 'the good token still works');
  },
);

t.test(
  'userinfo: the token in the Authorization header, or in a form-encoded POST body; never the query',
  async (t) => {
    const { jar } = await signedInUser('query-token');
    const { access_token: token } = await tokensFor(jar, 'openid');
    expect401(t, await userinfo({}, { url: `${USERINFO}?access_token=${token}` }), {
      tokenSent: false,
      label: 'query string',
    });
    // RFC 6750 §2.2, OIDC Core §5.3.1 (conformance module oidcc-userinfo-post-body).
    const body = await userinfo(
      { 'content-type': 'application/x-www-form-urlencoded' },
      { method: 'POST', payload: `access_token=${token}` },
    );
    t.equal(body.statusCode, 200, 'form body (RFC 6750 §2.2)');
    t.equal(body.json().sub, (await userinfo(bearer(token))).json().sub);
    t.equal(body.headers['cache-control'], 'no-store');
    expect401(
      t,
      await userinfo(
        { 'content-type': 'application/x-www-form-urlencoded' },
        { method: 'POST', payload: `access_token=${token}x` },
      ),
      { tokenSent: true, label: 'an unknown token in the form body' },
    );
    expect401(
      t,
      await userinfo(
        { 'content-type': 'application/x-www-form-urlencoded' },
        { method: 'POST', payload: `access_token=${token}&access_token=${token}` },
      ),
      { tokenSent: true, label: 'a repeated access_token in the form body' },
    );
    expect401(
      t,
      await userinfo(
        { 'content-type': 'application/json' },
        { method: 'POST', payload: JSON.stringify({ access_token: token }) },
      ),
      { tokenSent: false, label: 'a JSON body is not a form body' },
    );
    expect401(
      t,
      await userinfo(
        { 'content-type': 'application/x-www-form-urlencoded' },
        { method: 'POST', url: `${USERINFO}?access_token=${token}`, payload: '' },
      ),
      {
        tokenSent: false,
        label: 'POST query string',
      },
    );
    expect401(t, await userinfo({ cookie: `access_token=${token}` }), { tokenSent: false, label: 'a cookie' });
  },
);

t.test('userinfo: a disabled user or application is 401', async (t) => {
  const { user, jar } = await signedInUser('disabled');
  const tokens = await tokensFor(jar, 'openid email');
  t.equal((await userinfo(bearer(tokens.access_token))).statusCode, 200);
  await app.services.users.setDisabled(user.id, true, actor);
  expect401(t, await userinfo(bearer(tokens.access_token)), { tokenSent: true, label: 'disabled user' });
  expect401(t, await userinfo(bearer(tokens.access_token), { method: 'POST' }), {
    tokenSent: true,
    label: 'disabled user, POST',
  });

  const soon = await app.services.applications.create({ clientName: 'Soon Off', redirectUris: [REDIRECT] }, actor);
  const other = await signedInUser('app-off');
  const verifier = generateToken();
  const authorize = await app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: soon.clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      code_challenge: s256Challenge(verifier),
      code_challenge_method: 'S256',
    })}`,
    cookies: other.jar,
  });
  const consentUrl = new URL(String(authorize.headers.location));
  other.jar = { ...other.jar, ...cookiesOf(authorize) };
  const page = await app.inject({
    method: 'GET',
    url: `${consentUrl.pathname}${consentUrl.search}`,
    cookies: other.jar,
  });
  const allowed = await app.inject({
    method: 'POST',
    url: '/login/consent',
    cookies: { ...other.jar, ...cookiesOf(page) },
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      ...BrowserClient.hiddenFields(page.body, '/login/consent'),
      decision: 'allow',
    }).toString(),
  });
  const code = new URL(String(allowed.headers.location)).searchParams.get('code')!;
  const exchanged = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: REDIRECT,
      client_id: soon.clientId,
    }).toString(),
  });
  const token = exchanged.json().access_token;
  t.equal((await userinfo(bearer(token))).statusCode, 200);
  await app.services.applications.setEnabled(soon.clientId, false, actor);
  expect401(t, await userinfo(bearer(token)), { tokenSent: true, label: 'disabled application' });
});

t.test('userinfo: a token without openid is 403 insufficient_scope', async (t) => {
  const { jar } = await signedInUser('no-openid');
  const tokens = await tokensFor(jar, 'openid profile');
  // Every issued token has openid; make one without it.
  await database.db
    .updateTable('access_tokens')
    .set({ scope: 'profile' })
    .where('token_hash', '=', hashToken(tokens.access_token))
    .execute();
  const res = await userinfo(bearer(tokens.access_token));
  t.equal(res.statusCode, 403);
  t.match(res.headers['www-authenticate'], /^Bearer .*error="insufficient_scope"/);
  t.match(res.headers['www-authenticate'], /scope="openid"/);
  t.notMatch(res.body, /"sub"/);
});

t.test(
  'userinfo 401 bodies are { error: "UNAUTHORIZED" } ' +
    '(spec, Authentication: Bearer tokens for external and UserInfo calls, item 3)',
  async (t) => {
    const cases: Array<[string, Record<string, string>]> = [
      ['no header', {}],
      ['Basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
      ['unknown token', bearer(generateToken())],
    ];
    for (const [label, headers] of cases) {
      const res = await userinfo(headers);
      t.equal(res.statusCode, 401, label);
      t.match(res.json(), { error: 'UNAUTHORIZED' }, label);
    }
  },
);

t.test(
  'userinfo: a token sent two ways is 400 invalid_request, refused without a lookup (RFC 6750 §2, §3.1)',
  async (t) => {
    const { jar } = await signedInUser('two-ways');
    const { access_token: token } = await tokensFor(jar, 'openid');
    const form = { ...bearer(token), 'content-type': 'application/x-www-form-urlencoded' };
    const cases: Array<[string, Record<string, string>, { method?: 'GET' | 'POST'; url?: string; payload?: string }]> =
      [
        ['GET: header and query', bearer(token), { url: `${USERINFO}?access_token=${token}` }],
        ['GET: header and an empty query parameter', bearer(token), { url: `${USERINFO}?access_token=` }],
        ['POST: header and query', bearer(token), { method: 'POST', url: `${USERINFO}?access_token=${token}` }],
        ['POST: header and form body', form, { method: 'POST', payload: `access_token=${token}` }],
        [
          'POST: header and a different token in the form body',
          form,
          { method: 'POST', payload: 'access_token=other&x=1' },
        ],
      ];
    for (const [label, headers, options] of cases) {
      const res = await userinfo(headers, options);
      t.equal(res.statusCode, 400, label);
      t.same(Object.keys(res.json()).sort(), ['error', 'error_description'], `${label}: the OAuth error body`);
      t.equal(res.json().error, 'invalid_request', label);
      t.match(
        res.headers['www-authenticate'],
        /^Bearer error="invalid_request", error_description="[\x20-\x21\x23-\x5B\x5D-\x7E]+"$/,
        `${label}: RFC 6750 §3 challenge`,
      );
      t.equal(res.headers['cache-control'], 'no-store', label);
      t.notMatch(res.body, /"sub"/, `${label}: no claims`);
    }
    t.equal((await userinfo(bearer(token))).statusCode, 200, 'the header alone still works');
    t.equal(
      (await userinfo(form, { method: 'POST', payload: 'x=1' })).statusCode,
      200,
      'a form body without access_token is fine',
    );
    expect401(t, await userinfo({}, { url: `${USERINFO}?access_token=${token}` }), {
      tokenSent: false,
      label: 'the query alone is no token, as before',
    });

    // No lookup: an app whose database is gone answers 400, not 500.
    const broken = await buildTestApp(t);
    await broken.database.close();
    const res = await broken.app.inject({
      method: 'GET',
      url: `${USERINFO}?access_token=${token}`,
      headers: bearer(token),
    });
    t.equal(res.statusCode, 400, 'the closed database is never reached');
    t.equal(res.json().error, 'invalid_request');
  },
);

t.test(
  "userinfo CORS: preflight 204 for any registered origin; actual answers readable by the token client's origins only",
  async (t) => {
    const spa = await app.services.applications.create(
      {
        clientName: 'UserInfo SPA',
        redirectUris: ['https://spa-ui.example.com/cb'],
        allowedWebOrigins: ['https://spa-ui.example.com'],
      },
      actor,
    );
    const otherApp = await app.services.applications.create(
      {
        clientName: 'Other SPA',
        redirectUris: ['https://other-ui.example.com/cb'],
        allowedWebOrigins: ['https://other-ui.example.com'],
      },
      actor,
    );
    const { jar } = await signedInUser('cors');
    // tokensFor speaks for the file's client; register an origin for it too.
    await app.services.applications.update(client.clientId, { allowedWebOrigins: ['https://rp.example.com'] }, actor);
    const { access_token: token } = await tokensFor(jar, 'openid');

    for (const origin of ['https://rp.example.com', 'https://spa-ui.example.com', 'https://other-ui.example.com']) {
      const pre = await app.inject({
        method: 'OPTIONS',
        url: USERINFO,
        headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
      t.equal(pre.statusCode, 204, `preflight from ${origin}`);
      t.equal(pre.headers['access-control-allow-origin'], origin);
      t.equal(pre.headers['access-control-allow-methods'], 'GET, POST, OPTIONS');
      t.equal(pre.headers['access-control-allow-headers'], 'Authorization, Content-Type');
      t.notOk(pre.headers['access-control-allow-credentials']);
      t.match(pre.headers.vary, /Origin/);
    }
    for (const origin of ['https://evil.example', undefined]) {
      const denied = await app.inject({
        method: 'OPTIONS',
        url: USERINFO,
        headers: { ...(origin && { origin }), 'access-control-request-method': 'GET' },
      });
      t.equal(denied.statusCode, 204);
      t.notOk(denied.headers['access-control-allow-origin'], `no CORS for ${origin ?? 'no origin'}`);
    }

    for (const method of ['GET', 'POST'] as const) {
      const own = await userinfo({ ...bearer(token), origin: 'https://rp.example.com' }, { method });
      t.equal(own.statusCode, 200, method);
      t.equal(
        own.headers['access-control-allow-origin'],
        'https://rp.example.com',
        `${method}: the token's client's origin may read it`,
      );
      t.match(own.headers.vary, /Origin/);
      t.notOk(own.headers['access-control-allow-credentials']);
      for (const origin of ['https://spa-ui.example.com', 'https://evil.example']) {
        const res = await userinfo({ ...bearer(token), origin }, { method });
        t.equal(res.statusCode, 200);
        t.notOk(res.headers['access-control-allow-origin'], `${method} from ${origin}: not readable`);
        t.match(res.headers.vary, /Origin/);
      }
    }
    const unknown = await userinfo({ ...bearer(generateToken()), origin: 'https://spa-ui.example.com' });
    t.equal(unknown.statusCode, 401);
    t.equal(
      unknown.headers['access-control-allow-origin'],
      'https://spa-ui.example.com',
      'a 401 that speaks for no client is readable by registered origins, as on /api/external/*',
    );
    t.notOk(
      (await userinfo({ ...bearer(generateToken()), origin: 'https://evil.example' })).headers[
        'access-control-allow-origin'
      ],
    );

    await app.services.applications.setEnabled(spa.clientId, false, actor);
    await app.services.applications.setEnabled(otherApp.clientId, false, actor);
    await app.services.applications.update(client.clientId, { allowedWebOrigins: [] }, actor);
  },
);
