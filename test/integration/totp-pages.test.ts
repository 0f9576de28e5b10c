// The authenticator app (TOTP) and recovery codes through the pages (issue 34), with app.inject, cookies and
// a fixed clock: enrolment on the sign-in methods page (a recent authentication first; the QR code inline;
// recovery codes shown once), then sign-ins that wait for the second factor (no session before it; another
// browser has nothing to continue; wrong codes counted and limited), a recovery code instead, and a password
// reset that does not skip the second factor. Every change ends the other sessions and mails the user.
import t from 'tap';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { Secret, TOTP } from 'otpauth';
import { buildTestApp } from '../helpers/app.js';
import { linkIn, startSmtp } from '../helpers/smtp.js';
import { cookiesOf, hiddenField } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const T0 = Date.UTC(2026, 10, 27, 9, 0, 0);
const STEP = 30_000;
let now = T0;
const { app, database } = await buildTestApp(t, { env: { SMTP_URL: smtp.url }, clock: () => now });
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'TOTP RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email'] },
  { actor: 'test' },
);
const PASSWORD = 'a good long password';
let users = 0;
async function newUser() {
  const email = `totp${++users}@example.com`;
  const user = await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, { actor: 'test' });
  return { email, id: user.id };
}

type Jar = Record<string, string>;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const METHODS = '/login/account/sign-in-methods';
const get = (url: string, jar: Jar = {}) => app.inject({ method: 'GET', url, cookies: jar });
const post = (url: string, form: Record<string, string>, jar: Jar, remoteAddress?: string) =>
  app.inject({
    method: 'POST',
    url,
    cookies: jar,
    payload: new URLSearchParams(form).toString(),
    headers: FORM,
    ...(remoteAddress && { remoteAddress }),
  });
const pathOf = (location: unknown) => {
  const u = new URL(String(location), 'http://localhost:3000');
  return u.pathname + u.search;
};

/** The code an authenticator app with this secret shows at `at`. */
const codeAt = (secret: string, at = now) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: at });
/** Moves the clock on a step: each sign-in below uses a code of a step not used before. */
const nextStep = () => {
  now += STEP;
  return now;
};

/** A browser's password sign-in on the hosted page (with a request, or none): its jar and the answer. */
async function passwordSignIn(email: string, o: { requestId?: string; jar?: Jar; password?: string } = {}) {
  const page = await get(`/login/sign-in${o.requestId ? `?request=${o.requestId}` : ''}`, o.jar ?? {});
  const jar = { ...(o.jar ?? {}), ...cookiesOf(page) };
  const csrf = hiddenField(page.body, 'csrf');
  const form = { csrf, email, password: o.password ?? PASSWORD, ...(o.requestId && { request: o.requestId }) };
  const res = await post('/login/sign-in', form, jar);
  return { res, jar: { ...jar, ...cookiesOf(res) }, csrf };
}

/** A signed-in browser without a second factor. */
async function signedIn(email: string) {
  const { res, jar, csrf } = await passwordSignIn(email);
  if (res.statusCode !== 303 || !jar['idp.session']) throw new Error(`sign-in failed: ${res.statusCode}`);
  return { jar, csrf };
}

/** Sets up the authenticator app on the page: the secret (base32) and the recovery codes shown. */
async function enrol(browser: { jar: Jar; csrf: string }) {
  const started = await post(`${METHODS}/totp/start`, { csrf: browser.csrf }, browser.jar);
  if (started.statusCode !== 200) throw new Error(`start: ${started.statusCode} ${started.body.slice(0, 300)}`);
  const secret = /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(started.body)![1]!.replace(/ /g, '');
  const confirmed = await post(`${METHODS}/totp/confirm`, { csrf: browser.csrf, code: codeAt(secret) }, browser.jar);
  const codes = [...confirmed.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]!);
  return { secret, started, confirmed, codes };
}

/** Starts an authorization request in a fresh browser: its id and jar (the request binding). */
async function authorize() {
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid email',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
    state: 'st',
  });
  const res = await get(`/api/auth/oauth2/authorize?${query}`);
  const requestId = new URL(String(res.headers.location), 'http://x').searchParams.get('request');
  if (!requestId) throw new Error(`authorize: ${res.statusCode} ${res.headers.location}`);
  return { requestId, jar: cookiesOf(res) };
}

/** Follows a location (the request's continue address) through consent to the client's redirect. */
async function followToClient(location: string, jar: Jar): Promise<URL> {
  let res: LightMyRequestResponse | undefined;
  let at = location;
  for (let hop = 0; hop < 6; hop++) {
    if (at.startsWith(redirectUri)) return new URL(at);
    const path = pathOf(at);
    if (path.startsWith('/login/consent')) {
      const page = await get(path, jar);
      jar = { ...jar, ...cookiesOf(page) };
      const requestId = new URL(at, 'http://x').searchParams.get('request')!;
      const form = { csrf: hiddenField(page.body, 'csrf'), request: requestId, decision: 'allow' };
      res = await post('/login/consent', form, jar);
    } else {
      res = await get(path, jar);
    }
    jar = { ...jar, ...cookiesOf(res) };
    at = String(res.headers.location ?? '');
    if (!at) throw new Error(`stopped at ${res.statusCode}: ${res.body.slice(0, 200)}`);
  }
  throw new Error('too many hops');
}

const sessionsOf = (userId: string) =>
  app.db
    .selectFrom('sessions')
    .select(['id', 'amr'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
const mailsTo = (to: string, subject: string) => smtp.mails.filter((m) => m.to === to && m.subject === subject);
const CHANGED = 'The sign-in methods of your account changed';
async function settle() {
  await app.services.mailer.drain();
}
/** The mails of this subject to this address, once `count` of them reached the SMTP server. */
async function mailsArrive(to: string, subject: string, count = 1) {
  for (let i = 0; i < 200; i++) {
    await settle();
    const found = mailsTo(to, subject);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`fewer than ${count} mails "${subject}" for ${to}`);
}
const mailArrives = async (to: string, subject: string) => (await mailsArrive(to, subject))[0]!;

t.test('changing a factor needs a recent authentication; a stale session is sent to sign in and back', async (t) => {
  const { email, id } = await newUser();
  const browser = await signedIn(email);
  await database.db
    .updateTable('sessions')
    .set({ auth_time: new Date(Date.now() - 3600_000) })
    .where('user_id', '=', id)
    .execute();
  const page = await get(METHODS, browser.jar);
  t.match(page.body, 'You will be asked to sign in again before a change.');
  for (const path of ['/totp/start', '/totp/confirm', '/totp/remove', '/recovery-codes/generate']) {
    const res = await post(`${METHODS}${path}`, { csrf: browser.csrf, code: '123456' }, browser.jar);
    t.equal(res.statusCode, 303, path);
    t.equal(
      res.headers.location,
      `/login/sign-in?return_to=${encodeURIComponent(METHODS)}`,
      `${path}: to sign in, and back to the page`,
    );
  }
  const kept = await post(`${METHODS}/totp/start`, { csrf: browser.csrf, return_to: '/login/account' }, browser.jar);
  t.equal(
    kept.headers.location,
    `/login/sign-in?return_to=${encodeURIComponent(`${METHODS}?return_to=${encodeURIComponent('/login/account')}`)}`,
    'return_to is kept through the sign-in',
  );
  t.equal((await app.services.totp.status(id)).pending, false, 'nothing was started');

  // Without the CSRF token, or signed out: nothing either.
  const forged = await post(`${METHODS}/totp/start`, {}, browser.jar);
  t.equal(forged.statusCode, 403, 'no CSRF token: refused');
  const signedOut = await post(
    `${METHODS}/totp/start`,
    { csrf: browser.csrf },
    { 'idp.csrf': browser.jar['idp.csrf']! },
  );
  t.equal(signedOut.statusCode, 303);
  t.match(signedOut.headers.location, /^\/login\/sign-in\?return_to=/);
});

t.test('enrolment on the page: QR code, key, first code; recovery codes once; others signed out', async (t) => {
  const { email, id } = await newUser();
  const elsewhere = await signedIn(email);
  const browser = await signedIn(email);
  const before = await get(METHODS, browser.jar);
  t.equal(before.statusCode, 200);
  t.match(before.body, `<form method="post" action="${METHODS}/totp/start">`);
  t.notMatch(before.body, 'recovery-codes-heading', 'no recovery codes without a second factor');

  const started = await post(`${METHODS}/totp/start`, { csrf: browser.csrf }, browser.jar);
  t.equal(started.statusCode, 200);
  t.equal(started.headers['cache-control'], 'no-store');
  t.notMatch(String(started.headers['content-security-policy']), /unsafe-inline/);
  const body = started.body;
  t.match(
    body,
    /<div class="qr" role="img" aria-label="[^"]+"><svg xmlns="http:\/\/www.w3.org\/2000\/svg"/,
    'inline QR',
  );
  // The page's passkey section loads scripts of this origin (issue 34); nothing inline, no external image.
  t.notMatch(body, /<script(?![^>]*\ssrc="\/login\/assets\/)|<img/i, 'no inline script, no external image');
  const secret = /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(body)![1]!.replace(/ /g, '');
  t.equal(secret.length, 32, '160 bits in base32');
  t.match(body, /<a href="otpauth:\/\/totp\/localhost:totp\d+%40example\.com\?issuer=localhost&amp;secret=/);
  t.match(body, '<label for="totp-confirm-code">Code from the app</label>');
  t.match(body, /<input id="totp-confirm-code" name="code" type="text" autocomplete="one-time-code" required/);
  const row = await database.db.selectFrom('totp_factors').selectAll().where('user_id', '=', id).executeTakeFirst();
  t.ok(row && !row.secret.includes(secret), 'the secret is not stored in clear');
  t.equal(row?.confirmed_at, null, 'not yet confirmed');
  t.equal((await sessionsOf(id)).length, 2, 'starting changes no session');

  // A wrong code: 400, the same QR code and key again, the error next to the field.
  const wrong = await post(`${METHODS}/totp/confirm`, { csrf: browser.csrf, code: '000000' }, browser.jar);
  t.equal(wrong.statusCode, 400);
  t.match(wrong.body, `<code id="totp-secret">`);
  t.match(wrong.body, secret.slice(0, 4), 'the same key');
  t.match(wrong.body, /aria-invalid="true" aria-describedby="totp-confirm-code-hint totp-confirm-code-error"/);
  t.match(wrong.body, '<p class="error" id="totp-confirm-code-error">That code is not correct</p>');
  const empty = await post(`${METHODS}/totp/confirm`, { csrf: browser.csrf, code: ' ' }, browser.jar);
  t.equal(empty.statusCode, 400);
  t.match(empty.body, 'Enter the 6-digit code the app shows');

  const confirmed = await post(`${METHODS}/totp/confirm`, { csrf: browser.csrf, code: codeAt(secret) }, browser.jar);
  t.equal(confirmed.statusCode, 200, 'the recovery codes are shown on the answer itself');
  t.equal(confirmed.headers['cache-control'], 'no-store');
  t.match(confirmed.body, 'Your authenticator app is set up. Your other sessions were signed out.');
  const codes = [...confirmed.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]);
  t.equal(codes.length, 10, 'ten recovery codes');
  t.match(confirmed.body, 'they are shown only this once');

  // The other browser is signed out; this one stays. The user is mailed.
  t.equal((await get(METHODS, elsewhere.jar)).statusCode, 303, 'the other session ended');
  const after = await get(METHODS, browser.jar);
  t.equal(after.statusCode, 200);
  t.match(after.body, '<span class="badge">On</span>');
  t.match(after.body, `<form method="post" action="${METHODS}/totp/remove">`);
  t.match(after.body, '<dt>Unused codes</dt><dd>10 of 10</dd>');
  t.notMatch(after.body, codes[0]!, 'the codes are never shown again');
  t.equal((await mailsArrive(email, CHANGED)).length, 1, 'one mail');
  t.match(mailsTo(email, CHANGED)[0]!.text, 'an authenticator app was set up, and ten recovery codes were made');

  // A confirmed app is not replaced by starting again.
  const again = await post(`${METHODS}/totp/start`, { csrf: browser.csrf }, browser.jar);
  t.equal(again.statusCode, 409);
  t.match(again.body, 'An authenticator app is already set up: remove it first');

  // New recovery codes: shown once, the old ones dead, the other sessions signed out again, a mail.
  const third = await signedIn(email).catch(() => undefined);
  t.equal(third, undefined, 'a password alone no longer signs in');
  const made = await post(`${METHODS}/recovery-codes/generate`, { csrf: browser.csrf }, browser.jar);
  t.equal(made.statusCode, 200);
  t.match(made.body, 'New recovery codes are made and the old ones no longer work.');
  const fresh = [...made.body.matchAll(/<li><code>([a-z2-7]{5}-[a-z2-7]{5})<\/code><\/li>/g)].map((m) => m[1]);
  t.equal(fresh.length, 10);
  t.equal(await app.services.recoveryCodes.use(id, codes[0]!, { ip: null }), undefined, 'an old code is dead');
  t.match((await mailsArrive(email, CHANGED, 2))[1]?.text ?? '', 'a new set of ten recovery codes was made');

  // Removal: ends other sessions, mails, and the password alone signs in again.
  const removed = await post(`${METHODS}/totp/remove`, { csrf: browser.csrf }, browser.jar);
  t.equal(removed.statusCode, 303);
  t.equal(removed.headers.location, `/login/account/sign-in-methods?m=totp-removed`);
  t.equal((await app.services.totp.status(id)).enabled, false);
  t.match((await mailsArrive(email, CHANGED, 3))[2]?.text ?? '', 'the authenticator app was removed');
  const types = (await listAuditEvents(database.db, { userId: id })).map((e) => e.type);
  for (const type of ['mfa.totp_enabled', 'mfa.recovery_codes_generated', 'mfa.totp_removed']) {
    t.ok(types.includes(type), `${type} audited`);
  }
  const removedAgain = await post(`${METHODS}/totp/remove`, { csrf: browser.csrf }, browser.jar);
  t.equal(removedAgain.statusCode, 404);
  t.match(removedAgain.body, 'No authenticator app is set up');

  // A setup can be cancelled; set up again with recovery codes still unused, the answer is a plain redirect.
  await post(`${METHODS}/totp/start`, { csrf: browser.csrf }, browser.jar);
  const cancelled = await post(`${METHODS}/totp/remove`, { csrf: browser.csrf }, browser.jar);
  t.equal(cancelled.headers.location, `${METHODS}?m=totp-cancelled`);
  t.same(await app.services.totp.status(id), { enabled: false, pending: false });
  const restarted = await post(`${METHODS}/totp/start`, { csrf: browser.csrf }, browser.jar);
  const secondSecret = /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(restarted.body)![1]!.replace(/ /g, '');
  const reconfirmed = await post(
    `${METHODS}/totp/confirm`,
    { csrf: browser.csrf, code: codeAt(secondSecret, nextStep()) },
    browser.jar,
  );
  t.equal(reconfirmed.statusCode, 303, 'no new codes to show');
  t.equal(reconfirmed.headers.location, `${METHODS}?m=totp-enabled`);
});

t.test(
  'a sign-in waits for the code: no session before it, then amr pwd otp mfa and the request goes on',
  async (t) => {
    const { email, id } = await newUser();
    const owner = await signedIn(email);
    const { secret } = await enrol(owner);

    nextStep();
    const { requestId, jar: start } = await authorize();
    const signIn = await passwordSignIn(email, { requestId, jar: start });
    t.equal(signIn.res.statusCode, 303);
    t.equal(signIn.res.headers.location, `/login/second-factor?request=${requestId}`);
    t.notOk(cookiesOf(signIn.res)['idp.session'], 'no session cookie yet');
    t.ok(signIn.jar['idp.mfa'], 'the pending sign-in cookie');
    t.equal((await sessionsOf(id)).length, 1, 'no new session (only the owner browser)');

    const page = await get(`/login/second-factor?request=${requestId}`, signIn.jar);
    t.equal(page.statusCode, 200);
    t.match(page.body, '<form method="post" action="/login/second-factor/totp" novalidate>');
    t.match(page.body, '<label for="totp-code">The 6-digit code your authenticator app shows</label>');
    t.match(
      page.body,
      /<input id="totp-code" name="code" type="text" autocomplete="one-time-code" inputmode="numeric"/,
    );
    t.match(page.body, '<summary>Lost your second factor? Use a recovery code</summary>');
    const csrf = hiddenField(page.body, 'csrf');
    const jar = { ...signIn.jar, ...cookiesOf(page) };
    const form = (code: string) => ({ csrf, request: requestId, code });

    // Another browser, with its own CSRF token but without this browser's idp.mfa cookie: nothing.
    const other = await get('/login/sign-in');
    const otherJar = cookiesOf(other);
    const stolen = await post(
      '/login/second-factor/totp',
      { csrf: hiddenField(other.body, 'csrf'), request: requestId, code: codeAt(secret) },
      otherJar,
    );
    t.equal(stolen.statusCode, 303);
    t.equal(stolen.headers.location, `/login/sign-in?request=${requestId}`, 'sent to sign in');
    t.notOk(cookiesOf(stolen)['idp.session'], 'no session for the other browser');

    const forged = await post('/login/second-factor/totp', { request: requestId, code: codeAt(secret) }, jar);
    t.equal(forged.statusCode, 403, 'no CSRF token: refused');
    const wrong = await post('/login/second-factor/totp', form('000000'), jar);
    t.equal(wrong.statusCode, 401);
    t.match(wrong.body, '<p class="alert" role="alert">That code is not correct</p>');
    t.match(wrong.body, 'action="/login/second-factor/totp"', 'the page again');

    const right = await post('/login/second-factor/totp', form(codeAt(secret)), jar);
    t.equal(right.statusCode, 303);
    t.equal(right.headers.location, `http://localhost:3000/api/auth/oauth2/authorize/continue?request=${requestId}`);
    const session = cookiesOf(right)['idp.session'];
    t.ok(session, 'the session cookie now');
    const live = await sessionsOf(id);
    t.equal(live.length, 2);
    t.ok(
      live.some((s) => JSON.stringify(s.amr) === JSON.stringify(['pwd', 'otp', 'mfa'])),
      'the new session says pwd, otp, mfa',
    );
    const to = await followToClient(String(right.headers.location), { ...jar, ...cookiesOf(right) });
    t.ok(to.searchParams.get('code'), 'the authorization request ends with a code');
    t.equal(to.searchParams.get('state'), 'st');

    // The same code again (a replay, in yet another sign-in) is refused.
    const second = await passwordSignIn(email);
    const page2 = await get('/login/second-factor', second.jar);
    const replay = await post(
      '/login/second-factor/totp',
      { csrf: hiddenField(page2.body, 'csrf'), code: codeAt(secret) },
      { ...second.jar, ...cookiesOf(page2) },
    );
    t.equal(replay.statusCode, 401, 'a used code is refused');
    const later = await post(
      '/login/second-factor/totp',
      { csrf: hiddenField(page2.body, 'csrf'), code: codeAt(secret, nextStep()) },
      { ...second.jar, ...cookiesOf(page2) },
    );
    t.equal(later.statusCode, 303, 'the next step code works');
    t.equal(later.headers.location, '/login/', 'no request: the signed-in page');
  },
);

t.test('a recovery code signs in instead, once; the user is mailed how many are left', async (t) => {
  const { email, id } = await newUser();
  const owner = await signedIn(email);
  const { codes } = await enrol(owner);
  t.equal(codes.length, 10);

  const attempt = async (code: string) => {
    const signIn = await passwordSignIn(email);
    const page = await get('/login/second-factor', signIn.jar);
    const jar = { ...signIn.jar, ...cookiesOf(page) };
    return post('/login/second-factor/recovery-code', { csrf: hiddenField(page.body, 'csrf'), code }, jar);
  };
  const used = await attempt(codes[0]!.toUpperCase().replace('-', ' '));
  t.equal(used.statusCode, 303);
  t.ok(cookiesOf(used)['idp.session'], 'signed in');
  t.ok(
    (await sessionsOf(id)).some((s) => s.amr.includes('mfa')),
    'with a second factor',
  );
  t.equal((await get(METHODS, owner.jar)).statusCode, 200, 'the other sessions stay (a sign-in, not a change)');
  const notice = await mailsArrive(email, 'A recovery code was used to sign in to your account');
  t.equal(notice.length, 1, 'the user is told');
  t.match(notice[0]!.text, '9 recovery codes are left.');
  t.ok((await listAuditEvents(database.db, { userId: id, type: 'mfa.recovery_code_used' })).length === 1, 'audited');

  const again = await attempt(codes[0]!);
  t.equal(again.statusCode, 401, 'a used code is refused');
  t.match(again.body, 'That code is not correct');
  const other = await attempt(codes[1]!);
  t.equal(other.statusCode, 303, 'another code works');
});

t.test('five wrong codes end the pending sign-in; the browser signs in again', async (t) => {
  const { email } = await newUser();
  const owner = await signedIn(email);
  const { secret } = await enrol(owner);
  nextStep();
  const signIn = await passwordSignIn(email);
  const page = await get('/login/second-factor', signIn.jar);
  const csrf = hiddenField(page.body, 'csrf');
  const jar = { ...signIn.jar, ...cookiesOf(page) };
  for (let i = 1; i <= 4; i++) {
    const res = await post('/login/second-factor/totp', { csrf, code: '111111' }, jar);
    t.equal(res.statusCode, 401, `wrong code ${i}: the page again`);
    t.match(res.body, 'action="/login/second-factor/totp"');
  }
  const last = await post('/login/second-factor/recovery-code', { csrf, code: 'aaaaa-aaaaa' }, jar);
  t.equal(last.statusCode, 401);
  t.match(last.body, '<form method="post" action="/login/sign-in"', 'the sign-in page');
  t.match(last.body, 'Too many wrong codes. Sign in again with your password.');
  t.equal(last.cookies.find((c) => c.name === 'idp.mfa')?.value, '', 'the pending sign-in cookie is cleared');
  const late = await post('/login/second-factor/totp', { csrf, code: codeAt(secret) }, jar);
  t.equal(late.statusCode, 303, 'the right code, too late');
  t.equal(late.headers.location, '/login/sign-in');
  t.notOk(cookiesOf(late)['idp.session'], 'no session');
});

t.test('after a password reset, the new password still asks for the second factor', async (t) => {
  const { email, id } = await newUser();
  const owner = await signedIn(email);
  const { secret } = await enrol(owner);
  const forgot = await get('/login/forgot-password');
  const sent = await post(
    '/login/forgot-password',
    { csrf: hiddenField(forgot.body, 'csrf'), email },
    cookiesOf(forgot),
  );
  t.equal(sent.statusCode, 200);
  await app.services.recovery.drain();
  const mail = await mailArrives(email, 'Reset your password');
  // The mailed link leads (through the API) to the reset page with the token.
  const followed = await get(pathOf(linkIn(mail)));
  const target = new URL(String(followed.headers.location), 'http://localhost:3000');
  t.equal(target.pathname, '/login/reset-password');
  const token = target.searchParams.get('token')!;
  const resetPage = await get(pathOf(target.href));
  t.equal(resetPage.statusCode, 200);
  const newPassword = 'a brand new passphrase';
  const reset = await post(
    '/login/reset-password',
    { csrf: hiddenField(resetPage.body, 'csrf'), token, newPassword, confirmPassword: newPassword },
    cookiesOf(resetPage),
  );
  t.equal(reset.statusCode, 200);
  t.match(reset.body, 'Password changed');
  t.equal((await sessionsOf(id)).length, 0, 'every session ended');

  const signIn = await passwordSignIn(email, { password: newPassword });
  t.equal(signIn.res.statusCode, 303);
  t.equal(signIn.res.headers.location, '/login/second-factor', 'the second factor is still asked');
  t.notOk(cookiesOf(signIn.res)['idp.session'], 'no session from the password alone');
  const page = await get('/login/second-factor', signIn.jar);
  const done = await post(
    '/login/second-factor/totp',
    { csrf: hiddenField(page.body, 'csrf'), code: codeAt(secret, nextStep()) },
    { ...signIn.jar, ...cookiesOf(page) },
  );
  t.equal(done.statusCode, 303);
  t.ok(cookiesOf(done)['idp.session'], 'signed in with the second factor');
});

t.test('wrong codes count in the sign-in limits of the account (429 with Retry-After)', async (t) => {
  const limited = await buildTestApp(t, {
    database,
    clock: () => now,
    env: {
      RATE_LIMITS: 'on',
      RATE_LIMIT_SIGN_IN_EMAIL: '2/900',
      RATE_LIMIT_SIGN_IN_IP: '100/60',
      SIGN_IN_DELAY_FIRST: '60',
    },
  });
  const { email } = await newUser();
  const owner = await signedIn(email);
  const { secret } = await enrol(owner);
  nextStep();
  const ip = '198.51.100.34';
  const lget = (url: string, jar: Jar) => limited.app.inject({ method: 'GET', url, cookies: jar, remoteAddress: ip });
  const lpost = (url: string, form: Record<string, string>, jar: Jar) =>
    limited.app.inject({
      method: 'POST',
      url,
      cookies: jar,
      payload: new URLSearchParams(form).toString(),
      headers: FORM,
      remoteAddress: ip,
    });
  const signInPage = await lget('/login/sign-in', {});
  let jar = cookiesOf(signInPage);
  const csrf = hiddenField(signInPage.body, 'csrf');
  const signIn = await lpost('/login/sign-in', { csrf, email, password: PASSWORD }, jar);
  t.equal(signIn.headers.location, '/login/second-factor');
  jar = { ...jar, ...cookiesOf(signIn) };
  const statuses: number[] = [];
  let refused: LightMyRequestResponse | undefined;
  for (let i = 0; i < 4 && !refused; i++) {
    const res = await lpost('/login/second-factor/totp', { csrf, code: '222222' }, jar);
    statuses.push(res.statusCode);
    if (res.statusCode === 429) refused = res;
  }
  t.ok(refused, `a limit refuses before the pending sign-in's own end (${statuses.join(', ')})`);
  t.ok(Number(refused?.headers['retry-after']) > 0, 'with Retry-After');
  t.match(refused?.body ?? '', /Too many requests; try again in \d+ seconds?/);
  t.match(refused?.body ?? '', 'action="/login/second-factor/totp"', 'on the second-factor page');
  const right = await lpost('/login/second-factor/totp', { csrf, code: codeAt(secret) }, jar);
  t.equal(right.statusCode, 429, 'even the right code waits for the delay');
});

t.test('an enrolment during sign-in keeps return_to through the forms, so the page offers to continue', async (t) => {
  const { email } = await newUser();
  const browser = await signedIn(email);
  const returnTo = '/login/account/security';
  const page = await get(`${METHODS}?return_to=${encodeURIComponent(returnTo)}`, browser.jar);
  t.match(page.body, 'Set up a second factor to continue signing in.');
  t.match(page.body, `<input type="hidden" name="return_to" value="${returnTo}">`, 'the forms carry it');
  const started = await post(`${METHODS}/totp/start`, { csrf: browser.csrf, return_to: returnTo }, browser.jar);
  t.match(started.body, `<input type="hidden" name="return_to" value="${returnTo}">`, 'the confirm form too');
  const secret = /<code id="totp-secret">([A-Z2-7 ]+)<\/code>/.exec(started.body)![1]!.replace(/ /g, '');
  nextStep();
  const done = await post(
    `${METHODS}/totp/confirm`,
    { csrf: browser.csrf, return_to: returnTo, code: codeAt(secret) },
    browser.jar,
  );
  t.equal(done.statusCode, 200);
  t.match(done.body, `You have a second factor now. <a href="${returnTo}">Continue</a>`);
  const made = await post(
    `${METHODS}/recovery-codes/generate`,
    { csrf: browser.csrf, return_to: 'https://evil.example/' },
    browser.jar,
  );
  t.notMatch(made.body, 'evil.example', 'a foreign return_to is dropped');
  const removed = await post(`${METHODS}/totp/remove`, { csrf: browser.csrf, return_to: returnTo }, browser.jar);
  t.equal(removed.headers.location, `${METHODS}?m=totp-removed&return_to=${encodeURIComponent(returnTo)}`);
});

t.test('a signed-in session steps up with a code: the same session gains otp and mfa', async (t) => {
  const { email, id } = await newUser();
  const browser = await signedIn(email);
  const { secret } = await enrol(browser);
  t.same(
    (await sessionsOf(id)).map((s) => s.amr),
    [['pwd', 'otp', 'mfa']],
    'the first code of the setup counts as the app used: the session that set it up has two factors',
  );
  // A session signed in with the password alone while the user held the app (second factors were off then).
  await sql`update sessions set amr = '["pwd"]'::jsonb where user_id = ${id}`.execute(database.db);
  const page = await get('/login/second-factor', browser.jar);
  t.equal(page.statusCode, 200);
  t.match(page.body, '<h1>Confirm it is you</h1>');
  const wrong = await post('/login/second-factor/totp', { csrf: browser.csrf, code: '000000' }, browser.jar);
  t.equal(wrong.statusCode, 401);
  t.match(wrong.body, '<h1>Confirm it is you</h1>');
  const right = await post(
    '/login/second-factor/totp',
    { csrf: browser.csrf, code: codeAt(secret, nextStep()), return_to: '/login/account' },
    browser.jar,
  );
  t.equal(right.statusCode, 303);
  t.equal(right.headers.location, '/login/account', 'back where it came from');
  t.notOk(cookiesOf(right)['idp.session'], 'the same session cookie');
  t.same(
    (await sessionsOf(id)).map((s) => s.amr),
    [['pwd', 'otp', 'mfa']],
    'stepped up in place',
  );
});

t.test('with MFA=off the forms refuse and a held authenticator app is not asked', async (t) => {
  const off = await buildTestApp(t, { database, clock: () => now, env: { MFA: 'off' } });
  const { email, id } = await newUser();
  const owner = await signedIn(email);
  await enrol(owner);
  const page = await off.app.inject({ method: 'GET', url: '/login/sign-in' });
  const jar = cookiesOf(page);
  const csrf = hiddenField(page.body, 'csrf');
  const signIn = await off.app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: jar,
    headers: FORM,
    payload: new URLSearchParams({ csrf, email, password: PASSWORD }).toString(),
  });
  t.equal(signIn.headers.location, '/login/', 'the password alone signs in');
  const start = await off.app.inject({
    method: 'POST',
    url: `${METHODS}/totp/start`,
    cookies: { ...jar, ...cookiesOf(signIn) },
    headers: FORM,
    payload: new URLSearchParams({ csrf }).toString(),
  });
  t.equal(start.statusCode, 409);
  t.match(start.body, 'Second factors are switched off on this server');
  t.equal((await app.services.totp.status(id)).enabled, true, 'the enrolled app is kept');
});
