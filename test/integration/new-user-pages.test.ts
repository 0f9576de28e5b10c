// What a new user meets on the hosted pages (issue 15, part 7): the development mail hint on the "check your
// inbox" pages, a way back after signing out, the consent page naming the application once, the sign-up
// form focusing the first field to fix, and one spelling ("e-mail") in what the pages say.
import t from 'tap';
import { join, resolve } from 'node:path';
import type { InjectOptions } from 'fastify';
import { generateToken } from '../../src/oauth/tokens.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { devMailHint } from '../../plugins/login/page-context.js';
import { buildTestApp } from '../helpers/app.js';
import { cookiesOf, formPage as formPageOf } from '../helpers/flow.js';

// No SMTP_URL, NODE_ENV=test: the mailer keeps mail in DATA_DIR/outbox.jsonl.
const { app, config } = await buildTestApp(t);
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/callback';
const client = await app.services.applications.create(
  { clientName: 'Once Named App', redirectUris: [redirectUri] },
  actor,
);
const password = 'a good password 1';
await app.services.users.create({ email: 'verified@example.com', password, emailVerified: true }, actor);

const BROWSER: Record<string, string> = { 'idp.authz': generateToken() };
const inject = (options: InjectOptions & { cookies?: Record<string, string> }) =>
  app.inject({ ...options, cookies: { ...BROWSER, ...options.cookies } });
const formPage = (path: string, jar: Record<string, string> = {}) => formPageOf(app, path, { ...BROWSER, ...jar });
const post = (url: string, form: Record<string, string>, jar: Record<string, string>) =>
  inject({
    method: 'POST',
    url,
    cookies: jar,
    payload: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

/** What a reader sees: the text outside the tags (attributes such as type="email" are markup, not copy). */
const visibleText = (body: string) =>
  body
    .replace(/<head>[\s\S]*<\/head>/, '')
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ');

/** The input that carries autofocus on a page, by name. */
const focused = (body: string) => [...body.matchAll(/<input [^>]*name="([^"]+)"[^>]*\sautofocus/g)].map((m) => m[1]);

t.test('"check your inbox" pages say where development mail goes when no SMTP_URL is set', async (t) => {
  const outbox = join(config.dataDir, 'outbox.jsonl');
  const page = await formPage('/login/sign-up');
  const signUp = await post(
    '/login/sign-up',
    { csrf: page.csrf, name: 'Newcomer', email: 'newcomer@example.com', password },
    page.jar,
  );
  // Issue 31: the sign-up's answer is itself the "check your inbox" page (no account, no session yet).
  t.equal(signUp.statusCode, 200);
  t.match(signUp.body, /<h1>Check your inbox<\/h1>/);
  t.match(signUp.body, 'id="dev-mail-hint"', 'the hint is on the page');
  t.match(signUp.body, outbox, 'and names the outbox file the mailer writes');
  // The verification reminder of an unverified account (an operator's) says it too.
  await app.services.users.create({ email: 'unverified@example.com', password }, actor);
  const signIn = await formPage('/login/sign-in');
  const signedIn = await post(
    '/login/sign-in',
    { csrf: signIn.csrf, email: 'unverified@example.com', password },
    signIn.jar,
  );
  const jar = { ...signIn.jar, ...cookiesOf(signedIn) };
  const inbox = await inject({ method: 'GET', url: '/login/verify-email', cookies: jar });
  t.equal(inbox.statusCode, 200);
  t.match(inbox.body, /<h1>Check your inbox<\/h1>/);
  t.match(inbox.body, 'id="dev-mail-hint"', 'the hint is on the page');
  t.match(
    inbox.body,
    'SMTP_URL is not set, so no mail is sent. Find the mail and its link in the server&#39;s console',
  );
  t.match(inbox.body, outbox, 'and names the outbox file the mailer writes');

  const forgot = await formPage('/login/forgot-password');
  const sent = await post('/login/forgot-password', { csrf: forgot.csrf, email: 'verified@example.com' }, forgot.jar);
  t.equal(sent.statusCode, 200);
  t.match(sent.body, /<h1>Check your e-mail<\/h1>/);
  t.match(sent.body, 'id="dev-mail-hint"');
  t.match(sent.body, outbox);
});

t.test('the hint: only without SMTP_URL and outside production; a path near the working directory', async (t) => {
  const cwd = resolve('/srv/idp');
  t.equal(
    devMailHint({ smtpUrl: 'smtp://mail.example.com', env: 'development', dataDir: '/srv/idp/data' }, cwd),
    undefined,
  );
  t.equal(devMailHint({ smtpUrl: undefined, env: 'production', dataDir: '/srv/idp/data' }, cwd), undefined);
  t.match(
    devMailHint({ smtpUrl: undefined, env: 'development', dataDir: '/srv/idp/data' }, cwd),
    /in data\/outbox\.jsonl\.$/,
    'the default DATA_DIR reads as data/outbox.jsonl',
  );
  t.match(
    devMailHint({ smtpUrl: undefined, env: 'development', dataDir: '/var/lib/idp' }, cwd),
    /in \/var\/lib\/idp\/outbox\.jsonl\.$/,
    'elsewhere, the absolute path',
  );
  const memory = devMailHint({ smtpUrl: undefined, env: 'development', dataDir: ':memory:' }, cwd);
  t.match(memory, /console/);
  t.notMatch(memory, /outbox/, 'nothing is written with DATA_DIR=:memory:');
});

t.test('the signed-out pages offer a way to sign in again', async (t) => {
  const notSignedIn = await inject({ method: 'GET', url: '/login/sign-out' });
  t.equal(notSignedIn.statusCode, 200);
  t.match(notSignedIn.body, 'You are not signed in.');
  t.match(notSignedIn.body, '<a href="/login/sign-in">Sign in again</a>');

  const page = await formPage('/login/sign-in');
  const signIn = await post('/login/sign-in', { csrf: page.csrf, email: 'verified@example.com', password }, page.jar);
  t.equal(signIn.statusCode, 303);
  const jar = { ...page.jar, ...cookiesOf(signIn) };
  const out = await post('/login/sign-out', { csrf: page.csrf }, jar);
  t.equal(out.statusCode, 200);
  t.match(out.body, 'You are signed out.');
  t.match(out.body, '<a href="/login/sign-in">Sign in again</a>');

  // RP-initiated logout without a registered place to return to: the same way back.
  const endSession = await inject({ method: 'GET', url: `/api/auth/oauth2/end-session?client_id=${client.clientId}` });
  t.equal(endSession.statusCode, 200);
  t.match(endSession.body, 'You are not signed in.');
  t.match(endSession.body, '<a href="/login/sign-in">Sign in again</a>');
});

t.test('the consent page names the application once (logo and heading, not a second line)', async (t) => {
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: 'st',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
  });
  const authorize = await inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}` });
  const requestId = new URL(authorize.headers.location as string, 'http://x').searchParams.get('request')!;
  const page = await formPage(`/login/sign-in?request=${requestId}`);
  const signIn = await post(
    '/login/sign-in',
    { csrf: page.csrf, request: requestId, email: 'verified@example.com', password },
    page.jar,
  );
  const jar = { ...page.jar, ...cookiesOf(signIn) };
  const next = await inject({ method: 'GET', url: String(signIn.headers.location), cookies: jar });
  t.match(next.headers.location, /\/login\/consent\?request=/);
  const consent = await inject({ method: 'GET', url: String(next.headers.location), cookies: jar });
  t.equal(consent.statusCode, 200);
  t.match(consent.body, '<h1>Once Named App wants to</h1>');
  t.equal(visibleText(consent.body).split('Once Named App').length - 1, 1, 'the name is shown once');
  t.match(consent.body, /<title>Allow access · Once Named App<\/title>/, 'the tab title still names it');
});

t.test('a sign-up error puts the cursor on the first field to fix', async (t) => {
  const page = await formPage('/login/sign-up');
  t.same(focused(page.res.body), ['name'], 'a fresh form starts at Name');
  const badEmail = await post(
    '/login/sign-up',
    { csrf: page.csrf, name: 'Ok Name', email: 'not-an-address', password },
    page.jar,
  );
  t.equal(badEmail.statusCode, 400);
  t.same(focused(badEmail.body), ['email'], 'an invalid e-mail address: the e-mail field');
  const badPassword = await post(
    '/login/sign-up',
    { csrf: page.csrf, name: 'Ok Name', email: 'fine@example.com', password: 'short' },
    page.jar,
  );
  t.same(focused(badPassword.body), ['password'], 'a short password: the password field');
  const both = await post(
    '/login/sign-up',
    { csrf: page.csrf, name: 'Ok Name', email: 'nope', password: 'short' },
    page.jar,
  );
  t.same(focused(both.body), ['email'], 'both wrong: the first of them');
  const taken = await post(
    '/login/sign-up',
    { csrf: page.csrf, name: 'Ok Name', email: 'VERIFIED@example.com', password },
    page.jar,
  );
  // Issue 31: a taken address is no error (no account oracle): the "check your inbox" answer, no form.
  t.equal(taken.statusCode, 200);
  t.same(focused(taken.body), [], 'a taken address: answered like a free one');
});

t.test('the pages spell it "e-mail", as the spec does in prose', async (t) => {
  const pages = [
    (await inject({ method: 'GET', url: '/login/sign-in' })).body,
    (await inject({ method: 'GET', url: '/login/sign-up' })).body,
    (await inject({ method: 'GET', url: '/login/forgot-password' })).body,
  ];
  const forgot = await formPage('/login/forgot-password');
  pages.push((await post('/login/forgot-password', { csrf: forgot.csrf, email: 'x@example.com' }, forgot.jar)).body);
  pages.push((await post('/login/forgot-password', { csrf: forgot.csrf, email: 'nope' }, forgot.jar)).body);
  for (const body of pages) {
    const text = visibleText(body);
    t.match(text, /e-mail/i);
    t.notMatch(text, /\bemail\b/i, `no "email" in: ${text.slice(0, 60)}…`);
  }
});
