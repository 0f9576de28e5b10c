// Sign-up proves mailbox control before an account exists (issue 31, item 3): the same answer whether the
// address is free, held by a never-verified account or by a verified one; the owner of an existing account
// gets a "someone tried" mail with a reset link; the mailed link opens a page (a GET changes nothing) whose
// CSRF-protected button creates the verified account, taking the address over from a never-verified
// self-registered holder (whose sessions and tokens end). The pending sign-up is bound to the browser that
// made it (a sign-up cookie): there the button alone confirms; anywhere else the page asks for the password
// chosen at sign-up (5 wrong ones kill the link), so neither the one who only reads the mailbox nor the one
// who only knows the password creates the account alone. Whoever confirms is signed in; only the browser
// that started the authorization request continues it.
import t from 'tap';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { generateToken, hashToken } from '../../src/oauth/tokens.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { buildTestApp } from '../helpers/app.js';
import { startSmtp } from '../helpers/smtp.js';
import { findUserByEmail } from '../../db/repositories/users.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import {
  confirmSignUpLink,
  cookiesOf,
  formPage as formPageOf,
  obtainTokens,
  SIGN_UP_ATTEMPT_SUBJECT,
  SIGN_UP_MAIL_SUBJECT,
  signInWithInject,
  signUpAndConfirm,
  smtpLinks,
  tokenRequest,
  userinfo,
} from '../helpers/flow.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const { app, database } = await buildTestApp(t, { env: { SMTP_URL: smtp.url, BEARER_CACHE_SECONDS: '60' } });
const db = database.db;
const links = smtpLinks(smtp);
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/callback';
const client = await app.services.applications.create(
  { clientName: 'Sign-up RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email', 'offline_access'] },
  actor,
);
const password = 'a good password 1';

/** A never-verified account made by sign-up before this release (the migration marks such rows). */
async function squatter(email: string) {
  const user = await app.services.users.create({ email, password: 'squatter-password-1' }, actor);
  await db.updateTable('users').set({ self_registered: true }).where('id', '=', user.id).execute();
  return user;
}

const BROWSER_A: Record<string, string> = { 'idp.authz': generateToken() };
const BROWSER_B: Record<string, string> = { 'idp.authz': generateToken() };
const form = (url: string, body: Record<string, string>, cookies: Record<string, string>): InjectOptions => ({
  method: 'POST',
  url,
  cookies,
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams(body).toString(),
});

/** Signs up on the hosted page; `jar` is the signing-up browser's cookies afterwards (its sign-up cookie). */
async function pageSignUp(email: string, browser = BROWSER_A, requestId?: string) {
  const page = await formPageOf(app, `/login/sign-up${requestId ? `?request=${requestId}` : ''}`, browser);
  const res = await app.inject(
    form(
      '/login/sign-up',
      { csrf: page.csrf, name: 'Someone', email, password, ...(requestId && { request: requestId }) },
      page.jar,
    ),
  );
  return Object.assign(res, { jar: { ...page.jar, ...cookiesOf(res) } });
}
const jsonSignUp = (email: string) =>
  app.inject({ method: 'POST', url: '/api/auth/sign-up', payload: { email, password, name: 'Someone' } });

async function startAuthorization(server: FastifyInstance, browser: Record<string, string>) {
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    state: 'st',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
  });
  const res = await server.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: browser });
  return new URL(res.headers.location as string).searchParams.get('request')!;
}

const count = async (table: string) =>
  Number((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)).rows[0]!.n);
const sessionsOf = async (email: string) => {
  const user = await findUserByEmail(db, email);
  if (!user) return 0;
  return (await db.selectFrom('sessions').select('id').where('user_id', '=', user.id).execute()).length;
};
/** What the answer shows a caller, with the address it was given made neutral. */
const shape = (res: LightMyRequestResponse, email: string) => ({
  status: res.statusCode,
  body: res.body.replaceAll(email, '<address>').replace(/name="csrf" value="[^"]*"/g, ''),
  cookies: res.cookies.map((c) => (c as { name: string }).name).sort(),
  location: res.headers.location,
  contentType: res.headers['content-type'],
});

t.test('free, squatted and taken addresses get the same answer, page and JSON; no account, no session', async (t) => {
  await app.services.users.create({ email: 'owner@example.com', password, emailVerified: true }, actor);
  await squatter('squatted@example.com');
  const addresses = ['free@example.com', 'squatted@example.com', 'owner@example.com'];
  const pages = [];
  const jsons = [];
  for (const email of addresses) {
    pages.push(shape(await pageSignUp(email), email));
    jsons.push(shape(await jsonSignUp(email.replace('@', '+json@')), email.replace('@', '+json@')));
  }
  t.same(pages[1], pages[0], 'the page: squatted address as a free one');
  t.same(pages[2], pages[0], 'the page: taken address as a free one');
  t.equal(pages[0]!.status, 200);
  t.match(pages[0]!.body, /Check your inbox/);
  t.match(pages[0]!.body, /We sent a link to <strong>&lt;address&gt;|We sent a link to <strong><address>/);
  t.notOk(pages[0]!.cookies.includes(app.sessionCookieName), 'no session cookie');
  t.ok(pages[0]!.cookies.includes('idp.signup'), 'the sign-up cookie, set for every address');
  t.ok(jsons[0]!.cookies.includes('idp.signup'), 'the sign-up cookie (JSON), set for every address');
  t.same(jsons[1], jsons[0], 'JSON: squatted as free');
  t.same(jsons[2], jsons[0], 'JSON: taken as free');
  t.equal(jsons[0]!.status, 201);
  t.same(Object.keys(JSON.parse(jsons[0]!.body)).sort(), ['message', 'status']);
  t.notOk(jsons[0]!.cookies.includes(app.sessionCookieName), 'no session cookie');
  t.notOk(await findUserByEmail(db, 'free@example.com'), 'no account for the free address');
  t.equal(await sessionsOf('squatted@example.com'), 0, 'no session for the squatted address');
  t.equal(await sessionsOf('owner@example.com'), 0, 'no session for the owner');
  // JSON sign-ups for the "+json" addresses: all free, so answered alike by construction; the three
  // cases for JSON proper:
  await squatter('squatted-json@example.com');
  await app.services.users.create({ email: 'owner-json@example.com', password, emailVerified: true }, actor);
  const json = [];
  for (const email of ['free-json@example.com', 'squatted-json@example.com', 'owner-json@example.com'])
    json.push(shape(await jsonSignUp(email), email));
  t.same(json[1], json[0], 'JSON: squatted address as a free one');
  t.same(json[2], json[0], 'JSON: taken address as a free one');
  t.notOk(await findUserByEmail(db, 'free-json@example.com'), 'no account (JSON)');
});

t.test('the owner of a verified account gets a "someone tried" mail with a working reset link', async (t) => {
  await app.services.users.create({ email: 'known@example.com', password, emailVerified: true }, actor);
  t.equal((await pageSignUp('known@example.com')).statusCode, 200);
  const link = new URL(await links('known@example.com', SIGN_UP_ATTEMPT_SUBJECT));
  t.notOk(
    smtp.mails.some((m) => m.to.includes('known@example.com') && m.subject === SIGN_UP_MAIL_SUBJECT),
    'no sign-up link for an address with an account',
  );
  t.equal(link.pathname.replace(/[^/]+$/, ''), '/api/auth/reset-password/', 'a normal reset link');
  const opened = await app.inject({ method: 'GET', url: link.pathname + link.search });
  t.equal(opened.statusCode, 302);
  const target = new URL(opened.headers.location as string);
  t.equal(target.pathname, '/login/reset-password', 'to the first-party reset page');
  const token = target.searchParams.get('token')!;
  const reset = await app.inject({
    method: 'POST',
    url: '/api/auth/reset-password',
    payload: { token, newPassword: 'a brand new password 2' },
  });
  t.equal(reset.statusCode, 200, reset.body);
  const signed = await signInWithInject(app, 'known@example.com', 'a brand new password 2');
  t.equal(signed.res.statusCode, 303, 'the owner signs in with the new password');
});

t.test('a free address gets the confirmation mail; GET and HEAD of the link create nothing', async (t) => {
  t.equal((await pageSignUp('fresh@example.com')).statusCode, 200);
  const mail = await smtp.waitFor('fresh@example.com');
  t.equal(mail.subject, SIGN_UP_MAIL_SUBJECT);
  t.match(mail.text, /If you did not sign up, ignore this mail/);
  const link = new URL(await links('fresh@example.com'));
  t.equal(link.pathname, '/login/sign-up/confirm');
  const users = await count('users');
  const get = await app.inject({ method: 'GET', url: link.pathname + link.search, cookies: BROWSER_B });
  t.equal(get.statusCode, 200);
  t.match(get.body, /Create your account for fresh@example\.com/);
  t.match(get.body, /<form method="post" action="\/login\/sign-up\/confirm">/);
  t.equal(get.headers['referrer-policy'], 'no-referrer');
  const head = await app.inject({ method: 'HEAD', url: link.pathname + link.search });
  t.equal(head.statusCode, 200);
  t.equal(await count('users'), users, 'GET and HEAD created no account');
  t.notOk(await findUserByEmail(db, 'fresh@example.com'));
  const again = await app.inject({ method: 'GET', url: link.pathname + link.search });
  t.equal(again.statusCode, 200, 'the link still works after any number of GETs');

  // The POST without the CSRF pair is refused and creates nothing.
  const token = link.searchParams.get('token')!;
  const noCsrf = await app.inject(form('/login/sign-up/confirm', { token }, {}));
  t.equal(noCsrf.statusCode, 403);
  t.notOk(await findUserByEmail(db, 'fresh@example.com'), 'no account without CSRF');

  // The button (with the password chosen at sign-up: browser B did not sign up) creates the verified
  // account and signs that browser in (issue 31: before, no browser was signed in without a request).
  const confirmed = await confirmSignUpLink(app, link.href, BROWSER_B, password);
  t.equal(confirmed.res.statusCode, 200);
  t.match(confirmed.res.body, /Your account is ready/);
  t.ok(cookiesOf(confirmed.res)[app.sessionCookieName], 'browser B, which gave the password, is signed in');
  const user = (await findUserByEmail(db, 'fresh@example.com'))!;
  t.equal(user.email_verified, true);
  t.equal(user.self_registered, true);
  t.equal(user.name, 'Someone');
  const types = (await listAuditEvents(db, { userId: user.id })).map((e) => e.type);
  t.ok(types.includes('user.signed_up') && types.includes('user.email_verified'), types.join());
  const signed = await signInWithInject(app, 'fresh@example.com', password);
  t.equal(signed.res.statusCode, 303, 'the password chosen at sign-up works');
  const twice = await app.inject(
    form('/login/sign-up/confirm', { csrf: confirmed.jar['idp.csrf']!, token }, confirmed.jar),
  );
  t.equal(twice.statusCode, 400, 'the link works once');
});

t.test('confirming takes the address over from a never-verified self-registered account', async (t) => {
  const old = await squatter('victim@example.com');
  // The squatter's session and tokens (verified for a moment, as the pre-issue-31 link prefetch allowed).
  await db.updateTable('users').set({ email_verified: true }).where('id', '=', old.id).execute();
  const flow = {
    clientId: client.clientId,
    redirectUri,
    email: 'victim@example.com',
    password: 'squatter-password-1',
    scope: 'openid email offline_access',
  };
  const { tokens, jar: squatterJar } = await obtainTokens(app, flow);
  await db.updateTable('users').set({ email_verified: false }).where('id', '=', old.id).execute();
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 200, 'the bearer token works (and is cached)');
  t.equal((await app.inject({ method: 'GET', url: '/login/', cookies: squatterJar })).statusCode, 200);

  t.equal((await pageSignUp('victim@example.com')).statusCode, 200);
  const confirmed = await confirmSignUpLink(app, await links('victim@example.com'), BROWSER_B, password);
  t.equal(confirmed.res.statusCode, 200, confirmed.res.body.slice(0, 300));
  const now = (await findUserByEmail(db, 'victim@example.com'))!;
  t.not(now.id, old.id, 'a new account holds the address');
  t.equal(now.email_verified, true);
  t.equal((await db.selectFrom('users').select('id').where('id', '=', old.id).execute()).length, 0);
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, "the squatter's bearer token stops working");
  const refreshed = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refreshed.statusCode, 400, "the squatter's refresh token stops working");
  const home = await app.inject({ method: 'GET', url: '/login/', cookies: squatterJar });
  t.equal(home.statusCode, 303, "the squatter's session is gone");
  const events = await listAuditEvents(db, { type: 'user.address_taken_over' });
  t.equal(events.length, 1);
  t.equal(events[0]!.user_id, now.id);
  t.equal((events[0]!.detail as { previousUserId: string }).previousUserId, old.id);
});

t.test('an unverified account an operator made is not taken over', async (t) => {
  const made = await app.services.users.create({ email: 'staff@example.com', password }, actor);
  t.equal((await pageSignUp('staff@example.com')).statusCode, 200);
  await links('staff@example.com', SIGN_UP_ATTEMPT_SUBJECT);
  t.notOk(smtp.mails.some((m) => m.to.includes('staff@example.com') && m.subject === SIGN_UP_MAIL_SUBJECT));
  // A sign-up made while the address was free, confirmed after an operator created the account.
  t.equal((await pageSignUp('later@example.com')).statusCode, 200);
  const link = await links('later@example.com');
  const later = await app.services.users.create({ email: 'later@example.com', password }, actor);
  const confirmed = await confirmSignUpLink(app, link, BROWSER_B, password);
  t.equal(confirmed.res.statusCode, 409);
  t.match(confirmed.res.body, /An account with this address exists/);
  t.equal((await findUserByEmail(db, 'later@example.com'))!.id, later.id, 'the operator-made account stays');
  t.equal((await findUserByEmail(db, 'staff@example.com'))!.id, made.id);
  t.equal((await findUserByEmail(db, 'later@example.com'))!.email_verified, false);
});

t.test('the confirmation continues the authorization request only in the browser that started it', async (t) => {
  // Browser A starts, signs up, confirms: signed in, on to the application's consent step.
  const requestA = await startAuthorization(app, BROWSER_A);
  const aliceSignUp = await pageSignUp('alice@example.com', BROWSER_A, requestA);
  t.equal(aliceSignUp.statusCode, 200);
  const inA = await confirmSignUpLink(app, await links('alice@example.com'), aliceSignUp.jar);
  t.equal(inA.res.statusCode, 303);
  t.match(inA.res.headers.location, `/authorize/continue?request=${requestA}`);
  t.ok(cookiesOf(inA.res)[app.sessionCookieName], 'browser A is signed in');
  const next = await app.inject({
    method: 'GET',
    url: new URL(inA.res.headers.location as string).pathname + new URL(inA.res.headers.location as string).search,
    cookies: inA.jar,
  });
  t.equal(next.statusCode, 303);
  t.match(next.headers.location, /\/login\/consent\?request=/, 'on to consent: the account is verified');

  // Browser A starts and signs up; the link is POSTed in browser B with the password: the account exists,
  // B (which gave the password) is signed in, but A's authorization request does not continue in B.
  const requestA2 = await startAuthorization(app, BROWSER_A);
  t.equal((await pageSignUp('bob@example.com', BROWSER_A, requestA2)).statusCode, 200);
  const inB = await confirmSignUpLink(app, await links('bob@example.com'), BROWSER_B, password);
  t.equal(inB.res.statusCode, 200);
  t.match(inB.res.body, /Your account is ready/);
  t.ok(cookiesOf(inB.res)[app.sessionCookieName], 'browser B, which gave the password, is signed in');
  t.equal(await sessionsOf('bob@example.com'), 1, "B's session only: A's request was not signed in");
  const pendingA2 = await db
    .selectFrom('authorization_requests')
    .select('login_user_id')
    .where('id', '=', requestA2)
    .executeTakeFirst();
  t.equal(pendingA2?.login_user_id ?? null, null, "A's request stays without a sign-in");
  t.equal((await findUserByEmail(db, 'bob@example.com'))?.email_verified, true);
});

t.test('the test helper signUpAndConfirm: JSON sign-up, the mailed link, then a session', async (t) => {
  const { signUp, confirm, jar } = await signUpAndConfirm(app, links, {
    email: 'helper@example.com',
    password,
    via: 'json',
    signIn: true,
  });
  t.equal(signUp.statusCode, 201);
  t.equal(confirm.statusCode, 200);
  const home = await app.inject({ method: 'GET', url: '/login/', cookies: jar });
  t.equal(home.statusCode, 200);
  t.match(home.body, 'helper@example.com');
});

/** Signs up in a fresh browser with the hosted page: the browser's cookies and the mailed link. */
async function signedUpElsewhere(email: string) {
  const browser = { 'idp.authz': generateToken() };
  const res = await pageSignUp(email, browser);
  t.equal(res.statusCode, 200);
  return { jar: res.jar, link: new URL(await links(email)) };
}
const postConfirm = async (link: URL, browser: Record<string, string>, extra: Record<string, string> = {}) => {
  const page = await formPageOf(app, link.pathname + link.search, browser);
  return app.inject(
    form('/login/sign-up/confirm', { csrf: page.csrf, token: link.searchParams.get('token')!, ...extra }, page.jar),
  );
};

t.test('the sign-up cookie: HttpOnly, SameSite=Lax, random; the row keeps only its hash', async (t) => {
  const res = await jsonSignUp('cookie@example.com');
  t.equal(res.statusCode, 201);
  const cookie = (res.cookies as Array<Record<string, unknown>>).find((c) => c.name === 'idp.signup')!;
  t.ok(cookie, 'set by the JSON sign-up');
  t.equal(cookie.httpOnly, true);
  t.equal(cookie.sameSite, 'Lax');
  t.equal(cookie.path, '/');
  t.match(String(cookie.value), /^[A-Za-z0-9_-]{43}$/);
  const other = (await jsonSignUp('cookie2@example.com')).cookies as Array<Record<string, unknown>>;
  t.not(other.find((c) => c.name === 'idp.signup')!.value, cookie.value, 'a new secret for another browser');
  const row = await db
    .selectFrom('sign_up_requests')
    .select('browser_hash')
    .where('email', '=', 'cookie@example.com')
    .executeTakeFirstOrThrow();
  t.equal(row.browser_hash, hashToken(String(cookie.value)), 'its SHA-256 is stored');
  t.not(row.browser_hash, cookie.value, 'not the secret itself');
});

t.test('another browser without the password: refused, nothing created, the link still works', async (t) => {
  const { jar, link } = await signedUpElsewhere('mailbox@example.com');
  const page = await app.inject({ method: 'GET', url: link.pathname + link.search, cookies: BROWSER_B });
  t.equal(page.statusCode, 200);
  t.match(page.body, /Enter the password you chose when you signed up/);
  t.match(page.body, /<input id="field-password" name="password" type="password"/);
  const bare = await postConfirm(link, BROWSER_B);
  t.equal(bare.statusCode, 400);
  t.match(bare.body, /Enter the password you chose when you signed up/);
  t.notOk(cookiesOf(bare)[app.sessionCookieName], 'no session');
  t.notOk(await findUserByEmail(db, 'mailbox@example.com'), 'no account');
  // The signing-up browser's page asks for nothing; its button still works.
  const own = await app.inject({ method: 'GET', url: link.pathname + link.search, cookies: jar });
  t.notMatch(own.body, /name="password"/, 'no password field in the browser that signed up');
  const confirmed = await confirmSignUpLink(app, link.href, jar);
  t.equal(confirmed.res.statusCode, 200, 'the link was still usable');
  t.ok(await findUserByEmail(db, 'mailbox@example.com'));
});

t.test('the browser that signed up, without an authorization request, is signed in by the button', async (t) => {
  const { jar, link } = await signedUpElsewhere('same@example.com');
  const confirmed = await confirmSignUpLink(app, link.href, jar);
  t.equal(confirmed.res.statusCode, 200);
  t.match(confirmed.res.body, /Your account is ready/);
  t.ok(cookiesOf(confirmed.res)[app.sessionCookieName], 'a session cookie');
  const home = await app.inject({ method: 'GET', url: '/login/', cookies: confirmed.jar });
  t.equal(home.statusCode, 200, 'signed in');
  t.match(home.body, 'same@example.com');
});

t.test(
  'another browser with a wrong password: 400, nothing created; with the right one: created, signed in',
  async (t) => {
    const { link } = await signedUpElsewhere('phone@example.com');
    const wrong = await postConfirm(link, BROWSER_B, { password: 'not the password 1' });
    t.equal(wrong.statusCode, 400);
    t.match(wrong.body, /This is not the password chosen at sign-up/);
    t.notOk(cookiesOf(wrong)[app.sessionCookieName], 'no session');
    t.notOk(await findUserByEmail(db, 'phone@example.com'), 'no account');
    const right = await postConfirm(link, BROWSER_B, { password });
    t.equal(right.statusCode, 200, right.body.slice(0, 300));
    t.match(right.body, /Your account is ready/);
    const user = await findUserByEmail(db, 'phone@example.com');
    t.equal(user?.email_verified, true, 'created, verified');
    const home = await app.inject({
      method: 'GET',
      url: '/login/',
      cookies: { ...BROWSER_B, ...cookiesOf(right) },
    });
    t.equal(home.statusCode, 200, 'the browser that gave the password is signed in');
    t.match(home.body, 'phone@example.com');
  },
);

t.test('five wrong passwords kill the link, even for the browser that signed up', async (t) => {
  const { jar, link } = await signedUpElsewhere('guessed@example.com');
  for (let i = 1; i <= 4; i++) {
    const wrong = await postConfirm(link, BROWSER_B, { password: `wrong password ${i}` });
    t.equal(wrong.statusCode, 400);
    t.match(wrong.body, /This is not the password chosen at sign-up/);
  }
  const fifth = await postConfirm(link, BROWSER_B, { password: 'wrong password 5' });
  t.equal(fifth.statusCode, 400);
  t.match(fifth.body, /wrong too many times/);
  t.equal(
    (await db.selectFrom('sign_up_requests').select('token_hash').where('email', '=', 'guessed@example.com').execute())
      .length,
    0,
    'the pending sign-up is deleted',
  );
  const page = await app.inject({ method: 'GET', url: link.pathname + link.search, cookies: BROWSER_B });
  t.equal(page.statusCode, 400, 'the link is dead');
  const token = link.searchParams.get('token')!;
  const inB = await formPageOf(app, '/login/sign-in', BROWSER_B);
  const right = await app.inject(form('/login/sign-up/confirm', { csrf: inB.csrf, token, password }, inB.jar));
  t.equal(right.statusCode, 400, 'the right password no longer helps');
  const inA = await formPageOf(app, '/login/sign-in', jar);
  const own = await app.inject(form('/login/sign-up/confirm', { csrf: inA.csrf, token }, inA.jar));
  t.equal(own.statusCode, 400, 'nor the browser that signed up');
  t.notOk(await findUserByEmail(db, 'guessed@example.com'), 'no account');
});

t.test('8 wrong passwords at once still get at most 5 checks; the link dies', async (t) => {
  const { link } = await signedUpElsewhere('raced@example.com');
  const page = await formPageOf(app, link.pathname + link.search, BROWSER_B);
  const token = link.searchParams.get('token')!;
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      app.inject(form('/login/sign-up/confirm', { csrf: page.csrf, token, password: `guess ${i} long` }, page.jar)),
    ),
  );
  t.ok(
    answers.every((a) => a.statusCode === 400),
    `all 400: ${answers.map((a) => a.statusCode).join()}`,
  );
  const checked = answers.filter((a) => /This is not the password|wrong too many times/.test(a.body)).length;
  t.equal(checked, 5, 'five checks, no more');
  t.equal(answers.filter((a) => /wrong too many times/.test(a.body)).length, 1);
  const dead = await app.inject({ method: 'GET', url: link.pathname + link.search, cookies: BROWSER_B });
  t.equal(dead.statusCode, 400, 'the link is dead');
});
