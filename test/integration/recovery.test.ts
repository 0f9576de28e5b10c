// Account recovery: POST /api/auth/request-password-reset, GET /api/auth/reset-password/{token},
// POST /api/auth/reset-password and the hosted forgot/reset pages, with a real SMTP server.
import t from 'tap';
import { execFile } from 'node:child_process';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { startTestServer } from '../helpers/server.js';
import {
  obtainTokens,
  signInWithInject,
  tokenRequest,
  userinfo,
  cookiesOf,
  hiddenField,
  formPage as formPageOf,
} from '../helpers/flow.js';
import { linkIn, startSmtp, type CapturedMail } from '../helpers/smtp.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { hashToken } from '../../src/oauth/tokens.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
// https://account.example is a first-party account page (FIRST_PARTY_ORIGINS); the registered
// application's origins (https://spa.example, https://app.example) are third parties.
const FIRST_PARTY = 'https://account.example';
const { app, database, logs } = await buildTestApp(t, {
  env: { SMTP_URL: smtp.url, FIRST_PARTY_ORIGINS: FIRST_PARTY },
});
const db = database.db;
const actor = { actor: 'test' };

const BASE_URL = 'http://localhost:3000';
const LOGIN_URL = `${BASE_URL}/login`;
const GENERIC = { status: true, message: 'If this email exists in our system, check your email for the reset link' };
const redirectUri = 'https://app.example/callback';
const client = await app.services.applications.create(
  { clientName: 'Recovery RP', redirectUris: [redirectUri], allowedWebOrigins: ['https://spa.example'] },
  actor,
);
/** The usual reset target in this file: a first-party account page. */
const spaTarget = `${FIRST_PARTY}/account/reset?from=mail`;

/** Every reset token and password this file sees; none of them may reach the log. */
const secrets: string[] = [];

let userCounter = 0;
async function newUser(password = 'old-password-1', extra: { disabled?: boolean } = {}) {
  const email = `rec${++userCounter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const user = await app.services.users.create({ email, password, emailVerified: true, ...extra }, actor);
  return { email, password, id: user.id };
}

const postJson = (url: string, payload: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/json', ...headers },
  });
const requestReset = (email: string, redirectTo: string = spaTarget) =>
  postJson('/api/auth/request-password-reset', { email, redirectTo });
const resetPassword = (token: string, newPassword: string) => {
  if (/password/.test(newPassword)) secrets.push(newPassword);
  return postJson('/api/auth/reset-password', { token, newPassword });
};
const signIn = (email: string, password: string) => postJson('/api/auth/sign-in', { email, password });

/** Waits for the background part of reset requests and for the mail queue. */
async function settle() {
  await app.services.recovery.drain();
  await app.services.mailer.drain();
}

const mailsTo = (to: string, subject?: string) =>
  smtp.mails.filter((m) => m.to.toLowerCase() === to.toLowerCase() && (subject === undefined || m.subject === subject));
const resetMails = (to: string) => mailsTo(to, 'Reset your password');
const changedMails = (to: string) => mailsTo(to, 'Your password was changed');

function tokenOf(link: string): string {
  const url = new URL(link);
  const m = /^\/api\/auth\/reset-password\/([^/]+)$/.exec(url.pathname);
  if (!m) throw new Error(`not a reset link: ${link}`);
  return decodeURIComponent(m[1]!);
}

/** Asks for a reset, waits for the mail, and returns its link and token. */
async function requestToken(
  email: string,
  redirectTo: string = spaTarget,
): Promise<{ res: LightMyRequestResponse; mail: CapturedMail; link: string; token: string }> {
  const before = resetMails(email).length;
  const res = await requestReset(email, redirectTo);
  await settle();
  const mails = resetMails(email);
  if (res.statusCode !== 200 || mails.length !== before + 1)
    throw new Error(`no reset mail for ${email}: ${res.statusCode} ${res.body}`);
  const mail = mails.at(-1)!;
  const link = linkIn(mail);
  const token = tokenOf(link);
  secrets.push(token);
  return { res, mail, link, token };
}

const follow = (link: string) => {
  const url = new URL(link);
  return app.inject({ method: 'GET', url: url.pathname + url.search });
};

const resetRows = (userId?: string) => {
  let q = db.selectFrom('password_reset_tokens').selectAll();
  if (userId) q = q.where('user_id', '=', userId);
  return q.execute();
};

const formPage = (path: string, jar: Record<string, string> = {}) => formPageOf(app, path, jar);

const postForm = (path: string, form: Record<string, string>, jar: Record<string, string>) =>
  app.inject({
    method: 'POST',
    url: path,
    cookies: jar,
    payload: new URLSearchParams(form).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

t.test('a known address gets the generic answer, a mail with a working link, and a reset that works', async (t) => {
  const user = await newUser();
  const auditBefore = (await listAuditEvents(db, { type: 'password_reset.requested', userId: user.id })).length;
  const { res, mail, link, token } = await requestToken(user.email.toUpperCase());
  t.equal(res.statusCode, 200);
  t.same(res.json(), GENERIC, 'the exact generic body');
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(mail.to, user.email, 'the mail goes to the stored address (the lookup is case-insensitive)');
  t.equal(mail.subject, 'Reset your password');
  t.match(mail.html, `href="${link.replace(/&/g, '&amp;')}"`, 'the HTML body carries the same link');
  t.equal(
    link,
    `${BASE_URL}/api/auth/reset-password/${token}?redirectTo=${encodeURIComponent(spaTarget)}`,
    'the link is ${BASE_URL}/api/auth/reset-password/<token>?redirectTo=...',
  );
  t.match(token, /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');
  t.equal(
    (await listAuditEvents(db, { type: 'password_reset.requested', userId: user.id })).length,
    auditBefore + 1,
    'password_reset.requested recorded',
  );

  const [row] = await resetRows(user.id);
  t.ok(row, 'one token row');
  const lifetime = (new Date(row!.expires_at).getTime() - Date.now()) / 1000;
  t.ok(lifetime > 1800 - 30 && lifetime <= 1800, `the token lives 30 minutes (${lifetime.toFixed(1)} s left)`);

  const followed = await follow(link);
  t.equal(followed.statusCode, 302);
  const location = new URL(followed.headers.location as string);
  t.equal(location.origin + location.pathname, 'https://account.example/account/reset');
  t.equal(location.searchParams.get('from'), 'mail', 'the query of redirectTo is kept');
  t.equal(location.searchParams.get('token'), token, 'the token is passed on');
  t.equal(location.searchParams.get('error'), null);
  t.equal(followed.headers['referrer-policy'], 'no-referrer');
  t.equal(followed.headers['set-cookie'], undefined, 'following the link sets no cookie');

  const changedBefore = changedMails(user.email).length;
  const done = await resetPassword(token, 'new-password-1');
  t.equal(done.statusCode, 200);
  t.same(done.json(), { status: true });
  t.equal(done.headers['set-cookie'], undefined, 'the reset does not sign the user in');

  t.equal((await signIn(user.email, user.password)).statusCode, 401, 'the old password no longer works');
  const withNew = await signIn(user.email, 'new-password-1');
  t.equal(withNew.statusCode, 200, 'the new password works');
  t.equal(
    (await signInWithInject(app, user.email, 'new-password-1')).res.statusCode,
    303,
    'also on the hosted sign-in page',
  );

  await settle();
  const changed = changedMails(user.email);
  t.equal(changed.length, changedBefore + 1, 'a "password changed" mail arrives');
  t.match(changed.at(-1)!.text, user.email);
  t.notMatch(changed.at(-1)!.text, token, 'the notification carries no reset token');

  const completed = await listAuditEvents(db, { type: 'password_reset.completed', userId: user.id });
  t.equal(completed.length, 1, 'password_reset.completed recorded');
});

t.test('an unknown address gets the same status and body, no mail, no token row and no audit event', async (t) => {
  const email = `nobody-${Math.random().toString(36).slice(2)}@example.com`;
  const rowsBefore = (await resetRows()).length;
  const auditBefore = (await listAuditEvents(db, { type: 'password_reset.requested' })).length;
  const res = await requestReset(email);
  t.equal(res.statusCode, 200);
  t.same(res.json(), GENERIC);
  t.equal(res.headers['cache-control'], 'no-store');
  await settle();
  await new Promise((r) => setTimeout(r, 300));
  t.same(mailsTo(email), [], 'no mail');
  t.equal((await resetRows()).length, rowsBefore, 'no token row');
  t.equal((await listAuditEvents(db, { type: 'password_reset.requested' })).length, auditBefore);

  const disabled = await newUser('old-password-1', { disabled: true });
  const res2 = await requestReset(disabled.email);
  t.same([res2.statusCode, res2.json()], [200, GENERIC], 'a disabled account answers the same');
  await settle();
  await new Promise((r) => setTimeout(r, 200));
  t.same(mailsTo(disabled.email), [], 'and gets no mail');
  t.same(await resetRows(disabled.id), []);

  const malformed = await requestReset('not-an-address');
  t.same([malformed.statusCode, malformed.json()], [200, GENERIC], 'a malformed address answers the same as well');
});

t.test('known and unknown addresses take the same time (medians, generous tolerance)', async (t) => {
  // Measured by a client in another process against a real server: an in-process client shares the
  // event loop with the server's background work and would measure that work, not the response.
  const server = await startTestServer(t);
  await server.app.services.users.create(
    { email: 'timing@example.com', password: 'old-password-1', emailVerified: true },
    actor,
  );
  const client = `
    const [base, rounds] = [process.argv[1], Number(process.argv[2])];
    const pause = () => new Promise((r) => setTimeout(r, 40));
    async function time(email) {
      const start = performance.now();
      const res = await fetch(base + '/api/auth/request-password-reset', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, redirectTo: '/login/reset-password' }),
      });
      const body = await res.text();
      const ms = performance.now() - start;
      if (res.status !== 200) throw new Error(res.status + ' ' + body);
      await pause(); // the background part of one request stays out of the next measurement
      return { ms, body };
    }
    const known = [], unknown = [], bodies = new Set();
    for (let i = 0; i < rounds + 3; i++) {
      // Interleaved, so that a slow phase of the machine hits both sides; the first rounds warm up.
      const k = await time('timing@example.com');
      const u = await time('ghost-' + i + '-' + Math.random().toString(36).slice(2) + '@unknown.example');
      bodies.add(k.body).add(u.body);
      if (i >= 3) known.push(k.ms), unknown.push(u.ms);
    }
    process.stdout.write(JSON.stringify({ known, unknown, bodies: [...bodies] }));
  `;
  const output = await new Promise<string>((resolve, reject) =>
    execFile(
      process.execPath,
      ['--input-type=module', '-e', client, server.baseUrl, '7'],
      { timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout)),
    ),
  );
  const { known, unknown, bodies } = JSON.parse(output) as { known: number[]; unknown: number[]; bodies: string[] };
  t.same(
    bodies.map((b) => JSON.parse(b)),
    [GENERIC],
    'one body for both',
  );
  const a = median(known);
  const b = median(unknown);
  const tolerance = Math.max(50, 3 * Math.min(a, b));
  t.ok(
    Math.abs(a - b) < tolerance,
    `median known ${a.toFixed(1)} ms, unknown ${b.toFixed(1)} ms, tolerance ${tolerance.toFixed(1)} ms`,
  );
  await server.app.services.recovery.drain();
  await server.app.services.mailer.drain();
  t.equal(server.smtp.mails.length, 10, 'only the known address got mails (one per request)');
  t.ok(server.smtp.mails.every((m) => m.to === 'timing@example.com'));
});

t.test('redirectTo: trusted targets', async (t) => {
  const cases: Array<[string, string, string]> = [
    ['the login origin', `${LOGIN_URL}/reset-password`, `${LOGIN_URL}/reset-password`],
    [
      'a FIRST_PARTY_ORIGINS origin (query kept)',
      'https://account.example/r?keep=1',
      'https://account.example/r?keep=1',
    ],
    ['a relative path (login origin)', '/login/reset-password', `${LOGIN_URL}/reset-password`],
  ];
  for (const [what, redirectTo, expected] of cases) {
    const user = await newUser();
    const { res, link, token } = await requestToken(user.email, redirectTo);
    t.same([res.statusCode, res.json()], [200, GENERIC], what);
    t.equal(new URL(link).searchParams.get('redirectTo'), expected, `${what}: the link carries the checked target`);
    const followed = await follow(link);
    t.equal(followed.statusCode, 302, what);
    const location = new URL(followed.headers.location as string);
    t.equal(location.searchParams.get('token'), token, what);
    location.searchParams.delete('token');
    t.equal(location.href, new URL(expected).href, `${what}: redirected to the target`);
  }
});

t.test('redirectTo: untrusted targets are refused with 400 INVALID_REDIRECT and nothing is sent', async (t) => {
  const disabledApp = await app.services.applications.create(
    {
      clientName: 'Disabled RP',
      redirectUris: ['https://gone.example/cb'],
      allowedWebOrigins: ['https://gone-web.example'],
    },
    actor,
  );
  await app.services.applications.setEnabled(disabledApp.clientId, false, actor);
  const user = await newUser();
  const bad = [
    'https://evil.example/reset',
    'https://account.example.evil.example/reset',
    'http://account.example/reset',
    'https://account.example:8443/reset',
    'https://gone.example/reset',
    'https://gone-web.example/reset',
    'javascript:alert(1)',
    'JavaScript:alert(document.domain)//https://account.example/',
    'data:text/html,<script>alert(1)</script>',
    'https://user:pass@account.example/reset',
    'https://user@account.example/reset',
    '//evil.example/reset',
    '/\\evil.example/reset',
    'reset-password',
    'ftp://account.example/reset',
  ];
  for (const redirectTo of bad) {
    const res = await requestReset(user.email, redirectTo);
    t.equal(res.statusCode, 400, redirectTo);
    t.equal(res.json().error, 'INVALID_REDIRECT', redirectTo);
    t.type(res.json().message, 'string');
  }
  const unknown = await requestReset('nobody-at-all@example.com', 'https://evil.example/');
  t.equal(unknown.statusCode, 400, 'checked before the account: the same for an unknown address');
  await settle();
  await new Promise((r) => setTimeout(r, 200));
  t.same(mailsTo(user.email), [], 'no mail was sent');
  t.same(await resetRows(user.id), [], 'no token was made');
  t.same(await listAuditEvents(db, { type: 'password_reset.requested', userId: user.id }), []);
});

t.test("redirectTo: a registered application's origins are refused (reset tokens stay first-party)", async (t) => {
  // Issue 12, item 2: whoever registered an application could otherwise have the victim's genuine
  // reset mail deliver the token to the application's own page.
  const user = await newUser();
  const mailsBefore = smtp.mails.length;
  const thirdParty: Array<[string, string]> = [
    ["the application's registered web origin", 'https://spa.example/steal-reset'],
    ["the application's redirect-URI origin", 'https://app.example/steal-reset'],
    ['the exact registered redirect URI', redirectUri],
  ];
  for (const [what, redirectTo] of thirdParty) {
    for (const email of [user.email, 'nobody-here@example.com']) {
      const res = await requestReset(email, redirectTo);
      t.equal(res.statusCode, 400, `${what} (${email})`);
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8');
      t.same(Object.keys(res.json()).sort(), ['error', 'message'], 'the first-party error body');
      t.equal(res.json().error, 'INVALID_REDIRECT', what);
      t.match(res.json().message, /FIRST_PARTY_ORIGINS/);
    }
  }
  await settle();
  await new Promise((r) => setTimeout(r, 200));
  t.equal(smtp.mails.length, mailsBefore, 'no mail of any kind reached the SMTP server');
  t.same(await resetRows(user.id), [], 'no token was made');
  t.same(
    await listAuditEvents(db, { type: 'password_reset.requested', userId: user.id }),
    [],
    'nothing was looked up or recorded',
  );

  // The first-party targets still work for the same user, with mail.
  for (const redirectTo of [`${FIRST_PARTY}/reset`, `${LOGIN_URL}/reset-password`, '/login/reset-password']) {
    const { res, link } = await requestToken(user.email, redirectTo);
    t.equal(res.statusCode, 200, `${redirectTo} is accepted`);
    t.equal(new URL(new URL(link).searchParams.get('redirectTo')!).origin, new URL(redirectTo, LOGIN_URL).origin);
  }

  // The link handler: an invalid link names an application origin -> the hosted page, never the application.
  const dead = await app.inject({
    method: 'GET',
    url: `/api/auth/reset-password/${'A'.repeat(43)}?redirectTo=${encodeURIComponent('https://spa.example/reset')}`,
  });
  t.equal(dead.statusCode, 302);
  t.equal(
    dead.headers.location,
    `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`,
    'an error redirect goes only to a first-party target',
  );

  // A live token stored with an application target (as before this fix) is handed to the hosted page.
  const legacy = 'legacy-token-0123456789abcdefghijklmnopqrstu';
  secrets.push(legacy);
  await db
    .insertInto('password_reset_tokens')
    .values({
      token_hash: hashToken(legacy),
      user_id: user.id,
      redirect_to: 'https://spa.example/reset',
      expires_at: new Date(Date.now() + 600_000),
    })
    .execute();
  const followed = await app.inject({ method: 'GET', url: `/api/auth/reset-password/${legacy}` });
  t.equal(followed.statusCode, 302);
  const location = new URL(followed.headers.location as string);
  t.equal(
    location.origin + location.pathname,
    `${LOGIN_URL}/reset-password`,
    'the token never goes to the application',
  );
  t.equal(location.searchParams.get('token'), legacy);
});

t.test('the JSON recovery endpoints are first-party: JSON only, own Origin only', async (t) => {
  const user = await newUser();
  const form = await app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ email: user.email, redirectTo: spaTarget }).toString(),
  });
  t.equal(form.statusCode, 415);
  const foreign = await postJson(
    '/api/auth/request-password-reset',
    { email: user.email, redirectTo: spaTarget },
    { origin: 'https://evil.example' },
  );
  t.equal(foreign.statusCode, 403);
  const own = await postJson(
    '/api/auth/request-password-reset',
    { email: user.email, redirectTo: spaTarget },
    { origin: BASE_URL },
  );
  t.same([own.statusCode, own.json()], [200, GENERIC]);
  await settle();
  t.equal(resetMails(user.email).length, 1, 'only the accepted request sent a mail');
  const token = tokenOf(linkIn(resetMails(user.email)[0]!));
  secrets.push(token);
  const foreignReset = await postJson(
    '/api/auth/reset-password',
    { token, newPassword: 'new-password-1' },
    { origin: 'https://spa.example' },
  );
  t.equal(foreignReset.statusCode, 403, 'even a registered application origin cannot post a reset');
  t.equal(
    (await resetPassword(token, 'new-password-2')).statusCode,
    200,
    'the token was not consumed by the refused request',
  );
});

t.test('expired tokens', async (t) => {
  const user = await newUser();
  const { link, token } = await requestToken(user.email);
  await db
    .updateTable('password_reset_tokens')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('user_id', '=', user.id)
    .execute();
  const followed = await follow(link);
  t.equal(followed.statusCode, 302);
  const location = new URL(followed.headers.location as string);
  t.equal(
    location.origin + location.pathname,
    'https://account.example/account/reset',
    "to the request's (trusted) redirectTo",
  );
  t.equal(location.searchParams.get('from'), 'mail');
  t.equal(location.searchParams.get('error'), 'INVALID_TOKEN');
  t.equal(location.searchParams.get('token'), null, 'no token on an error redirect');
  const res = await resetPassword(token, 'new-password-1');
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'INVALID_TOKEN');
  t.type(res.json().message, 'string');
  t.equal((await signIn(user.email, user.password)).statusCode, 200, 'the password is unchanged');
});

t.test('expiry by configuration: RESET_TOKEN_TTL=1', async (t) => {
  const short = await buildTestApp(t, { env: { SMTP_URL: smtp.url, RESET_TOKEN_TTL: '1' } });
  const email = `short-ttl-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await short.app.services.users.create({ email, password: 'old-password-1', emailVerified: true }, actor);
  const res = await short.app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email, redirectTo: `${LOGIN_URL}/reset-password` }),
  });
  t.equal(res.statusCode, 200);
  await short.app.services.recovery.drain();
  await short.app.services.mailer.drain();
  const mail = await smtp.waitFor(email);
  const token = tokenOf(linkIn(mail));
  secrets.push(token);
  await new Promise((r) => setTimeout(r, 1200));
  const reset = await short.app.inject({
    method: 'POST',
    url: '/api/auth/reset-password',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token, newPassword: 'new-password-1' }),
  });
  t.equal(reset.statusCode, 400);
  t.equal(reset.json().error, 'INVALID_TOKEN');
});

t.test('used tokens: single use', async (t) => {
  const user = await newUser();
  const { link, token } = await requestToken(user.email);
  t.equal((await resetPassword(token, 'new-password-1')).statusCode, 200);
  const again = await resetPassword(token, 'new-password-2');
  t.equal(again.statusCode, 400);
  t.equal(again.json().error, 'INVALID_TOKEN');
  t.equal((await signIn(user.email, 'new-password-1')).statusCode, 200, 'the first reset stands');
  t.equal((await signIn(user.email, 'new-password-2')).statusCode, 401);
  const followed = await follow(link);
  const location = new URL(followed.headers.location as string);
  t.equal(location.searchParams.get('error'), 'INVALID_TOKEN', 'the used link redirects with the error');
  t.equal(location.searchParams.get('token'), null);
  const page = await app.inject({ method: 'GET', url: `/login/reset-password?token=${encodeURIComponent(token)}` });
  t.equal(page.statusCode, 400, 'the hosted page says the link does not work');
  t.notMatch(page.body, /name="newPassword"/);
});

t.test('superseded tokens: a new request invalidates the previous link', async (t) => {
  const user = await newUser();
  const first = await requestToken(user.email);
  const second = await requestToken(user.email);
  t.not(first.token, second.token);
  const events = await listAuditEvents(db, { type: 'password_reset.requested', userId: user.id });
  t.same(
    events.map((e) => (typeof e.detail === 'string' ? JSON.parse(e.detail) : e.detail).superseded),
    [0, 1],
    'the audit event counts the superseded token',
  );
  const followed = await follow(first.link);
  t.equal(new URL(followed.headers.location as string).searchParams.get('error'), 'INVALID_TOKEN');
  const old = await resetPassword(first.token, 'new-password-1');
  t.equal(old.statusCode, 400);
  t.equal(old.json().error, 'INVALID_TOKEN');
  t.equal((await resetPassword(second.token, 'new-password-2')).statusCode, 200, 'the newest link works');
  t.equal((await signIn(user.email, 'new-password-2')).statusCode, 200);
});

t.test('simultaneous requests for one account leave a single live link', async (t) => {
  // "A new request invalidates the previous token of that user" must hold when requests overlap too.
  const user = await newUser();
  const results = await Promise.all(Array.from({ length: 5 }, () => requestReset(user.email)));
  t.same(
    results.map((r) => r.statusCode),
    [200, 200, 200, 200, 200],
  );
  await settle();
  const rows = await resetRows(user.id);
  t.equal(rows.length, 5, 'five tokens were issued');
  const live = rows.filter((r) => !r.used_at && !r.revoked_at);
  t.equal(live.length, 1, `exactly one live token (found ${live.length})`);
  let working = 0;
  for (const mail of resetMails(user.email)) {
    const token = tokenOf(linkIn(mail));
    secrets.push(token);
    const res = await app.inject({ method: 'GET', url: `/api/auth/reset-password/${token}` });
    if (new URL(res.headers.location as string).searchParams.get('token')) working += 1;
  }
  t.equal(working, 1, 'exactly one mailed link works');
});

t.test('a reset invalidates every other outstanding link of the user', async (t) => {
  const user = await newUser();
  // A second live row of the user (as a concurrent request could leave behind) must not survive a reset.
  const stray = 'stray-token-0123456789abcdefghijklmnopqrstu';
  const { token } = await requestToken(user.email);
  await db
    .insertInto('password_reset_tokens')
    .values({
      token_hash: hashToken(stray),
      user_id: user.id,
      redirect_to: spaTarget,
      expires_at: new Date(Date.now() + 600_000),
    })
    .execute();
  t.equal((await resetPassword(token, 'new-password-1')).statusCode, 200);
  const res = await resetPassword(stray, 'new-password-2');
  t.equal(res.json().error, 'INVALID_TOKEN', 'the other link no longer works');
  const live = (await resetRows(user.id)).filter((r) => !r.used_at && !r.revoked_at);
  t.same(live, [], 'no live token is left');
});

t.test('GET with an invalid token: error redirect to the trusted redirectTo, else to the hosted page', async (t) => {
  const cases: Array<[string, string | undefined, string]> = [
    [
      'trusted redirectTo',
      'https://account.example/reset?a=1',
      'https://account.example/reset?a=1&error=INVALID_TOKEN',
    ],
    ['trusted relative redirectTo', '/login/reset-password', `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`],
    ['untrusted redirectTo', 'https://evil.example/reset', `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`],
    ['javascript: redirectTo', 'javascript:alert(1)', `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`],
    ['no redirectTo', undefined, `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`],
  ];
  for (const tokenValue of ['AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'short', 'x'.repeat(200)]) {
    for (const [what, redirectTo, expected] of cases) {
      const res = await app.inject({
        method: 'GET',
        url:
          `/api/auth/reset-password/${tokenValue}` +
          `${redirectTo === undefined ? '' : `?redirectTo=${encodeURIComponent(redirectTo)}`}`,
      });
      t.equal(res.statusCode, 302, what);
      t.equal(res.headers.location, expected, `${what} (${tokenValue.length} characters)`);
    }
  }
});

t.test('GET with a mangled link (overlong token or redirectTo) still redirects with error=INVALID_TOKEN', async (t) => {
  // Spec: an invalid token redirects with error=INVALID_TOKEN; a browser must never land on a JSON error.
  const longToken = await app.inject({
    method: 'GET',
    url: `/api/auth/reset-password/${'a'.repeat(300)}?redirectTo=${encodeURIComponent(spaTarget)}`,
  });
  t.equal(longToken.statusCode, 302, 'an overlong token is just an invalid token');
  t.equal(longToken.headers.location, `${spaTarget}&error=INVALID_TOKEN`);
  const longTarget = await app.inject({
    method: 'GET',
    url: `/api/auth/reset-password/abc?redirectTo=${encodeURIComponent(`https://account.example/${'a'.repeat(3000)}`)}`,
  });
  t.equal(longTarget.statusCode, 302, 'an overlong redirectTo is just an unusable one');
  t.equal(longTarget.headers.location, `${LOGIN_URL}/reset-password?error=INVALID_TOKEN`);
});

t.test('an accepted long redirectTo never yields a dead link in the mail', async (t) => {
  // A relative redirectTo just under the request limit becomes longer once made absolute; the mailed
  // link must still work (or the request must be refused), never a dead link in the mail.
  const user = await newUser();
  const relative = `/login/${'a'.repeat(2030)}`;
  const res = await requestReset(user.email, relative);
  if (res.statusCode === 200) {
    await settle();
    const link = linkIn(resetMails(user.email)[0]!);
    secrets.push(tokenOf(link));
    const followed = await follow(link);
    t.equal(followed.statusCode, 302, 'the mailed link of an accepted long target works');
    t.ok(
      followed.headers.location && new URL(followed.headers.location as string).searchParams.get('token'),
      'and carries the token',
    );
  } else {
    t.equal(res.json().error, 'INVALID_REDIRECT', 'or the target is refused up front');
  }
});

t.test('GET with a valid token ignores a redirectTo changed in the link', async (t) => {
  const user = await newUser();
  const { token } = await requestToken(user.email);
  const res = await app.inject({
    method: 'GET',
    url: `/api/auth/reset-password/${token}?redirectTo=${encodeURIComponent('https://app.example/other')}`,
  });
  t.equal(res.statusCode, 302);
  const location = new URL(res.headers.location as string);
  t.equal(
    location.origin + location.pathname,
    'https://account.example/account/reset',
    'the target checked at request time is used',
  );
  t.equal(location.searchParams.get('token'), token);
  const evil = await app.inject({
    method: 'GET',
    url: `/api/auth/reset-password/${token}?redirectTo=${encodeURIComponent('https://evil.example/')}`,
  });
  t.equal(new URL(evil.headers.location as string).origin, 'https://account.example', 'never an untrusted target');
  t.equal(
    (await resetPassword(token, 'new-password-1')).statusCode,
    200,
    'following the link does not consume the token',
  );
});

t.test('only the hash of the token is stored', async (t) => {
  const user = await newUser();
  const { token } = await requestToken(user.email);
  const rows = await resetRows(user.id);
  t.equal(rows.length, 1);
  t.equal(rows[0]!.token_hash, hashToken(token), 'the SHA-256 of the token');
  t.not(rows[0]!.token_hash, token);
  t.notMatch(JSON.stringify(rows), token, 'the token appears nowhere in the row');
  const anywhere = await db.selectFrom('password_reset_tokens').selectAll().where('token_hash', '=', token).execute();
  t.same(anywhere, []);
  const audit = await listAuditEvents(db, { userId: user.id });
  t.notMatch(JSON.stringify(audit), token, 'nor in the audit trail');
});

t.test('two simultaneous resets with the same token: exactly one succeeds', async (t) => {
  const user = await newUser();
  const { token } = await requestToken(user.email);
  const changedBefore = changedMails(user.email).length;
  const [a, b] = await Promise.all([
    resetPassword(token, 'parallel-password-a'),
    resetPassword(token, 'parallel-password-b'),
  ]);
  const statuses = [a.statusCode, b.statusCode].sort();
  t.same(statuses, [200, 400], 'one 200, one 400');
  const loser = a.statusCode === 200 ? b : a;
  t.equal(loser.json().error, 'INVALID_TOKEN');
  const winner = a.statusCode === 200 ? 'parallel-password-a' : 'parallel-password-b';
  const other = a.statusCode === 200 ? 'parallel-password-b' : 'parallel-password-a';
  t.equal((await signIn(user.email, winner)).statusCode, 200, 'the winning password is set');
  t.equal((await signIn(user.email, other)).statusCode, 401, 'the losing one is not');
  t.equal((await listAuditEvents(db, { type: 'password_reset.completed', userId: user.id })).length, 1);
  await settle();
  t.equal(changedMails(user.email).length, changedBefore + 1, 'one notification');
});

t.test('a reset revokes sessions, access tokens and refresh tokens, and signs nobody in', async (t) => {
  const user = await newUser();
  const flow = {
    clientId: client.clientId,
    redirectUri,
    email: user.email,
    password: user.password,
    scope: 'openid offline_access',
  };
  const { tokens, jar } = await obtainTokens(app, flow);
  t.ok(jar[app.sessionCookieName], 'a session cookie from the flow');
  t.ok(tokens.refresh_token, 'a refresh token (offline_access)');
  // A refresh gives an offline access token that sign-out alone would not end.
  const refreshed = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refreshed.statusCode, 200);
  const offline = refreshed.json() as { access_token: string; refresh_token: string };
  const second = await signInWithInject(app, user.email, user.password);
  t.equal(second.res.statusCode, 303, 'a second session elsewhere');

  const me = (token: string) =>
    app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
  const home = (cookies: Record<string, string>) => app.inject({ method: 'GET', url: '/login/', cookies });
  // Everything works before the reset.
  t.equal((await home(jar)).statusCode, 200);
  t.equal((await home(second.jar)).statusCode, 200);
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 200);
  t.equal((await userinfo(app, offline.access_token)).statusCode, 200);
  t.equal((await me(tokens.access_token)).statusCode, 200);
  t.equal((await me(offline.access_token)).statusCode, 200);

  const { token } = await requestToken(user.email);
  const done = await resetPassword(token, 'fresh-password-1');
  t.equal(done.statusCode, 200);
  t.notOk(cookiesOf(done)[app.sessionCookieName], 'no session cookie is set by the reset');

  for (const [what, cookies] of [
    ['flow session', jar],
    ['second session', second.jar],
  ] as const) {
    const res = await home(cookies);
    t.equal(res.statusCode, 303, `${what}: signed out`);
    t.equal(res.headers.location, '/login/sign-in');
  }
  const authorize = await app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    })}`,
    cookies: jar,
  });
  t.match(
    authorize.headers.location,
    /\/login\/sign-in\?request=/,
    'authorize with the old session cookie asks to sign in again',
  );

  for (const [what, at] of [
    ['session-bound', tokens.access_token],
    ['offline', offline.access_token],
  ] as const) {
    t.equal((await userinfo(app, at)).statusCode, 401, `${what} access token: userinfo 401`);
    t.equal((await me(at)).statusCode, 401, `${what} access token: /api/external/me 401`);
  }
  for (const rt of [offline.refresh_token, tokens.refresh_token!]) {
    const res = await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: rt, client_id: client.clientId });
    t.equal(res.statusCode, 400);
    t.equal(res.json().error, 'invalid_grant', 'the refresh token is revoked');
  }
  const revokedSessions = (await listAuditEvents(db, { type: 'session.revoked', userId: user.id })).filter(
    (e) => (typeof e.detail === 'string' ? JSON.parse(e.detail) : e.detail).reason === 'password_reset',
  );
  t.equal(revokedSessions.length, 2, 'both sessions recorded as revoked by the reset');
  t.equal(
    (await signIn(user.email, 'fresh-password-1')).statusCode,
    200,
    'signing in again with the new password works',
  );
});

t.test('password length rules', async (t) => {
  const user = await newUser();
  const { token } = await requestToken(user.email);
  const short = await resetPassword(token, 'x'.repeat(7));
  t.equal(short.statusCode, 400);
  t.equal(short.json().error, 'PASSWORD_TOO_SHORT');
  t.type(short.json().message, 'string');
  const long = await resetPassword(token, 'x'.repeat(129));
  t.equal(long.statusCode, 400);
  t.equal(long.json().error, 'PASSWORD_TOO_LONG');
  t.equal((await signIn(user.email, user.password)).statusCode, 200, 'nothing changed');
  const max = 'y'.repeat(128);
  t.equal(
    (await resetPassword(token, max)).statusCode,
    200,
    '128 characters are fine, and the refused attempts did not use the token',
  );
  t.equal((await signIn(user.email, max)).statusCode, 200);

  const { token: token2 } = await requestToken(user.email);
  t.equal((await resetPassword(token2, 'z'.repeat(8))).statusCode, 200, '8 characters are fine');
  t.equal((await signIn(user.email, 'z'.repeat(8))).statusCode, 200);
});

t.test('common passwords are refused (PASSWORD_TOO_COMMON), by JSON and on the hosted page', async (t) => {
  const user = await newUser();
  const { token } = await requestToken(user.email);
  // The list's convention: lower case; the check trims and ignores case.
  for (const common of ['password123', '  Password123 ', 'ILOVEYOU', 'qwertyuiop']) {
    const res = await resetPassword(token, common);
    t.equal(res.statusCode, 400, JSON.stringify(common));
    t.equal(res.json().error, 'PASSWORD_TOO_COMMON');
    t.match(res.json().message, /most common/);
    t.same(res.json().details, [{ field: 'newPassword', message: res.json().message }]);
  }
  t.equal((await signIn(user.email, 'password123')).statusCode, 401, 'the common password was not set');

  // The hosted page: the message next to the new password field, the link still usable.
  const reset = await formPage(`/login/reset-password?token=${encodeURIComponent(token)}`);
  t.equal(reset.res.statusCode, 200);
  const refused = await postForm(
    '/login/reset-password',
    { csrf: reset.csrf, token, newPassword: 'sunshine', confirmPassword: 'sunshine' },
    reset.jar,
  );
  t.equal(refused.statusCode, 400);
  t.match(refused.body, /id="field-newPassword"[^>]*aria-invalid="true" aria-describedby="field-newPassword-error"/);
  t.match(refused.body, /id="field-newPassword-error">This password is one of the most common ones/);
  t.equal((await signIn(user.email, user.password)).statusCode, 200, 'nothing changed');

  t.equal((await resetPassword(token, 'sunshine on a quiet harbour')).statusCode, 200, 'a good password is fine');
  t.equal((await signIn(user.email, 'sunshine on a quiet harbour')).statusCode, 200);
});

t.test('hosted pages: forgot password → mail → reset page → new password', async (t) => {
  const signInPage = await app.inject({ method: 'GET', url: '/login/sign-in' });
  t.match(
    signInPage.body,
    /<a href="\/login\/forgot-password">Forgot your password\?<\/a>/,
    'the sign-in page links to the forgot-password page',
  );

  const user = await newUser();
  const forgot = await formPage('/login/forgot-password');
  t.equal(forgot.res.statusCode, 200);
  t.match(forgot.res.body, /<label for="field-email">/);

  const noCsrf = await postForm('/login/forgot-password', { email: user.email }, forgot.jar);
  t.equal(noCsrf.statusCode, 403, 'the form needs its CSRF token');
  const invalid = await postForm('/login/forgot-password', { csrf: forgot.csrf, email: 'not an address' }, forgot.jar);
  t.equal(invalid.statusCode, 400);
  t.match(invalid.body, /aria-invalid="true"/);
  await settle();
  t.same(mailsTo(user.email), [], 'refused forms send nothing');

  const sent = await postForm('/login/forgot-password', { csrf: forgot.csrf, email: user.email }, forgot.jar);
  t.equal(sent.statusCode, 200);
  t.match(sent.body, 'If this e-mail address has an account, we sent it a link to choose a new password.');
  const ghost = await postForm(
    '/login/forgot-password',
    { csrf: forgot.csrf, email: 'ghost-page@unknown.example' },
    forgot.jar,
  );
  t.equal(ghost.statusCode, 200);
  t.equal(
    ghost.body.replace(/name="csrf" value="[^"]*"/, ''),
    sent.body.replace(/name="csrf" value="[^"]*"/, ''),
    'the same page for an unknown address',
  );
  await settle();
  t.same(mailsTo('ghost-page@unknown.example'), []);

  const mail = resetMails(user.email)[0]!;
  t.ok(mail, 'the reset mail arrived');
  const link = linkIn(mail);
  const token = tokenOf(link);
  secrets.push(token);
  t.equal(
    new URL(link).searchParams.get('redirectTo'),
    `${LOGIN_URL}/reset-password`,
    'hosted requests lead to the hosted reset page',
  );
  const followed = await follow(link);
  t.equal(followed.statusCode, 302);
  const location = new URL(followed.headers.location as string);
  t.equal(location.origin + location.pathname, `${LOGIN_URL}/reset-password`);

  const reset = await formPage(location.pathname + location.search);
  t.equal(reset.res.statusCode, 200, 'the reset page shows the form');
  t.equal(hiddenField(reset.res.body, 'token'), token);
  t.match(reset.res.body, /name="newPassword" type="password"/);
  t.match(reset.res.body, /name="confirmPassword" type="password"/);
  t.match(reset.res.headers['content-security-policy'], /frame-ancestors 'none'/);

  const mismatch = await postForm(
    '/login/reset-password',
    { csrf: reset.csrf, token, newPassword: 'page-password-1', confirmPassword: 'page-password-2' },
    reset.jar,
  );
  t.equal(mismatch.statusCode, 400);
  t.match(
    mismatch.body,
    /id="field-confirmPassword"[^>]*aria-invalid="true" aria-describedby="field-confirmPassword-error"/,
  );
  t.match(mismatch.body, /id="field-confirmPassword-error">The two passwords are not the same/);
  const tooShort = await postForm(
    '/login/reset-password',
    { csrf: reset.csrf, token, newPassword: 'short', confirmPassword: 'short' },
    reset.jar,
  );
  t.equal(tooShort.statusCode, 400);
  t.match(tooShort.body, /id="field-newPassword-error">Use at least 8 characters/);
  const badCsrf = await postForm(
    '/login/reset-password',
    { csrf: 'x'.repeat(43), token, newPassword: 'page-password-1', confirmPassword: 'page-password-1' },
    reset.jar,
  );
  t.equal(badCsrf.statusCode, 403);
  t.equal((await signIn(user.email, user.password)).statusCode, 200, 'nothing changed so far');

  secrets.push('page-password-1');
  const ok = await postForm(
    '/login/reset-password',
    { csrf: reset.csrf, token, newPassword: 'page-password-1', confirmPassword: 'page-password-1' },
    reset.jar,
  );
  t.equal(ok.statusCode, 200);
  t.match(ok.body, 'Password changed');
  t.match(ok.body, 'href="/login/sign-in"');
  t.notOk(cookiesOf(ok)[app.sessionCookieName], 'the page does not sign the user in');
  t.equal((await signIn(user.email, 'page-password-1')).statusCode, 200);

  const used = await app.inject({ method: 'GET', url: `/login/reset-password?token=${encodeURIComponent(token)}` });
  t.equal(used.statusCode, 400, 'the used link shows the invalid-link page');
  t.match(used.body, 'This link does not work');
  t.match(used.body, 'href="/login/forgot-password"');
  const again = await postForm(
    '/login/reset-password',
    { csrf: reset.csrf, token, newPassword: 'page-password-3', confirmPassword: 'page-password-3' },
    reset.jar,
  );
  t.equal(again.statusCode, 400);
  t.match(again.body, 'This link does not work');

  for (const url of [
    '/login/reset-password?error=INVALID_TOKEN',
    '/login/reset-password',
    '/login/reset-password?token=bogus',
  ]) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 400, url);
    t.match(res.body, 'This link does not work', url);
  }
});

t.test('the log never carries a reset token or a new password', async (t) => {
  t.ok(secrets.length > 10, `${secrets.length} secrets seen`);
  const text = logs.text();
  t.ok(text.length > 0);
  t.match(text, /reset-password\/\[REDACTED\]/, 'the link path was logged, masked');
  for (const secret of secrets) t.notOk(text.includes(secret), `${secret.slice(0, 6)}… is not in the log`);
});

t.test(
  'GET with a very long or badly escaped token redirects with error=INVALID_TOKEN, never a router error (414/400)',
  async (t) => {
    for (const [what, token] of [
      ['600 characters', 'a'.repeat(600)],
      ['10,000 characters', 'a'.repeat(10_000)],
      ['a malformed escape', '%ZZ'],
      ['a truncated UTF-8 escape', `${'A'.repeat(40)}%E0%A4%A`],
    ] as const) {
      const res = await app.inject({
        method: 'GET',
        url: `/api/auth/reset-password/${token}?redirectTo=${encodeURIComponent(spaTarget)}`,
      });
      t.equal(res.statusCode, 302, what);
      t.equal(res.headers.location, `${spaTarget}&error=INVALID_TOKEN`, what);
      t.notMatch(res.body, /FST_|statusCode/, `${what}: no Fastify body`);
    }
  },
);
