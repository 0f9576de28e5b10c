// The first-party cookie token endpoints: POST /api/auth/oauth2/token/cookie (the refresh token lives
// in an HttpOnly cookie, never in the JSON) and /api/auth/oauth2/token/cookie-logout; the Origin rule
// and the CORS answer for FIRST_PARTY_ORIGINS.
import t from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp, testConfig } from '../helpers/app.js';
import { obtainCode, obtainTokens } from '../helpers/flow.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { ConfigError } from '../../src/config.js';

const { app, database } = await buildTestApp(t);
const ORIGIN = 'http://localhost:3000'; // the login origin of testConfig()
const COOKIE_PATH = '/api/auth/oauth2/token';
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  {
    clientName: 'Cookie RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  { actor: 'test' },
);
const user = await app.services.users.create(
  { email: 'cookie@example.com', password: 'cookie-password-1', emailVerified: true, name: 'Cookie' },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'cookie@example.com',
  password: 'cookie-password-1',
  scope: 'openid offline_access',
};

interface CookieRequest {
  origin?: string | null;
  cookies?: Record<string, string>;
  contentType?: string;
  payload?: string;
}

function post(
  server: FastifyInstance,
  path: 'cookie' | 'cookie-logout',
  form: Record<string, string> | undefined,
  o: CookieRequest = {},
) {
  const origin = o.origin === undefined ? ORIGIN : o.origin;
  const contentType = o.contentType ?? (form ? 'application/x-www-form-urlencoded' : undefined);
  return server.inject({
    method: 'POST',
    url: `/api/auth/oauth2/token/${path}`,
    headers: { ...(origin !== null && { origin }), ...(contentType && { 'content-type': contentType }) },
    cookies: o.cookies ?? {},
    ...(o.payload !== undefined
      ? { payload: o.payload }
      : form
        ? { payload: new URLSearchParams(form).toString() }
        : {}),
  });
}

/** The code grant through the cookie endpoint (on `server`, which shares the database with `app`). */
async function cookieCodeGrant(server: FastifyInstance = app, scope = 'openid offline_access', o: CookieRequest = {}) {
  const { code, verifier } = await obtainCode(server, { ...flow, scope });
  return post(
    server,
    'cookie',
    {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.clientId,
      redirect_uri: redirectUri,
    },
    o,
  );
}

const cookieRefresh = (
  value: string | undefined,
  o: CookieRequest & { name?: string; server?: FastifyInstance } = {},
) =>
  post(
    o.server ?? app,
    'cookie',
    { grant_type: 'refresh_token', client_id: client.clientId },
    { ...o, cookies: value === undefined ? {} : { [o.name ?? 'idp.refresh']: value } },
  );

const me = (accessToken: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${accessToken}` } });

interface SetCookie {
  name: string;
  value: string;
  /** Attribute names lower-cased; flag attributes map to ''. */
  attributes: Map<string, string>;
  raw: string;
}

function setCookies(res: LightMyRequestResponse): SetCookie[] {
  const header = res.headers['set-cookie'];
  const list = header === undefined ? [] : Array.isArray(header) ? header : [header];
  return list.map((raw) => {
    const [pair, ...attrs] = raw.split(';').map((s) => s.trim());
    const eq = pair!.indexOf('=');
    const attributes = new Map<string, string>();
    for (const a of attrs) {
      const i = a.indexOf('=');
      attributes.set((i < 0 ? a : a.slice(0, i)).toLowerCase(), i < 0 ? '' : a.slice(i + 1));
    }
    return { name: pair!.slice(0, eq), value: decodeURIComponent(pair!.slice(eq + 1)), attributes, raw };
  });
}

function refreshCookie(res: LightMyRequestResponse, name = 'idp.refresh'): SetCookie | undefined {
  const found = setCookies(res).filter((c) => c.name === name);
  if (found.length > 1) throw new Error(`${found.length} Set-Cookie headers for ${name}`);
  return found[0];
}

/** Every attribute of a cleared cookie: same name and path, and expired (Max-Age=0 or a past Expires). */
function isCleared(c: SetCookie | undefined): boolean {
  if (!c) return false;
  const maxAge = c.attributes.get('max-age');
  const expires = c.attributes.get('expires');
  const expired =
    maxAge !== undefined ? Number(maxAge) <= 0 : expires !== undefined && Date.parse(expires) <= Date.now();
  return expired && c.value === '' && c.attributes.get('path') === COOKIE_PATH;
}

t.test('code grant through the cookie endpoint: tokens in JSON, the refresh token only in the cookie', async (t) => {
  const res = await cookieCodeGrant();
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.type(body.access_token, 'string');
  t.type(body.id_token, 'string');
  t.equal(body.token_type, 'Bearer');
  t.equal(body.scope, 'openid offline_access');
  t.notOk('refresh_token' in body, 'no refresh_token in the JSON');
  t.notMatch(res.body, /refresh/i, 'nothing about the refresh token in the body at all');
  t.match(res.headers['cache-control'], /no-store/);

  const cookie = refreshCookie(res);
  t.ok(cookie, 'an idp.refresh cookie is set');
  t.ok(cookie!.value.length >= 32, 'it carries a real token');
  t.ok(cookie!.attributes.has('httponly'), 'HttpOnly');
  t.equal(cookie!.attributes.get('path'), COOKIE_PATH, 'Path');
  t.equal(cookie!.attributes.get('samesite'), 'Lax', 'SameSite=Lax by default');
  t.equal(cookie!.attributes.get('max-age'), '2592000', 'Max-Age = REFRESH_TOKEN_TTL (30 days by default)');
  t.notOk(cookie!.attributes.has('secure'), 'no Secure on a plain-http configuration');
  t.notOk(cookie!.attributes.has('domain'), 'host-only');
  t.equal(setCookies(res).filter((c) => c.name.includes('refresh')).length, 1, 'exactly one refresh cookie');

  t.equal((await me(body.access_token)).statusCode, 200, 'the access token works');
  // The cookie value is the refresh token: it refreshes through the cookie endpoint.
  t.equal((await cookieRefresh(cookie!.value)).statusCode, 200);
});

t.test('without offline_access there is no refresh token, so no cookie', async (t) => {
  const res = await cookieCodeGrant(app, 'openid');
  t.equal(res.statusCode, 200, res.body);
  t.notOk('refresh_token' in res.json());
  t.same(
    setCookies(res).filter((c) => c.name.includes('refresh')),
    [],
    'no refresh cookie',
  );
});

t.test('cookie attributes follow the configuration', async (t) => {
  const cases: Array<{
    name: string;
    env: Record<string, string>;
    origin: string;
    cookieName: string;
    secure: boolean;
    sameSite: string;
    maxAge: string;
  }> = [
    {
      name: 'custom REFRESH_TOKEN_TTL',
      env: { REFRESH_TOKEN_TTL: '3600' },
      origin: ORIGIN,
      cookieName: 'idp.refresh',
      secure: false,
      sameSite: 'Lax',
      maxAge: '3600',
    },
    {
      name: 'COOKIE_SECURE=true',
      env: { COOKIE_SECURE: 'true' },
      origin: ORIGIN,
      cookieName: '__Secure-idp.refresh',
      secure: true,
      sameSite: 'Lax',
      maxAge: '2592000',
    },
    {
      name: 'https BASE_URL',
      env: { BASE_URL: 'https://id.example.com' },
      origin: 'https://id.example.com',
      cookieName: '__Secure-idp.refresh',
      secure: true,
      sameSite: 'Lax',
      maxAge: '2592000',
    },
    {
      name: 'COOKIE_SAMESITE=strict',
      env: { COOKIE_SAMESITE: 'strict' },
      origin: ORIGIN,
      cookieName: 'idp.refresh',
      secure: false,
      sameSite: 'Strict',
      maxAge: '2592000',
    },
    {
      name: 'COOKIE_SAMESITE=none (secure)',
      env: { COOKIE_SAMESITE: 'none', COOKIE_SECURE: 'true' },
      origin: ORIGIN,
      cookieName: '__Secure-idp.refresh',
      secure: true,
      sameSite: 'None',
      maxAge: '2592000',
    },
  ];
  for (const c of cases) {
    const { app: server } = await buildTestApp(t, { env: c.env, database });
    const res = await cookieCodeGrant(server, 'openid offline_access', { origin: c.origin });
    t.equal(res.statusCode, 200, `${c.name}: ${res.body}`);
    t.notOk('refresh_token' in res.json(), c.name);
    const cookie = refreshCookie(res, c.cookieName);
    t.ok(cookie, `${c.name}: cookie ${c.cookieName}`);
    if (!cookie) continue;
    t.equal(setCookies(res).filter((s) => s.name.includes('refresh')).length, 1, `${c.name}: one refresh cookie only`);
    t.ok(cookie.attributes.has('httponly'), `${c.name}: HttpOnly`);
    t.equal(cookie.attributes.get('path'), COOKIE_PATH, `${c.name}: Path`);
    t.equal(cookie.attributes.get('samesite'), c.sameSite, `${c.name}: SameSite`);
    t.equal(cookie.attributes.has('secure'), c.secure, `${c.name}: Secure`);
    t.equal(cookie.attributes.get('max-age'), c.maxAge, `${c.name}: Max-Age`);

    // The endpoint reads the cookie of its own name only.
    const rotated = await cookieRefresh(cookie.value, { server, name: c.cookieName, origin: c.origin });
    t.equal(rotated.statusCode, 200, `${c.name}: refresh with ${c.cookieName}`);
    t.ok(refreshCookie(rotated, c.cookieName), `${c.name}: rotation rewrites ${c.cookieName}`);
    if (c.cookieName !== 'idp.refresh') {
      const wrongName = await cookieRefresh(refreshCookie(rotated, c.cookieName)!.value, {
        server,
        name: 'idp.refresh',
        origin: c.origin,
      });
      t.equal(wrongName.statusCode, 401, `${c.name}: an idp.refresh cookie is not read when cookies are secure`);
    }
  }
});

t.test('refresh via the cookie rotates it; the old value is reuse and revokes the family', async (t) => {
  const first = await cookieCodeGrant();
  const c1 = refreshCookie(first)!.value;

  const second = await cookieRefresh(c1);
  t.equal(second.statusCode, 200, second.body);
  t.match(second.headers['cache-control'], /no-store/);
  const body2 = second.json();
  t.type(body2.access_token, 'string');
  t.type(body2.id_token, 'string', 'a new ID token for openid');
  t.notOk('refresh_token' in body2, 'no refresh_token in the JSON of a refresh either');
  t.not(body2.access_token, first.json().access_token);
  const cookie2 = refreshCookie(second);
  t.ok(cookie2, 'the cookie is rewritten');
  const c2 = cookie2!.value;
  t.not(c2, c1, 'with a new value');
  t.ok(cookie2!.attributes.has('httponly'));
  t.equal(cookie2!.attributes.get('path'), COOKIE_PATH);
  t.equal(cookie2!.attributes.get('samesite'), 'Lax');
  t.equal(cookie2!.attributes.get('max-age'), '2592000');
  t.equal((await me(body2.access_token)).statusCode, 200, 'the new access token works on /api/external/me');

  const third = await cookieRefresh(c2);
  t.equal(third.statusCode, 200, 'the rotated cookie refreshes again');
  const c3 = refreshCookie(third)!.value;
  const access3 = third.json().access_token as string;

  // The first value again: reuse. The browser's cookie is dropped and the whole family dies.
  const reuse = await cookieRefresh(c1);
  t.equal(reuse.statusCode, 400);
  t.equal(reuse.json().error, 'invalid_grant');
  t.ok(isCleared(refreshCookie(reuse)), `the cookie is cleared: ${refreshCookie(reuse)?.raw}`);
  t.match(reuse.headers['cache-control'], /no-store/);
  const newest = await cookieRefresh(c3);
  t.equal(newest.statusCode, 400, 'the newest cookie value is revoked too');
  t.equal(newest.json().error, 'invalid_grant');
  t.ok(isCleared(refreshCookie(newest)), 'and clearing it again');
  t.equal((await me(access3)).statusCode, 401, 'access tokens of the family are revoked');
  t.equal((await me(body2.access_token)).statusCode, 401);
});

t.test('refresh errors: missing cookie, refresh_token in the body, an unknown cookie', async (t) => {
  const missing = await cookieRefresh(undefined);
  t.equal(missing.statusCode, 401);
  t.equal(missing.json().error, 'invalid_grant');
  t.match(missing.headers['cache-control'], /no-store/);

  const granted = await cookieCodeGrant();
  const value = refreshCookie(granted)!.value;
  const inBody = await post(
    app,
    'cookie',
    { grant_type: 'refresh_token', client_id: client.clientId, refresh_token: value },
    { cookies: { 'idp.refresh': value } },
  );
  t.equal(inBody.statusCode, 400);
  t.equal(inBody.json().error, 'invalid_request');
  const bodyOnly = await post(app, 'cookie', {
    grant_type: 'refresh_token',
    client_id: client.clientId,
    refresh_token: value,
  });
  t.equal(bodyOnly.statusCode, 400, 'a body refresh_token is refused without a cookie too');
  t.equal(bodyOnly.json().error, 'invalid_request');
  t.equal((await cookieRefresh(value)).statusCode, 200, 'the refused requests did not use the token');

  const unknown = await cookieRefresh('x'.repeat(43));
  t.equal(unknown.statusCode, 400);
  t.equal(unknown.json().error, 'invalid_grant');
  t.ok(isCleared(refreshCookie(unknown)), 'a dead cookie is cleared');

  const otherClient = await app.services.applications.create(
    { clientName: 'Other', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
    { actor: 'test' },
  );
  const again = await cookieCodeGrant();
  const stolen = await post(
    app,
    'cookie',
    { grant_type: 'refresh_token', client_id: otherClient.clientId },
    { cookies: { 'idp.refresh': refreshCookie(again)!.value } },
  );
  t.equal(stolen.json().error, 'invalid_grant', 'the cookie of another client is refused');
});

t.test('Origin: required and first-party on both endpoints', async (t) => {
  const { code, verifier } = await obtainCode(app, flow);
  const form = {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  for (const path of ['cookie', 'cookie-logout'] as const) {
    for (const [what, origin] of [
      ['missing', null],
      ['foreign', 'https://evil.example'],
      ['the login origin on another port', 'http://localhost:3001'],
      ['the string null', 'null'],
    ] as const) {
      const res = await post(app, path, path === 'cookie' ? form : undefined, { origin });
      t.equal(res.statusCode, 403, `${path}, ${what} Origin`);
      t.equal(res.json().error, 'access_denied', `${path}, ${what} Origin`);
      t.notOk(res.headers['access-control-allow-origin'], `${path}, ${what} Origin: no CORS`);
      t.notOk(refreshCookie(res), `${path}, ${what} Origin: no cookie set`);
    }
  }
  const ok = await post(app, 'cookie', form);
  t.equal(ok.statusCode, 200, 'the refused requests did not consume the code');

  // A foreign page cannot log the user out either.
  const value = refreshCookie(ok)!.value;
  const foreignLogout = await post(app, 'cookie-logout', undefined, {
    origin: 'https://evil.example',
    cookies: { 'idp.refresh': value },
  });
  t.equal(foreignLogout.statusCode, 403);
  t.equal((await cookieRefresh(value)).statusCode, 200, 'the refresh token survived the refused logout');
});

t.test('FIRST_PARTY_ORIGINS: allowed with credentialed CORS; others get no CORS', async (t) => {
  const { app: server } = await buildTestApp(t, {
    env: { FIRST_PARTY_ORIGINS: 'https://app.example, https://other.example:8443' },
    database,
  });
  const origin = 'https://app.example';
  const granted = await cookieCodeGrant(server, 'openid offline_access', { origin });
  t.equal(granted.statusCode, 200, granted.body);
  t.equal(granted.headers['access-control-allow-origin'], origin);
  t.equal(granted.headers['access-control-allow-credentials'], 'true');
  t.match(String(granted.headers.vary), /origin/i);
  const value = refreshCookie(granted)!.value;

  const refreshed = await cookieRefresh(value, { server, origin: 'https://other.example:8443' });
  t.equal(refreshed.statusCode, 200, 'the second listed origin works too');
  t.equal(refreshed.headers['access-control-allow-origin'], 'https://other.example:8443');

  const error = await cookieRefresh(undefined, { server, origin });
  t.equal(error.statusCode, 401);
  t.equal(error.headers['access-control-allow-origin'], origin, 'errors are readable by the first-party page too');
  t.equal(error.headers['access-control-allow-credentials'], 'true');

  const logout = await post(server, 'cookie-logout', undefined, { origin });
  t.equal(logout.statusCode, 204);
  t.equal(logout.headers['access-control-allow-origin'], origin);

  for (const path of ['cookie', 'cookie-logout']) {
    const preflight = await server.inject({
      method: 'OPTIONS',
      url: `/api/auth/oauth2/token/${path}`,
      headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
    });
    t.equal(preflight.statusCode, 204, `preflight of ${path}`);
    t.equal(preflight.headers['access-control-allow-origin'], origin);
    t.equal(preflight.headers['access-control-allow-credentials'], 'true');
    t.match(String(preflight.headers['access-control-allow-methods']), /POST/);
    t.match(String(preflight.headers['access-control-allow-headers']).toLowerCase(), /content-type/);

    const foreign = await server.inject({
      method: 'OPTIONS',
      url: `/api/auth/oauth2/token/${path}`,
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    t.notOk(foreign.headers['access-control-allow-origin'], `no ACAO for a foreign origin on ${path}`);
    t.notOk(foreign.headers['access-control-allow-credentials']);
    t.notOk(foreign.headers['access-control-allow-methods']);
  }

  const foreignPost = await cookieRefresh(value, { server, origin: 'https://evil.example' });
  t.equal(foreignPost.statusCode, 403);
  t.notOk(foreignPost.headers['access-control-allow-origin']);

  // The list is not a prefix or suffix match.
  for (const near of [
    'https://app.example.evil.com',
    'http://app.example',
    'https://app.example:444',
    'https://sub.app.example',
  ]) {
    t.equal((await cookieRefresh(value, { server, origin: near })).statusCode, 403, near);
  }
  // And the main app (no FIRST_PARTY_ORIGINS) does not take that origin.
  t.equal((await cookieRefresh(value, { origin })).statusCode, 403, 'not first-party without the setting');
});

t.test('FIRST_PARTY_ORIGINS with a bad value is a configuration error naming it', async (t) => {
  for (const bad of [
    'not a url',
    'https://app.example/path',
    'ftp://app.example',
    'https://app.example, javascript:alert(1)',
    'https://app.example?x=1',
  ]) {
    let caught: unknown;
    try {
      testConfig({ FIRST_PARTY_ORIGINS: bad });
    } catch (error) {
      caught = error;
    }
    t.ok(caught instanceof ConfigError, `${bad}: a ConfigError`);
    t.same(
      (caught as ConfigError | undefined)?.problems.map((p) => p.name),
      ['FIRST_PARTY_ORIGINS'],
      `${bad}: names the variable`,
    );
    t.match((caught as Error | undefined)?.message, /FIRST_PARTY_ORIGINS/, bad);
  }
  t.same(testConfig({ FIRST_PARTY_ORIGINS: 'https://a.example, http://localhost:5173' }).firstPartyOrigins, [
    'https://a.example',
    'http://localhost:5173',
  ]);
});

t.test('cookie-logout revokes the family, clears the cookie and records token.revoked', async (t) => {
  const granted = await cookieCodeGrant();
  const value = refreshCookie(granted)!.value;
  const access = granted.json().access_token as string;
  const rotated = await cookieRefresh(value);
  const current = refreshCookie(rotated)!.value;
  const access2 = rotated.json().access_token as string;
  t.equal((await me(access2)).statusCode, 200);
  const before = (await listAuditEvents(database.db, { type: 'token.revoked', userId: user.id })).length;

  const res = await post(app, 'cookie-logout', undefined, { cookies: { 'idp.refresh': current } });
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  const cleared = refreshCookie(res);
  t.ok(isCleared(cleared), `cleared: ${cleared?.raw}`);
  t.ok(cleared!.attributes.has('httponly'), 'with the same attributes');
  t.equal(cleared!.attributes.get('samesite'), 'Lax');

  const again = await cookieRefresh(current);
  t.equal(again.statusCode, 400, 'the logged-out cookie value no longer refreshes');
  t.equal(again.json().error, 'invalid_grant');
  t.equal((await me(access2)).statusCode, 401, 'the access tokens of the family are revoked');
  t.equal((await me(access)).statusCode, 401, 'the first one too');

  const events = await listAuditEvents(database.db, { type: 'token.revoked', userId: user.id });
  t.equal(events.length, before + 1, 'one token.revoked event');
  t.equal(events.at(-1)!.client_id, client.clientId);
  t.match(events.at(-1)!.detail, { kind: 'refresh_token' });
});

t.test('cookie-logout answers 204 whatever it gets', async (t) => {
  const cases: Array<[string, CookieRequest]> = [
    ['no cookie', {}],
    ['a garbage cookie', { cookies: { 'idp.refresh': 'garbage' } }],
    ['a very long cookie', { cookies: { 'idp.refresh': 'y'.repeat(3000) } }],
    ['a text/plain body (sendBeacon)', { contentType: 'text/plain;charset=UTF-8', payload: 'bye' }],
    ['a JSON body', { contentType: 'application/json', payload: '{"a":1}' }],
    ['a form body', { contentType: 'application/x-www-form-urlencoded', payload: 'client_id=x' }],
  ];
  for (const [what, o] of cases) {
    const res = await post(app, 'cookie-logout', undefined, o);
    t.equal(res.statusCode, 204, what);
    t.ok(isCleared(refreshCookie(res)), `${what}: the cookie is cleared anyway`);
  }

  // sendBeacon's text/plain request still revokes.
  const granted = await cookieCodeGrant();
  const value = refreshCookie(granted)!.value;
  const beacon = await post(app, 'cookie-logout', undefined, {
    cookies: { 'idp.refresh': value },
    contentType: 'text/plain;charset=UTF-8',
    payload: '',
  });
  t.equal(beacon.statusCode, 204);
  t.equal((await cookieRefresh(value)).json().error, 'invalid_grant', 'revoked by a text/plain logout');
  t.equal((await me(granted.json().access_token)).statusCode, 401);
  const twice = await post(app, 'cookie-logout', undefined, { cookies: { 'idp.refresh': value } });
  t.equal(twice.statusCode, 204, 'logging out a revoked family again is fine');
});

t.test('the standard token endpoint is unchanged: refresh_token in the JSON, no cookie', async (t) => {
  const { code, verifier } = await obtainCode(app, flow);
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.clientId,
      redirect_uri: redirectUri,
    }).toString(),
  });
  t.equal(res.statusCode, 200);
  t.type(res.json().refresh_token, 'string');
  t.same(
    setCookies(res).filter((c) => c.name.includes('refresh')),
    [],
    'no refresh cookie',
  );
  const { tokens } = await obtainTokens(app, flow);
  t.type(tokens.refresh_token, 'string');
  const refreshed = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    cookies: { 'idp.refresh': 'ignored' },
    payload: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.clientId,
    }).toString(),
  });
  t.equal(refreshed.statusCode, 200);
  t.type(refreshed.json().refresh_token, 'string', 'a refresh keeps returning it in the JSON');
  t.same(setCookies(refreshed), []);
});
