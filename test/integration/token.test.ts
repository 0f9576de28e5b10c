// POST /api/auth/oauth2/token, grant_type=authorization_code: the success body, every error (status,
// body, no-store headers), code binding (client, redirect_uri, PKCE), expiry, replay and concurrency.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import * as jose from 'jose';
import { createHash } from 'node:crypto';
import { buildTestApp } from '../helpers/app.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { openCode, sealCode } from '../../src/oauth/sealed-code.js';
import { generateToken, hashToken } from '../../src/oauth/tokens.js';
import { cookiesOf } from '../helpers/flow.js';
import { oauthErrorLines } from '../helpers/oauth-log.js';

const { app, database, config, logs } = await buildTestApp(t);
const actor = { actor: 'test' };
const ISSUER = 'http://localhost:3000/api/auth';
const TOKEN = '/api/auth/oauth2/token';
const REDIRECT = 'https://rp.example.com/callback';
const SECOND_REDIRECT = 'http://127.0.0.1:8123/cb';
const PASSWORD = 'correct horse battery staple';
/** RFC 6749 §5.2: error_description uses only %x20-21 / %x23-5B / %x5D-7E. */
const ERROR_DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

const client = await app.services.applications.create(
  {
    clientName: 'Token RP',
    redirectUris: [REDIRECT, SECOND_REDIRECT],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  },
  actor,
);
const otherClient = await app.services.applications.create({ clientName: 'Other RP', redirectUris: [REDIRECT] }, actor);
const disabledClient = await app.services.applications.create(
  { clientName: 'Disabled RP', redirectUris: [REDIRECT], enabled: false },
  actor,
);

type Params = Record<string, string | string[] | undefined>;
type Jar = Record<string, string>;

function encode(params: Params): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
  }
  return q.toString();
}

/** Signs in through the hosted sign-in form; returns the cookie jar with the session. */
async function signIn(email: string): Promise<Jar> {
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
  return { ...jar, ...cookiesOf(res) };
}

let counter = 0;
async function createUser(label: string) {
  const email = `${label}-${++counter}@example.com`;
  const user = await app.services.users.create(
    { email, password: PASSWORD, emailVerified: true, name: 'Token Person', permissions: ['reports:read'] },
    actor,
  );
  return { user, jar: await signIn(email) };
}

const main = await createUser('main');

/**
 * A fresh authorization code: authorize with the session, allowing consent when the page asks for it.
 */
async function getCode(
  options: {
    jar?: Jar;
    clientId?: string;
    redirectUri?: string;
    scope?: string;
    nonce?: string | undefined;
    verifier?: string;
  } = {},
) {
  const jar = options.jar ?? main.jar;
  const verifier = options.verifier ?? generateToken();
  const redirectUri = options.redirectUri ?? REDIRECT;
  const nonce = 'nonce' in options ? options.nonce : generateToken();
  const query = encode({
    client_id: options.clientId ?? client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: options.scope ?? 'openid profile',
    state: 'st',
    nonce,
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  });
  let res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
  let location = new URL(String(res.headers.location));
  if (location.pathname === '/login/consent') {
    // The browser keeps the request-binding cookie that authorize set.
    const browser = { ...jar, ...cookiesOf(res) };
    const page = await app.inject({ method: 'GET', url: `${location.pathname}${location.search}`, cookies: browser });
    const merged = { ...browser, ...cookiesOf(page) };
    res = await app.inject({
      method: 'POST',
      url: '/login/consent',
      cookies: merged,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        ...BrowserClient.hiddenFields(page.body, '/login/consent'),
        decision: 'allow',
      }).toString(),
    });
    location = new URL(String(res.headers.location));
  }
  const code = location.searchParams.get('code');
  if (!code) throw new Error(`no code: ${res.statusCode} ${res.headers.location}`);
  return { code, verifier, redirectUri, nonce, clientId: options.clientId ?? client.clientId };
}

function exchangeForm(
  grant: { code: string; verifier: string; redirectUri: string; clientId: string },
  overrides: Params = {},
): Params {
  return {
    grant_type: 'authorization_code',
    code: grant.code,
    code_verifier: grant.verifier,
    redirect_uri: grant.redirectUri,
    client_id: grant.clientId,
    ...overrides,
  };
}

async function token(form: Params, headers: Record<string, string> = {}) {
  return app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: encode(form),
  });
}

async function userinfo(accessToken: string) {
  return app.inject({
    method: 'GET',
    url: '/api/auth/oauth2/userinfo',
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

function expectError(
  t: Test,
  res: LightMyRequestResponse,
  status: number,
  error: string,
  description?: RegExp,
  label = error,
) {
  t.equal(res.statusCode, status, `${label}: ${status}`);
  t.match(res.headers['content-type'], /^application\/json/, `${label}: JSON`);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['error', 'error_description'], `${label}: {error, error_description}`);
  t.equal(body.error, error, `${label}: error`);
  t.match(body.error_description, ERROR_DESCRIPTION, `${label}: error_description in the RFC 6749 character set`);
  if (description) t.match(body.error_description, description, `${label}: description`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: Cache-Control: no-store`);
  t.equal(res.headers.pragma, 'no-cache', `${label}: Pragma: no-cache`);
}

const jwks = jose.createLocalJWKSet((await app.inject({ method: 'GET', url: '/api/auth/jwks' })).json());

t.test('success: exactly the token response fields, no-store, and a verifiable ID token', async (t) => {
  const grant = await getCode({ scope: 'openid profile email' });
  const res = await token(exchangeForm(grant));
  t.equal(res.statusCode, 200, res.body);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers.pragma, 'no-cache');
  const body = res.json();
  t.same(
    Object.keys(body).sort(),
    ['access_token', 'expires_in', 'id_token', 'scope', 'token_type'],
    'no refresh_token without offline_access',
  );
  t.equal(body.token_type, 'Bearer');
  t.equal(body.expires_in, 3600);
  t.equal(body.scope, 'openid profile email');
  t.match(body.access_token, /^[A-Za-z0-9_-]{43}$/, '256-bit opaque access token');

  const { payload, protectedHeader } = await jose.jwtVerify(body.id_token, jwks, {
    issuer: ISSUER,
    audience: client.clientId,
    algorithms: ['RS256'],
  });
  t.equal(protectedHeader.typ, 'JWT');
  t.type(protectedHeader.kid, 'string');
  t.equal(payload.sub, main.user.id);
  t.equal(payload.azp, client.clientId);
  t.equal(payload.nonce, grant.nonce);
  t.equal(
    payload.at_hash,
    createHash('sha256').update(body.access_token).digest().subarray(0, 16).toString('base64url'),
  );
  t.equal((payload.exp ?? 0) - (payload.iat ?? 0), config.ttl.idToken);
  t.ok(Math.abs((payload.iat ?? 0) - Date.now() / 1000) < 60, 'iat is now');
  const session = await database.db
    .selectFrom('sessions')
    .selectAll()
    .where('user_id', '=', main.user.id)
    .executeTakeFirstOrThrow();
  t.equal(payload.auth_time, Math.floor(new Date(session.auth_time).getTime() / 1000), 'auth_time is the sign-in time');
  t.equal(payload.sid, session.id);
  t.notOk('email' in payload || 'name' in payload, 'no profile or e-mail claims in the ID token');

  const info = await userinfo(body.access_token);
  t.equal(info.statusCode, 200);
  t.same(info.json(), { sub: main.user.id, name: 'Token Person', email: main.user.email, email_verified: true });

  // Only hashes are stored.
  const stored = await database.db
    .selectFrom('access_tokens')
    .selectAll()
    .where('token_hash', '=', hashToken(body.access_token))
    .executeTakeFirst();
  t.ok(stored, 'stored by hash');
  t.equal(stored?.scope, 'openid profile email');
  // The code is sealed, never stored: spending it created its grant.
  const code = openCode(grant.code, config.secretKey!)!;
  t.equal(code.nonce, grant.nonce, 'the code carries the nonce');
  const spent = await database.db.selectFrom('grants').selectAll().where('id', '=', code.grantId).executeTakeFirst();
  t.ok(spent && !spent.revoked_at, 'the code is spent: its grant exists');
  t.equal(stored?.grant_id, code.grantId, "the access token is the code's grant's");
});

t.test('success: refresh_token only with offline_access; no nonce when none was sent', async (t) => {
  const grant = await getCode({ scope: 'openid offline_access', nonce: undefined });
  const res = await token(exchangeForm(grant));
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
  t.equal(body.scope, 'openid offline_access');
  t.match(body.refresh_token, /^[A-Za-z0-9_-]{43}$/);
  t.not(body.refresh_token, body.access_token);
  const { payload } = await jose.jwtVerify(body.id_token, jwks, { issuer: ISSUER, audience: client.clientId });
  t.notOk('nonce' in payload, 'no nonce claim when the request had none');

  const second = await token(exchangeForm(await getCode({ scope: 'openid' })));
  t.equal(second.json().scope, 'openid');
  t.notOk('refresh_token' in second.json());
  t.same((await userinfo(second.json().access_token)).json(), { sub: main.user.id }, 'openid alone: sub only');
});

t.test('the body must be form-encoded', async (t) => {
  const grant = await getCode();
  const json = await app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(exchangeForm(grant)),
  });
  expectError(t, json, 400, 'invalid_request', /x-www-form-urlencoded/, 'JSON body');
  const badJson = await app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'application/json' },
    payload: '{"grant_type":',
  });
  expectError(t, badJson, 400, 'invalid_request', undefined, 'malformed JSON body');
  const text = await app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'text/plain' },
    payload: encode(exchangeForm(grant)),
  });
  expectError(t, text, 400, 'invalid_request', undefined, 'text/plain body');
  const empty = await app.inject({
    method: 'POST',
    url: TOKEN,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: '',
  });
  expectError(t, empty, 400, 'invalid_request', /grant_type is required/, 'empty body');
  const none = await app.inject({ method: 'POST', url: TOKEN });
  expectError(t, none, 400, 'invalid_request', undefined, 'no body at all');
  const big = await token({ ...exchangeForm(grant), padding: 'x'.repeat(17 * 1024) });
  t.ok(big.statusCode === 400 || big.statusCode === 413, `an oversized body is refused (${big.statusCode})`);
  // The code was never looked at: it still works.
  t.equal((await token(exchangeForm(grant))).statusCode, 200);
});

t.test('grant_type: missing is invalid_request, an unknown one is unsupported_grant_type', async (t) => {
  const grant = await getCode();
  expectError(
    t,
    await token(exchangeForm(grant, { grant_type: undefined })),
    400,
    'invalid_request',
    /grant_type is required/,
    'missing grant_type',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { grant_type: '' })),
    400,
    'invalid_request',
    /grant_type is required/,
    'empty grant_type',
  );
  for (const grantType of [
    'password',
    'implicit',
    'AUTHORIZATION_CODE',
    'urn:ietf:params:oauth:grant-type:device_code',
  ]) {
    expectError(
      t,
      await token(exchangeForm(grant, { grant_type: grantType })),
      400,
      'unsupported_grant_type',
      undefined,
      grantType,
    );
  }
  // client_credentials is supported (issue 33), for confidential clients that may use it: test/integration/
  // client-credentials.test.ts. This public client may not.
  expectError(
    t,
    await token(exchangeForm(grant, { grant_type: 'client_credentials' })),
    400,
    'unauthorized_client',
    /this client may not use this grant type/,
    'client_credentials from a public client',
  );
  // grant_type=refresh_token is covered by test/integration/refresh.test.ts.
  t.equal((await token(exchangeForm(grant))).statusCode, 200, 'the code still works');
});

t.test('client authentication: public clients send client_id alone', async (t) => {
  const grant = await getCode();
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: undefined })),
    400,
    'invalid_request',
    /client_id is required/,
    'missing client_id',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: '' })),
    400,
    'invalid_request',
    /client_id is required/,
    'empty client_id',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: 'no-such-client' })),
    401,
    'invalid_client',
    undefined,
    'unknown client',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: 'x'.repeat(300) })),
    401,
    'invalid_client',
    undefined,
    'a very long client_id',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: disabledClient.clientId })),
    401,
    'invalid_client',
    undefined,
    'disabled client',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_secret: 'secret' })),
    401,
    'invalid_client',
    /public: send client_id alone/,
    'client_secret',
  );
  const basic = `Basic ${Buffer.from(`${client.clientId}:secret`).toString('base64')}`;
  expectError(
    t,
    await token(exchangeForm(grant), { authorization: basic }),
    401,
    'invalid_client',
    /public/,
    'Authorization: Basic',
  );
  expectError(
    t,
    await token(exchangeForm(grant, { client_id: undefined }), { authorization: basic }),
    401,
    'invalid_client',
    undefined,
    'Basic without client_id',
  );
  expectError(
    t,
    await token(exchangeForm(grant), { authorization: `Bearer ${generateToken()}` }),
    401,
    'invalid_client',
    undefined,
    'Authorization: Bearer',
  );
  t.equal((await token(exchangeForm(grant))).statusCode, 200, 'none of those consumed the code');
});

t.test(
  'invalid_client after an Authorization header carries WWW-Authenticate for that scheme (RFC 6749 §5.2)',
  async (t) => {
    const grant = await getCode();
    const res = await token(exchangeForm(grant), {
      authorization: `Basic ${Buffer.from(`${client.clientId}:x`).toString('base64')}`,
    });
    t.equal(res.statusCode, 401);
    t.match(res.headers['www-authenticate'], /^Basic\b/);
  },
);

t.test('error_description never carries request text outside the RFC 6749 §5.2 character set', async (t) => {
  const grant = await getCode();
  for (const [label, form] of [
    ['grant_type with a quote', exchangeForm(grant, { grant_type: 'pass"word' })],
    ['a non-ASCII grant_type', exchangeForm(grant, { grant_type: 'contraseña' })],
    ['a repeated parameter with a quote in its name', exchangeForm(grant, { 'x"y': ['1', '2'] })],
  ] as const) {
    const res = await token(form);
    t.equal(res.statusCode, 400, label);
    t.match(res.json().error_description, ERROR_DESCRIPTION, label);
  }
});

t.test('refusals never echo the request: a fixed description, the value refused only in the log', async (t) => {
  const LURE = 'Call_555-0100_to_restore_access';
  const grant = await getCode();
  const cases: Array<[string, Params, number, string, string, string]> = [
    [
      'an unsupported grant_type',
      exchangeForm(grant, { grant_type: LURE }),
      400,
      'unsupported_grant_type',
      'the grant_type is not supported',
      `grant_type ${LURE}`,
    ],
    [
      'a made-up parameter twice',
      exchangeForm(grant, { [LURE]: ['1', '2'] }),
      400,
      'invalid_request',
      'a parameter must not be repeated',
      `parameter ${LURE}`,
    ],
    [
      'a known parameter twice',
      exchangeForm(grant, { code_verifier: ['1', '2'] }),
      400,
      'invalid_request',
      'code_verifier must not be repeated',
      'parameter code_verifier',
    ],
    [
      'an unknown client_id',
      exchangeForm(grant, { client_id: LURE }),
      401,
      'invalid_client',
      'unknown client',
      `client_id ${LURE}`,
    ],
  ];
  for (const [label, form, status, error, description, detail] of cases) {
    const res = await token(form);
    expectError(t, res, status, error, undefined, label);
    t.equal(res.json().error_description, description, `${label}: the fixed description`);
    t.notOk(res.body.includes(LURE), `${label}: nothing of the request echoed`);
    t.same(
      oauthErrorLines(logs, res).map((l) => [l.level, l.oauthError, l.error_description, l.detail]),
      [[30, error, description, detail]],
      `${label}: the request's log line has the detail, at info`,
    );
  }
});

t.test('missing or malformed code, code_verifier and redirect_uri are invalid_request', async (t) => {
  const grant = await getCode();
  const cases: Array<[string, Params, RegExp]> = [
    ['missing code', { code: undefined }, /code is required/],
    ['empty code', { code: '' }, /code is required/],
    ['missing code_verifier', { code_verifier: undefined }, /code_verifier is required/],
    ['empty code_verifier', { code_verifier: '' }, /code_verifier is required/],
    ['missing redirect_uri', { redirect_uri: undefined }, /redirect_uri is required/],
    ['a 42-character verifier', { code_verifier: 'a'.repeat(42) }, /43-128/],
    ['a 129-character verifier', { code_verifier: 'a'.repeat(129) }, /43-128/],
    ['a verifier with +', { code_verifier: `${'a'.repeat(42)}+` }, /43-128/],
    ['a verifier with a space', { code_verifier: `${'a'.repeat(42)} a` }, /43-128/],
    ['repeated code', { code: [grant.code, grant.code] }, /code must not be repeated/],
    ['repeated client_id', { client_id: [client.clientId, client.clientId] }, /client_id must not be repeated/],
    [
      'repeated grant_type',
      { grant_type: ['authorization_code', 'authorization_code'] },
      /grant_type must not be repeated/,
    ],
    ['repeated code_verifier', { code_verifier: [grant.verifier, grant.verifier] }, /must not be repeated/],
    ['repeated redirect_uri', { redirect_uri: [REDIRECT, REDIRECT] }, /must not be repeated/],
  ];
  for (const [label, overrides, description] of cases) {
    expectError(t, await token(exchangeForm(grant, overrides)), 400, 'invalid_request', description, label);
  }
  t.equal((await token(exchangeForm(grant))).statusCode, 200, 'none of those consumed the code');
});

t.test('the code is bound to its PKCE verifier, client and redirect_uri: invalid_grant', async (t) => {
  const wrongVerifier = await getCode();
  expectError(
    t,
    await token(exchangeForm(wrongVerifier, { code_verifier: generateToken() })),
    400,
    'invalid_grant',
    /code_verifier/,
    'wrong verifier',
  );

  const challengeAsVerifier = await getCode();
  expectError(
    t,
    await token(exchangeForm(challengeAsVerifier, { code_verifier: s256Challenge(challengeAsVerifier.verifier) })),
    400,
    'invalid_grant',
    undefined,
    'the challenge as verifier',
  );

  const otherClients = await getCode();
  expectError(
    t,
    await token(exchangeForm(otherClients, { client_id: otherClient.clientId })),
    400,
    'invalid_grant',
    /another client/,
    'code of another client',
  );

  const wrongRedirect = await getCode();
  expectError(
    t,
    await token(exchangeForm(wrongRedirect, { redirect_uri: SECOND_REDIRECT })),
    400,
    'invalid_grant',
    /redirect_uri/,
    'another registered redirect_uri',
  );
  const nearMiss = await getCode();
  expectError(
    t,
    await token(exchangeForm(nearMiss, { redirect_uri: `${REDIRECT}/` })),
    400,
    'invalid_grant',
    /redirect_uri/,
    'trailing slash',
  );

  // Codes for the second redirect_uri work with it.
  const second = await getCode({ redirectUri: SECOND_REDIRECT });
  t.equal((await token(exchangeForm(second))).statusCode, 200, 'the matching redirect_uri works');
});

t.test('an unknown code is invalid_grant', async (t) => {
  const base = await getCode();
  expectError(
    t,
    await token(exchangeForm(base, { code: generateToken() })),
    400,
    'invalid_grant',
    undefined,
    'unknown code',
  );
  expectError(
    t,
    await token(exchangeForm(base, { code: 'x'.repeat(12_001) })),
    400,
    'invalid_grant',
    undefined,
    'a very long code',
  );
  expectError(
    t,
    await token(exchangeForm(base, { code: hashToken(base.code) })),
    400,
    'invalid_grant',
    undefined,
    'the stored hash is not the code',
  );
  t.equal((await token(exchangeForm(base))).statusCode, 200);
});

t.test('an expired code is invalid_grant', async (t) => {
  const grant = await getCode();
  const code = openCode(grant.code, config.secretKey!)!;
  const lifetime = (code.expiresAt.getTime() - Date.now()) / 1000;
  t.ok(lifetime > 55 && lifetime <= 60, `codes live 60 s (${lifetime})`);
  // The same code as this server sealed it, a minute older.
  const expired = sealCode({ ...code, expiresAt: new Date(Date.now() - 1000) }, config.secretKey!);
  expectError(
    t,
    await token(exchangeForm(grant, { code: expired })),
    400,
    'invalid_grant',
    /invalid, expired or already used/,
  );
});

t.test('a code used twice: invalid_grant, and every token from the first exchange is revoked', async (t) => {
  const grant = await getCode({ scope: 'openid offline_access' });
  const first = await token(exchangeForm(grant));
  t.equal(first.statusCode, 200);
  const { access_token: accessToken, refresh_token: refreshToken } = first.json();
  t.equal((await userinfo(accessToken)).statusCode, 200, 'the access token works before the replay');
  const before = await listAuditEvents(database.db, { type: 'code.reuse_detected' });

  expectError(
    t,
    await token(exchangeForm(grant)),
    400,
    'invalid_grant',
    /invalid, expired or already used/,
    'second use',
  );

  const info = await userinfo(accessToken);
  t.equal(info.statusCode, 401, 'the access token of the first exchange is rejected');
  t.match(info.headers['www-authenticate'], /error="invalid_token"/);
  const refresh = await database.db
    .selectFrom('refresh_tokens')
    .selectAll()
    .where('token_hash', '=', hashToken(refreshToken))
    .executeTakeFirstOrThrow();
  t.ok(refresh.revoked_at, 'the refresh token of the first exchange is revoked');
  const codeRow = { grant_id: openCode(grant.code, config.secretKey!)!.grantId };
  const grantRow = await database.db
    .selectFrom('grants')
    .selectAll()
    .where('id', '=', codeRow.grant_id)
    .executeTakeFirstOrThrow();
  t.ok(grantRow.revoked_at, 'the grant is revoked');

  const after = await listAuditEvents(database.db, { type: 'code.reuse_detected' });
  t.equal(after.length, before.length + 1, 'one code.reuse_detected event');
  const event = after[after.length - 1]!;
  t.equal(event.client_id, client.clientId);
  t.equal(event.user_id, main.user.id);
  t.match(event.detail, { grantId: codeRow.grant_id });
  t.notMatch(JSON.stringify(event), grant.code, 'the code itself is not in the audit trail');

  expectError(t, await token(exchangeForm(grant)), 400, 'invalid_grant', undefined, 'third use');
  // Other grants of the same user and client are not affected.
  const unrelated = await token(exchangeForm(await getCode()));
  t.equal(unrelated.statusCode, 200);
  t.equal((await userinfo(unrelated.json().access_token)).statusCode, 200, 'an unrelated grant still works');
});

t.test('a code exchanged twice at the same moment: exactly one succeeds', async (t) => {
  for (let round = 0; round < 3; round++) {
    const grant = await getCode();
    const results = await Promise.all([
      token(exchangeForm(grant)),
      token(exchangeForm(grant)),
      token(exchangeForm(grant)),
    ]);
    const statuses = results.map((r) => r.statusCode).sort();
    t.same(statuses, [200, 400, 400], `round ${round}: one 200`);
    for (const r of results.filter((r) => r.statusCode !== 200))
      expectError(t, r, 400, 'invalid_grant', undefined, `round ${round}: the others`);
    const winner = results.find((r) => r.statusCode === 200)!;
    // The losers were replays: the winner's tokens are revoked too (RFC 6749 §4.1.2).
    t.equal(
      (await userinfo(winner.json().access_token)).statusCode,
      401,
      `round ${round}: the replay revoked the winner's token`,
    );
    const rows = await database.db
      .selectFrom('access_tokens')
      .select('token_hash')
      .where('grant_id', '=', openCode(grant.code, config.secretKey!)!.grantId)
      .execute();
    t.equal(rows.length, 1, `round ${round}: one access token was issued`);
  }
});

t.test('a user disabled after the code was issued gets no tokens; a disabled application neither', async (t) => {
  const other = await createUser('later-disabled');
  const grant = await getCode({ jar: other.jar });
  await app.services.users.setDisabled(other.user.id, true, actor);
  // Disabling revokes what the user held, unexchanged codes included (issue 12, item 4).
  expectError(t, await token(exchangeForm(grant)), 400, 'invalid_grant', /user is not available/, 'disabled user');

  const soon = await app.services.applications.create({ clientName: 'Soon Disabled', redirectUris: [REDIRECT] }, actor);
  const appGrant = await getCode({ clientId: soon.clientId });
  await app.services.applications.setEnabled(soon.clientId, false, actor);
  expectError(t, await token(exchangeForm(appGrant)), 401, 'invalid_client', undefined, 'disabled application');
});

t.test('tokens, codes and verifiers never reach the log', async (t) => {
  const grant = await getCode({ scope: 'openid offline_access' });
  const res = await token(exchangeForm(grant));
  t.equal(res.statusCode, 200);
  const body = res.json();
  await token(exchangeForm(grant));
  await userinfo(body.access_token);
  const text = logs.text();
  t.ok(text.length > 0, 'something was logged');
  for (const [name, secret] of Object.entries({
    code: grant.code,
    verifier: grant.verifier,
    access_token: body.access_token,
    refresh_token: body.refresh_token,
    id_token: body.id_token,
  })) {
    t.notOk(text.includes(secret), `no ${name} in the log`);
  }
});
