// A sign-in that must give a second factor (issue 34, the foundation): after the right password no session exists,
// only a pending sign-in bound to this browser by its cookie; the second-factor page continues it; another browser,
// an expired or cancelled one, and the JSON API all see it the same way. The factor kinds' own checks are tested
// with them (TOTP, recovery codes, passkeys); here a user "holds a factor" by a row written directly.
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { cookiesOf, formPage } from '../helpers/flow.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const { app, database } = await buildTestApp(t);
const actor = { actor: 'test' };
const password = 'kim-password-1';
const kim = await app.services.users.create({ email: 'kim@example.com', password, emailVerified: true }, actor);
const lee = await app.services.users.create(
  { email: 'lee@example.com', password: 'lee-password-1', emailVerified: true },
  actor,
);
// Kim holds a passkey (its key is never used here: the row makes the second factor due).
await database.db
  .insertInto('webauthn_credentials')
  .values({
    id: randomUUID(),
    user_id: kim.id,
    credential_id: 'cred-kim',
    public_key: 'AAAA',
    device_type: 'singleDevice',
    backed_up: false,
    name: 'Kim key',
  })
  .execute();

async function passwordSignIn(email: string, pw: string) {
  const page = await formPage(app, '/login/sign-in');
  const res = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: page.jar,
    payload: new URLSearchParams({ csrf: page.csrf, email, password: pw }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  return { res, jar: { ...page.jar, ...cookiesOf(res) } };
}

t.test(
  'the right password of a user with a factor: no session, a pending sign-in, the second-factor page',
  async (t) => {
    const { res, jar } = await passwordSignIn('kim@example.com', password);
    t.equal(res.statusCode, 303);
    t.equal(res.headers.location, '/login/second-factor');
    t.notOk(jar['idp.session'], 'no session cookie before the second factor');
    t.match(jar['idp.mfa'], /^[A-Za-z0-9_-]{43}$/, 'the pending sign-in cookie');
    const rows = await database.db.selectFrom('pending_sign_ins').selectAll().where('user_id', '=', kim.id).execute();
    t.equal(rows.length, 1);
    t.same(rows[0]!.amr, ['pwd']);
    t.not(rows[0]!.token_hash, jar['idp.mfa'], 'only a hash of the cookie is stored');
    const sessions = await database.db.selectFrom('sessions').select('id').where('user_id', '=', kim.id).execute();
    t.equal(sessions.length, 0, 'no session row either');

    const page = await app.inject({ method: 'GET', url: '/login/second-factor', cookies: jar });
    t.equal(page.statusCode, 200);
    t.match(page.body, /Second step of sign-in/);
    t.equal(page.headers['cache-control'], 'no-store');

    // The account pages see nobody signed in.
    const account = await app.inject({ method: 'GET', url: '/login/account', cookies: jar });
    t.equal(account.statusCode, 303);
    t.match(account.headers.location, /^\/login\/sign-in/);
  },
);

t.test('another browser (without the cookie) has nothing to continue', async (t) => {
  await passwordSignIn('kim@example.com', password);
  const res = await app.inject({ method: 'GET', url: '/login/second-factor' });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/sign-in');
  const forged = await app.inject({
    method: 'GET',
    url: '/login/second-factor',
    cookies: { 'idp.mfa': 'x'.repeat(43) },
  });
  t.equal(forged.statusCode, 303, 'a guessed cookie finds nothing');
});

t.test('a user without a factor signs in with the password alone (amr pwd)', async (t) => {
  const { res, jar } = await passwordSignIn('lee@example.com', 'lee-password-1');
  t.equal(res.statusCode, 303);
  t.not(res.headers.location, '/login/second-factor');
  t.ok(jar['idp.session']);
  const ctx = await app.services.sessions.resolve(jar['idp.session']);
  t.same(ctx?.session.amr, ['pwd']);
});

t.test('Cancel ends the pending sign-in', async (t) => {
  const { jar } = await passwordSignIn('kim@example.com', password);
  const page = await formPage(app, '/login/second-factor', jar);
  const res = await app.inject({
    method: 'POST',
    url: '/login/second-factor/cancel',
    cookies: page.jar,
    payload: new URLSearchParams({ csrf: page.csrf }).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/login/sign-in');
  t.notOk(await app.services.factors.pending(jar['idp.mfa']), 'gone');
});

t.test('completing a pending sign-in makes the session once, with the combined amr', async (t) => {
  const { jar } = await passwordSignIn('kim@example.com', password);
  const pending = await app.services.factors.pending(jar['idp.mfa']);
  t.ok(pending);
  const meta = { ip: null, userAgent: null };
  const [a, b] = await Promise.all([
    app.services.factors.completePending(pending!, ['hwk'], meta),
    app.services.factors.completePending(pending!, ['hwk'], meta),
  ]);
  t.equal([a, b].filter(Boolean).length, 1, 'exactly one completion wins');
  const done = (a ?? b)!;
  t.same(done.session.amr, ['pwd', 'hwk', 'mfa']);
  const events = await listAuditEvents(database.db, { type: 'user.signed_in', userId: kim.id });
  t.ok(
    events.some((e) => (e.detail as { amr?: string[] }).amr?.includes('mfa')),
    'the sign-in is audited with its amr',
  );
});

t.test('wrong second factors end the pending sign-in after the fifth', async (t) => {
  const { jar } = await passwordSignIn('kim@example.com', password);
  const pending = (await app.services.factors.pending(jar['idp.mfa']))!;
  const ended: boolean[] = [];
  for (let i = 0; i < 5; i++) ended.push(await app.services.factors.failPending(pending, { ip: null }));
  t.same(ended, [false, false, false, false, true]);
  t.notOk(await app.services.factors.pending(jar['idp.mfa']));
});

t.test('an expired pending sign-in is nothing', async (t) => {
  const { jar } = await passwordSignIn('kim@example.com', password);
  await sql`update pending_sign_ins set expires_at = now() - interval '1 second'`.execute(database.db);
  t.notOk(await app.services.factors.pending(jar['idp.mfa']));
});

t.test('the JSON sign-in says a second factor is due and sets no session', async (t) => {
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    payload: { email: 'kim@example.com', password },
  });
  t.equal(res.statusCode, 200);
  const body = res.json();
  t.equal(body.secondFactor, true);
  t.match(body.redirectTo, /\/login\/second-factor$/);
  const jar = cookiesOf(res);
  t.notOk(jar['idp.session']);
  t.ok(jar['idp.mfa']);
});

t.test('step-up adds methods to the session in place and renews auth_time', async (t) => {
  const { jar } = await passwordSignIn('lee@example.com', 'lee-password-1');
  const before = (await app.services.sessions.resolve(jar['idp.session']))!;
  const stepped = await app.services.sessions.stepUp(before.session.id, lee.id, ['otp'], { ip: null });
  t.same(stepped?.amr, ['pwd', 'otp', 'mfa']);
  t.equal(stepped?.id, before.session.id, 'the same session');
  t.ok(stepped!.auth_time.getTime() >= before.session.auth_time.getTime());
  t.notOk(await app.services.sessions.stepUp(before.session.id, kim.id, ['otp'], { ip: null }), 'not another user');
});

t.test('a password set meanwhile (an operator, a reset) ends the sign-in waiting for its second factor', async (t) => {
  const { jar } = await passwordSignIn('kim@example.com', password);
  t.ok(await app.services.factors.pending(jar['idp.mfa']));
  await app.services.users.update(kim.id, { password: 'kim-password-2' }, actor);
  t.notOk(await app.services.factors.pending(jar['idp.mfa']), 'the old password no longer counts');
});
