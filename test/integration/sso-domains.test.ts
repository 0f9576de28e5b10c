// Enterprise single sign-on by domain (issue 35): addresses at a provider's SSO domains go to that provider
// (home-realm discovery from the e-mail field: a 303 to the round trip's start, GET, sign-in only), on the hosted
// pages and in the JSON answers (409 SSO_REQUIRED with where to go). The password sign-in of an account at such a
// domain is off once it is linked to that provider (the service refuses it, whatever page asked), but works before
// the link, when the browser proves the account to link it (return_to: the round trip's pages). Password sign-up
// and password reset at such a domain send the person to the provider, the same way whether or not the address has
// an account. The round trip itself is another file's: here, the Location of the 303 and the refusals.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { buildTestApp } from '../helpers/app.js';
import { cookiesOf, hiddenField } from '../helpers/flow.js';
import { startSmtp } from '../helpers/smtp.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const { app, database } = await buildTestApp(t, { env: { SMTP_URL: smtp.url } });
const db = database.db;

await app.services.upstreams.providers.create({
  id: 'acme',
  kind: 'oidc',
  name: 'Acme Workforce',
  issuer: 'https://id.acme.example',
  clientId: 'acme-client',
  clientSecret: 'acme-secret-0123456789',
  ssoDomains: ['acme.example'],
});
await app.services.upstreams.providers.create({
  id: 'github',
  kind: 'oauth2',
  name: 'GitHub',
  authorizationEndpoint: 'https://github.example/login/oauth/authorize',
  tokenEndpoint: 'https://github.example/login/oauth/access_token',
  userinfoEndpoint: 'https://api.github.example/user',
  clientId: 'gh-client',
  clientSecret: 'gh-secret-0123456789',
});
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'SSO RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email'] },
  { actor: 'test' },
);

const PASSWORD = 'a good long password';
const create = async (email: string) =>
  (await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, { actor: 'test' })).id;
// Linked to the domain's provider: its password sign-in is off.
const alice = { email: 'alice@acme.example', id: await create('alice@acme.example') };
await app.services.upstreams.identities.link(
  { userId: alice.id, providerId: 'acme', subject: 'acme-alice', email: alice.email },
  { ip: null },
);
// At the domain, not linked yet: its password is how its owner proves the account before linking it.
const bob = { email: 'bob@acme.example', id: await create('bob@acme.example') };
// At the domain, linked to another provider only: the password is still on.
const dave = { email: 'dave@acme.example', id: await create('dave@acme.example') };
await app.services.upstreams.identities.link(
  { userId: dave.id, providerId: 'github', subject: 'gh-dave', email: null },
  { ip: null },
);
// Elsewhere.
const carol = { email: 'carol@example.com', id: await create('carol@example.com') };

type Jar = Record<string, string>;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const get = (url: string, jar: Jar = {}) => app.inject({ method: 'GET', url, cookies: jar });
const post = (url: string, form: Record<string, string>, jar: Jar) =>
  app.inject({ method: 'POST', url, cookies: jar, headers: FORM, payload: new URLSearchParams(form).toString() });
const json = (url: string, body: unknown, jar: Jar = {}) =>
  app.inject({
    method: 'POST',
    url,
    cookies: jar,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

/** A hosted form page: its answer, the jar with its cookies and its CSRF token. */
async function formPage(url: string, jar: Jar = {}) {
  const res = await get(url, jar);
  return { res, jar: { ...jar, ...cookiesOf(res) }, csrf: hiddenField(res.body, 'csrf') };
}

/** Signs in on the hosted page with these fields (email, password, request, return_to). */
async function signInPost(fields: Record<string, string>, jar: Jar = {}) {
  const page = await formPage('/login/sign-in', jar);
  const res = await post('/login/sign-in', { csrf: page.csrf, ...fields }, page.jar);
  return { res, jar: { ...page.jar, ...cookiesOf(res) } };
}

/** An authorization request started in a fresh browser (with a login_hint, when given): its id and jar. */
async function authorize(loginHint?: string) {
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
    state: 'st',
    ...(loginHint && { login_hint: loginHint }),
  });
  const res = await get(`/api/auth/oauth2/authorize?${query}`);
  const requestId = new URL(String(res.headers.location), 'http://x').searchParams.get('request');
  if (!requestId) throw new Error(`authorize: ${res.statusCode} ${res.headers.location}`);
  return { requestId, jar: cookiesOf(res) };
}

const start = (query: Record<string, string>) => `/login/upstream/acme/start?${new URLSearchParams(query)}`;
const hasSession = (jar: Jar) => Boolean(jar['idp.session']);

t.test('the sign-in page sends an address at an SSO domain to its provider, with or without an account', async (t) => {
  for (const [email, password] of [
    [alice.email, PASSWORD],
    [bob.email, ''],
    ['nobody@acme.example', 'whatever it is'],
    ['Alice@ACME.Example', ''],
  ] as const) {
    const { res, jar } = await signInPost({ email, password });
    t.equal(res.statusCode, 303, email);
    t.equal(res.headers.location, start({ login_hint: email }), 'to the start, login_hint the address typed');
    t.notOk(hasSession(jar), 'no session');
  }
  // With a pending authorization request (the start carries it), and with a return address.
  const { requestId, jar } = await authorize();
  const withRequest = await signInPost({ email: bob.email, password: '', request: requestId }, jar);
  t.equal(withRequest.res.headers.location, start({ request: requestId, login_hint: bob.email }));
  const back = '/login/account/sign-in-methods';
  const withReturn = await signInPost({ email: bob.email, password: PASSWORD, return_to: back });
  t.equal(withReturn.res.headers.location, start({ return_to: back, login_hint: bob.email }));
  const unsafe = await signInPost({ email: bob.email, password: '', return_to: 'https://evil.example/' });
  t.equal(unsafe.res.headers.location, start({ login_hint: bob.email }), 'an unsafe return_to is dropped');
  // No password was checked: the sign-in failure audit has nothing of these.
  const failures = await listAuditEvents(db, { type: 'user.sign_in_failed', userId: bob.id });
  t.same(failures, []);
});

t.test('other addresses sign in with their password as before', async (t) => {
  const { res, jar } = await signInPost({ email: carol.email, password: PASSWORD });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/');
  t.ok(hasSession(jar));
  const wrong = await signInPost({ email: carol.email, password: 'not the password' });
  t.equal(wrong.res.statusCode, 401);
  t.match(wrong.res.body, 'The e-mail address or password is not correct');
  t.match(wrong.res.body, 'id="sso-hint"', 'the page says the password may stay empty for an organisation');
});

t.test('the page: the password is optional when SSO domains exist; a known address gets the note', async (t) => {
  const plain = await get('/login/sign-in');
  t.match(plain.body, /<input id="field-password" name="password" type="password" autocomplete="current-password">/);
  t.match(plain.body, 'Password (not needed if your organisation signs you in)');
  t.match(plain.body, 'enter your work address and leave the password empty');
  const { requestId, jar } = await authorize(bob.email);
  const hinted = await get(`/login/sign-in?request=${requestId}`, jar);
  t.match(hinted.body, 'Your organisation signs you in with Acme Workforce.');
  const href = start({ request: requestId, login_hint: bob.email }).replace(/&/g, '&amp;');
  t.match(hinted.body, `<a href="${href}">Continue with Acme Workforce</a>`);
  const { app: noSso } = await buildTestApp(t);
  const before = await noSso.inject({ method: 'GET', url: '/login/sign-in' });
  t.match(before.body, /name="password" type="password" autocomplete="current-password" required/);
  t.notMatch(before.body, /organisation/, 'without SSO domains, nothing is said');
});

t.test('the service refuses the password of a linked account at an SSO domain, whatever page asked', async (t) => {
  const meta = { ip: '192.0.2.5', userAgent: null };
  await t.rejects(app.services.accounts.signIn({ email: alice.email, password: PASSWORD }, meta), {
    statusCode: 409,
    code: 'SSO_REQUIRED',
    message: 'Your organisation signs you in with Acme Workforce: continue there',
  });
  // A wrong password gets the usual answer (linked or not, the same).
  for (const email of [alice.email, bob.email]) {
    await t.rejects(app.services.accounts.signIn({ email, password: 'not the password' }, meta), {
      code: 'INVALID_CREDENTIALS',
    });
  }
  const refused = (await listAuditEvents(db, { type: 'user.sign_in_failed', userId: alice.id })).find(
    (e) => e.detail.reason === 'sso_required',
  );
  t.match(refused, { ip: '192.0.2.5', detail: { provider: 'acme' } });
  // Not linked to that provider yet (bob), or linked to another one only (dave): the password works.
  t.ok('sessionToken' in (await app.services.accounts.signIn({ email: bob.email, password: PASSWORD }, meta)));
  t.ok('sessionToken' in (await app.services.accounts.signIn({ email: dave.email, password: PASSWORD }, meta)));
});

t.test('proving an account for a pending link: the password works before the link, not after', async (t) => {
  const proof = '/login/upstream/acme/link';
  const bobProof = await signInPost({ email: bob.email, password: PASSWORD, return_to: proof });
  t.equal(bobProof.res.statusCode, 303);
  t.equal(bobProof.res.headers.location, proof, 'back to the round trip with a session');
  t.ok(hasSession(bobProof.jar));
  const wrong = await signInPost({ email: bob.email, password: 'not the password', return_to: proof });
  t.equal(wrong.res.statusCode, 401);
  t.notOk(hasSession(wrong.jar));
  // Linked already: the service refuses the password, and the page sends the browser to the provider.
  const aliceProof = await signInPost({ email: alice.email, password: PASSWORD, return_to: proof });
  t.equal(aliceProof.res.statusCode, 303);
  t.equal(aliceProof.res.headers.location, start({ return_to: proof, login_hint: alice.email }));
  t.notOk(hasSession(aliceProof.jar));
  const aliceWrong = await signInPost({ email: alice.email, password: 'not the password', return_to: proof });
  t.equal(aliceWrong.res.statusCode, 401, 'a wrong password: the usual answer');
});

t.test('JSON sign-in: 409 SSO_REQUIRED with the provider and the start address', async (t) => {
  for (const email of [alice.email, bob.email, 'nobody@acme.example']) {
    const res = await json('/api/auth/sign-in', { email, password: PASSWORD });
    t.equal(res.statusCode, 409, email);
    t.equal(res.headers['cache-control'], 'no-store');
    t.same(res.json(), {
      error: 'SSO_REQUIRED',
      message: 'Your organisation signs you in with Acme Workforce: continue there',
      provider: 'acme',
      redirectTo: `http://localhost:3000${start({ login_hint: email })}`,
    });
    t.notOk(hasSession(cookiesOf(res)));
  }
  const { requestId, jar } = await authorize();
  const withRequest = await json('/api/auth/sign-in', { email: bob.email, password: '', request: requestId }, jar);
  t.equal(
    withRequest.json().redirectTo,
    `http://localhost:3000${start({ request: requestId, login_hint: bob.email })}`,
  );
  const other = await json('/api/auth/sign-in', { email: carol.email, password: PASSWORD });
  t.equal(other.statusCode, 200);
});

t.test(
  'sign-up at an SSO domain: the provider instead, the same whether or not the address has an account',
  async (t) => {
    const answers = [];
    for (const email of [bob.email, 'newcomer@acme.example']) {
      const page = await formPage('/login/sign-up');
      const res = await post('/login/sign-up', { csrf: page.csrf, email, password: PASSWORD, name: 'X' }, page.jar);
      t.equal(res.statusCode, 200, email);
      t.match(res.body, 'Your organisation signs you in with Acme Workforce.');
      t.match(res.body, '<form method="get" action="/login/upstream/acme/start" id="sso-continue">');
      t.match(res.body, `<input type="hidden" name="login_hint" value="${email}">`);
      t.match(res.body, '<button type="submit">Continue with Acme Workforce</button>');
      answers.push(res.body.replaceAll(email, 'ADDRESS').replace(/value="[\w-]{40,}"/g, 'value="TOKEN"'));
    }
    t.equal(answers[0], answers[1], 'the same page for an address with an account and one without');
    t.same(await db.selectFrom('sign_up_requests').select('email').execute(), [], 'no pending sign-up');
    const api = await json('/api/auth/sign-up', { email: 'newcomer@acme.example', password: PASSWORD });
    t.equal(api.statusCode, 409);
    t.same(api.json(), {
      error: 'SSO_REQUIRED',
      message: 'Your organisation signs you in with Acme Workforce: continue there',
      provider: 'acme',
      redirectTo: `http://localhost:3000${start({ login_hint: 'newcomer@acme.example' })}`,
    });
    const existing = await json('/api/auth/sign-up', { email: bob.email, password: PASSWORD });
    t.equal(existing.statusCode, 409);
    t.equal(existing.json().error, 'SSO_REQUIRED', 'the same answer for an address with an account');
    // A control that mail flows: a sign-up elsewhere mails its link. Bob got nothing (no "someone tried" mail).
    await json('/api/auth/sign-up', { email: 'elsewhere@example.com', password: PASSWORD });
    await smtp.waitFor('elsewhere@example.com');
    await app.services.mailer.drain();
    t.same(
      smtp.mails.filter((m) => m.to.includes(bob.email)),
      [],
    );
  },
);

t.test('password reset at an SSO domain: the provider instead, no mail', async (t) => {
  const page = await formPage('/login/forgot-password');
  const res = await post('/login/forgot-password', { csrf: page.csrf, email: bob.email }, page.jar);
  t.equal(res.statusCode, 200);
  t.match(res.body, 'Your organisation signs you in with Acme Workforce.');
  t.match(res.body, 'There is no password to reset here');
  t.match(res.body, '<form method="get" action="/login/upstream/acme/start" id="sso-continue">');
  // The JSON request keeps the spec's answer (the same for every address) and sends nothing.
  const redirectTo = 'http://localhost:3000/login/reset-password';
  const api = await json('/api/auth/request-password-reset', { email: alice.email, redirectTo });
  t.equal(api.statusCode, 200);
  t.same(api.json(), {
    status: true,
    message: 'If this email exists in our system, check your email for the reset link',
  });
  // Control: an address elsewhere gets its link.
  await json('/api/auth/request-password-reset', { email: carol.email, redirectTo });
  t.equal((await smtp.waitFor(carol.email)).subject, 'Reset your password', 'the control got its link');
  await app.services.recovery.drain();
  await app.services.mailer.drain();
  t.same(
    smtp.mails.filter((m) => m.to.includes('@acme.example') && m.subject === 'Reset your password'),
    [],
    'no reset mail at the SSO domain',
  );
  t.same(await listAuditEvents(db, { type: 'password_reset.requested', userId: alice.id }), []);
});

t.test('a disabled provider discovers nothing: its domain signs in with passwords again', async (t) => {
  await app.services.upstreams.providers.setEnabled('acme', false);
  t.teardown(() => app.services.upstreams.providers.setEnabled('acme', true));
  const { res, jar } = await signInPost({ email: alice.email, password: PASSWORD });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/');
  t.ok(hasSession(jar));
});
