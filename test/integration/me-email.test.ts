// POST /api/me/email (issue 17): the e-mail address changes only once the link mailed to the NEW
// address is confirmed (issue 31: opening it changes nothing; its page's button POSTs, and only a session
// of the account that asked may confirm); the old address then gets a notice. Only the latest request's link works; the
// address taken meanwhile is 409 and the link keeps working once it is free again; links mailed before
// the change die; requests are limited per account.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { meTestApp } from '../helpers/me.js';
import { linkIn } from '../helpers/smtp.js';
import { confirmMailedLink, cookiesOf, hiddenField } from '../helpers/flow.js';

const { app, database, smtp, newUser, signIn, me, settle } = await meTestApp(t);
const db = database.db;
const CHANGE = 'Confirm your new e-mail address';
const NOTICE = 'Your e-mail address was changed';
const mailsTo = (to: string, subject?: string) =>
  smtp.mails.filter((m) => m.to.toLowerCase() === to.toLowerCase() && (!subject || m.subject === subject));
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;
const fresh = (tag: string) => `${tag}-${Math.random().toString(36).slice(2, 8)}@example.org`;
const profile = async (jar: Record<string, string>) => (await me('GET', '', { jar })).json();

t.test('bad requests: 400, nothing sent, nothing changed', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const cases: Array<[unknown, number, string]> = [
    [{ newEmail: 'not-an-address', password: user.password }, 400, 'VALIDATION_ERROR'],
    [{ newEmail: 'a b@example.org', password: user.password }, 400, 'VALIDATION_ERROR'],
    [{ newEmail: user.email.toUpperCase(), password: user.password }, 400, 'VALIDATION_ERROR'],
    [{ newEmail: fresh('x'), password: 'wrong password' }, 400, 'INVALID_PASSWORD'],
    [{ newEmail: fresh('x') }, 400, 'VALIDATION_ERROR'],
    [{ newEmail: fresh('x'), password: user.password, extra: 1 }, 400, 'VALIDATION_ERROR'],
  ];
  for (const [body, status, error] of cases) {
    const res = await me('POST', '/email', { jar, body });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.equal(res.json().error, error, JSON.stringify(body));
    t.type(res.json().message, 'string');
    t.equal(res.headers['cache-control'], 'no-store');
  }
  await settle();
  t.same(
    smtp.mails.filter((m) => m.subject === CHANGE),
    [],
  );
  t.match(await profile(jar), { email: user.email, emailVerified: true, pendingEmail: null });
  const failed = await listAuditEvents(db, { type: 'password.confirmation_failed', userId: user.id });
  t.equal(failed.length, 1);
  t.same(failed[0]!.detail, { purpose: 'email_change' });
});

t.test(
  "another account's address: the same answer as a free one, the holder told with no link, nothing changes",
  async (t) => {
    // Issue 31: a 409 EMAIL_TAKEN here told any signed-in user which addresses have accounts (this test
    // replaces the two 409 cases the bad-requests test had).
    const user = await newUser();
    const jar = await signIn(user.email);
    const holder = await newUser();
    const holderJar = await signIn(holder.email);
    const holderBefore = await profile(holderJar);
    const ask = (newEmail: string) => me('POST', '/email', { jar, body: { newEmail, password: user.password } });
    const seen = async (res: Awaited<ReturnType<typeof ask>>) => {
      const { pendingEmail, ...rest } = await profile(jar);
      return {
        status: res.statusCode,
        body: res.body,
        type: res.headers['content-type'],
        cache: res.headers['cache-control'],
        profile: rest,
        pendingEmail: String(pendingEmail).toLowerCase(),
      };
    };
    const free = fresh('free');
    const asFree = await seen(await ask(free));
    t.equal(asFree.status, 202);
    for (const spelt of [holder.email, holder.email.toUpperCase()]) {
      const asTaken = await seen(await ask(spelt));
      t.same(
        asTaken,
        { ...asFree, pendingEmail: holder.email.toLowerCase() },
        `${spelt}: the asker sees what a free address gives`,
      );
    }
    await settle();

    const toHolder = mailsTo(holder.email);
    t.equal(toHolder.length, 2, 'the holder is told of each request');
    for (const mail of toHolder) {
      t.equal(mail.subject, 'Someone asked to move another account to your address');
      t.match(mail.text, /nothing changes unless you act/);
      t.notMatch(mail.text, /https?:\/\//, 'no link');
      t.notMatch(mail.text, user.email, 'the asking account is not named');
    }
    t.same(mailsTo(holder.email, CHANGE), [], 'no change link to the holder');
    t.equal(mailsTo(free, CHANGE).length, 1, 'the free address got its link');
    t.same(mailsTo(user.email), [], 'nothing to the asker');

    t.same(await profile(holderJar), holderBefore, 'the holder keeps the address');
    t.match(await profile(jar), { email: user.email, emailVerified: true }, 'the asker keeps theirs');
    const exported = (await me('GET', '/export', { jar })).json();
    t.same(
      exported.auditEvents
        .map((e: { type: string }) => e.type)
        .filter((type: string) => type.startsWith('email_change')),
      ['email_change.requested', 'email_change.requested', 'email_change.requested'],
      "the asker's own record reads the same for every request",
    );
    const noted = await listAuditEvents(db, { type: 'email_change.address_taken', userId: holder.id });
    t.equal(noted.length, 2, 'the operator sees the attempts under the holder');
    t.same(noted[0]!.detail, { notified: true }, "the holder's record does not name the asker's account");
  },
);

t.test('the address changes only after the link mailed to the new address is opened', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const target = fresh('new');
  const res = await me('POST', '/email', { jar, body: { newEmail: target, password: user.password } });
  t.equal(res.statusCode, 202);
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.json(), { status: true, message: /link/ });

  const mail = await smtp.waitFor(target);
  t.equal(mail.subject, CHANGE);
  t.match(mail.text, user.email, 'the mail names the account');
  const link = linkIn(mail);
  t.match(link, /^http:\/\/localhost:3000\/login\/verify-email\/confirm\?token=/);
  t.same(mailsTo(user.email), [], 'nothing to the old address yet');

  t.match(await profile(jar), { email: user.email, emailVerified: true, pendingEmail: target }, 'before: old address');
  const signInOld = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: user.email, password: user.password }),
  });
  t.equal(signInOld.statusCode, 200, 'the old address still signs in');

  // Clicked in the browser of the account that asked: the page's button POSTs (issue 31).
  const page = await confirmMailedLink(app, link, jar);
  t.equal(page.statusCode, 200);
  t.match(page.body, /E-mail address changed/);
  t.match(page.body, target);

  t.match(await profile(jar), { email: target, emailVerified: true, pendingEmail: null }, 'after: new address');
  await settle();
  const notice = await smtp.waitFor(user.email);
  t.equal(notice.subject, NOTICE);
  t.match(notice.text, target);
  t.equal(mailsTo(user.email, NOTICE).length, 1);

  const reused = await app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search });
  t.equal(reused.statusCode, 400, 'single use');
  const events = await listAuditEvents(db, { userId: user.id });
  t.ok(events.some((e) => e.type === 'email_change.requested' && e.actor === 'self'));
  t.ok(events.some((e) => e.type === 'user.email_changed'));
});

t.test('only a session of the account that asked confirms the change; opening the link changes nothing', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const intruder = await newUser();
  const intruderJar = await signIn(intruder.email);
  const target = fresh('claimed');
  t.equal((await me('POST', '/email', { jar, body: { newEmail: target, password: user.password } })).statusCode, 202);
  const link = linkIn(await smtp.waitFor(target));
  const path = new URL(link).pathname + new URL(link).search;
  const unchanged = async (why: string) =>
    t.match(await profile(jar), { email: user.email, pendingEmail: target }, `${why}: nothing changed, link live`);

  // A mail scanner, or anyone holding the link, without a session: GET and HEAD change nothing.
  for (const method of ['GET', 'HEAD'] as const) {
    const res = await app.inject({ method, url: path });
    t.equal(res.statusCode, 200, method);
    await unchanged(`${method} without a session`);
  }
  const anonymous = await app.inject({ method: 'GET', url: path });
  t.match(anonymous.body, '<h1>Sign in to the account that asked for this change</h1>');
  t.match(anonymous.body, target, 'the page names the new address (the link was mailed to it)');
  t.notMatch(anonymous.body, user.email, 'but not the account, to someone without its session');
  t.notMatch(anonymous.body, 'action="/login/verify-email/confirm"', 'no confirmation button');
  const signInHref = /href="([^"]*)" id="sign-in-to-confirm"/.exec(anonymous.body)?.[1]?.replaceAll('&amp;', '&');
  t.equal(signInHref, `/login/sign-in?return_to=${encodeURIComponent(path)}`, 'a sign-in that comes back here');

  // The form POST without a session, or with another account's: refused, nothing consumed.
  // (The CSRF token of any hosted page will do: the holder of the link is a visitor like any other.)
  const anyPage = await app.inject({ method: 'GET', url: '/login/sign-in' });
  const csrf = hiddenField(anyPage.body, 'csrf');
  const form = (cookies: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url: '/login/verify-email/confirm',
      cookies: { ...cookiesOf(anyPage), ...cookies },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, token: tokenOf(link) }).toString(),
    });
  const noSession = await form({});
  t.equal(noSession.statusCode, 401);
  t.match(noSession.body, 'Sign in to the account that asked for this change');
  t.notMatch(noSession.body, user.email);
  await unchanged('POST without a session');

  const intruderPage = await app.inject({ method: 'GET', url: path, cookies: intruderJar });
  t.equal(intruderPage.statusCode, 200);
  t.match(intruderPage.body, 'did not ask for this change');
  t.match(intruderPage.body, `Signed in as <strong>${intruder.email}</strong>`, 'names the session shown, "Not you?"');
  t.notMatch(intruderPage.body, user.email);
  t.notMatch(intruderPage.body, 'action="/login/verify-email/confirm"', 'no confirmation button');
  const wrong = await form(intruderJar);
  t.equal(wrong.statusCode, 403);
  t.notMatch(wrong.body, user.email);
  await unchanged("POST with another account's session");
  t.equal((await profile(intruderJar)).email, intruder.email, 'and the other account keeps its address');

  // The JSON twin: the same rule.
  const json = (cookies: Record<string, string>) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/verify-email',
      cookies,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ token: tokenOf(link) }),
    });
  const jsonAnonymous = await json({});
  t.equal(jsonAnonymous.statusCode, 401);
  t.equal(jsonAnonymous.json().error, 'UNAUTHENTICATED');
  const jsonWrong = await json(intruderJar);
  t.equal(jsonWrong.statusCode, 403);
  t.equal(jsonWrong.json().error, 'WRONG_ACCOUNT');
  await unchanged('JSON without or with the wrong session');
  t.notOk(
    (await listAuditEvents(db, { userId: user.id })).some((e) => e.type === 'user.email_changed'),
    'no change was audited',
  );

  // The asker follows the page's sign-in link, signs in on the hosted page and comes back to confirm.
  const signInPage = await app.inject({ method: 'GET', url: signInHref! });
  t.equal(hiddenField(signInPage.body, 'return_to'), path);
  const signedIn = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: cookiesOf(signInPage),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      csrf: hiddenField(signInPage.body, 'csrf'),
      email: user.email,
      password: user.password,
      return_to: path,
    }).toString(),
  });
  t.equal(signedIn.statusCode, 303);
  t.equal(signedIn.headers.location, path, 'back on the confirmation page');
  const askerJar = { ...cookiesOf(signInPage), ...cookiesOf(signedIn) };
  const mine = await app.inject({ method: 'GET', url: path, cookies: askerJar });
  t.match(mine.body, `<h1>Move your account to ${target}</h1>`, 'the page names the action');
  t.match(mine.body, `id="account-email">${user.email}</strong>`, 'and the account that takes the address');
  await unchanged('GET with the right session');
  const done = await confirmMailedLink(app, path, askerJar);
  t.equal(done.statusCode, 200);
  t.match(done.body, /E-mail address changed/);
  t.match(await profile(jar), { email: target, emailVerified: true, pendingEmail: null });
});

t.test('a second request kills the first link; the JSON confirmation says it was a change', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const first = fresh('first');
  const second = fresh('second');
  t.equal((await me('POST', '/email', { jar, body: { newEmail: first, password: user.password } })).statusCode, 202);
  const firstToken = tokenOf(linkIn(await smtp.waitFor(first)));
  t.equal((await me('POST', '/email', { jar, body: { newEmail: second, password: user.password } })).statusCode, 202);
  const secondToken = tokenOf(linkIn(await smtp.waitFor(second)));
  t.equal((await profile(jar)).pendingEmail, second);

  // The JSON twin of the page's POST, with the session of the account that asked (issue 31).
  const confirm = (token: string) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/verify-email',
      cookies: jar,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ token }),
    });
  const dead = await confirm(firstToken);
  t.equal(dead.statusCode, 400);
  t.equal(dead.json().error, 'INVALID_TOKEN');
  const ok = await confirm(secondToken);
  t.equal(ok.statusCode, 200);
  t.same(ok.json(), { status: true, emailChanged: true });
  t.equal((await profile(jar)).email, second);
});

t.test('the address taken in between: 409, the link still works once it is free again', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const target = fresh('contested');
  t.equal((await me('POST', '/email', { jar, body: { newEmail: target, password: user.password } })).statusCode, 202);
  const link = linkIn(await smtp.waitFor(target));
  const path = new URL(link).pathname + new URL(link).search;
  const squatter = await app.services.users.create(
    { email: target.toUpperCase(), password: 'squatter-pw-1' },
    {
      actor: 'test',
    },
  );

  const taken = await app.inject({
    method: 'POST',
    url: '/api/auth/verify-email',
    cookies: jar,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token: tokenOf(link) }),
  });
  t.equal(taken.statusCode, 409);
  t.equal(taken.json().error, 'EMAIL_TAKEN');
  const takenPage = await confirmMailedLink(app, path, jar);
  t.equal(takenPage.statusCode, 409, 'the page says so too');
  t.match(await profile(jar), { email: user.email, pendingEmail: target }, 'nothing changed, the link is not spent');

  await app.services.users.remove(squatter.id, { actor: 'test' });
  const page = await confirmMailedLink(app, path, jar);
  t.equal(page.statusCode, 200);
  t.match(page.body, /E-mail address changed/);
  t.equal((await profile(jar)).email, target);
});

t.test('links mailed before the change die: verification, reset and older change links', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  await app.services.accounts.sendVerification(user, {});
  const verification = tokenOf(linkIn(await smtp.waitFor(user.email)));
  const reset = await app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: user.email, redirectTo: '/login/reset-password' }),
  });
  t.equal(reset.statusCode, 200);
  await app.services.recovery.drain();
  const resetMail = await (async () => {
    for (let i = 0; i < 100; i++) {
      const m = mailsTo(user.email, 'Reset your password')[0];
      if (m) return m;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('no reset mail');
  })();
  const resetToken = new URL(linkIn(resetMail)).pathname.split('/').pop()!;
  const target = fresh('moved');
  t.equal((await me('POST', '/email', { jar, body: { newEmail: target, password: user.password } })).statusCode, 202);
  const link = linkIn(await smtp.waitFor(target));
  t.equal((await confirmMailedLink(app, link, jar)).statusCode, 200);

  const verify = await app.inject({
    method: 'POST',
    url: '/api/auth/verify-email',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token: verification }),
  });
  t.equal(verify.statusCode, 400, 'the old verification link is dead');
  const resetNow = await app.inject({
    method: 'POST',
    url: '/api/auth/reset-password',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token: resetToken, newPassword: 'a brand new password' }),
  });
  t.equal(resetNow.statusCode, 400);
  t.equal(resetNow.json().error, 'INVALID_TOKEN', 'the old reset link is dead');
});

t.test('an operator changing the address meanwhile kills the pending change link', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const target = fresh('pending');
  t.equal((await me('POST', '/email', { jar, body: { newEmail: target, password: user.password } })).statusCode, 202);
  const link = linkIn(await smtp.waitFor(target));
  const operatorSet = fresh('operator');
  await app.services.users.update(user.id, { email: operatorSet }, { actor: 'test' });
  const res = await app.inject({ method: 'GET', url: new URL(link).pathname + new URL(link).search });
  t.equal(res.statusCode, 400);
  t.equal((await profile(jar)).email, operatorSet);
});

t.test('e-mail change requests are limited per account (429 with Retry-After)', async (t) => {
  const limited = await meTestApp(t, { RATE_LIMITS: 'on', RATE_LIMIT_RESEND_ACCOUNT: '2/900' });
  const user = await limited.newUser();
  const jar = await limited.signIn(user.email);
  for (let i = 0; i < 2; i++) {
    const res = await limited.me('POST', '/email', { jar, body: { newEmail: fresh('lim'), password: user.password } });
    t.equal(res.statusCode, 202);
  }
  const res = await limited.me('POST', '/email', { jar, body: { newEmail: fresh('lim'), password: user.password } });
  t.equal(res.statusCode, 429);
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.ok(Number(res.headers['retry-after']) > 0);
  t.equal(res.headers['cache-control'], 'no-store');
});

t.test('e-mail change requests are limited per new address, across accounts (429 with Retry-After)', async (t) => {
  // Issue 31, item 5: the per-account budget alone let many accounts (or one account deleted and made
  // again) send change links to one inbox without end.
  const limited = await meTestApp(t, { RATE_LIMITS: 'on', RATE_LIMIT_RESEND_EMAIL: '2/900' });
  const target = fresh('flooded');
  const ask = async (newEmail: string) => {
    const user = await limited.newUser();
    const jar = await limited.signIn(user.email);
    return limited.me('POST', '/email', { jar, body: { newEmail, password: user.password } });
  };
  t.same([(await ask(target)).statusCode, (await ask(target.toUpperCase())).statusCode], [202, 202]);
  const res = await ask(` ${target.toUpperCase()} `);
  t.equal(res.statusCode, 429, 'a third account asking for the same address, however spelt');
  t.equal(res.json().error, 'TOO_MANY_REQUESTS');
  t.ok(Number(res.headers['retry-after']) > 0 && Number(res.headers['retry-after']) <= 900, 'Retry-After');
  t.equal((await ask(fresh('other'))).statusCode, 202, 'another address has its own budget');
  await limited.settle();
  t.equal(
    limited.smtp.mails.filter((m) => m.to.toLowerCase().includes(target.toLowerCase())).length,
    2,
    'two change links reach the inbox',
  );
});
