// Rate limits (decisions.md, Limits) with small limits: every rule answers 429 with Retry-After past its
// limit, in the error format of its endpoint, keyed by what decisions.md says (IP, e-mail, client_id+IP,
// access token); requests under the limit work normally; RATE_LIMITS=off switches every rule off, loudly.
// Tokens, codes and users come from a second app on the same database with the limits off, so that
// preparing a test never spends the budget under test. Each test speaks from IP addresses of its own
// (inject's remoteAddress), so the tests do not share counters.
import t, { type Test } from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp, testConfig } from '../helpers/app.js';
import { obtainCode, obtainTokens } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { ConfigError } from '../../src/config.js';
import { startSmtp } from '../helpers/smtp.js';
import { ipKey } from '../../src/rate-limit.js';

const LIMITS = {
  RATE_LIMIT_TOKEN: '3/60',
  RATE_LIMIT_AUTHORIZE: '3/60',
  RATE_LIMIT_SIGN_IN_IP: '3/60',
  RATE_LIMIT_SIGN_IN_EMAIL: '2/60',
  RATE_LIMIT_SIGN_UP_IP: '2/60',
  RATE_LIMIT_RESET_REQUEST_IP: '3/60',
  RATE_LIMIT_RESET_REQUEST_EMAIL: '2/60',
  RATE_LIMIT_RESET_PASSWORD_IP: '3/900',
  RATE_LIMIT_BEARER: '3/60',
};

const open = await buildTestApp(t); // RATE_LIMITS=off (testConfig's default): the preparing app
const { database } = open;
const limited = await buildTestApp(t, { env: { RATE_LIMITS: 'on', ...LIMITS }, database });
const app = limited.app;

const ORIGIN = 'http://localhost:3000';
const redirectUri = 'https://rp.example.com/cb';
const client = await open.app.services.applications.create(
  { clientName: 'Limited RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email', 'offline_access'] },
  { actor: 'test' },
);
const other = await open.app.services.applications.create(
  { clientName: 'Other RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
  { actor: 'test' },
);
const PASSWORD = 'limit-password-1';
const users = new Map<string, true>();
async function user(email: string) {
  if (!users.has(email)) {
    await open.app.services.users.create({ email, password: PASSWORD, emailVerified: true }, { actor: 'test' });
    users.set(email, true);
  }
  return { clientId: client.clientId, redirectUri, email, password: PASSWORD, scope: 'openid offline_access' };
}

let nextIp = 1;
/** A fresh client address for each caller, so tests never share a per-IP counter. */
const newIp = () => {
  const n = nextIp++;
  return `10.${Math.floor(n / 65536) % 256}.${Math.floor(n / 256) % 256}.${n % 256}`;
};

function check429(t: Test, res: LightMyRequestResponse, windowSeconds: number, what: string) {
  t.equal(res.statusCode, 429, `${what}: 429 (${res.body.slice(0, 200)})`);
  const retryAfter = String(res.headers['retry-after'] ?? '');
  t.match(retryAfter, /^\d+$/, `${what}: Retry-After is whole seconds (${retryAfter})`);
  t.ok(
    Number(retryAfter) > 0 && Number(retryAfter) <= windowSeconds,
    `${what}: 0 < Retry-After (${retryAfter}) <= ${windowSeconds}`,
  );
}

const form = (
  server: FastifyInstance,
  url: string,
  body: Record<string, string>,
  remoteAddress: string,
  headers: Record<string, string> = {},
) =>
  server.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(body).toString(),
  });

const json = (
  server: FastifyInstance,
  url: string,
  body: unknown,
  remoteAddress: string,
  headers: Record<string, string> = {},
) =>
  server.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });

const token = (body: Record<string, string>, ip: string, server = app) =>
  form(server, '/api/auth/oauth2/token', body, ip);
const garbageRefresh = (clientId: string) => ({
  grant_type: 'refresh_token',
  refresh_token: 'x'.repeat(43),
  client_id: clientId,
});

/** The hosted forms' CSRF cookie and field value (one per browser, any form; GETs are not limited). */
async function csrfFor(server: FastifyInstance) {
  const page = '/login/sign-in';
  const res = await server.inject({ method: 'GET', url: page });
  const csrf = /name="csrf" value="([^"]+)"/.exec(res.body)?.[1];
  if (!csrf) throw new Error(`no csrf field on ${page}: ${res.statusCode}`);
  const jar: Record<string, string> = {};
  for (const c of res.cookies as Array<{ name: string; value: string }>) jar[c.name] = c.value;
  return { csrf, jar };
}

async function hostedPost(
  server: FastifyInstance,
  page: string,
  fields: Record<string, string>,
  ip: string,
  headers: Record<string, string> = {},
) {
  const { csrf, jar } = await csrfFor(server);
  return server.inject({
    method: 'POST',
    url: page,
    remoteAddress: ip,
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams({ ...fields, csrf }).toString(),
  });
}

const isHtml = (res: LightMyRequestResponse) => String(res.headers['content-type']).startsWith('text/html');

t.test('token endpoint: per client_id and IP, OAuth error body', async (t) => {
  const ip = newIp();
  const flow = await user('token-limit@example.com');
  const { code, verifier } = await obtainCode(open.app, flow);
  const exchange = {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  const ok = await token(exchange, ip);
  t.equal(ok.statusCode, 200, 'a request under the limit succeeds');
  t.type(ok.json().refresh_token, 'string');
  for (let i = 0; i < 2; i++)
    t.equal(
      (await token(garbageRefresh(client.clientId), ip)).json().error,
      'invalid_grant',
      `request ${i + 2} is handled normally`,
    );

  const limitedRes = await token(garbageRefresh(client.clientId), ip);
  check429(t, limitedRes, 60, 'token endpoint');
  t.equal(limitedRes.json().error, 'temporarily_unavailable');
  t.match(limitedRes.headers['cache-control'], /no-store/);

  // Even a good request is refused now, and refused before it uses anything: the code works elsewhere.
  const second = await obtainCode(open.app, flow);
  const exchange2 = {
    grant_type: 'authorization_code',
    code: second.code,
    code_verifier: second.verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  check429(t, await token(exchange2, ip), 60, 'a valid exchange over the limit');
  const refreshed = await token(
    { grant_type: 'refresh_token', refresh_token: ok.json().refresh_token, client_id: client.clientId },
    ip,
  );
  check429(t, refreshed, 60, 'a valid refresh over the limit');

  t.equal(
    (await token(garbageRefresh(other.clientId), ip)).json().error,
    'invalid_grant',
    'another client_id from the same IP is not limited',
  );
  const elsewhere = newIp();
  t.equal(
    (await token(exchange2, elsewhere)).statusCode,
    200,
    'the same client from another IP is not limited; the refused exchange did not burn the code',
  );
  t.equal(
    (
      await token(
        { grant_type: 'refresh_token', refresh_token: ok.json().refresh_token, client_id: client.clientId },
        elsewhere,
      )
    ).statusCode,
    200,
    'nor did the refused refresh use the refresh token',
  );
});

t.test('cookie token endpoint: the token rule, OAuth error body', async (t) => {
  const ip = newIp();
  const flow = await user('cookie-limit@example.com');
  const cookieToken = (body: Record<string, string>, from: string) =>
    form(app, '/api/auth/oauth2/token/cookie', body, from, { origin: ORIGIN });
  const { code, verifier } = await obtainCode(open.app, flow);
  const ok = await cookieToken(
    {
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.clientId,
      redirect_uri: redirectUri,
    },
    ip,
  );
  t.equal(ok.statusCode, 200, `under the limit: ${ok.body}`);
  const badCode = {
    grant_type: 'authorization_code',
    code: 'nope',
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  for (let i = 0; i < 2; i++) t.equal((await cookieToken(badCode, ip)).json().error, 'invalid_grant');
  const res = await cookieToken(badCode, ip);
  check429(t, res, 60, 'cookie token endpoint');
  t.equal(res.json().error, 'temporarily_unavailable');
  t.equal(res.headers['access-control-allow-origin'], ORIGIN, 'the first-party page can read the 429');
  t.equal(
    (await cookieToken({ ...badCode, client_id: other.clientId }, ip)).json().error,
    'invalid_grant',
    'another client_id is not limited',
  );
  t.equal((await cookieToken(badCode, newIp())).json().error, 'invalid_grant', 'another IP is not limited');
});

t.test('authorize: per IP, an HTML error page with status 429', async (t) => {
  const ip = newIp();
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
  });
  const authorize = (from: string, headers: Record<string, string> = {}) =>
    app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, remoteAddress: from, headers });
  for (let i = 0; i < 3; i++) {
    const res = await authorize(ip);
    t.equal(res.statusCode, 303, `request ${i + 1} goes on to sign-in`);
    t.match(String(res.headers.location), /\/login\/sign-in\?request=/);
  }
  const res = await authorize(ip);
  check429(t, res, 60, 'authorize');
  t.ok(isHtml(res), 'an HTML page');
  t.match(res.body, /temporarily_unavailable|too many|try again/i);
  t.notOk(res.headers.location, 'never redirected');
  const post = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/authorize',
    remoteAddress: ip,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: query.toString(),
  });
  check429(t, post, 60, 'authorize by POST');
  t.equal((await authorize(newIp())).statusCode, 303, 'another IP is not limited');
});

t.test('JSON sign-in: per IP', async (t) => {
  const ip = newIp();
  const flow = await user('signin-ip@example.com');
  for (let i = 0; i < 3; i++) {
    const res = await json(
      app,
      '/api/auth/sign-in',
      { email: `nobody-${i}@example.com`, password: 'wrong-password' },
      ip,
    );
    t.equal(res.statusCode, 401, `attempt ${i + 1} is judged normally`);
  }
  const res = await json(app, '/api/auth/sign-in', { email: flow.email, password: PASSWORD }, ip);
  check429(t, res, 60, 'sign-in per IP');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.type(res.json().message, 'string');
  t.notOk(res.cookies.length, 'no session over the limit, even with the right password');
  const elsewhere = await json(app, '/api/auth/sign-in', { email: flow.email, password: PASSWORD }, newIp());
  t.equal(elsewhere.statusCode, 200, 'another IP signs in');
  t.same(elsewhere.json(), { status: true });
});

t.test('JSON sign-in: per e-mail across IPs, case-insensitive', async (t) => {
  const flow = await user('signin-victim@example.com');
  for (const email of ['signin-victim@example.com', 'Signin-Victim@Example.COM']) {
    t.equal(
      (await json(app, '/api/auth/sign-in', { email, password: 'wrong-password' }, newIp())).statusCode,
      401,
      email,
    );
  }
  const ip = newIp();
  const res = await json(app, '/api/auth/sign-in', { email: 'SIGNIN-VICTIM@EXAMPLE.COM', password: PASSWORD }, ip);
  check429(t, res, 60, 'sign-in per e-mail');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.equal(
    (await json(app, '/api/auth/sign-in', { email: flow.email, password: PASSWORD }, newIp())).statusCode,
    429,
    'from any IP',
  );
  const bystander = await user('signin-bystander@example.com');
  t.equal(
    (await json(app, '/api/auth/sign-in', { email: bystander.email, password: PASSWORD }, ip)).statusCode,
    200,
    'another e-mail from the same IP signs in',
  );
});

t.test('hosted sign-in page: per IP and per e-mail, an HTML page with status 429', async (t) => {
  const ip = newIp();
  const flow = await user('hosted-signin@example.com');
  for (let i = 0; i < 3; i++) {
    const res = await hostedPost(
      app,
      '/login/sign-in',
      { email: `hosted-nobody-${i}@example.com`, password: 'wrong-password' },
      ip,
    );
    t.equal(res.statusCode, 401, `attempt ${i + 1} shows the form again`);
  }
  const res = await hostedPost(app, '/login/sign-in', { email: flow.email, password: PASSWORD }, ip);
  check429(t, res, 60, 'hosted sign-in per IP');
  t.ok(isHtml(res), 'an HTML page');
  t.notOk(res.headers.location);
  const ok = await hostedPost(app, '/login/sign-in', { email: flow.email, password: PASSWORD }, newIp());
  t.equal(ok.statusCode, 303, 'another IP signs in');

  const victim = await user('hosted-victim@example.com');
  t.equal(
    (await hostedPost(app, '/login/sign-in', { email: victim.email, password: 'wrong' }, newIp())).statusCode,
    401,
  );
  t.equal(
    (await hostedPost(app, '/login/sign-in', { email: victim.email.toUpperCase(), password: 'wrong' }, newIp()))
      .statusCode,
    401,
  );
  const byEmail = await hostedPost(app, '/login/sign-in', { email: victim.email, password: PASSWORD }, newIp());
  check429(t, byEmail, 60, 'hosted sign-in per e-mail');
  t.ok(isHtml(byEmail));
});

t.test(
  'with TRUST_PROXY=1 the client address comes from X-Forwarded-For; without it, that header changes nothing',
  async (t) => {
    // Was TRUST_PROXY=true, which is now refused at start-up (issue 31, 7c); one hop is the same setup.
    const proxied = await buildTestApp(t, { env: { RATE_LIMITS: 'on', ...LIMITS, TRUST_PROXY: '1' }, database });
    const victim = await user('proxy-victim@example.com');
    const proxy = newIp();
    for (let i = 0; i < 2; i++) {
      t.equal(
        (
          await json(proxied.app, '/api/auth/sign-in', { email: victim.email, password: 'wrong' }, proxy, {
            'x-forwarded-for': newIp(),
          })
        ).statusCode,
        401,
      );
    }
    check429(
      t,
      await json(proxied.app, '/api/auth/sign-in', { email: victim.email, password: PASSWORD }, proxy, {
        'x-forwarded-for': newIp(),
      }),
      60,
      'per e-mail across forwarded IPs',
    );
    // Many forwarded clients behind one proxy are separate clients.
    for (let i = 0; i < 6; i++) {
      const res = await json(
        proxied.app,
        '/api/auth/sign-in',
        { email: `proxied-${i}@example.com`, password: 'wrong' },
        proxy,
        { 'x-forwarded-for': newIp() },
      );
      t.equal(res.statusCode, 401, `forwarded client ${i + 1} has its own count`);
    }
    const forwarded = newIp();
    for (let i = 0; i < 3; i++)
      await json(proxied.app, '/api/auth/sign-in', { email: `fwd-${i}@example.com`, password: 'wrong' }, proxy, {
        'x-forwarded-for': forwarded,
      });
    check429(
      t,
      await json(proxied.app, '/api/auth/sign-in', { email: 'fwd-x@example.com', password: 'wrong' }, proxy, {
        'x-forwarded-for': forwarded,
      }),
      60,
      'per forwarded IP',
    );

    // Without TRUST_PROXY a caller cannot escape its IP count by inventing X-Forwarded-For values.
    const ip = newIp();
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) {
      codes.push(
        (
          await json(app, '/api/auth/sign-in', { email: `spoof-${i}@example.com`, password: 'wrong' }, ip, {
            'x-forwarded-for': newIp(),
          })
        ).statusCode,
      );
    }
    t.same(codes, [401, 401, 401, 429], 'X-Forwarded-For is ignored without TRUST_PROXY');
  },
);

t.test('with TRUST_PROXY set, a spoofed leftmost X-Forwarded-For gives no fresh per-IP budget', async (t) => {
  // Issue 31, 7c: TRUST_PROXY=true believed the leftmost address, which the client writes itself. A
  // proxy appends the address it saw, so only the addresses at the right are the proxies' word.
  const spoofing = async (trust: string, chain: (spoof: string) => string, socket: string) => {
    const proxied = await buildTestApp(t, { env: { RATE_LIMITS: 'on', ...LIMITS, TRUST_PROXY: trust }, database });
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) {
      const res = await json(
        proxied.app,
        '/api/auth/sign-in',
        { email: `spoofed-${nextIp++}@example.com`, password: 'x' },
        socket,
        {
          'x-forwarded-for': chain(newIp()),
        },
      );
      codes.push(res.statusCode);
    }
    return codes;
  };
  const client = newIp();
  t.same(
    await spoofing('1', (spoof) => `${spoof}, ${client}`, newIp()),
    [401, 401, 401, 429],
    'one hop: the address the proxy appended is the client, whatever the client wrote before it',
  );
  const client2 = newIp();
  const edge = newIp();
  t.same(
    await spoofing('2', (spoof) => `${spoof}, ${client2}, ${edge}`, newIp()),
    [401, 401, 401, 429],
    'two hops: the same, behind two proxies',
  );
  const client3 = newIp();
  const balancer = newIp();
  t.same(
    await spoofing(balancer, (spoof) => `${spoof}, ${client3}`, balancer),
    [401, 401, 401, 429],
    "the proxy's address: the first address from the right that is not a proxy is the client",
  );
  const direct = newIp();
  t.same(
    await spoofing(newIp(), (spoof) => spoof, direct),
    [401, 401, 401, 429],
    'a caller that is not one of the listed proxies is judged by its own address',
  );
});

t.test('IPv6: the /64s of one /48 share an aggregate budget on the mail-sending and sign-in rules', async (t) => {
  // Issue 31, 7c: whoever holds a /48 has 65,536 /64s, each a budget of its own under a per-IP rule.
  const aggregated = (
    await buildTestApp(t, {
      env: {
        RATE_LIMITS: 'on',
        ...LIMITS,
        RATE_LIMIT_SIGN_IN_IP48: '4/60',
        RATE_LIMIT_SIGN_UP_IP48: '4/60',
        RATE_LIMIT_RESET_REQUEST_IP48: '4/60',
        RATE_LIMIT_RESEND_IP48: '4/900',
      },
      database,
    })
  ).app;
  const redirectTo = `${ORIGIN}/login/reset-password`;
  const endpoints = [
    {
      what: 'sign-in',
      send: (ip: string, i: number) =>
        json(aggregated, '/api/auth/sign-in', { email: `v6agg-${i}@example.com`, password: 'wrong' }, ip),
    },
    {
      what: 'sign-up',
      send: (ip: string, i: number) =>
        json(
          aggregated,
          '/api/auth/sign-up',
          { email: `v6agg-up-${i}@example.com`, password: 'a-long-password-1' },
          ip,
        ),
    },
    {
      what: 'request-password-reset',
      send: (ip: string, i: number) =>
        json(aggregated, '/api/auth/request-password-reset', { email: `v6agg-reset-${i}@example.com`, redirectTo }, ip),
    },
  ];
  for (const { what, send } of endpoints) {
    const site = `2001:db8:${(nextIp++).toString(16)}`;
    for (let i = 0; i < 4; i++) {
      const res = await send(`${site}:${(i + 1).toString(16)}::${i + 7}`, i);
      t.not(res.statusCode, 429, `${what}: /64 number ${i + 1} of the /48`);
    }
    const refused = await send(`${site}:ffff:1:2:3:4`, 4);
    check429(t, refused, 60, `${what}: a fifth /64 of the same /48`);
    t.equal(refused.json().error, 'TOO_MANY_REQUESTS');
    const nextSite = `2001:db8:${(nextIp++).toString(16)}`;
    t.not((await send(`${nextSite}:1::1`, 5)).statusCode, 429, `${what}: another /48 has its own budget`);
  }

  // Verification resends and e-mail change requests count RESEND_IP by the requester's ipKey.
  const site = `2001:db8:${(nextIp++).toString(16)}`;
  for (let i = 0; i < 4; i++) await aggregated.rateLimit(null, 'RESEND_IP', ipKey(`${site}:${i + 1}::1`));
  const fifth = await aggregated.rateLimit(null, 'RESEND_IP', ipKey(`${site}:99::1`)).then(
    () => undefined,
    (error: { statusCode?: number }) => error.statusCode,
  );
  t.equal(fifth, 429, 'resend and e-mail change: a fifth /64 of the same /48 is refused');

  // IPv4 is counted as before: per address, with no aggregate of any kind.
  const v4 = (
    await buildTestApp(t, {
      env: { RATE_LIMITS: 'on', ...LIMITS, RATE_LIMIT_SIGN_IN_IP: '1/60', RATE_LIMIT_SIGN_IN_IP48: '1/60' },
      database,
    })
  ).app;
  for (let i = 1; i <= 5; i++) {
    const res = await json(
      v4,
      '/api/auth/sign-in',
      { email: `v4-${i}@example.com`, password: 'wrong' },
      `192.0.2.${i}`,
    );
    t.equal(res.statusCode, 401, `IPv4 address ${i} of one /24 has its own budget`);
  }
});

t.test('sign-up: per IP, JSON and hosted page', async (t) => {
  const ip = newIp();
  for (let i = 0; i < 2; i++) {
    const res = await json(
      app,
      '/api/auth/sign-up',
      { email: `signup-${i}@example.com`, password: 'a-long-password-1' },
      ip,
    );
    t.equal(res.statusCode, 201, `sign-up ${i + 1}: ${res.body}`);
  }
  const res = await json(
    app,
    '/api/auth/sign-up',
    { email: 'signup-2@example.com', password: 'a-long-password-1' },
    ip,
  );
  check429(t, res, 60, 'JSON sign-up');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  // Issue 31: a sign-up stores a pending sign-up (the account comes with the mailed link).
  const created = await database.db
    .selectFrom('sign_up_requests')
    .select('email')
    .where('email', 'like', 'signup-%')
    .execute();
  t.same(
    created.map((u) => u.email).sort(),
    ['signup-0@example.com', 'signup-1@example.com'],
    'the refused sign-up stored nothing',
  );
  t.equal(
    (await json(app, '/api/auth/sign-up', { email: 'signup-2@example.com', password: 'a-long-password-1' }, newIp()))
      .statusCode,
    201,
    'another IP signs up',
  );

  const pageIp = newIp();
  for (let i = 0; i < 2; i++) {
    const page = await hostedPost(
      app,
      '/login/sign-up',
      { email: `page-signup-${i}@example.com`, password: 'a-long-password-1', name: 'P' },
      pageIp,
    );
    t.equal(page.statusCode, 200, `hosted sign-up ${i + 1}`);
  }
  const page = await hostedPost(
    app,
    '/login/sign-up',
    { email: 'page-signup-2@example.com', password: 'a-long-password-1', name: 'P' },
    pageIp,
  );
  check429(t, page, 60, 'hosted sign-up');
  t.ok(isHtml(page));
});

t.test('request-password-reset: per IP and per e-mail (case-insensitive)', async (t) => {
  const redirectTo = `${ORIGIN}/login/reset-password`;
  const generic = { status: true, message: 'If this email exists in our system, check your email for the reset link' };
  const ip = newIp();
  for (let i = 0; i < 3; i++) {
    const res = await json(
      app,
      '/api/auth/request-password-reset',
      { email: `reset-ip-${i}@example.com`, redirectTo },
      ip,
    );
    t.equal(res.statusCode, 200, `request ${i + 1}`);
    t.same(res.json(), generic);
  }
  const res = await json(app, '/api/auth/request-password-reset', { email: 'reset-ip-3@example.com', redirectTo }, ip);
  check429(t, res, 60, 'reset request per IP');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');

  const target = await user('reset-target@example.com');
  for (const email of ['reset-target@example.com', 'Reset-Target@Example.com']) {
    t.same(
      (await json(app, '/api/auth/request-password-reset', { email, redirectTo }, newIp())).json(),
      generic,
      email,
    );
  }
  const byEmail = await json(
    app,
    '/api/auth/request-password-reset',
    { email: 'RESET-TARGET@EXAMPLE.COM', redirectTo },
    newIp(),
  );
  check429(t, byEmail, 60, 'reset request per e-mail');
  t.equal(byEmail.json().error, 'TOO_MANY_REQUESTS');
  t.same(
    (
      await json(app, '/api/auth/request-password-reset', { email: 'someone-else@example.com', redirectTo }, newIp())
    ).json(),
    generic,
    'another e-mail is not limited',
  );

  await app.services.recovery.drain();
  const tokens = await database.db
    .selectFrom('password_reset_tokens')
    .innerJoin('users', 'users.id', 'password_reset_tokens.user_id')
    .select('users.email')
    .where('users.email', '=', target.email)
    .execute();
  t.equal(tokens.length, 2, 'the refused request issued no token');

  const pageIp = newIp();
  for (let i = 0; i < 3; i++) {
    const page = await hostedPost(app, '/login/forgot-password', { email: `forgot-page-${i}@example.com` }, pageIp);
    t.equal(page.statusCode, 200, `hosted request ${i + 1}`);
  }
  const page = await hostedPost(app, '/login/forgot-password', { email: 'forgot-page-3@example.com' }, pageIp);
  check429(t, page, 60, 'hosted forgot-password per IP');
  t.ok(isHtml(page));
  await app.services.recovery.drain();
});

t.test('reset-password: per IP over 15 minutes, JSON and hosted page', async (t) => {
  const ip = newIp();
  for (let i = 0; i < 3; i++) {
    const res = await json(
      app,
      '/api/auth/reset-password',
      { token: 'x'.repeat(43), newPassword: 'a-new-password-1' },
      ip,
    );
    t.equal(res.statusCode, 400, `attempt ${i + 1}`);
    t.equal(res.json().error, 'INVALID_TOKEN');
  }
  const res = await json(
    app,
    '/api/auth/reset-password',
    { token: 'x'.repeat(43), newPassword: 'a-new-password-1' },
    ip,
  );
  check429(t, res, 900, 'reset-password');
  t.ok(Number(res.headers['retry-after']) > 60, 'the 15-minute window, not a minute');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.equal(
    (
      await json(app, '/api/auth/reset-password', { token: 'x'.repeat(43), newPassword: 'a-new-password-1' }, newIp())
    ).json().error,
    'INVALID_TOKEN',
    'another IP is not limited',
  );

  const pageIp = newIp();
  const fields = { token: 'x'.repeat(43), newPassword: 'a-new-password-1', confirmPassword: 'a-new-password-1' };
  for (let i = 0; i < 3; i++)
    t.equal(
      (await hostedPost(app, '/login/reset-password', fields, pageIp)).statusCode,
      400,
      `hosted attempt ${i + 1}`,
    );
  const page = await hostedPost(app, '/login/reset-password', fields, pageIp);
  check429(t, page, 900, 'hosted reset-password');
  t.ok(isHtml(page));
});

t.test('/api/external/me and UserInfo: per access token', async (t) => {
  const flow = await user('bearer-limit@example.com');
  const ip = newIp();
  const me = (accessToken: string) =>
    app.inject({
      method: 'GET',
      url: '/api/external/me',
      remoteAddress: ip,
      headers: { authorization: `Bearer ${accessToken}` },
    });
  const info = (accessToken: string) =>
    app.inject({
      method: 'GET',
      url: '/api/auth/oauth2/userinfo',
      remoteAddress: ip,
      headers: { authorization: `Bearer ${accessToken}` },
    });

  const a = (await obtainTokens(open.app, flow)).tokens.access_token;
  const b = (await obtainTokens(open.app, flow)).tokens.access_token;
  for (let i = 0; i < 3; i++) t.equal((await me(a)).statusCode, 200, `/me ${i + 1}`);
  const res = await me(a);
  check429(t, res, 60, '/api/external/me');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.equal((await me(b)).statusCode, 200, 'another token (same user, same IP) is not limited');

  const c = (await obtainTokens(open.app, flow)).tokens.access_token;
  const d = (await obtainTokens(open.app, flow)).tokens.access_token;
  for (let i = 0; i < 3; i++) t.equal((await info(c)).statusCode, 200, `userinfo ${i + 1}`);
  const limitedInfo = await info(c);
  check429(t, limitedInfo, 60, 'userinfo');
  t.equal(limitedInfo.json().error, 'TOO_MANY_REQUESTS');
  t.equal((await info(d)).statusCode, 200, 'another token is not limited');

  // Unknown tokens are refused as such (401), not counted into anyone's budget.
  for (let i = 0; i < 5; i++) t.equal((await me('y'.repeat(43))).statusCode, 401);
});

t.test('RATE_LIMITS=off: far more requests than the limits all pass, and the start says so loudly', async (t) => {
  const all1 = Object.fromEntries(Object.keys(LIMITS).map((k) => [k, '1/60']));
  const off = await buildTestApp(t, { env: { RATE_LIMITS: 'off', ...all1 }, database });
  const server = off.app;
  const ip = newIp();
  const flow = await user('off-limits@example.com');
  const { tokens } = await obtainTokens(open.app, flow);
  const statuses = new Map<string, number[]>();
  const record = (what: string, res: LightMyRequestResponse) =>
    statuses.set(what, [...(statuses.get(what) ?? []), res.statusCode]);
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
  });
  for (let i = 0; i < 6; i++) {
    record('token', await token(garbageRefresh(client.clientId), ip, server));
    record(
      'cookie token',
      await form(
        server,
        '/api/auth/oauth2/token/cookie',
        {
          grant_type: 'authorization_code',
          code: 'nope',
          code_verifier: 'v'.repeat(43),
          client_id: client.clientId,
          redirect_uri: redirectUri,
        },
        ip,
        { origin: ORIGIN },
      ),
    );
    record(
      'authorize',
      await server.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, remoteAddress: ip }),
    );
    record(
      'sign-in',
      await json(server, '/api/auth/sign-in', { email: flow.email, password: i === 5 ? PASSWORD : 'wrong' }, ip),
    );
    record('hosted sign-in', await hostedPost(server, '/login/sign-in', { email: flow.email, password: 'wrong' }, ip));
    record(
      'sign-up',
      await json(
        server,
        '/api/auth/sign-up',
        { email: `off-signup-${i}@example.com`, password: 'a-long-password-1' },
        ip,
      ),
    );
    record(
      'reset request',
      await json(
        server,
        '/api/auth/request-password-reset',
        { email: flow.email, redirectTo: `${ORIGIN}/login/reset-password` },
        ip,
      ),
    );
    record(
      'reset-password',
      await json(server, '/api/auth/reset-password', { token: 'x'.repeat(43), newPassword: 'a-new-password-1' }, ip),
    );
    record(
      'me',
      await server.inject({
        method: 'GET',
        url: '/api/external/me',
        remoteAddress: ip,
        headers: { authorization: `Bearer ${tokens.access_token}` },
      }),
    );
    record(
      'userinfo',
      await server.inject({
        method: 'GET',
        url: '/api/auth/oauth2/userinfo',
        remoteAddress: ip,
        headers: { authorization: `Bearer ${tokens.access_token}` },
      }),
    );
  }
  await server.services.recovery.drain();
  const expected: Record<string, number[]> = {
    token: Array(6).fill(400),
    'cookie token': Array(6).fill(400),
    authorize: Array(6).fill(303),
    'sign-in': [401, 401, 401, 401, 401, 200],
    'hosted sign-in': Array(6).fill(401),
    'sign-up': Array(6).fill(201),
    'reset request': Array(6).fill(200),
    'reset-password': Array(6).fill(400),
    me: Array(6).fill(200),
    userinfo: Array(6).fill(200),
  };
  t.same(Object.fromEntries(statuses), expected, 'no 429 anywhere');

  const warnings = off.logs.lines
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => l.level >= 40 && /rate limit/i.test(l.msg) && /off/i.test(l.msg));
  t.equal(warnings.length, 1, 'one warning at start that rate limits are off');
  t.match(warnings[0]?.msg, /RATE_LIMITS=off/);
  const onWarnings = limited.logs.lines
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => /rate limits are off/i.test(l.msg));
  t.same(onWarnings, [], 'no such warning when they are on');
});

t.test('configuration: RATE_LIMITS and RATE_LIMIT_<RULE> values', async (t) => {
  const problemNames = (env: Record<string, string>) => {
    try {
      testConfig(env);
    } catch (error) {
      if (error instanceof ConfigError) return { names: error.problems.map((p) => p.name), message: error.message };
      throw error;
    }
    return undefined;
  };
  for (const bad of [
    '0/60',
    '5/0',
    'abc',
    '5',
    '/60',
    '5/',
    '-1/60',
    '1.5/60',
    '5/60/2',
    '5 / 60',
    '5/60s',
    '10000000/60',
  ]) {
    const result = problemNames({ RATE_LIMITS: 'on', RATE_LIMIT_TOKEN: bad });
    t.ok(result, `${bad} is refused`);
    t.same(result?.names, ['RATE_LIMIT_TOKEN'], `${bad}: the variable is named`);
    t.match(result?.message, /RATE_LIMIT_TOKEN/, bad);
  }
  const several = problemNames({ RATE_LIMIT_SIGN_IN_EMAIL: '0/60', RATE_LIMIT_BEARER: 'x' });
  t.same(several?.names.sort(), ['RATE_LIMIT_BEARER', 'RATE_LIMIT_SIGN_IN_EMAIL'], 'every bad one is reported');
  t.same(problemNames({ RATE_LIMITS: 'sometimes' })?.names, ['RATE_LIMITS']);

  const config = testConfig({ RATE_LIMITS: 'on', RATE_LIMIT_TOKEN: '5/30', RATE_LIMIT_RESET_PASSWORD_IP: '7/1800' });
  t.equal(config.rateLimits.enabled, true);
  t.same(config.rateLimits.rules.TOKEN, { limit: 5, windowSeconds: 30 });
  t.same(config.rateLimits.rules.RESET_PASSWORD_IP, { limit: 7, windowSeconds: 1800 });
  t.equal(testConfig({ RATE_LIMITS: 'off' }).rateLimits.enabled, false);

  // The defaults are decisions.md's table, and the limits are on unless switched off.
  const defaults = testConfig({ RATE_LIMITS: '' });
  t.equal(defaults.rateLimits.enabled, true, 'on by default');
  // Issue 12: SIGN_IN_EMAIL counts failures only (5 free per 15 minutes, then growing delays), and the
  // rules for the device budget, sign-up mail per address, resends and token requests per IP are new.
  t.same(defaults.rateLimits.rules, {
    TOKEN: { limit: 60, windowSeconds: 60 },
    TOKEN_IP: { limit: 300, windowSeconds: 60 },
    AUTHORIZE: { limit: 60, windowSeconds: 60 },
    SIGN_IN_IP: { limit: 10, windowSeconds: 60 },
    // Issue 31, 7c: the IPv6 /48 aggregates of the mail-sending and sign-in rules.
    SIGN_IN_IP48: { limit: 100, windowSeconds: 60 },
    SIGN_IN_EMAIL: { limit: 5, windowSeconds: 900 },
    SIGN_IN_DEVICE: { limit: 10, windowSeconds: 900 },
    SIGN_UP_IP: { limit: 10, windowSeconds: 60 },
    SIGN_UP_IP48: { limit: 30, windowSeconds: 60 },
    SIGN_UP_EMAIL: { limit: 3, windowSeconds: 3600 },
    RESEND_IP: { limit: 10, windowSeconds: 900 },
    RESEND_IP48: { limit: 30, windowSeconds: 900 },
    RESEND_ACCOUNT: { limit: 3, windowSeconds: 900 },
    // Issue 31: resends and e-mail change requests per target address, and a cap on every account mail
    // to one address.
    RESEND_EMAIL: { limit: 3, windowSeconds: 900 },
    RESET_REQUEST_IP: { limit: 3, windowSeconds: 60 },
    RESET_REQUEST_IP48: { limit: 10, windowSeconds: 60 },
    RESET_REQUEST_EMAIL: { limit: 3, windowSeconds: 60 },
    RESET_REQUEST_EMAIL_DAY: { limit: 10, windowSeconds: 86400 },
    RESET_PASSWORD_IP: { limit: 10, windowSeconds: 900 },
    BEARER: { limit: 600, windowSeconds: 60 },
    MAIL_RECIPIENT: { limit: 10, windowSeconds: 3600 },
    // Issue 36: dynamic registration (REGISTRATION=open) per IP, its management endpoint, and metadata-document
    // fetches caused by one IP.
    REGISTRATION_IP: { limit: 10, windowSeconds: 3600 },
    REGISTRATION_MANAGE: { limit: 60, windowSeconds: 60 },
    METADATA_FETCH_IP: { limit: 30, windowSeconds: 60 },
  });
  t.equal(defaults.rateLimits.redisUrl, undefined, 'no Redis unless REDIS_URL is set');
  t.same(defaults.rateLimits.signInDelay, { firstSeconds: 1, maxSeconds: 60 });
});

// ---------------------------------------------------------------------------------------------------
// Issue 12, items 5-7: limits that cannot be turned against the victim.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const merge = (jar: Record<string, string>, res: LightMyRequestResponse) => {
  const out = { ...jar };
  for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
    if (c.maxAge === 0 || c.value === '') delete out[c.name];
    else out[c.name] = c.value;
  }
  return out;
};

/** A browser (cookie jar at one address) signing in on the hosted page. */
async function pageSignIn(
  server: FastifyInstance,
  jar: Record<string, string>,
  email: string,
  password: string,
  ip: string,
) {
  const form = await server.inject({ method: 'GET', url: '/login/sign-in', cookies: jar, remoteAddress: ip });
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const withCsrf = merge(jar, form);
  const res = await server.inject({
    method: 'POST',
    url: '/login/sign-in',
    remoteAddress: ip,
    cookies: withCsrf,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf, email, password }).toString(),
  });
  return { res, jar: merge(withCsrf, res) };
}

const GUARDED = {
  RATE_LIMITS: 'on',
  ...LIMITS,
  RATE_LIMIT_SIGN_IN_IP: '3/60',
  RATE_LIMIT_SIGN_IN_EMAIL: '3/900',
  RATE_LIMIT_SIGN_IN_DEVICE: '3/900',
  SIGN_IN_DELAY_FIRST: '1',
  SIGN_IN_DELAY_MAX: '2',
};

t.test("a flood of failed sign-ins from elsewhere does not stop the owner's browser (device cookie)", async (t) => {
  // Long delays here, so that "the account is in a delay" holds for the whole test.
  const guarded = (
    await buildTestApp(t, { env: { ...GUARDED, SIGN_IN_DELAY_FIRST: '30', SIGN_IN_DELAY_MAX: '30' }, database })
  ).app;
  const victim = await user('device-owner@example.com');
  const home = newIp();

  // The owner signs in once from this browser: a device cookie for the login path, kept a long time.
  const first = await pageSignIn(guarded, {}, victim.email, PASSWORD, home);
  t.equal(first.res.statusCode, 303, 'the owner signs in');
  const device = (
    first.res.cookies as Array<{ name: string; value: string; path?: string; httpOnly?: boolean; maxAge?: number }>
  ).find((c) => c.name === 'idp.device');
  t.ok(device, 'a device cookie is set on a successful sign-in');
  t.equal(device?.path, '/login/sign-in', 'on the sign-in path of the hosted pages');
  t.equal(device?.httpOnly, true, 'HttpOnly');
  t.ok((device?.maxAge ?? 0) >= 180 * 24 * 3600, `long-lived (${device?.maxAge} s)`);
  t.notMatch(device?.value ?? '', /device-owner|example/i, 'it does not carry the address');

  // Signing out ends the session, not the device cookie.
  const csrf = first.jar['idp.csrf']!;
  const out = await guarded.inject({
    method: 'POST',
    url: '/login/sign-out',
    remoteAddress: home,
    cookies: first.jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf }).toString(),
  });
  t.equal(out.statusCode, 200);
  const browser = merge(first.jar, out);
  t.ok(browser['idp.device'], 'the device cookie outlives sign-out');
  t.notOk(browser[guarded.sessionCookieName], 'the session is gone');

  // Someone who knows the address guesses from many addresses.
  const flood: number[] = [];
  for (let i = 0; i < 20; i++)
    flood.push(
      (await json(guarded, '/api/auth/sign-in', { email: victim.email, password: `guess-${i}` }, newIp())).statusCode,
    );
  t.same(flood.slice(0, 3), [401, 401, 401], 'the free failures, and the one that opens the delay');
  t.ok(
    flood.slice(3).every((c) => c === 429),
    `then 429 for every unknown browser (${flood.join(',')})`,
  );
  check429(
    t,
    await pageSignIn(guarded, {}, victim.email, PASSWORD, newIp()).then((r) => r.res),
    30,
    'even the right password from an unknown browser waits',
  );

  // The owner's browser is judged by its own budget: a typo is a plain 401, the right password works.
  const typo = await pageSignIn(guarded, browser, victim.email, 'my-typo', home);
  t.equal(typo.res.statusCode, 401, 'a typo from the trusted browser is a 401, not a 429');
  const again = await pageSignIn(guarded, typo.jar, victim.email, PASSWORD, newIp());
  t.equal(again.res.statusCode, 303, 'the right password from the trusted browser signs in during the delay');
  t.ok(again.jar[guarded.sessionCookieName], 'with a session');

  // A device cookie is for the account it names: another account gets no trust from it.
  const other = await user('device-bystander@example.com');
  for (let i = 0; i < 5; i++)
    await json(guarded, '/api/auth/sign-in', { email: other.email, password: `guess-${i}` }, newIp());
  const notTrusted = await pageSignIn(guarded, again.jar, other.email, PASSWORD, newIp());
  t.equal(notTrusted.res.statusCode, 429, 'the cookie gives no trust for another account');

  // The browser's own budget (3 failures here, one spent on the typo): past it, it is an unknown browser again.
  let jar = again.jar;
  const own: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await pageSignIn(guarded, jar, victim.email, `typo-${i}`, newIp());
    own.push(r.res.statusCode);
    jar = r.jar;
  }
  t.same(own, [401, 401, 429], "the trusted browser has a budget of its own; past it the account's delay applies");

  // The JSON sign-in sets its own device cookie, scoped to its path, and honours it the same way.
  const api = await user('device-api@example.com');
  const apiOk = await json(guarded, '/api/auth/sign-in', { email: api.email, password: PASSWORD }, newIp());
  t.equal(apiOk.statusCode, 200);
  const apiDevice = (apiOk.cookies as Array<{ name: string; value: string; path?: string }>).find(
    (c) => c.name === 'idp.device',
  );
  t.equal(apiDevice?.path, '/api/auth/sign-in', "the JSON sign-in's device cookie is on its own path");
  for (let i = 0; i < 5; i++)
    await json(guarded, '/api/auth/sign-in', { email: api.email, password: `guess-${i}` }, newIp());
  check429(
    t,
    await json(guarded, '/api/auth/sign-in', { email: api.email, password: PASSWORD }, newIp()),
    30,
    'an unknown client waits',
  );
  const trustedApi = await json(guarded, '/api/auth/sign-in', { email: api.email, password: PASSWORD }, newIp(), {
    cookie: `idp.device=${apiDevice?.value}`,
  });
  t.equal(trustedApi.statusCode, 200, 'the JSON sign-in with its device cookie is not delayed');
  const forged = await json(guarded, '/api/auth/sign-in', { email: api.email, password: PASSWORD }, newIp(), {
    cookie: `idp.device=${apiDevice?.value.slice(0, -2)}xx`,
  });
  t.equal(forged.statusCode, 429, 'a forged device cookie gives no trust');
});

t.test(
  'without a device cookie the owner gets short, growing delays, not a long block; successes do not count',
  async (t) => {
    const guarded = (await buildTestApp(t, { env: GUARDED, database })).app;
    const victim = await user('delayed-owner@example.com');
    const attempt = (password: string) =>
      json(guarded, '/api/auth/sign-in', { email: victim.email, password }, newIp());

    // Successful sign-ins are not failures: far more than the 3 free failures, all 200.
    const successes: number[] = [];
    for (let i = 0; i < 6; i++) successes.push((await attempt(PASSWORD)).statusCode);
    t.same(successes, [200, 200, 200, 200, 200, 200], 'successful sign-ins do not count');

    // Failures 1 and 2 are free; the 3rd opens a 1 s delay, the 4th 2 s, then 2 s (the maximum here).
    t.same(
      [
        (await attempt('wrong-1')).statusCode,
        (await attempt('wrong-2')).statusCode,
        (await attempt('wrong-3')).statusCode,
      ],
      [401, 401, 401],
    );
    const first = await attempt('wrong-4');
    check429(t, first, 2, 'during the first delay');
    t.equal(first.headers['retry-after'], '1', 'the first delay is 1 s');
    t.equal(first.json().error, 'TOO_MANY_REQUESTS');
    await sleep(1_100);
    t.equal((await attempt('wrong-4')).statusCode, 401, 'after the delay the next guess is judged');
    const second = await attempt('wrong-5');
    t.equal(second.headers['retry-after'], '2', 'the next delay is longer');
    await sleep(2_100);
    t.equal((await attempt('wrong-5')).statusCode, 401);
    const third = await attempt('wrong-6');
    check429(t, third, 2, 'the delays stop growing at SIGN_IN_DELAY_MAX');

    // The owner, in a new browser, waits out the delay and signs in: no long block.
    const owner = await attempt(PASSWORD);
    check429(t, owner, 2, 'the owner from an unknown browser waits at most SIGN_IN_DELAY_MAX');
    await sleep(Math.min(Number(owner.headers['retry-after']) || 0, 3) * 1000 + 100);
    t.equal((await attempt(PASSWORD)).statusCode, 200, 'and then signs in');

    // Parallel guesses cannot slip past the count: one fresh account, ten guesses at once.
    const burst = await user('burst-target@example.com');
    const codes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        json(guarded, '/api/auth/sign-in', { email: burst.email, password: `burst-${i}` }, newIp()).then(
          (r) => r.statusCode,
        ),
      ),
    );
    t.equal(
      codes.filter((c) => c === 401).length,
      3,
      `3 guesses judged (2 free, 1 opening the delay), the rest refused (${codes.join(',')})`,
    );

    // Unknown addresses behave the same (nothing tells whether an account exists).
    const series = async (email: string) => {
      const out: number[] = [];
      for (let i = 0; i < 5; i++)
        out.push((await json(guarded, '/api/auth/sign-in', { email, password: `x-${i}` }, newIp())).statusCode);
      return out;
    };
    const known = await user('existing-target@example.com');
    t.same(
      await series('no-such-account@example.com'),
      await series(known.email),
      'the same answers for an unknown address',
    );
  },
);

t.test('the verification resend is limited per account and per IP, with the cooldown on the page', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const guarded = (
    await buildTestApp(t, {
      env: {
        ...GUARDED,
        SMTP_URL: smtp.url,
        RATE_LIMIT_RESEND_ACCOUNT: '2/900',
        RATE_LIMIT_RESEND_IP: '3/900',
        RATE_LIMIT_SIGN_UP_IP: '10/60',
      },
      database,
    })
  ).app;
  const ip = newIp();

  // An unverified account signed in, with its first verification mail sent. (Sign-up no longer makes
  // unverified accounts, issue 31: an operator's account, or one made before the upgrade, is the case.)
  async function signUp(email: string, from: string) {
    const made = await guarded.services.users.create({ email, password: 'a-long-password-1' }, { actor: 'test' });
    await guarded.services.accounts.sendVerification(made, {});
    const page = await guarded.inject({ method: 'GET', url: '/login/sign-in', remoteAddress: from });
    const jar = merge({}, page);
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const res = await guarded.inject({
      method: 'POST',
      url: '/login/sign-in',
      remoteAddress: from,
      cookies: jar,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, email, password: 'a-long-password-1' }).toString(),
    });
    t.equal(res.statusCode, 303, `${email} signs in`);
    return { jar: merge(jar, res), csrf };
  }
  const resend = (browser: { jar: Record<string, string>; csrf: string }, from: string) =>
    guarded.inject({
      method: 'POST',
      url: '/login/verify-email/resend',
      remoteAddress: from,
      cookies: browser.jar,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf: browser.csrf }).toString(),
    });

  const alice = await signUp('resend-alice@example.com', ip);
  const sent = [await resend(alice, ip), await resend(alice, newIp())];
  t.same(
    sent.map((r) => r.statusCode),
    [200, 200],
    'two resends pass',
  );
  const limited = await resend(alice, newIp());
  check429(t, limited, 900, 'a third resend for the account');
  t.ok(isHtml(limited), 'an HTML page');
  const seconds = limited.headers['retry-after'];
  t.match(limited.body, new RegExp(`You can ask again in ${seconds} seconds?`), 'the page says when to ask again');
  await guarded.services.mailer.drain();
  t.equal(
    smtp.mails.filter((m) => m.to.includes('resend-alice@example.com')).length,
    3,
    'the sign-up mail and two resends, no more',
  );

  // Per IP (3 here): other accounts from the same address share the IP's budget.
  const bob = await signUp('resend-bob@example.com', ip);
  t.same(
    [(await resend(bob, ip)).statusCode, (await resend(bob, ip)).statusCode],
    [200, 200],
    "the IP's second and third resends",
  );
  const carol = await signUp('resend-carol@example.com', ip);
  const byIp = await resend(carol, ip);
  check429(t, byIp, 900, 'resends per IP, for an account that has not asked yet');
  t.match(byIp.body, /You can ask again in \d+ seconds?/);
});

t.test('sign-up mail is limited per target address (and per IP), with the cooldown in the answer', async (t) => {
  const guarded = (
    await buildTestApp(t, {
      env: { ...GUARDED, RATE_LIMIT_SIGN_UP_EMAIL: '2/3600', RATE_LIMIT_SIGN_UP_IP: '10/60' },
      database,
    })
  ).app;
  const target = 'Flooded-Inbox@example.com';
  const codes = [];
  for (const email of [target, target.toLowerCase()])
    codes.push(
      (await json(guarded, '/api/auth/sign-up', { email, password: 'a-long-password-1' }, newIp())).statusCode,
    );
  t.same(codes, [201, 201], 'the first sign-up, then the second answers alike (issue 31: no account oracle)');
  const limited = await json(
    guarded,
    '/api/auth/sign-up',
    { email: target.toUpperCase(), password: 'a-long-password-1' },
    newIp(),
  );
  check429(t, limited, 3600, 'a third sign-up for the same address from anywhere');
  t.equal(limited.json().error, 'TOO_MANY_REQUESTS');
  t.match(limited.json().message, /try again in \d+ seconds?/);

  const pageTarget = 'page-flooded@example.com';
  for (let i = 0; i < 2; i++)
    await hostedPost(
      guarded,
      '/login/sign-up',
      { email: pageTarget, password: 'a-long-password-1', name: 'P' },
      newIp(),
    );
  const page = await hostedPost(
    guarded,
    '/login/sign-up',
    { email: pageTarget, password: 'a-long-password-1', name: 'P' },
    newIp(),
  );
  check429(t, page, 3600, 'the hosted sign-up for the same address');
  t.ok(isHtml(page));
  t.match(
    page.body,
    new RegExp(`try again in ${page.headers['retry-after']} seconds?`),
    'the page says when to try again',
  );
});

t.test(
  "token endpoints: per IP before the client lookup; made-up client_ids never evict a real client's window",
  async (t) => {
    const guarded = await buildTestApp(t, {
      env: { ...GUARDED, RATE_LIMIT_TOKEN: '3/60', RATE_LIMIT_TOKEN_IP: '1000/60' },
      database,
    });
    const server = guarded.app;
    const ip = newIp();
    for (let i = 0; i < 3; i++)
      t.equal((await token(garbageRefresh(client.clientId), ip, server)).json().error, 'invalid_grant');
    check429(t, await token(garbageRefresh(client.clientId), ip, server), 60, "the real client's window is exhausted");

    const junkIp = newIp();
    for (let i = 0; i < 300; i++) {
      const res = await token(garbageRefresh(`made-up-${i}-${'z'.repeat(20)}`), i % 2 ? junkIp : ip, server);
      if (res.statusCode !== 401) t.fail(`made-up client ${i}: ${res.statusCode} ${res.body}`);
    }
    for (const i of [0, 1, 299])
      t.equal(
        await server.rateLimiters.TOKEN.get(`made-up-${i}-${'z'.repeat(20)}\u0000${ipKey(ip)}`),
        null,
        'made-up client_ids make no per-client keys',
      );
    check429(
      t,
      await token(garbageRefresh(client.clientId), ip, server),
      60,
      "the real client's exhausted window survived the flood",
    );

    // The per-IP rule is counted before the client is looked up.
    const tight = (await buildTestApp(t, { env: { ...GUARDED, RATE_LIMIT_TOKEN_IP: '5/60' }, database })).app;
    const flooder = newIp();
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await token(garbageRefresh(`junk-${i}`), flooder, tight)).statusCode);
    t.same(statuses, [401, 401, 401, 401, 401, 429], 'made-up client_ids from one IP hit the per-IP limit');
    const cookieFlood = await form(
      tight,
      '/api/auth/oauth2/token/cookie',
      {
        grant_type: 'authorization_code',
        code: 'nope',
        code_verifier: 'v'.repeat(43),
        client_id: 'junk-cookie',
        redirect_uri: redirectUri,
      },
      flooder,
      { origin: ORIGIN },
    );
    check429(t, cookieFlood, 60, 'the cookie token endpoint shares it');
    t.equal(cookieFlood.json().error, 'temporarily_unavailable');
  },
);

t.test('IPv6 clients are keyed by their /64', async (t) => {
  const guarded = (await buildTestApp(t, { env: GUARDED, database })).app;
  const prefix = `2001:db8:${(nextIp++).toString(16)}:1`;
  for (let i = 1; i <= 3; i++) {
    t.equal(
      (await json(guarded, '/api/auth/sign-in', { email: `v6-${i}@example.com`, password: 'wrong' }, `${prefix}::${i}`))
        .statusCode,
      401,
      `address ${i} of the /64`,
    );
  }
  check429(
    t,
    await json(
      guarded,
      '/api/auth/sign-in',
      { email: 'v6-4@example.com', password: 'wrong' },
      `${prefix}:ffff:ffff:ffff:ffff`,
    ),
    60,
    'another address in the same /64 shares the count',
  );
  t.equal(
    (await json(guarded, '/api/auth/sign-in', { email: 'v6-5@example.com', password: 'wrong' }, `${prefix}0::1`))
      .statusCode,
    401,
    'the next /64 has its own',
  );
});

t.test('reset mail to one inbox is capped per day, whatever the per-minute window allows', async (t) => {
  const capped = await buildTestApp(t, {
    env: { RATE_LIMITS: 'on', RATE_LIMIT_RESET_REQUEST_EMAIL: '100/60', RATE_LIMIT_RESET_REQUEST_EMAIL_DAY: '3/86400' },
    database,
  });
  const redirectTo = `${ORIGIN}/login/reset-password`;
  for (let i = 0; i < 3; i++) {
    const res = await json(
      capped.app,
      '/api/auth/request-password-reset',
      { email: 'inbox@example.com', redirectTo },
      newIp(),
    );
    t.equal(res.statusCode, 200, `request ${i + 1} of the day`);
  }
  const fourth = await json(
    capped.app,
    '/api/auth/request-password-reset',
    { email: 'INBOX@example.com', redirectTo },
    newIp(),
  );
  t.equal(fourth.statusCode, 429, 'the fourth of the day, from yet another IP, is refused');
  t.ok(Number(fourth.headers['retry-after']) > 3600, `Retry-After counts the day (${fourth.headers['retry-after']} s)`);
  t.equal(fourth.json().error, 'TOO_MANY_REQUESTS');
});

// ---------------------------------------------------------------------------------------------------
// Issue 31, item 5: limits on mail to an address are keyed by the address and outlive the account.

t.test('deleting an account and making it again renews no limit on mail to its address', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const guarded = (
    await buildTestApp(t, {
      env: {
        RATE_LIMITS: 'on',
        SMTP_URL: smtp.url,
        RATE_LIMIT_RESET_REQUEST_EMAIL: '2/60',
        RATE_LIMIT_RESET_REQUEST_EMAIL_DAY: '100/86400',
      },
      database,
    })
  ).app;
  const email = 'renewed-inbox@example.com';
  const redirectTo = `${ORIGIN}/login/reset-password`;
  const reset = () => json(guarded, '/api/auth/request-password-reset', { email, redirectTo }, newIp());
  for (let round = 1; round <= 3; round++) {
    const created = await open.app.services.users.create(
      { email, password: PASSWORD, emailVerified: true },
      { actor: 'test' },
    );
    const codes = [(await reset()).statusCode, (await reset()).statusCode];
    t.same(codes, round === 1 ? [200, 200] : [429, 429], `round ${round}: ${codes}`);
    // The owner deletes the account (DELETE /api/me), which used to forget every count about the address.
    const signedIn = await json(guarded, '/api/auth/sign-in', { email, password: PASSWORD }, newIp());
    t.equal(signedIn.statusCode, 200);
    const deleted = await guarded.inject({
      method: 'DELETE',
      url: '/api/me',
      remoteAddress: newIp(),
      cookies: Object.fromEntries(
        (signedIn.cookies as Array<{ name: string; value: string }>).map((c) => [c.name, c.value]),
      ),
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ password: PASSWORD }),
    });
    t.equal(deleted.statusCode, 204, `round ${round}: account ${created.id} deleted`);
  }
  await guarded.services.recovery.drain();
  await guarded.services.mailer.drain();
  t.equal(smtp.mails.filter((m) => m.to.includes(email)).length, 2, 'two reset mails in all, not six');
});

t.test('every account mail to one address passes a per-recipient cap (MAIL_RECIPIENT)', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const { app: capped } = await buildTestApp(t, {
    env: {
      RATE_LIMITS: 'on',
      SMTP_URL: smtp.url,
      RATE_LIMIT_MAIL_RECIPIENT: '2/3600',
      RATE_LIMIT_RESET_REQUEST_EMAIL: '100/60',
      RATE_LIMIT_RESET_REQUEST_EMAIL_DAY: '100/86400',
    },
    database,
  });
  const email = 'cap-inbox@example.com';
  await user(email);
  const redirectTo = `${ORIGIN}/login/reset-password`;
  const answers = [];
  for (const spelling of [email, email.toUpperCase(), ` ${email}`, email])
    answers.push(await json(capped, '/api/auth/request-password-reset', { email: spelling, redirectTo }, newIp()));
  t.same(
    answers.map((r) => r.statusCode),
    [200, 200, 200, 200],
    'request-password-reset answers the same past the cap (it hides whether a mail went out)',
  );
  t.equal(new Set(answers.map((r) => r.body)).size, 1, 'with the same body');
  await capped.services.recovery.drain();
  await capped.services.mailer.drain();
  const inbox = () => smtp.mails.filter((m) => m.to.toLowerCase().includes(email));
  t.equal(inbox().length, 2, 'two mails reach the inbox, whatever the spelling of the address');

  // The cap sits in the services' mailer: any account mail to the address is held back now.
  const { verificationMail, passwordChangedMail } = await import('../../src/mail/templates.js');
  capped.services.mailer.sendInBackground(verificationMail(email.toUpperCase(), `${ORIGIN}/x`, undefined));
  // A notice of a change someone holding the account made is never held back.
  const notice = passwordChangedMail(email, new Date(), `${ORIGIN}/login/forgot-password`);
  capped.services.mailer.sendInBackground(notice);
  await capped.services.mailer.drain();
  t.same(
    inbox()
      .slice(2)
      .map((m) => m.subject),
    [notice.subject],
    'the verification mail is not sent; the "password changed" notice is',
  );
  // The function every mail path can call: counts one mail per call, by the normalised address.
  t.same(
    [
      await capped.mailRecipientCap(' Fresh-Cap@Example.com '),
      await capped.mailRecipientCap('fresh-cap@example.com'),
      await capped.mailRecipientCap('FRESH-CAP@example.com'),
    ],
    [true, true, false],
  );
  const { app: unlimited } = await buildTestApp(t, { env: { RATE_LIMITS: 'off' }, database });
  t.equal(await unlimited.mailRecipientCap('fresh-cap@example.com'), true, 'RATE_LIMITS=off: no cap');
});

// ---------------------------------------------------------------------------------------------------
// Issue 31, item 7(b): a device cookie names the account under its current password.

t.test('a device cookie earned before a password change (reset or operator) gives no trust after it', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const guarded = (
    await buildTestApp(t, {
      env: { ...GUARDED, SMTP_URL: smtp.url, SIGN_IN_DELAY_FIRST: '30', SIGN_IN_DELAY_MAX: '30' },
      database,
    })
  ).app;
  const { linkIn } = await import('../helpers/smtp.js');
  const signIn = (email: string, password: string, device?: string) =>
    json(guarded, '/api/auth/sign-in', { email, password }, newIp(), device ? { cookie: `idp.device=${device}` } : {});
  const deviceOf = (res: LightMyRequestResponse) =>
    (res.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.device')?.value;

  const changes: Array<[string, (email: string, id: string) => Promise<string>]> = [
    [
      'a password reset',
      async (email) => {
        const redirectTo = `${ORIGIN}/login/reset-password`;
        const asked = await json(guarded, '/api/auth/request-password-reset', { email, redirectTo }, newIp());
        t.equal(asked.statusCode, 200);
        const link = new URL(linkIn(await smtp.waitFor(email)));
        const token = decodeURIComponent(link.pathname.split('/').pop()!);
        const done = await json(
          guarded,
          '/api/auth/reset-password',
          { token, newPassword: 'a-new-password-after-reset' },
          newIp(),
        );
        t.equal(done.statusCode, 200, 'the reset is completed');
        return 'a-new-password-after-reset';
      },
    ],
    [
      "an operator's password change",
      async (_email, id) => {
        await open.app.services.users.update(id, { password: 'set-by-the-operator-1' }, { actor: 'test' });
        return 'set-by-the-operator-1';
      },
    ],
  ];
  for (const [what, change] of changes) {
    const email = `device-${what.replace(/\W+/g, '-')}@example.com`;
    await user(email);
    const id = (await open.app.services.users.get(email)).id;
    // A browser (a past intruder's, say) signs in and earns a device cookie.
    const before = await signIn(email, PASSWORD);
    t.equal(before.statusCode, 200);
    const old = deviceOf(before);
    t.ok(old, 'a device cookie');

    const password = await change(email, id);
    // The owner signs in afresh after the change: a new cookie.
    const after = await signIn(email, password);
    t.equal(after.statusCode, 200);
    const fresh = deviceOf(after);
    t.ok(fresh && fresh !== old, 'a fresh device cookie');

    // Someone floods the account with guesses: unknown browsers wait.
    for (let i = 0; i < 5; i++) await signIn(email, `guess-${i}`);
    check429(t, await signIn(email, password), 30, `${what}: an unknown browser waits`);
    check429(t, await signIn(email, password, old), 30, `${what}: the cookie from before the change is not trusted`);
    t.equal((await signIn(email, password, fresh)).statusCode, 200, `${what}: the fresh cookie is trusted`);
  }
});
