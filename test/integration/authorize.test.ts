// GET/POST /api/auth/oauth2/authorize and /authorize/continue: every error path (rendered until the
// client and redirect_uri are verified, redirected with state and iss after), and every step of the
// flow through the hosted pages (sign-in, verification, consent) with app.inject.
import t, { type Test } from 'tap';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken } from '../../src/oauth/tokens.js';
import { openCode } from '../../src/oauth/sealed-code.js';
import { cookiesOf } from '../helpers/flow.js';
import { oauthErrorLines } from '../helpers/oauth-log.js';

// One app and one database for the whole file; subtests make the users and applications they change.
const { app, database, config, logs } = await buildTestApp(t);
const actor = { actor: 'test' };
const ISSUER = 'http://localhost:3000/api/auth';
const LOGIN = 'http://localhost:3000/login';
const AUTHORIZE = '/api/auth/oauth2/authorize';
const REDIRECT = 'https://rp.example.com/callback';
const REDIRECT_WITH_QUERY = 'https://rp.example.com/cb?tenant=acme';
const LOOPBACK_REDIRECT = 'http://127.0.0.1:8123/cb';
const VERIFIER = generateToken();
const CHALLENGE = s256Challenge(VERIFIER);
const PASSWORD = 'correct horse battery staple';
/** RFC 6749 §4.1.2.1 / §5.2: error_description uses only %x20-21 / %x23-5B / %x5D-7E. */
const ERROR_DESCRIPTION = /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/;

const client = await app.services.applications.create(
  {
    clientName: 'Authorize RP',
    redirectUris: [REDIRECT, REDIRECT_WITH_QUERY, LOOPBACK_REDIRECT],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  actor,
);
const disabledClient = await app.services.applications.create(
  { clientName: 'Disabled RP', redirectUris: [REDIRECT], enabled: false },
  actor,
);

/**
 * Every request of this file comes from one browser, which carries the request-binding cookie that
 * authorize sets (tests of another browser pass their own cookie, which wins).
 */
const BROWSER: Record<string, string> = { 'idp.authz': generateToken() };
/** The user of every code any response of this file carried (codes are sealed, not stored: read from them). */
const issuedCodes: Array<{ userId: string; clientId: string }> = [];
const inject = async (options: InjectOptions & { cookies?: Record<string, string> }) => {
  const res = await app.inject({ ...options, cookies: { ...BROWSER, ...options.cookies } });
  const location = res.headers.location;
  const code = typeof location === 'string' ? new URL(location, 'http://x').searchParams.get('code') : null;
  const opened = code ? openCode(code, config.secretKey!) : undefined;
  if (opened) issuedCodes.push({ userId: opened.userId, clientId: opened.clientId });
  return res;
};

let counter = 0;
async function createUser(label: string, fields: { emailVerified?: boolean } = {}) {
  const email = `${label}-${++counter}@example.com`;
  const user = await app.services.users.create(
    { email, password: PASSWORD, emailVerified: fields.emailVerified ?? true },
    actor,
  );
  return { ...user, email };
}

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

function request(overrides: Params = {}): Params {
  return {
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'st-123',
    nonce: 'n-123',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...overrides,
  };
}

async function authorize(params: Params, options: { jar?: Jar; accept?: string; method?: 'GET' | 'POST' } = {}) {
  const headers: Record<string, string> = options.accept ? { accept: options.accept } : {};
  if (options.method === 'POST') {
    return inject({
      method: 'POST',
      url: AUTHORIZE,
      cookies: options.jar ?? {},
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: encode(params),
    });
  }
  return inject({ method: 'GET', url: `${AUTHORIZE}?${encode(params)}`, cookies: options.jar ?? {}, headers });
}

/** GET an absolute URL of this app (a Location) in-process. */
async function follow(location: string | undefined, jar: Jar = {}) {
  if (!location) throw new Error('no Location to follow');
  const url = new URL(location);
  if (url.origin !== 'http://localhost:3000') throw new Error(`not this app: ${location}`);
  return inject({ method: 'GET', url: `${url.pathname}${url.search}`, cookies: jar });
}

function locationOf(res: LightMyRequestResponse): URL {
  if (typeof res.headers.location !== 'string')
    throw new Error(`no Location: ${res.statusCode} ${res.body.slice(0, 300)}`);
  return new URL(res.headers.location);
}

function requestIdOf(res: LightMyRequestResponse): string {
  const id = locationOf(res).searchParams.get('request');
  if (!id) throw new Error(`no request id in ${res.headers.location}`);
  return id;
}

/** Posts the sign-in form (GET first for the CSRF cookie and hidden fields). */
async function signIn(email: string, options: { requestId?: string | undefined; jar?: Jar; password?: string } = {}) {
  const page = await inject({
    method: 'GET',
    url: `/login/sign-in${options.requestId ? `?request=${encodeURIComponent(options.requestId)}` : ''}`,
    cookies: options.jar ?? {},
  });
  if (page.statusCode !== 200) throw new Error(`sign-in page: ${page.statusCode}`);
  const jar = { ...options.jar, ...cookiesOf(page) };
  const fields = BrowserClient.hiddenFields(page.body, '/login/sign-in');
  const res = await inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...fields, email, password: options.password ?? PASSWORD }).toString(),
  });
  return { res, jar: { ...jar, ...cookiesOf(res) } };
}

/** Posts the consent form (GET first for the CSRF cookie and hidden fields). */
async function consent(requestId: string, jar: Jar, decision: 'allow' | 'deny') {
  const page = await inject({
    method: 'GET',
    url: `/login/consent?request=${encodeURIComponent(requestId)}`,
    cookies: jar,
  });
  if (page.statusCode !== 200) throw new Error(`consent page: ${page.statusCode} ${page.body.slice(0, 300)}`);
  const merged = { ...jar, ...cookiesOf(page) };
  const fields = BrowserClient.hiddenFields(page.body, '/login/consent');
  const res = await inject({
    method: 'POST',
    url: '/login/consent',
    cookies: merged,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...fields, decision }).toString(),
  });
  return { page, res, jar: { ...merged, ...cookiesOf(res) } };
}

/** authorize without a session → sign-in page → sign in for that request → the continue endpoint's answer. */
async function walk(params: Params, email: string) {
  const start = await authorize(params);
  const requestId = requestIdOf(start);
  const signedIn = await signIn(email, { requestId });
  if (signedIn.res.statusCode !== 303) throw new Error(`sign-in failed: ${signedIn.res.statusCode}`);
  const res = await follow(signedIn.res.headers.location as string, signedIn.jar);
  return { res, jar: signedIn.jar, requestId };
}

function expectRendered(t: Test, res: LightMyRequestResponse, error: string, description?: RegExp) {
  t.equal(res.statusCode, 400, `${error}: 400`);
  t.equal(res.headers.location, undefined, `${error}: never a Location`);
  t.equal(res.headers['cache-control'], 'no-store', `${error}: no-store`);
  t.match(res.headers['content-type'], /^text\/html/, `${error}: an HTML page`);
  t.match(res.body, `<code>${error}</code>`, `${error}: the error code on the page`);
  t.notMatch(res.body, /rp\.example\.com/, `${error}: no link back to the untrusted redirect_uri`);
  if (description) t.match(res.body, description, `${error}: description`);
}

function expectRenderedJson(t: Test, res: LightMyRequestResponse, error: string, description?: RegExp) {
  t.equal(res.statusCode, 400, `${error}: 400`);
  t.equal(res.headers.location, undefined, `${error}: never a Location`);
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.headers['content-type'], /^application\/json/);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['error', 'error_description']);
  t.equal(body.error, error);
  t.match(body.error_description, ERROR_DESCRIPTION, 'error_description in the RFC 6749 character set');
  if (description) t.match(body.error_description, description);
}

/** A 303 to the client's redirect_uri carrying error, error_description, state (if sent) and iss. */
function expectRedirectError(
  t: Test,
  res: LightMyRequestResponse,
  error: string,
  options: { state?: string | null; redirectUri?: string; label?: string } = {},
) {
  const label = options.label ?? error;
  t.equal(res.statusCode, 303, `${label}: 303`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  const url = locationOf(res);
  const base = new URL(options.redirectUri ?? REDIRECT);
  t.equal(`${url.origin}${url.pathname}`, `${base.origin}${base.pathname}`, `${label}: to the registered redirect_uri`);
  for (const [k, v] of base.searchParams)
    t.equal(url.searchParams.get(k), v, `${label}: keeps the registered query ${k}`);
  t.equal(url.searchParams.get('error'), error, `${label}: error`);
  t.ok(url.searchParams.get('error_description'), `${label}: error_description`);
  t.match(
    url.searchParams.get('error_description'),
    ERROR_DESCRIPTION,
    `${label}: error_description in the RFC 6749 character set`,
  );
  t.equal(url.searchParams.get('iss'), ISSUER, `${label}: iss (RFC 9207)`);
  const state = options.state === undefined ? 'st-123' : options.state;
  if (state === null) t.notOk(url.searchParams.has('state'), `${label}: no state`);
  else t.equal(url.searchParams.get('state'), state, `${label}: state echoed`);
  t.notOk(url.searchParams.has('code'), `${label}: no code`);
  for (const k of ['error', 'error_description', 'iss', 'state'])
    t.ok(url.searchParams.getAll(k).length <= 1, `${label}: one ${k}`);
  return url;
}

/** A 303 to the client's redirect_uri with a code, the state and iss. */
function expectCode(
  t: Test,
  res: LightMyRequestResponse,
  options: { state?: string | null; redirectUri?: string } = {},
): string {
  t.equal(res.statusCode, 303, 'a 303 to the client');
  t.equal(res.headers['cache-control'], 'no-store');
  const url = locationOf(res);
  const base = new URL(options.redirectUri ?? REDIRECT);
  t.equal(`${url.origin}${url.pathname}`, `${base.origin}${base.pathname}`, 'to the registered redirect_uri');
  for (const [k, v] of base.searchParams) t.equal(url.searchParams.get(k), v, `keeps the registered query ${k}`);
  const code = url.searchParams.get('code');
  t.match(code, /^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/, 'a sealed code, URL-safe');
  const state = options.state === undefined ? 'st-123' : options.state;
  if (state === null) t.notOk(url.searchParams.has('state'));
  else t.equal(url.searchParams.get('state'), state, 'state echoed');
  t.equal(url.searchParams.get('iss'), ISSUER, 'iss (RFC 9207)');
  t.notOk(url.searchParams.has('error'));
  return code ?? '';
}

function expectStep(
  t: Test,
  res: LightMyRequestResponse,
  step: 'sign-in' | 'sign-up' | 'verify-email' | 'consent',
  label: string = step,
): string {
  t.equal(res.statusCode, 303, `${label}: 303`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  const url = locationOf(res);
  t.equal(`${url.origin}${url.pathname}`, `${LOGIN}/${step}`, `${label}: to ${step}`);
  t.same([...url.searchParams.keys()], ['request'], `${label}: only the request id`);
  const id = url.searchParams.get('request') ?? '';
  t.match(id, /^[A-Za-z0-9_-]{43}$/, `${label}: an opaque request id`);
  return id;
}

t.test('the issuer and login URL come from BASE_URL', async (t) => {
  t.equal(config.issuer, ISSUER);
  t.equal(config.loginUrl, LOGIN);
});

t.test('client_id problems are rendered (HTML, or JSON when asked), never redirected', async (t) => {
  const cases: Array<[string, Params, string, RegExp]> = [
    ['missing client_id', request({ client_id: undefined }), 'invalid_request', /client_id is required/],
    ['empty client_id', request({ client_id: '' }), 'invalid_request', /client_id is required/],
    ['unknown client_id', request({ client_id: 'no-such-client' }), 'invalid_client', /unknown client_id/],
    ['disabled application', request({ client_id: disabledClient.clientId }), 'invalid_client', /disabled/],
    [
      'repeated client_id',
      request({ client_id: [client.clientId, client.clientId] }),
      'invalid_request',
      /client_id must not be repeated/,
    ],
    [
      'two different client_ids',
      request({ client_id: [client.clientId, disabledClient.clientId] }),
      'invalid_request',
      /must not be repeated/,
    ],
    ['a very long client_id', request({ client_id: 'x'.repeat(300) }), 'invalid_request', /client_id/],
  ];
  for (const [label, params, error, description] of cases) {
    t.test(label, async (t) => {
      expectRendered(t, await authorize(params), error, description);
      expectRendered(
        t,
        await authorize(params, { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }),
        error,
      );
      expectRendered(t, await authorize(params, { accept: 'application/json, text/html' }), error);
      expectRenderedJson(t, await authorize(params, { accept: 'application/json' }), error, description);
      expectRendered(t, await authorize(params, { method: 'POST' }), error, description);
    });
  }
});

t.test('redirect_uri problems are rendered, never redirected: the match is exact', async (t) => {
  const cases: Array<[string, string | string[] | undefined, string, RegExp]> = [
    ['missing redirect_uri', undefined, 'invalid_request', /redirect_uri is required/],
    ['empty redirect_uri', '', 'invalid_request', /redirect_uri is required/],
    ['unregistered redirect_uri', 'https://evil.example.net/callback', 'invalid_request', /not registered/],
    ['trailing slash', `${REDIRECT}/`, 'invalid_request', /not registered/],
    ['host in upper case', 'https://RP.example.com/callback', 'invalid_request', /not registered/],
    ['path in another case', 'https://rp.example.com/Callback', 'invalid_request', /not registered/],
    ['extra query', `${REDIRECT}?x=1`, 'invalid_request', /not registered/],
    ['empty query', `${REDIRECT}?`, 'invalid_request', /not registered/],
    ['registered query missing', 'https://rp.example.com/cb', 'invalid_request', /not registered/],
    ['registered query changed', 'https://rp.example.com/cb?tenant=evil', 'invalid_request', /not registered/],
    ['a fragment', `${REDIRECT}#x`, 'invalid_request', /not registered/],
    ['a longer path', `${REDIRECT}/more`, 'invalid_request', /not registered/],
    ['a prefix', 'https://rp.example.com/call', 'invalid_request', /not registered/],
    ['http instead of https', 'http://rp.example.com/callback', 'invalid_request', /not registered/],
    ['explicit default port', 'https://rp.example.com:443/callback', 'invalid_request', /not registered/],
    ['percent-encoded path', 'https://rp.example.com/%63allback', 'invalid_request', /not registered/],
    ['another loopback port', 'http://127.0.0.1:9999/cb', 'invalid_request', /not registered/],
    ['localhost for 127.0.0.1', 'http://localhost:8123/cb', 'invalid_request', /not registered/],
    ['a subdomain', 'https://evil.rp.example.com/callback', 'invalid_request', /not registered/],
    ['repeated redirect_uri', [REDIRECT, REDIRECT], 'invalid_request', /redirect_uri must not be repeated/],
    [
      'two different redirect_uris',
      [REDIRECT, 'https://evil.example.net/callback'],
      'invalid_request',
      /must not be repeated/,
    ],
  ];
  for (const [label, redirectUri, error, description] of cases) {
    t.test(label, async (t) => {
      // Also with other parameters wrong: they must not turn the rendered error into a redirect.
      expectRendered(t, await authorize(request({ redirect_uri: redirectUri })), error, description);
      expectRendered(
        t,
        await authorize(request({ redirect_uri: redirectUri, scope: ['openid', 'openid'], response_type: 'token' })),
        error,
      );
      expectRenderedJson(
        t,
        await authorize(request({ redirect_uri: redirectUri }), { accept: 'application/json' }),
        error,
        description,
      );
      expectRendered(
        t,
        await authorize(request({ redirect_uri: redirectUri }), { method: 'POST' }),
        error,
        description,
      );
    });
  }
  t.test('the redirect_uri of another application', async (t) => {
    const other = await app.services.applications.create(
      { clientName: 'Other RP', redirectUris: ['https://other.example.org/cb'] },
      actor,
    );
    expectRendered(
      t,
      await authorize(request({ redirect_uri: 'https://other.example.org/cb' })),
      'invalid_request',
      /not registered/,
    );
    expectRendered(
      t,
      await authorize(request({ client_id: other.clientId, redirect_uri: REDIRECT })),
      'invalid_request',
      /not registered/,
    );
  });
  t.test('an unknown client is reported before the redirect_uri', async (t) => {
    expectRendered(
      t,
      await authorize(request({ client_id: 'nope', redirect_uri: 'https://evil.example.net/' })),
      'invalid_client',
    );
  });
});

t.test('after client and redirect_uri are verified, errors are redirected with error, state and iss', async (t) => {
  const cases: Array<[string, Params, string]> = [
    ['scope twice', { scope: ['openid', 'openid profile'] }, 'invalid_request'],
    ['response_type twice', { response_type: ['code', 'code'] }, 'invalid_request'],
    ['code_challenge twice', { code_challenge: [CHALLENGE, CHALLENGE] }, 'invalid_request'],
    ['an unknown parameter twice', { foo: ['1', '2'] }, 'invalid_request'],
    ['missing response_type', { response_type: undefined }, 'invalid_request'],
    ['empty response_type', { response_type: '' }, 'invalid_request'],
    ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ['response_type=id_token', { response_type: 'id_token' }, 'unsupported_response_type'],
    ['response_type=code id_token', { response_type: 'code id_token' }, 'unsupported_response_type'],
    ['response_type=CODE', { response_type: 'CODE' }, 'unsupported_response_type'],
    ['unknown scope', { scope: 'openid foo' }, 'invalid_scope'],
    ['scope not allowed for the application', { scope: 'openid permissions' }, 'invalid_scope'],
    ['scope without openid', { scope: 'profile email' }, 'invalid_scope'],
    ['scope with an illegal character', { scope: 'openid "profile"' }, 'invalid_scope'],
    ['missing code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['missing code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
    ['code_challenge_method=plain', { code_challenge_method: 'plain', code_challenge: VERIFIER }, 'invalid_request'],
    ['code_challenge_method=s256 (case-sensitive)', { code_challenge_method: 's256' }, 'invalid_request'],
    ['code_challenge too short', { code_challenge: CHALLENGE.slice(0, 42) }, 'invalid_request'],
    ['code_challenge with padding', { code_challenge: `${CHALLENGE}=` }, 'invalid_request'],
    ['code_challenge in standard base64', { code_challenge: `${CHALLENGE.slice(0, 42)}+` }, 'invalid_request'],
    ['prompt=select_account', { prompt: 'select_account' }, 'invalid_request'],
    ['prompt=bogus', { prompt: 'login bogus' }, 'invalid_request'],
    ['prompt=none login', { prompt: 'none login' }, 'invalid_request'],
    ['prompt=consent none', { prompt: 'consent none' }, 'invalid_request'],
    ['max_age=abc', { max_age: 'abc' }, 'invalid_request'],
    ['max_age=-1', { max_age: '-1' }, 'invalid_request'],
    ['max_age=1.5', { max_age: '1.5' }, 'invalid_request'],
    ['max_age=1e3', { max_age: '1e3' }, 'invalid_request'],
    ['request object', { request: 'eyJhbGciOiJub25lIn0.eyJ9.' }, 'request_not_supported'],
    ['request_uri', { request_uri: 'https://rp.example.com/request.jwt' }, 'request_uri_not_supported'],
    ['response_mode=fragment', { response_mode: 'fragment' }, 'invalid_request'],
    ['response_mode=query.jwt', { response_mode: 'query.jwt' }, 'invalid_request'],
    ['a too long state', { state: 's'.repeat(2049) }, 'invalid_request'],
    ['a too long nonce', { nonce: 'n'.repeat(2049) }, 'invalid_request'],
  ];
  for (const [label, overrides, error] of cases) {
    t.test(label, async (t) => {
      const state = label === 'a too long state' ? 's'.repeat(2049) : 'st-123';
      expectRedirectError(t, await authorize(request(overrides)), error, { state });
      expectRedirectError(t, await authorize(request(overrides), { method: 'POST' }), error, {
        state,
        label: `${label} (POST)`,
      });
      expectRedirectError(t, await authorize(request(overrides), { accept: 'application/json' }), error, {
        state,
        label: `${label} (JSON accepted: still a redirect)`,
      });
    });
  }
});

t.test('the error redirect carries state only when one was sent, and keeps the registered query', async (t) => {
  const noState = expectRedirectError(
    t,
    await authorize(request({ state: undefined, response_type: 'token' })),
    'unsupported_response_type',
    { state: null },
  );
  t.same([...noState.searchParams.keys()].sort(), ['error', 'error_description', 'iss']);
  expectRedirectError(t, await authorize(request({ state: ['a', 'b'], response_type: 'token' })), 'invalid_request', {
    state: null,
    label: 'repeated state',
  });
  const withQuery = expectRedirectError(
    t,
    await authorize(request({ redirect_uri: REDIRECT_WITH_QUERY, scope: 'openid foo' })),
    'invalid_scope',
    {
      redirectUri: REDIRECT_WITH_QUERY,
    },
  );
  t.same([...withQuery.searchParams.keys()].sort(), ['error', 'error_description', 'iss', 'state', 'tenant']);
  // An empty state counts as omitted (RFC 6749 §3.1), on errors as on success.
  const empty = expectRedirectError(
    t,
    await authorize(request({ state: '', response_type: 'token' })),
    'unsupported_response_type',
    { state: null, label: 'empty state' },
  );
  t.same([...empty.searchParams.keys()].sort(), ['error', 'error_description', 'iss']);
  // State is returned exactly, whatever it contains.
  const odd = 'a b&c=d?e#f/ü';
  expectRedirectError(
    t,
    await authorize(request({ state: odd, response_type: 'token' })),
    'unsupported_response_type',
    { state: odd },
  );
});

t.test('error_description never carries request text outside the RFC 6749 §4.1.2.1 character set', async (t) => {
  for (const [label, params] of [
    ['a prompt value with a quote', request({ prompt: 'login "x"' })],
    ['a non-ASCII prompt value', request({ prompt: 'connexión' })],
    ['a prompt value with a backslash', request({ prompt: 'a\\b' })],
    ['a repeated parameter with a quote in its name', request({ 'x"y': ['1', '2'] })],
    ['a repeated parameter with a non-ASCII name', request({ é: ['1', '2'] })],
    ['a scope with an illegal character', request({ scope: 'openid "profile"' })],
  ] as const) {
    const res = await authorize(params);
    t.equal(res.statusCode, 303, label);
    t.match(locationOf(res).searchParams.get('error'), /^(invalid_request|invalid_scope)$/, label);
    t.match(locationOf(res).searchParams.get('error_description'), ERROR_DESCRIPTION, label);
  }
});

t.test('refusals never echo the request: a fixed description, the value refused only in the log', async (t) => {
  // Text an attacker would like a trusted page or the client's redirect to show (RFC 9700 §4.8 phishing).
  const LURE = 'Call_555-0100_to_restore_access';
  const redirected: Array<[string, Params, string, string, string]> = [
    [
      'an unknown scope',
      { scope: `openid ${LURE}` },
      'invalid_scope',
      'scope contains a value that is not known here',
      `unknown: ${LURE}`,
    ],
    [
      'a scope the client may not ask for',
      { scope: 'openid permissions' },
      'invalid_scope',
      'scope contains a value this client may not request',
      'not allowed: permissions',
    ],
    [
      'a scope with an illegal character',
      { scope: `openid "${LURE}"` },
      'invalid_scope',
      'scope contains characters that RFC 6749 section 3.3 does not allow',
      `scope "openid \\"${LURE}\\""`,
    ],
    [
      'an unsupported prompt value',
      { prompt: `login ${LURE}` },
      'invalid_request',
      'prompt has a value that is not supported',
      `prompt ${LURE}`,
    ],
    [
      'a made-up parameter twice',
      { [LURE]: ['1', '2'] },
      'invalid_request',
      'a parameter must not be repeated',
      `parameter ${LURE}`,
    ],
    [
      'a known parameter twice',
      { nonce: ['1', '2'] },
      'invalid_request',
      'nonce must not be repeated',
      'parameter nonce',
    ],
  ];
  for (const [label, overrides, error, description, detail] of redirected) {
    const res = await authorize(request(overrides));
    const url = expectRedirectError(t, res, error, { label });
    t.equal(url.searchParams.get('error_description'), description, `${label}: the fixed description`);
    t.notOk(decodeURIComponent(String(res.headers.location)).includes(LURE), `${label}: nothing of the request echoed`);
    t.same(
      oauthErrorLines(logs, res).map((l) => [l.level, l.oauthError, l.error_description, l.detail]),
      [[30, error, description, detail]],
      `${label}: the request's log line has the detail, at info`,
    );
  }
  const rendered: Array<[string, Params, string, string, string]> = [
    [
      'an unregistered redirect_uri',
      { redirect_uri: `https://${LURE}.example/cb` },
      'invalid_request',
      'redirect_uri is not registered for this client',
      `redirect_uri https://${LURE}.example/cb`,
    ],
    ['an unknown client_id', { client_id: LURE }, 'invalid_client', 'unknown client_id', `client_id ${LURE}`],
    [
      'a made-up client_id twice',
      { client_id: [LURE, LURE] },
      'invalid_request',
      'client_id must not be repeated',
      'parameter client_id',
    ],
  ];
  for (const [label, params, error, description, detail] of rendered) {
    for (const accept of ['text/html', 'application/json']) {
      const res = await authorize(request(params), { accept });
      t.equal(res.statusCode, 400, `${label} (${accept}): 400`);
      t.notOk(res.body.includes(LURE), `${label} (${accept}): nothing of the request echoed`);
      if (accept === 'application/json') t.same(res.json(), { error, error_description: description }, label);
      else t.match(res.body, description, `${label}: the fixed description on the page`);
      t.same(
        oauthErrorLines(logs, res).map((l) => [l.level, l.oauthError, l.error_description, l.detail]),
        [[30, error, description, detail]],
        `${label} (${accept}): the request's log line has the detail, at info`,
      );
    }
  }
  t.test('a refusal without a detail is logged too', async (t) => {
    const res = await authorize(request({ response_type: 'token' }));
    t.same(
      oauthErrorLines(logs, res).map((l) => [l.oauthError, l.error_description, l.detail]),
      [['unsupported_response_type', 'only response_type=code is supported', undefined]],
    );
  });
});

t.test('prompt=none without a session is login_required', async (t) => {
  expectRedirectError(t, await authorize(request({ prompt: 'none' })), 'login_required');
  expectRedirectError(t, await authorize(request({ prompt: 'none', state: undefined })), 'login_required', {
    state: null,
  });
  expectRedirectError(
    t,
    await authorize(request({ prompt: 'none' }), { jar: { 'idp.session': 'not-a-session' } }),
    'login_required',
    { label: 'an unknown session cookie' },
  );
});

t.test('without a session: a 303 to the sign-in page with a pending request', async (t) => {
  const res = await authorize(request());
  const id = expectStep(t, res, 'sign-in');
  t.equal(res.headers.location, `${LOGIN}/sign-in?request=${id}`);
  t.equal(res.body, '');
  t.equal(cookiesOf(res)['idp.authz'], BROWSER['idp.authz'], 'the stored request renews the binding cookie');
  const fresh = await app.inject({ method: 'GET', url: `${AUTHORIZE}?${encode(request())}` });
  const binding = cookiesOf(fresh)['idp.authz'];
  t.match(binding, /^[A-Za-z0-9_-]{43}$/, 'a browser without one gets a new binding secret');
  t.match(String(fresh.headers['set-cookie']), /idp\.authz=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax/);
  expectStep(t, fresh, 'sign-in');
  t.not(requestIdOf(await authorize(request())), id, 'every authorization gets its own request id');

  const page = await follow(res.headers.location as string);
  t.equal(page.statusCode, 200);
  t.equal(BrowserClient.hiddenFields(page.body, '/login/sign-in').request, id, 'the sign-in form carries the request');
  t.match(page.body, 'Authorize RP', 'the page names the application');

  // Unknown parameters are ignored; an allowed response_mode=query and an empty scope (openid) are fine.
  expectStep(
    t,
    await authorize(request({ foo: 'bar', response_mode: 'query', scope: '' })),
    'sign-in',
    'unknown parameters ignored',
  );
  expectStep(
    t,
    await authorize(request({ scope: undefined, state: undefined, nonce: undefined })),
    'sign-in',
    'scope, state and nonce are optional',
  );
  expectStep(
    t,
    await authorize(request({ prompt: 'login consent', max_age: '0' })),
    'sign-in',
    'prompt=login consent with max_age=0',
  );
  expectStep(t, await authorize(request(), { method: 'POST' }), 'sign-in', 'POST works like GET');
  expectStep(t, await authorize(request({ redirect_uri: LOOPBACK_REDIRECT })), 'sign-in', 'a loopback redirect_uri');
});

t.test('prompt=create goes to the sign-up page', async (t) => {
  const res = await authorize(request({ prompt: 'create' }));
  const id = expectStep(t, res, 'sign-up');
  const page = await follow(res.headers.location as string);
  t.equal(page.statusCode, 200);
  t.equal(BrowserClient.hiddenFields(page.body, '/login/sign-up').request, id);
});

t.test('POST authorize needs a form body', async (t) => {
  const json = await inject({
    method: 'POST',
    url: AUTHORIZE,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(request()),
  });
  expectRendered(t, json, 'invalid_request', /x-www-form-urlencoded/);
  const text = await inject({
    method: 'POST',
    url: AUTHORIZE,
    headers: { 'content-type': 'text/plain' },
    payload: encode(request()),
  });
  expectRendered(t, text, 'invalid_request');
});

t.test('login_hint prefills the e-mail field of the sign-in (and sign-up) page', async (t) => {
  const hint = 'hint.person@example.com';
  const page = await follow((await authorize(request({ login_hint: hint }))).headers.location as string);
  t.equal(page.statusCode, 200);
  t.match(
    page.body,
    new RegExp(`<input id="field-email" name="email" type="email"[^>]* value="${hint.replace(/\./g, '\\.')}"`),
  );
  const signUp = await follow(
    (await authorize(request({ login_hint: hint, prompt: 'create' }))).headers.location as string,
  );
  t.match(signUp.body, new RegExp(`name="email" type="email"[^>]* value="${hint.replace(/\./g, '\\.')}"`));
  // Escaped, never markup.
  const evil = await follow(
    (await authorize(request({ login_hint: '"><script>x</script>' }))).headers.location as string,
  );
  t.notMatch(evil.body, /<script>x<\/script>/);
  const none = await follow((await authorize(request())).headers.location as string);
  t.notMatch(none.body, /name="email" type="email"[^>]* value=/, 'no value without a hint');
});

t.test('an unverified user is sent to verify their e-mail address', async (t) => {
  const user = await createUser('unverified', { emailVerified: false });
  const { res, jar, requestId } = await walk(request(), user.email);
  t.equal(expectStep(t, res, 'verify-email'), requestId, 'the same request');
  const page = await follow(res.headers.location as string, jar);
  t.equal(page.statusCode, 200);
  t.match(page.body, user.email);
  // With the session and prompt=none: interaction_required, never a code.
  expectRedirectError(t, await authorize(request({ prompt: 'none' }), { jar }), 'interaction_required');
  expectStep(t, await authorize(request(), { jar }), 'verify-email', 'a new request with the session');
});

t.test('consent: asked once, remembered, asked again for new scopes and with prompt=consent', async (t) => {
  const user = await createUser('consenting');
  const { res, jar, requestId } = await walk(request({ scope: 'openid profile' }), user.email);
  t.equal(expectStep(t, res, 'consent'), requestId, 'a verified user without consent goes to consent, same request');

  // prompt=none with a session but no consent yet.
  expectRedirectError(
    t,
    await authorize(request({ scope: 'openid profile', prompt: 'none' }), { jar }),
    'consent_required',
  );
  expectRedirectError(
    t,
    await authorize(request({ scope: 'openid profile', prompt: 'none', state: undefined }), { jar }),
    'consent_required',
    { state: null },
  );

  const { page, res: allowed } = await consent(requestId, jar, 'allow');
  t.match(page.body, 'Authorize RP wants to');
  t.match(page.body, 'Profile');
  t.match(page.body, user.email);
  expectCode(t, allowed);

  // The request is used up: continuing it again is a rendered error, not a second code.
  expectRendered(
    t,
    await follow(`${ISSUER}/oauth2/authorize/continue?request=${requestId}`, jar),
    'invalid_request',
    /expired or was already used/,
  );

  t.test('remembered: the same or fewer scopes go straight to the client', async (t) => {
    const direct = await authorize(request({ scope: 'openid profile' }), { jar });
    expectCode(t, direct);
    t.equal(direct.headers['set-cookie'], undefined, 'a code issued at once stores no request and sets no cookie');
    expectCode(t, await authorize(request({ scope: 'openid' }), { jar }));
    expectCode(t, await authorize(request({ scope: 'openid profile', state: undefined }), { jar }), { state: null });
    expectCode(t, await authorize(request({ scope: 'openid profile', state: '' }), { jar }), { state: null });
    expectCode(t, await authorize(request({ scope: 'openid profile', prompt: 'none' }), { jar }), {});
    expectCode(t, await authorize(request({ scope: 'openid', redirect_uri: REDIRECT_WITH_QUERY }), { jar }), {
      redirectUri: REDIRECT_WITH_QUERY,
    });
    expectCode(t, await authorize(request(), { jar, method: 'POST' }));
    const codes = new Set<string>();
    for (let i = 0; i < 3; i++) codes.add(expectCode(t, await authorize(request(), { jar })));
    t.equal(codes.size, 3, 'a new code each time');
  });

  t.test('a new scope asks again, for the union', async (t) => {
    const id = expectStep(t, await authorize(request({ scope: 'openid profile email' }), { jar }), 'consent');
    expectRedirectError(
      t,
      await authorize(request({ scope: 'openid email', prompt: 'none' }), { jar }),
      'consent_required',
    );
    const { page, res } = await consent(id, jar, 'allow');
    t.match(page.body, 'E-mail address');
    expectCode(t, res);
    expectCode(t, await authorize(request({ scope: 'openid email' }), { jar }), {});
    expectCode(t, await authorize(request({ scope: 'openid profile email' }), { jar }), {});
  });

  t.test('prompt=consent asks even when remembered', async (t) => {
    const id = expectStep(t, await authorize(request({ scope: 'openid', prompt: 'consent' }), { jar }), 'consent');
    expectCode(t, (await consent(id, jar, 'allow')).res);
  });

  t.test('another application needs its own consent', async (t) => {
    const other = await app.services.applications.create({ clientName: 'Second RP', redirectUris: [REDIRECT] }, actor);
    expectStep(t, await authorize(request({ client_id: other.clientId }), { jar }), 'consent');
  });
});

t.test('decision=deny ends the request with access_denied', async (t) => {
  const user = await createUser('denying');
  const { res, jar, requestId } = await walk(request({ scope: 'openid email' }), user.email);
  expectStep(t, res, 'consent');
  expectRedirectError(t, (await consent(requestId, jar, 'deny')).res, 'access_denied');
  expectRendered(t, await follow(`${ISSUER}/oauth2/authorize/continue?request=${requestId}`, jar), 'invalid_request');
  // Nothing was remembered.
  expectStep(t, await authorize(request({ scope: 'openid email' }), { jar }), 'consent', 'asked again');

  const noState = await authorize(request({ scope: 'openid email', state: undefined }), { jar });
  expectRedirectError(t, (await consent(requestIdOf(noState), jar, 'deny')).res, 'access_denied', { state: null });
});

t.test('a disabled user gets no code: the session ends and sign-in fails', async (t) => {
  const user = await createUser('to-disable');
  const { res, jar, requestId } = await walk(request(), user.email);
  expectStep(t, res, 'consent');
  expectCode(t, (await consent(requestId, jar, 'allow')).res);
  const pending = expectStep(t, await authorize(request({ scope: 'openid profile' }), { jar }), 'consent');

  // The consent form of a pending request, fetched while the user was still enabled.
  const consentPage = await inject({ method: 'GET', url: `/login/consent?request=${pending}`, cookies: jar });
  const consentJar = { ...jar, ...cookiesOf(consentPage) };
  const fields = BrowserClient.hiddenFields(consentPage.body, '/login/consent');

  await app.services.users.setDisabled(user.id, true, actor);
  expectStep(t, await authorize(request(), { jar }), 'sign-in', 'the session is no longer valid');
  expectRedirectError(t, await authorize(request({ prompt: 'none' }), { jar }), 'login_required');
  const page = await inject({ method: 'GET', url: `/login/consent?request=${pending}`, cookies: consentJar });
  t.equal(page.statusCode, 303, 'the consent page is not shown to a disabled user');
  t.equal(page.headers.location, `/login/sign-in?request=${pending}`);
  const allowed = await inject({
    method: 'POST',
    url: '/login/consent',
    cookies: consentJar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...fields, decision: 'allow' }).toString(),
  });
  t.equal(allowed.statusCode, 303);
  t.equal(
    allowed.headers.location,
    `/login/sign-in?request=${pending}`,
    'allowing a pending request asks to sign in: no code',
  );
  const continued = await follow(`${ISSUER}/oauth2/authorize/continue?request=${pending}`, jar);
  expectStep(t, continued, 'sign-in', 'continuing the pending request asks to sign in');
  const again = await signIn(user.email);
  t.equal(again.res.statusCode, 401, 'a disabled user cannot sign in');
  t.equal(cookiesOf(again.res)['idp.session'], undefined);
});

t.test('a disabled application: authorize and its pending requests are rendered errors', async (t) => {
  const soon = await app.services.applications.create({ clientName: 'Soon Disabled', redirectUris: [REDIRECT] }, actor);
  const user = await createUser('app-disable');
  const { res, jar, requestId } = await walk(request({ client_id: soon.clientId }), user.email);
  expectStep(t, res, 'consent');
  await app.services.applications.setEnabled(soon.clientId, false, actor);
  expectRendered(t, await authorize(request({ client_id: soon.clientId }), { jar }), 'invalid_client', /disabled/);
  expectRendered(t, await authorize(request({ client_id: soon.clientId })), 'invalid_client', /disabled/);
  expectRendered(t, await follow(`${ISSUER}/oauth2/authorize/continue?request=${requestId}`, jar), 'invalid_client');
  const denied = await consent(requestId, jar, 'allow');
  t.equal(denied.res.statusCode, 400, 'consent for a disabled application is refused');
  t.equal(denied.res.headers.location, undefined);
});

t.test('prompt=login with a valid session asks to sign in again, then continues', async (t) => {
  const user = await createUser('prompt-login');
  const first = await walk(request(), user.email);
  expectCode(t, (await consent(first.requestId, first.jar, 'allow')).res);

  const res = await authorize(request({ prompt: 'login' }), { jar: first.jar });
  const id = expectStep(t, res, 'sign-in');
  // Continuing without signing in again keeps asking.
  expectStep(
    t,
    await follow(`${ISSUER}/oauth2/authorize/continue?request=${id}`, first.jar),
    'sign-in',
    'continue without a new sign-in',
  );
  const again = await signIn(user.email, { requestId: id, jar: first.jar });
  t.equal(again.res.statusCode, 303);
  expectCode(t, await follow(again.res.headers.location as string, again.jar));
});

t.test('max_age: an older sign-in asks to sign in again', async (t) => {
  const user = await createUser('max-age');
  const first = await walk(request(), user.email);
  expectCode(t, (await consent(first.requestId, first.jar, 'allow')).res);
  await new Promise((resolve) => setTimeout(resolve, 20));
  expectStep(t, await authorize(request({ max_age: '0' }), { jar: first.jar }), 'sign-in', 'max_age=0');

  // Make the session ten minutes old.
  await database.db
    .updateTable('sessions')
    .set({ auth_time: sql`now() - interval '10 minutes'` })
    .where('user_id', '=', user.id)
    .execute();
  expectStep(t, await authorize(request({ max_age: '300' }), { jar: first.jar }), 'sign-in', 'max_age=300');
  expectRedirectError(
    t,
    await authorize(request({ max_age: '300', prompt: 'none' }), { jar: first.jar }),
    'login_required',
  );
  expectCode(t, await authorize(request({ max_age: '3600' }), { jar: first.jar }));
  expectCode(t, await authorize(request({ max_age: '3600', prompt: 'none' }), { jar: first.jar }));

  const id = expectStep(t, await authorize(request({ max_age: '0' }), { jar: first.jar }), 'sign-in');
  const again = await signIn(user.email, { requestId: id, jar: first.jar });
  expectCode(t, await follow(again.res.headers.location as string, again.jar), {});
});

t.test('a pending request gives one code, even when continued twice at once', async (t) => {
  const user = await createUser('race');
  const first = await walk(request(), user.email);
  expectCode(t, (await consent(first.requestId, first.jar, 'allow')).res);
  for (let round = 0; round < 3; round++) {
    const id = expectStep(t, await authorize(request({ prompt: 'login' }), { jar: first.jar }), 'sign-in');
    const again = await signIn(user.email, { requestId: id, jar: first.jar });
    const results = await Promise.all([1, 2, 3].map(() => follow(again.res.headers.location as string, again.jar)));
    const codes = results.filter((r) => r.statusCode === 303 && /[?&]code=/.test(String(r.headers.location)));
    t.equal(codes.length, 1, `round ${round}: exactly one code`);
    for (const r of results.filter((r) => !codes.includes(r))) expectRendered(t, r, 'invalid_request');
  }
});

t.test('a pending request that is unknown, expired or malformed is a rendered 400', async (t) => {
  const continueUrl = (id: string) => `/api/auth/oauth2/authorize/continue?request=${encodeURIComponent(id)}`;
  const unknown = await inject({ method: 'GET', url: continueUrl(generateToken()) });
  expectRendered(t, unknown, 'invalid_request', /expired or was already used/);
  expectRenderedJson(
    t,
    await inject({ method: 'GET', url: continueUrl(generateToken()), headers: { accept: 'application/json' } }),
    'invalid_request',
  );
  expectRendered(
    t,
    await inject({ method: 'GET', url: '/api/auth/oauth2/authorize/continue' }),
    'invalid_request',
    /malformed/,
  );
  expectRendered(t, await inject({ method: 'GET', url: continueUrl('x'.repeat(200)) }), 'invalid_request');

  const id = requestIdOf(await authorize(request()));
  await database.db
    .updateTable('authorization_requests')
    .set({ expires_at: sql`now() - interval '1 second'` })
    .where('id', '=', id)
    .execute();
  expectRendered(t, await inject({ method: 'GET', url: continueUrl(id) }), 'invalid_request', /expired/);
  const signInPage = await inject({ method: 'GET', url: `/login/sign-in?request=${id}` });
  t.equal(signInPage.statusCode, 400, 'the sign-in page of an expired request is an error too');

  // With a session: the same.
  const user = await createUser('expired');
  const { jar } = await signIn(user.email);
  expectRendered(t, await inject({ method: 'GET', url: continueUrl(id), cookies: jar }), 'invalid_request', /expired/);
});

t.test('a request expires after CONSENT_REQUEST_TTL', async (t) => {
  const row = await database.db
    .selectFrom('authorization_requests')
    .select(['created_at', 'expires_at'])
    .where('id', '=', requestIdOf(await authorize(request())))
    .executeTakeFirstOrThrow();
  const ttl = (new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()) / 1000;
  t.ok(Math.abs(ttl - config.ttl.consentRequest) < 5, `about ${config.ttl.consentRequest} s (${ttl})`);
  t.equal(config.ttl.consentRequest, 600);
});

// Issue 12, item 1: a pending request is bound to the browser that started it, and each step counts
// only for the person who took it (src/services/authorization.ts, the state machine at the top).
t.test('someone else cannot finish a pending request: browser and user binding', async (t) => {
  const attackerBrowser: Jar = { 'idp.authz': generateToken() };
  const victimBrowser: Jar = { 'idp.authz': generateToken() };
  const attacker = await createUser('rp-owner', { emailVerified: false });
  const victim = await createUser('victim');
  const victimJar = (await signIn(victim.email, { jar: victimBrowser })).jar;
  const consentRows = (userId: string) =>
    database.db
      .selectFrom('consents')
      .select('scopes')
      .where('user_id', '=', userId)
      .where('client_id', '=', client.clientId)
      .execute();
  const codeRows = async (userId: string) => issuedCodes.filter((c) => c.userId === userId);

  t.test('the reported attack: sign in on R, allow R, send a signed-in victim to continue R', async (t) => {
    const start = await authorize(request({ scope: 'openid offline_access' }), { jar: attackerBrowser });
    const r = expectStep(t, start, 'sign-in');
    t.match(
      String(start.headers['set-cookie']),
      /idp\.authz=[A-Za-z0-9_-]{43}; Max-Age=600; Path=\/; HttpOnly; SameSite=Lax/,
      'authorize sets the binding cookie',
    );
    const signed = await signIn(attacker.email, { requestId: r, jar: attackerBrowser });
    expectStep(
      t,
      await follow(signed.res.headers.location as string, signed.jar),
      'verify-email',
      'the unverified attacker is asked to verify',
    );

    // Allow, although R is not at the consent step: nothing is recorded, the browser goes to the due step.
    const allowed = await consent(r, signed.jar, 'allow');
    t.equal(allowed.res.statusCode, 303);
    t.equal(
      allowed.res.headers.location,
      `${LOGIN}/verify-email?request=${r}`,
      'allow at the verify step only sends to that step',
    );
    const json = await inject({
      method: 'POST',
      url: '/api/auth/consent',
      cookies: signed.jar,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ request: r, decision: 'allow' }),
    });
    t.equal(json.statusCode, 200);
    t.equal(json.json().redirectTo, `${LOGIN}/verify-email?request=${r}`);
    t.same(await consentRows(attacker.id), [], 'no consent remembered for the attacker');
    const row = await database.db
      .selectFrom('authorization_requests')
      .selectAll()
      .where('id', '=', r)
      .executeTakeFirstOrThrow();
    t.equal(row.consent_given_at, null, 'no consent recorded on the request');
    t.equal(row.login_user_id, attacker.id, 'the request records who signed in');

    // The victim, signed in in their own browser, is sent to continue R: useless without R's browser.
    const continued = await follow(`${ISSUER}/oauth2/authorize/continue?request=${r}`, victimJar);
    expectRendered(t, continued, 'invalid_request', /another browser/);
    const consentPage = await inject({ method: 'GET', url: `/login/consent?request=${r}`, cookies: victimJar });
    t.equal(consentPage.statusCode, 400, "the victim's browser gets no consent page for R");
    const victimPost = await inject({
      method: 'POST',
      url: '/api/auth/consent',
      cookies: victimJar,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ request: r, decision: 'allow' }),
    });
    t.equal(victimPost.statusCode, 400, 'nor can it consent to R');
    t.equal(victimPost.headers.location, undefined);
    const details = await inject({ method: 'GET', url: `/api/auth/authorization-requests/${r}`, cookies: victimJar });
    t.equal(details.statusCode, 404, 'nor read R');
    t.same(await codeRows(victim.id), [], 'no code was ever issued for the victim');
    t.same(await consentRows(victim.id), [], 'and no consent of theirs recorded');
  });

  t.test('sign-in on a request of another browser is refused before the password is checked', async (t) => {
    const r = requestIdOf(await authorize(request(), { jar: attackerBrowser }));
    const page = await inject({ method: 'GET', url: `/login/sign-in?request=${r}`, cookies: victimBrowser });
    t.equal(page.statusCode, 400, 'the hosted page');
    const json = await inject({
      method: 'POST',
      url: '/api/auth/sign-in',
      cookies: victimBrowser,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: victim.email, password: PASSWORD, request: r }),
    });
    t.equal(json.statusCode, 404, 'the JSON API');
    t.equal(json.json().error, 'REQUEST_NOT_FOUND');
    const row = await database.db
      .selectFrom('authorization_requests')
      .select('login_completed_at')
      .where('id', '=', r)
      .executeTakeFirstOrThrow();
    t.equal(row.login_completed_at, null);
  });

  // Even in one browser (a shared computer), each step counts only for the person who took it.
  t.test(
    "one person's sign-in on a request is not another's fresh authentication (prompt=login, max_age=0)",
    async (t) => {
      const shared: Jar = { 'idp.authz': generateToken() };
      const other = await createUser('other-person');
      for (const extra of [{ prompt: 'login' }, { max_age: '0' }]) {
        const r = requestIdOf(await authorize(request(extra), { jar: shared }));
        const signed = await signIn(other.email, { requestId: r, jar: shared });
        t.equal(signed.res.statusCode, 303);
        // The victim's session presents the request in the same browser: it must sign in itself.
        const victimHere = { ...shared, 'idp.session': victimJar['idp.session']! };
        expectStep(
          t,
          await follow(`${ISSUER}/oauth2/authorize/continue?request=${r}`, victimHere),
          'sign-in',
          `${Object.keys(extra)[0]}: sign in again`,
        );
      }
      t.same(await codeRows(victim.id), []);
    },
  );

  t.test("one person's consent on a request is not another's", async (t) => {
    const shared: Jar = { 'idp.authz': generateToken() };
    const r = requestIdOf(await authorize(request({ scope: 'openid profile' }), { jar: shared }));
    // The state the old code trusted: consent given on R (by someone else, to these very scopes).
    const other = await createUser('consenting-other');
    await database.db
      .updateTable('authorization_requests')
      .set({
        consent_given_at: sql`now()`,
        consent_user_id: other.id,
        consent_scopes: JSON.stringify(['openid', 'profile']),
      })
      .where('id', '=', r)
      .execute();
    const victimHere = { ...shared, 'idp.session': victimJar['idp.session']! };
    expectStep(
      t,
      await follow(`${ISSUER}/oauth2/authorize/continue?request=${r}`, victimHere),
      'consent',
      'the victim is asked for their own consent',
    );
    t.same(await codeRows(victim.id), []);
    // Their own consent then completes it, for them.
    const done = await consent(r, victimHere, 'allow');
    expectCode(t, done.res);
    t.same(
      (await consentRows(victim.id)).map((c) => c.scopes),
      [['openid', 'profile']],
    );
    const row = await database.db
      .selectFrom('authorization_requests')
      .selectAll()
      .where('id', '=', r)
      .executeTakeFirstOrThrow();
    t.equal(row.consent_user_id, victim.id);
    t.not(row.completed_at, null);
  });
});
