// Sign-in with another provider (issue 35): every linking case, through a real company OpenID provider
// (node-oidc-provider) over real HTTP with a cookie jar per browser.
import { Secret, TOTP } from 'otpauth';
import t from 'tap';
import { BrowserClient } from '../helpers/browser-client.js';
import { startTestServer } from '../helpers/server.js';
import { startCompanyUpstream, type UpstreamAccount } from '../helpers/upstreams.js';

const ctx = await startTestServer(t);
const { db } = ctx.database;
const company = await startCompanyUpstream(t);
const { providers } = ctx.app.services.upstreams;
const login = `${ctx.baseUrl}/login`;
const PASSWORD = 'correct horse battery';

await providers.create({
  id: 'company',
  kind: 'oidc',
  name: 'Company',
  issuer: company.issuer,
  clientId: 'idp-basic',
  clientSecret: 'basic-secret',
  clientAuth: 'client_secret_basic',
  allowSignUp: true,
  trustEmailVerified: true,
  allowedDomains: ['company.test'],
});
// private_key_jwt, no sign-up: an unknown address is refused (after a real token exchange with the key).
await providers.create({
  id: 'company-jwt',
  kind: 'oidc',
  name: 'Company Key',
  issuer: company.issuer,
  clientId: 'idp-jwt',
  clientAuth: 'private_key_jwt',
  allowSignUp: false,
  trustEmailVerified: true,
});
const jwtProvider = await providers.get('company-jwt');
await company.register([
  {
    client_id: 'idp-basic',
    client_secret: 'basic-secret',
    token_endpoint_auth_method: 'client_secret_basic',
    redirect_uris: [`${login}/upstream/company/callback`],
  },
  {
    client_id: 'idp-jwt',
    token_endpoint_auth_method: 'private_key_jwt',
    jwks: { keys: [jwtProvider!.publicJwk as never] },
    redirect_uris: [`${login}/upstream/company-jwt/callback`],
  },
]);

/** Clicks "Continue with {provider}" on the sign-in page and follows every hop to the end. */
async function continueWith(browser: BrowserClient, providerId: string, account: UpstreamAccount, query = '') {
  company.login(account);
  const page = await browser.request(`${login}/sign-in${query}`);
  const fields = BrowserClient.hiddenFields(page.body, `/upstream/${providerId}/start`);
  return browser.follow(`${login}/upstream/${providerId}/start`, () => false, { form: fields });
}

const userByEmail = (email: string) => db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
const identitiesOf = (userId: string) =>
  db.selectFrom('upstream_identities').selectAll().where('user_id', '=', userId).execute();
const sessionsOf = (userId: string) => db.selectFrom('sessions').selectAll().where('user_id', '=', userId).execute();
const signedInAs = async (browser: BrowserClient) => {
  const res = await browser.request(`${login}/`);
  return res.status === 200 ? /signed in as <strong>([^<]+)</.exec(res.body)?.[1] : undefined;
};

async function signInWithPassword(browser: BrowserClient, url: string, email: string, password: string) {
  const page = await browser.request(url);
  return browser.follow(`${login}/sign-in`, () => false, {
    form: { ...BrowserClient.hiddenFields(page.body, '/login/sign-in'), email, password },
  });
}

t.test('the sign-in and sign-up pages show a button per enabled provider', async (t) => {
  const browser = new BrowserClient();
  for (const path of ['sign-in', 'sign-up']) {
    const page = await browser.request(`${login}/${path}`);
    t.match(page.body, /Continue with Company</);
    t.match(page.body, /Continue with Company Key</);
    t.match(page.body, /action="\/login\/upstream\/company\/start"/);
  }
});

t.test('a new address: an account is created just in time, linked, and signed in with amr fed', async (t) => {
  const browser = new BrowserClient();
  const res = await continueWith(browser, 'company', {
    sub: 'c-new',
    email: 'New@Company.test',
    email_verified: true,
    name: 'Nora New',
    given_name: 'Nora',
  });
  t.equal(res.status, 200, res.body.slice(0, 300));
  t.equal(res.url, `${login}/`);
  t.equal(await signedInAs(browser), 'new@company.test');
  const user = await userByEmail('new@company.test');
  t.ok(user);
  t.equal(user!.email_verified, true);
  t.equal(user!.password_hash, null);
  t.equal(user!.name, 'Nora New');
  t.equal(user!.given_name, 'Nora');
  const links = await identitiesOf(user!.id);
  t.same(
    links.map((l) => [l.provider_id, l.subject]),
    [['company', 'c-new']],
  );
  t.equal(links[0]!.access_token, null, 'no upstream token kept without store_tokens');
  const sessions = await sessionsOf(user!.id);
  t.equal(sessions.length, 1);
  t.same(sessions[0]!.amr, ['fed']);
  const events = await db
    .selectFrom('audit_events')
    .select(['type', 'detail'])
    .where('user_id', '=', user!.id)
    .orderBy('id')
    .execute();
  t.match(events, [
    { type: 'user.signed_up', detail: { provider: 'company' } },
    { type: 'upstream.linked', detail: { provider: 'company' } },
  ]);

  // The same identity again (another browser): the same account, no second one.
  const again = new BrowserClient();
  await continueWith(again, 'company', { sub: 'c-new', email: 'new@company.test', email_verified: true });
  t.equal(await signedInAs(again), 'new@company.test');
  t.equal((await db.selectFrom('users').select('id').where('email', 'like', 'new@%').execute()).length, 1);
});

t.test('an existing address: asked to prove the account, then linked', async (t) => {
  await ctx.app.services.users.create(
    { email: 'alice@company.test', password: PASSWORD, emailVerified: true, name: 'Alice' },
    { actor: 'test' },
  );
  const alice = (await userByEmail('alice@company.test'))!;
  const browser = new BrowserClient();
  const account = { sub: 'c-alice', email: 'alice@company.test', email_verified: true };
  const res = await continueWith(browser, 'company', account);
  t.equal(res.url, `${login}/upstream/link`);
  t.equal(res.status, 200);
  t.match(res.body, /An account for alice@company\.test exists/);
  t.match(res.body, /Sign in to it to link your Company identity/);
  t.same(await identitiesOf(alice.id), [], 'nothing linked yet');
  t.same(await sessionsOf(alice.id), [], 'no session');
  t.equal(await signedInAs(browser), undefined);

  // The button: the normal sign-in page, coming back to the confirm page.
  const href = /href="([^"]+)" id="sign-in-to-link"/.exec(res.body)![1]!.replace(/&amp;/g, '&');
  const signedIn = await signInWithPassword(browser, `${ctx.baseUrl}${href}`, 'alice@company.test', PASSWORD);
  t.equal(signedIn.url, `${login}/upstream/link`);
  t.match(signedIn.body, /Link your Company identity/);
  t.same(await identitiesOf(alice.id), [], 'still nothing linked before the confirmation');

  const confirmed = await browser.request(`${login}/upstream/link`, {
    form: BrowserClient.hiddenFields(signedIn.body, '/login/upstream/link'),
  });
  t.equal(confirmed.status, 303);
  t.equal(confirmed.location, `${login}/account`);
  t.same(
    (await identitiesOf(alice.id)).map((l) => [l.provider_id, l.subject]),
    [['company', 'c-alice']],
  );

  // From now on the identity signs in to Alice's account directly.
  const later = new BrowserClient();
  await continueWith(later, 'company', account);
  t.equal(await signedInAs(later), 'alice@company.test');
  const fed = (await sessionsOf(alice.id)).filter((s) => (s.amr as string[]).includes('fed'));
  t.equal(fed.length, 1);
});

t.test('an existing address with a wrong password: not linked', async (t) => {
  await ctx.app.services.users.create(
    { email: 'bea@company.test', password: PASSWORD, emailVerified: true },
    { actor: 'test' },
  );
  const bea = (await userByEmail('bea@company.test'))!;
  const browser = new BrowserClient();
  const res = await continueWith(browser, 'company', { sub: 'c-bea', email: 'bea@company.test', email_verified: true });
  t.equal(res.url, `${login}/upstream/link`);
  const href = /href="([^"]+)" id="sign-in-to-link"/.exec(res.body)![1]!.replace(/&amp;/g, '&');
  const wrong = await signInWithPassword(browser, `${ctx.baseUrl}${href}`, 'bea@company.test', 'not the password');
  t.equal(wrong.status, 401);
  // A confirmation without the proof: back to the page that asks for it; nothing linked.
  const page = await browser.request(`${login}/upstream/link`);
  t.match(page.body, /An account for bea@company\.test exists/);
  const post = await browser.request(`${login}/upstream/link`, {
    form: { csrf: BrowserClient.hiddenFields(wrong.body, '/login/sign-in').csrf! },
  });
  t.equal(post.status, 303);
  t.equal(post.location, `${login}/upstream/link`);
  t.same(await identitiesOf(bea.id), []);
  t.same(await sessionsOf(bea.id), []);
});

t.test("another account's session cannot confirm the link", async (t) => {
  await ctx.app.services.users.create(
    { email: 'carl@company.test', password: PASSWORD, emailVerified: true },
    { actor: 'test' },
  );
  await ctx.app.services.users.create(
    { email: 'mallory@example.org', password: PASSWORD, emailVerified: true },
    { actor: 'test' },
  );
  const carl = (await userByEmail('carl@company.test'))!;
  const browser = new BrowserClient();
  const account = { sub: 'c-carl', email: 'carl@company.test', email_verified: true };
  const res = await continueWith(browser, 'company', account);
  t.equal(res.url, `${login}/upstream/link`);
  const href = /href="([^"]+)" id="sign-in-to-link"/.exec(res.body)![1]!.replace(/&amp;/g, '&');
  const other = await signInWithPassword(browser, `${ctx.baseUrl}${href}`, 'mallory@example.org', PASSWORD);
  t.equal(other.url, `${login}/upstream/link`);
  t.match(other.body, /You are signed in to another account/);
  t.notMatch(other.body, /action="\/login\/upstream\/link"/, 'no confirm button for another account');
  const csrf = BrowserClient.hiddenFields(other.body, '/login/switch-account').csrf!;
  const post = await browser.request(`${login}/upstream/link`, { form: { csrf } });
  t.equal(post.status, 403);
  t.match(post.body, /Nothing was linked/);
  t.same(await identitiesOf(carl.id), []);
  const mallory = (await userByEmail('mallory@example.org'))!;
  t.same(await identitiesOf(mallory.id), []);
});

t.test('an upstream that says email_verified false: refused, nothing created', async (t) => {
  const browser = new BrowserClient();
  const res = await continueWith(browser, 'company', {
    sub: 'c-unverified',
    email: 'unverified@company.test',
    email_verified: false,
  });
  t.equal(res.status, 403);
  t.match(res.body, /did not confirm that unverified@company\.test is verified/);
  t.match(res.body, /href="\/login\/sign-in">Back to sign in/);
  t.equal(await userByEmail('unverified@company.test'), undefined);
  t.equal(await signedInAs(browser), undefined);

  // Not even an existing account is offered then.
  await ctx.app.services.users.create(
    { email: 'dora@company.test', password: PASSWORD, emailVerified: true },
    { actor: 'test' },
  );
  const other = await continueWith(new BrowserClient(), 'company', {
    sub: 'c-dora',
    email: 'dora@company.test',
    email_verified: false,
  });
  t.equal(other.status, 403);
  const pending = db.selectFrom('upstream_pending_links').select('id').where('email', '=', 'dora@company.test');
  t.equal(await pending.executeTakeFirst(), undefined);
});

t.test('a domain the provider may not sign in: refused, nothing created', async (t) => {
  const browser = new BrowserClient();
  const res = await continueWith(browser, 'company', {
    sub: 'c-elsewhere',
    email: 'eve@elsewhere.test',
    email_verified: true,
  });
  t.equal(res.status, 403);
  t.match(res.body, /Addresses at this domain cannot sign in with Company/);
  t.equal(await userByEmail('eve@elsewhere.test'), undefined);
  t.equal(await signedInAs(browser), undefined);
});

t.test('just-in-time accounts off (private_key_jwt provider): refused, nothing created', async (t) => {
  const browser = new BrowserClient();
  const res = await continueWith(browser, 'company-jwt', {
    sub: 'k-new',
    email: 'kim@company.test',
    email_verified: true,
  });
  t.equal(res.status, 403, res.body.slice(0, 400));
  t.match(res.body, /There is no account for kim@company\.test, and accounts are not created through Company Key/);
  t.equal(await userByEmail('kim@company.test'), undefined);
  t.equal(await signedInAs(browser), undefined);
});

t.test("a signed-in user's link another: linked to that user, never to someone else's identity", async (t) => {
  await ctx.app.services.users.create(
    { email: 'lina@example.org', password: PASSWORD, emailVerified: true },
    { actor: 'test' },
  );
  const lina = (await userByEmail('lina@example.org'))!;
  const browser = new BrowserClient();
  const signed = await signInWithPassword(browser, `${login}/sign-in`, 'lina@example.org', PASSWORD);
  t.equal(signed.status, 200);
  const csrf = BrowserClient.hiddenFields(signed.body, '/login/sign-out').csrf!;
  // Any address at all: the user proved the account by being signed in to it.
  company.login({ sub: 'k-lina', email: 'lina.work@company.test', email_verified: true });
  const res = await browser.follow(`${login}/upstream/company-jwt/start`, () => false, {
    form: { csrf, purpose: 'link' },
  });
  t.equal(res.url, `${login}/account`);
  t.same(
    (await identitiesOf(lina.id)).map((l) => [l.provider_id, l.subject, l.email]),
    [['company-jwt', 'k-lina', 'lina.work@company.test']],
  );

  // Someone else's identity (c-new is Nora's): 409, nothing changed. (The upstream forgets its own session.)
  for (const name of [...browser.cookies.keys()]) if (name.startsWith('_')) browser.cookies.delete(name);
  company.login({ sub: 'c-new', email: 'new@company.test', email_verified: true });
  const taken = await browser.follow(`${login}/upstream/company/start`, () => false, {
    form: { csrf, purpose: 'link' },
  });
  t.equal(taken.status, 409);
  t.match(taken.body, /linked to another account/);
  t.equal((await identitiesOf(lina.id)).length, 1);

  // Signed in long ago (a stolen cookie, say): no round trip starts; sign in again, then back to the methods page.
  await db
    .updateTable('sessions')
    .set({ auth_time: new Date(Date.now() - 3_600_000) })
    .where('user_id', '=', lina.id)
    .execute();
  const flowsBefore = (await db.selectFrom('upstream_flows').select('id').execute()).length;
  const stale = await browser.request(`${login}/upstream/company/start`, {
    method: 'POST',
    form: { csrf, purpose: 'link' },
  });
  t.equal(stale.status, 303);
  t.equal(
    stale.location,
    `${login}/sign-in?return_to=${encodeURIComponent('/login/account/sign-in-methods')}`,
    'sign in again first',
  );
  t.equal((await db.selectFrom('upstream_flows').select('id').execute()).length, flowsBefore, 'no round trip');
});

t.test(
  'a linked user with a second factor: the second-factor page, then a session with amr fed and more',
  async (t) => {
    const browser = new BrowserClient();
    const account = { sub: 'c-tess', email: 'tess@company.test', email_verified: true };
    await continueWith(browser, 'company', account);
    const tess = (await userByEmail('tess@company.test'))!;
    const [session] = await sessionsOf(tess.id);
    const { secret } = await ctx.app.services.totp.start({ id: tess.id, email: tess.email });
    const code = new TOTP({ secret: Secret.fromBase32(secret.replace(/\s/g, '')), digits: 6, period: 30 }).generate();
    const { recoveryCodes } = await ctx.app.services.totp.confirm(tess.id, code, {
      keepSessionId: session!.id,
      ip: null,
    });
    const before = (await sessionsOf(tess.id)).length;

    const later = new BrowserClient();
    const res = await continueWith(later, 'company', account);
    t.equal(res.url, `${login}/second-factor`);
    t.equal(res.status, 200);
    t.match(res.body, /Second step of sign-in/);
    t.equal((await sessionsOf(tess.id)).length, before, 'no session before the second factor');
    const done = await later.request(`${login}/second-factor/recovery-code`, {
      form: {
        ...BrowserClient.hiddenFields(res.body, '/login/second-factor/recovery-code'),
        code: recoveryCodes![0]!,
      },
    });
    t.equal(done.status, 303);
    t.equal(await signedInAs(later), 'tess@company.test');
    const newest = (await sessionsOf(tess.id)).sort((a, b) => +b.auth_time - +a.auth_time)[0]!;
    t.ok((newest.amr as string[]).includes('fed'), JSON.stringify(newest.amr));
    t.ok((newest.amr as string[]).length > 1);
    t.notOk((newest.amr as string[]).includes('pwd'));
  },
);

t.test('a disabled user is refused, even with a linked identity', async (t) => {
  const browser = new BrowserClient();
  const account = { sub: 'c-dis', email: 'dis@company.test', email_verified: true };
  await continueWith(browser, 'company', account);
  const dis = (await userByEmail('dis@company.test'))!;
  await ctx.app.services.users.update(dis.id, { disabled: true }, { actor: 'test' });
  const before = (await sessionsOf(dis.id)).length;
  const later = new BrowserClient();
  const res = await continueWith(later, 'company', account);
  t.equal(res.status, 403);
  t.match(res.body, /This account is disabled/);
  t.equal((await sessionsOf(dis.id)).length, before);
  t.equal(await signedInAs(later), undefined);
});

t.test('a logo shows only from where the pages may load images (https:)', async (t) => {
  const base = {
    kind: 'oauth2' as const,
    clientId: 'x',
    clientSecret: 'x-secret-0123456789',
    authorizationEndpoint: 'https://up.example/authorize',
    tokenEndpoint: 'https://up.example/token',
    userinfoEndpoint: 'https://up.example/user',
  };
  await providers.create({ ...base, id: 'logo-https', name: 'Safe Logo', logoUrl: 'https://cdn.example/logo.png' });
  // The admin checks refuse an http logo; a row written by hand (or before those checks) still shows none.
  await providers.create({ ...base, id: 'logo-http', name: 'Plain Logo' });
  await db
    .updateTable('upstream_providers')
    .set({ logo_url: 'http://cdn.example/logo.png' })
    .where('id', '=', 'logo-http')
    .execute();
  await providers.create({ ...base, id: 'off', name: 'Switched Off', enabled: false });
  t.teardown(async () => {
    await providers.remove('logo-https', { actor: 'test' });
    await providers.remove('logo-http', { actor: 'test' });
    await providers.remove('off', { actor: 'test' });
  });
  const page = await new BrowserClient().request(`${login}/sign-in`);
  t.match(
    page.body,
    /<img src="https:\/\/cdn\.example\/logo\.png" alt="" width="20" height="20"> Continue with Safe Logo/,
  );
  t.match(page.body, /Continue with Plain Logo/);
  t.notMatch(page.body, /http:\/\/cdn\.example/);
  t.notMatch(page.body, /Switched Off/, 'a disabled provider has no button');
  t.match(page.headers.get('content-security-policy'), /img-src 'self' https: data:/);
});

t.test(
  'an existing address during an authorization request: after the proof and the confirmation, it continues',
  async (t) => {
    const redirectUri = 'http://localhost:7001/callback';
    const application = await ctx.app.services.applications.create(
      { clientName: 'Linking RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email'] },
      { actor: 'test' },
    );
    await ctx.app.services.users.create(
      { email: 'ruth@company.test', password: PASSWORD, emailVerified: true },
      { actor: 'test' },
    );
    const browser = new BrowserClient();
    const authorize = new URL(`${ctx.issuer}/oauth2/authorize`);
    authorize.search = new URLSearchParams({
      client_id: application.clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid email',
      state: 'link-state',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString();
    const signIn = await browser.follow(authorize.href);
    const requestId = new URL(signIn.url).searchParams.get('request')!;
    company.login({ sub: 'c-ruth', email: 'ruth@company.test', email_verified: true });
    const pending = await browser.follow(`${login}/upstream/company/start`, () => false, {
      form: BrowserClient.hiddenFields(signIn.body, '/upstream/company/start'),
    });
    t.equal(pending.url, `${login}/upstream/link`);
    const href = /href="([^"]+)" id="sign-in-to-link"/.exec(pending.body)![1]!.replace(/&amp;/g, '&');
    const proven = await signInWithPassword(browser, `${ctx.baseUrl}${href}`, 'ruth@company.test', PASSWORD);
    const confirmed = await browser.follow(`${login}/upstream/link`, (u) => u.startsWith(redirectUri), {
      form: BrowserClient.hiddenFields(proven.body, '/login/upstream/link'),
    });
    t.match(confirmed.url, new RegExp(`/login/consent\\?request=${requestId}`), 'back on the same request');
    t.match(confirmed.body, /Linking RP wants to/);
    const ruth = (await userByEmail('ruth@company.test'))!;
    t.equal((await identitiesOf(ruth.id)).length, 1);
    // The pending link is used up: its cookie is cleared and a second POST finds nothing.
    const again = await browser.request(`${login}/upstream/link`, {
      form: { csrf: BrowserClient.hiddenFields(confirmed.body, '/login/consent').csrf! },
    });
    t.equal(again.status, 400);
    t.match(again.body, /This link request is over/);
  },
);
