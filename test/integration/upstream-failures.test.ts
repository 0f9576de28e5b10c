// Sign-in with another provider (issue 35): every upstream failure lands on the error page with a way back and
// leaves no session; a callback works once, in the browser that started it; the pending authorization request
// survives the round trip. Real HTTP, a cookie jar per browser, a fake OpenID provider that misbehaves on demand.
import { createServer } from 'node:net';
import t, { type Test } from 'tap';
import { BrowserClient } from '../helpers/browser-client.js';
import { startTestServer } from '../helpers/server.js';
import { type FakeOidcMode, startFakeOidc, startGitHubLike } from '../helpers/upstreams.js';

const ctx = await startTestServer(t);
const { db } = ctx.database;
const login = `${ctx.baseUrl}/login`;
const fake = await startFakeOidc(t, { clientId: 'idp-fake', clientSecret: 'fake-secret' });
const github = await startGitHubLike(t, { clientId: 'gh-client', clientSecret: 'gh-secret' });
const { providers } = ctx.app.services.upstreams;

await providers.create({
  id: 'fake',
  kind: 'oidc',
  name: 'Fake Co',
  issuer: fake.issuer,
  clientId: 'idp-fake',
  clientSecret: 'fake-secret',
  allowSignUp: true,
  trustEmailVerified: true,
});
await providers.create({
  id: 'github',
  kind: 'oauth2',
  name: 'GitHub',
  ...github.endpoints,
  clientId: 'gh-client',
  clientSecret: 'gh-secret',
  clientAuth: 'client_secret_post',
  scopes: ['read:user', 'user:email'],
  mapping: { subject: 'id', email: 'email', name: 'name', picture: 'avatar_url' },
  allowSignUp: true,
  trustEmailVerified: true,
  storeTokens: true,
});
// An upstream nobody answers for: a port that was free a moment ago.
const deadPort = await new Promise<number>((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const port = (s.address() as { port: number }).port;
    s.close(() => resolve(port));
  });
});
await providers.create({
  id: 'down',
  kind: 'oidc',
  name: 'Down Inc',
  issuer: `http://127.0.0.1:${deadPort}`,
  clientId: 'x',
  clientSecret: 'y',
  allowSignUp: true,
  trustEmailVerified: true,
});

const countSessions = async () =>
  Number(
    (
      await db
        .selectFrom('sessions')
        .select((e) => e.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );
const countUsers = async () =>
  Number(
    (
      await db
        .selectFrom('users')
        .select((e) => e.fn.countAll().as('n'))
        .executeTakeFirstOrThrow()
    ).n,
  );

/** POSTs the provider's button of the sign-in page: the answer (the upstream's address, or an error page). */
async function start(browser: BrowserClient, providerId: string, query = '') {
  const page = await browser.request(`${login}/sign-in${query}`);
  const fields = BrowserClient.hiddenFields(page.body, `/upstream/${providerId}/start`);
  return browser.request(`${login}/upstream/${providerId}/start`, { form: fields });
}

/** From the upstream's authorization URL to the answer of our callback (the upstream redirects at once). */
async function throughUpstream(browser: BrowserClient, authorizationUrl: string) {
  const upstream = await browser.request(authorizationUrl);
  if (!upstream.location?.startsWith(`${login}/upstream/`)) throw new Error(`upstream answered ${upstream.status}`);
  return { callbackUrl: upstream.location, res: await browser.request(upstream.location) };
}

/** The error page: its status, what it says, the way back, and no session anywhere. */
async function assertErrorPage(
  t: Test,
  res: { status: number; body: string; headers: Headers },
  status: number,
  message: RegExp,
  back = 'href="/login/sign-in">Back to sign in',
) {
  t.equal(res.status, status);
  t.match(res.headers.get('content-type'), /text\/html/);
  t.equal(res.headers.get('cache-control'), 'no-store');
  t.match(res.body, message);
  t.match(res.body, back);
  t.notMatch(res.body, /at .*\.(ts|js):\d+/, 'no stack trace');
}

t.beforeEach(() => {
  fake.state.mode = 'ok';
});

/** What the log says of the last failed round trip (the page says less: no detail of the upstream's). */
const lastFailure = () => {
  const line = ctx.logs.lines.filter((l) => l.includes('upstream sign-in failed')).at(-1);
  return line ? (JSON.parse(line) as { reason: string; detail: string }) : undefined;
};

// The log's detail (openid-client's own message) shows each was refused for its own reason.
const failures: Array<[FakeOidcMode, number, RegExp, RegExp]> = [
  ['error', 400, /Fake Co did not sign you in: it answered with an error/, /^access_denied/],
  ['forged', 502, /The answer of Fake Co could not be verified/, /signature/i],
  ['expired', 502, /The answer of Fake Co could not be verified/, /"exp"/],
  ['wrong_nonce', 502, /The answer of Fake Co could not be verified/, /"nonce"/],
  ['wrong_audience', 502, /The answer of Fake Co could not be verified/, /"aud"/],
];
for (const [mode, status, message, detail] of failures) {
  t.test(`an upstream ${mode.replace('_', ' ')} answer: the error page, no session, no account`, async (t) => {
    const sessions = await countSessions();
    const users = await countUsers();
    fake.state.mode = mode;
    fake.state.account = { sub: `fake-${mode}`, email: `${mode}@fake.test`, email_verified: true };
    const browser = new BrowserClient();
    const started = await start(browser, 'fake');
    t.equal(started.status, 303);
    const { res } = await throughUpstream(browser, started.location!);
    await assertErrorPage(t, res, status, message);
    t.match(lastFailure()?.detail, detail);
    t.equal(await countSessions(), sessions);
    t.equal(await countUsers(), users);
    t.notOk([...browser.cookies.keys()].some((k) => k.includes('idp.session')));
  });
}

t.test('the same upstream answering well signs in (the fake is not broken)', async (t) => {
  fake.state.account = { sub: 'fake-good', email: 'good@fake.test', email_verified: true, name: 'Good' };
  const browser = new BrowserClient();
  const started = await start(browser, 'fake');
  const { callbackUrl, res } = await throughUpstream(browser, started.location!);
  t.equal(res.status, 303);
  t.equal(res.location, `${login}/`);
  t.ok([...browser.cookies.keys()].some((k) => k.includes('idp.session')));

  // A replayed callback (same browser, same state and code): the flow was taken once.
  const sessions = await countSessions();
  const replay = await browser.request(callbackUrl);
  await assertErrorPage(t, replay, 400, /not one we are waiting for/);
  t.equal(await countSessions(), sessions);
});

t.test('an upstream that does not answer: the error page at the start', async (t) => {
  const browser = new BrowserClient();
  const res = await start(browser, 'down');
  await assertErrorPage(t, res, 502, /Down Inc did not answer/);
  t.notOk([...browser.cookies.keys()].some((k) => k.includes('idp.session')));
});

t.test('a bad or missing state: the error page', async (t) => {
  const browser = new BrowserClient();
  for (const query of ['?state=made-up&code=abc', '?code=abc', '']) {
    const res = await browser.request(`${login}/upstream/fake/callback${query}`);
    await assertErrorPage(t, res, 400, /not one we are waiting for/);
  }
  t.equal(browser.cookies.size > 0 && [...browser.cookies.keys()].some((k) => k.includes('idp.session')), false);
});

t.test('a callback in another browser than the one that started: refused, and the flow is gone', async (t) => {
  fake.state.account = { sub: 'fake-victim', email: 'victim@fake.test', email_verified: true };
  const users = await countUsers();
  const sessions = await countSessions();
  const starter = new BrowserClient();
  const started = await start(starter, 'fake');
  // The attacker's browser (no cookie of the round trip) gets the answer.
  const attacker = new BrowserClient();
  const { callbackUrl, res } = await throughUpstream(attacker, started.location!);
  await assertErrorPage(t, res, 400, /started in another browser/);
  // Taken once: the starter cannot use it either.
  const late = await starter.request(callbackUrl);
  await assertErrorPage(t, late, 400, /not one we are waiting for/);
  t.equal(await countUsers(), users);
  t.equal(await countSessions(), sessions);
});

t.test("a state of another provider's round trip: refused", async (t) => {
  const browser = new BrowserClient();
  const started = await start(browser, 'fake');
  const upstream = await browser.request(started.location!);
  const callback = new URL(upstream.location!);
  const res = await browser.request(`${login}/upstream/github/callback${callback.search}`);
  await assertErrorPage(t, res, 400, /not one we are waiting for/);
});

t.test('an unknown provider: the error page', async (t) => {
  const browser = new BrowserClient();
  const page = await browser.request(`${login}/sign-in`);
  const csrf = BrowserClient.hiddenFields(page.body, '/login/sign-in').csrf!;
  const res = await browser.request(`${login}/upstream/nobody/start`, { form: { csrf } });
  await assertErrorPage(t, res, 404, /This sign-in provider is not available/);
  const get = await browser.request(`${login}/upstream/nobody/start`);
  t.equal(get.status, 404);
});

t.test('the start POST needs the CSRF token', async (t) => {
  const browser = new BrowserClient();
  await browser.request(`${login}/sign-in`);
  const res = await browser.request(`${login}/upstream/fake/start`, { form: { csrf: 'wrong' } });
  t.equal(res.status, 403);
  t.notOk(res.location);
});

t.test('the round-trip cookie: HttpOnly, SameSite=Lax, only under the upstream path', async (t) => {
  const browser = new BrowserClient();
  const started = await start(browser, 'fake');
  const cookie = started.headers.getSetCookie().find((c) => c.startsWith('idp.upstream='));
  t.ok(cookie);
  t.match(cookie, /Path=\/login\/upstream/);
  t.match(cookie, /HttpOnly/);
  t.match(cookie, /SameSite=Lax/);
  const row = await db.selectFrom('upstream_flows').selectAll().orderBy('created_at', 'desc').executeTakeFirstOrThrow();
  const value = /^idp\.upstream=([^;]+)/.exec(cookie!)![1]!;
  t.notMatch(JSON.stringify(row), value, 'only a hash of the cookie is stored');
  const state = new URL(started.location!).searchParams.get('state')!;
  t.notMatch(JSON.stringify(row), state, 'only a hash of the state is stored');
});

t.test(
  'GitHub-like: an account just in time from the verified primary address, tokens sealed and refreshed',
  async (t) => {
    github.state.user = {
      id: 4242,
      login: 'octo',
      name: 'Octo Cat',
      email: 'public@elsewhere.test',
      avatar_url: 'https://avatars.example/4242',
    };
    github.state.emails = [
      { email: 'old@octo.test', primary: false, verified: true, visibility: null },
      { email: 'Octo@Octo.test', primary: true, verified: true, visibility: 'private' },
    ];
    github.state.expiresIn = 3600;
    const browser = new BrowserClient();
    const started = await start(browser, 'github');
    t.equal(new URL(started.location!).origin, github.origin);
    t.equal(new URL(started.location!).searchParams.get('code_challenge_method'), 'S256');
    const { res } = await throughUpstream(browser, started.location!);
    t.equal(res.status, 303);
    const user = await db.selectFrom('users').selectAll().where('email', '=', 'octo@octo.test').executeTakeFirst();
    t.ok(user, 'the verified primary address, not the public profile one');
    t.equal(user!.name, 'Octo Cat');
    t.equal(user!.picture, 'https://avatars.example/4242');
    const link = await db
      .selectFrom('upstream_identities')
      .selectAll()
      .where('user_id', '=', user!.id)
      .executeTakeFirst();
    t.equal(link!.subject, '4242');
    t.ok(link!.access_token?.startsWith('v1.'), 'sealed');
    t.notMatch(link!.access_token!, /gho_/);
    t.ok(link!.refresh_token?.startsWith('v1.'));
    t.equal(github.state.tokenRequests.at(-1)!.client_secret, 'gh-secret', 'client_secret_post');

    const { flow } = ctx.app.services.upstreams;
    const token = await flow.accessToken(link!.id);
    t.ok(token && github.works(token), 'the stored token works upstream');

    // Expired: refreshed with the refresh token (the refresh_token grant), stored again, and it works.
    await db
      .updateTable('upstream_identities')
      .set({ token_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', link!.id)
      .execute();
    const fresh = await flow.accessToken(link!.id);
    t.ok(fresh && fresh !== token && github.works(fresh));
    t.equal(github.state.tokenRequests.at(-1)!.grant_type, 'refresh_token');
    const after = await db
      .selectFrom('upstream_identities')
      .selectAll()
      .where('id', '=', link!.id)
      .executeTakeFirstOrThrow();
    t.ok(new Date(after.token_expires_at!).getTime() > Date.now());
    t.not(after.access_token, link!.access_token);

    // A sign-in again replaces the stored tokens.
    const again = new BrowserClient();
    const second = await start(again, 'github');
    await throughUpstream(again, second.location!);
    const replaced = await db
      .selectFrom('upstream_identities')
      .selectAll()
      .where('id', '=', link!.id)
      .executeTakeFirstOrThrow();
    t.not(replaced.access_token, after.access_token);
    t.equal(await flow.accessToken(link!.id).then((v) => Boolean(v && github.works(v))), true);
    // A refresh the upstream refuses: no token, and the stored ones go.
    github.state.refuseRefresh = true;
    t.teardown(() => {
      github.state.refuseRefresh = false;
    });
    await db
      .updateTable('upstream_identities')
      .set({ token_expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', link!.id)
      .execute();
    t.equal(await flow.accessToken(link!.id), undefined);
    const cleared = await db
      .selectFrom('upstream_identities')
      .selectAll()
      .where('id', '=', link!.id)
      .executeTakeFirstOrThrow();
    t.same([cleared.access_token, cleared.refresh_token, cleared.token_expires_at], [null, null, null]);
    // The tokens go with the link.
    await db.deleteFrom('upstream_identities').where('id', '=', link!.id).execute();
    t.equal(await flow.accessToken(link!.id), undefined);
  },
);

t.test('GitHub-like: no verified primary address: refused, nothing created', async (t) => {
  const users = await countUsers();
  github.state.user = { id: 7, login: 'nov', name: null, email: 'nov@octo.test', avatar_url: '' };
  github.state.emails = [{ email: 'nov@octo.test', primary: true, verified: false, visibility: null }];
  const browser = new BrowserClient();
  const started = await start(browser, 'github');
  const { res } = await throughUpstream(browser, started.location!);
  t.equal(res.status, 403);
  t.match(res.body, /GitHub did not confirm that nov@octo\.test is verified/);
  t.equal(await countUsers(), users);
});

t.test('GitHub-like: an error response (the user said no)', async (t) => {
  github.state.mode = 'error';
  t.teardown(() => {
    github.state.mode = 'ok';
  });
  const browser = new BrowserClient();
  const started = await start(browser, 'github');
  const { res } = await throughUpstream(browser, started.location!);
  await assertErrorPage(t, res, 400, /GitHub did not sign you in/);
});

t.test('the pending authorization request survives the round trip (prompt=login, max_age)', async (t) => {
  const redirectUri = 'http://localhost:7001/callback';
  const application = await ctx.app.services.applications.create(
    { clientName: 'Round Trip RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email'] },
    { actor: 'test' },
  );
  fake.state.account = { sub: 'fake-rp', email: 'rp@fake.test', email_verified: true };
  const browser = new BrowserClient();
  const authorize = new URL(`${ctx.issuer}/oauth2/authorize`);
  authorize.search = new URLSearchParams({
    client_id: application.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: 'rp-state',
    nonce: 'rp-nonce',
    prompt: 'login',
    max_age: '0',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const signIn = await browser.follow(authorize.href);
  t.match(signIn.url, /\/login\/sign-in\?request=/);
  const requestId = new URL(signIn.url).searchParams.get('request')!;
  const fields = BrowserClient.hiddenFields(signIn.body, '/upstream/fake/start');
  t.equal(fields.request, requestId, 'the button carries the request');
  const started = await browser.request(`${login}/upstream/fake/start`, { form: fields });
  const { res } = await throughUpstream(browser, started.location!);
  t.equal(res.status, 303);
  // Back on the same request: the consent page (signed in now, so prompt=login and max_age=0 are met).
  const consent = await browser.follow(res.location!, (u) => u.startsWith(redirectUri));
  t.match(consent.url, new RegExp(`/login/consent\\?request=${requestId}`));
  t.match(consent.body, /Round Trip RP wants to/);
  const done = await browser.follow(`${login}/consent`, (u) => u.startsWith(redirectUri), {
    form: { ...BrowserClient.hiddenFields(consent.body, '/login/consent'), decision: 'allow' },
  });
  const back = new URL(done.location!);
  t.equal(back.searchParams.get('state'), 'rp-state');
  t.ok(back.searchParams.get('code'));

  // A request of another browser cannot be carried through a round trip.
  const other = new BrowserClient();
  const page = await other.request(`${login}/sign-in`);
  const csrf = BrowserClient.hiddenFields(page.body, '/login/sign-in').csrf!;
  const stolen = await other.request(`${login}/upstream/fake/start`, { form: { csrf, request: requestId } });
  t.equal(stolen.status, 400);
  t.notOk(stolen.location);
});

t.test('the GET start (home-realm discovery): a sign-in, with the login hint passed on', async (t) => {
  const browser = new BrowserClient();
  const res = await browser.request(`${login}/upstream/fake/start?login_hint=${encodeURIComponent('ann@fake.test')}`);
  t.equal(res.status, 303);
  const upstream = new URL(res.location!);
  t.equal(upstream.origin, fake.issuer);
  t.equal(upstream.searchParams.get('login_hint'), 'ann@fake.test');
  t.equal(upstream.searchParams.get('code_challenge_method'), 'S256');
  t.ok(upstream.searchParams.get('nonce'));
  t.equal(upstream.searchParams.get('redirect_uri'), `${login}/upstream/fake/callback`);
  const row = await db.selectFrom('upstream_flows').selectAll().orderBy('created_at', 'desc').executeTakeFirstOrThrow();
  t.equal(row.purpose, 'sign_in');
});

t.test('a link started by a signed-in user who signed out meanwhile: refused, nothing linked', async (t) => {
  const password = 'correct horse battery';
  const user = await ctx.app.services.users.create(
    { email: 'leaver@example.org', password, emailVerified: true },
    { actor: 'test' },
  );
  const browser = new BrowserClient();
  const page = await browser.request(`${login}/sign-in`);
  const signed = await browser.follow(`${login}/sign-in`, () => false, {
    form: { ...BrowserClient.hiddenFields(page.body, '/login/sign-in'), email: 'leaver@example.org', password },
  });
  const csrf = BrowserClient.hiddenFields(signed.body, '/login/sign-out').csrf!;
  fake.state.account = { sub: 'fake-leaver', email: 'leaver@fake.test', email_verified: true };
  const started = await browser.request(`${login}/upstream/fake/start`, { form: { csrf, purpose: 'link' } });
  t.equal(started.status, 303);
  await browser.request(`${login}/sign-out`, { form: { csrf } });
  const { res } = await throughUpstream(browser, started.location!);
  t.equal(res.status, 403);
  t.match(res.body, /not signed in to the account that asked for this link/);
  const links = await db.selectFrom('upstream_identities').select('id').where('user_id', '=', user.id).execute();
  t.same(links, []);

  // Without a session, a link cannot even start: to the sign-in page.
  const anonymous = new BrowserClient();
  const signIn = await anonymous.request(`${login}/sign-in`);
  const form = { csrf: BrowserClient.hiddenFields(signIn.body, '/login/sign-in').csrf!, purpose: 'link' };
  const refused = await anonymous.request(`${login}/upstream/fake/start`, { form });
  t.equal(refused.status, 303);
  t.equal(refused.location, `${login}/sign-in`);
});

t.test('a changed provider row is discovered again (the cached configuration goes with the old row)', async (t) => {
  const browser = new BrowserClient();
  const first = await start(browser, 'fake');
  t.equal(new URL(first.location!).origin, fake.issuer, 'discovered and cached');
  const row = await db.selectFrom('upstream_providers').selectAll().where('id', '=', 'fake').executeTakeFirstOrThrow();
  const moved = { issuer: `http://127.0.0.1:${deadPort}`, updated_at: new Date(Date.now() + 1000) };
  await db.updateTable('upstream_providers').set(moved).where('id', '=', 'fake').execute();
  t.teardown(() =>
    db
      .updateTable('upstream_providers')
      .set({ issuer: row.issuer, updated_at: new Date(Date.now() + 2000) })
      .where('id', '=', 'fake')
      .execute(),
  );
  const second = await start(browser, 'fake');
  await assertErrorPage(t, second, 502, /Fake Co did not answer/);
});
