// The operator's side of second factors (issue 34): the admin API's list, removal of one factor and reset of
// all; the admin web's "Second factors" section with its fresh, confirmed, CSRF-checked removals; ADMIN_MFA=required
// (an admin without a factor is sent to enrol, one whose session lacks it to step up, one with an mfa session gets
// in, the admin API's bearer token is unaffected); and a password reset that does not bypass the second factor.
// Factors are rows inserted here (a passkey with a dummy public key, a confirmed TOTP, recovery codes): the
// ceremonies that make real ones are tested with their kinds.
import t from 'tap';
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { cookiesOf, formPage, hiddenField } from '../helpers/flow.js';
import { linkIn, startSmtp } from '../helpers/smtp.js';
import { ConfigError, loadConfig } from '../../src/config.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const { app, database } = await buildTestApp(t, { env: { SMTP_URL: smtp.url, MAIL_RETRY_DELAYS: 'none' } });
const db = database.db;
const password = 'a long enough password';
const BASE = 'http://localhost:3000';

let counter = 0;
async function newUser(role: 'user' | 'admin' = 'user') {
  const email = `f${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const user = await app.services.users.create({ email, password, emailVerified: true, role }, { actor: 'test' });
  return { id: user.id, email };
}

async function givePasskey(userId: string, name: string, id: string = randomUUID()) {
  await db
    .insertInto('webauthn_credentials')
    .values({
      id,
      user_id: userId,
      credential_id: randomBytes(16).toString('base64url'),
      public_key: 'pQECAyYgASFYIDummyPublicKeyNotASecret',
      device_type: 'singleDevice',
      backed_up: false,
      name,
    })
    .execute();
  return id;
}
async function giveTotp(userId: string) {
  await db
    .insertInto('totp_factors')
    .values({ user_id: userId, secret: 'sealed-totp-secret-never-shown', confirmed_at: new Date() })
    .execute();
}
async function giveRecoveryCodes(userId: string, used = 0) {
  for (let i = 0; i < 10; i++) {
    await db
      .insertInto('recovery_codes')
      .values({
        id: randomUUID(),
        user_id: userId,
        code_hash: `recovery-code-hash-${i}`,
        used_at: i < used ? new Date() : null,
      })
      .execute();
  }
}

/** A browser without JavaScript over app.inject: a cookie jar. */
class Agent {
  jar: Record<string, string> = {};
  constructor(readonly server: FastifyInstance = app) {}
  keep(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === '' || c.maxAge === 0) delete this.jar[c.name];
      else this.jar[c.name] = c.value;
    }
    return res;
  }
  async get(url: string) {
    return this.keep(await this.server.inject({ method: 'GET', url, cookies: this.jar }));
  }
  async post(url: string, form: Record<string, string>) {
    return this.keep(
      await this.server.inject({
        method: 'POST',
        url,
        cookies: this.jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(form).toString(),
      }),
    );
  }
  async signIn(email: string) {
    const page = await this.get('/login/sign-in');
    const res = await this.post('/login/sign-in', { csrf: hiddenField(page.body, 'csrf'), email, password });
    if (!this.jar['idp.session']) throw new Error(`sign-in of ${email} failed: ${res.statusCode}`);
    return res;
  }
  async csrf() {
    if (!this.jar['idp.csrf']) await this.get('/login/sign-in');
    return this.jar['idp.csrf']!;
  }
}

const api = (method: 'GET' | 'DELETE', url: string, headers: Record<string, string> = adminHeaders) =>
  app.inject({ method, url, headers });
const events = async (type: string, userId: string) =>
  (await app.services.audit.list({ type, userId, limit: 100 })).items;
const liveSessions = async (userId: string) =>
  (await app.services.access.listSessions(userId)).filter((s) => s.active).length;
async function changedMails(to: string) {
  await app.services.mailer.drain();
  return smtp.mails.filter((m) => m.to === to && m.subject === 'The sign-in methods of your account changed');
}

t.test('admin API: list a user factors (no secret), 401 without the token, 404s', async (t) => {
  const user = await newUser();
  const passkeyId = await givePasskey(user.id, 'Laptop');
  await giveTotp(user.id);
  await giveRecoveryCodes(user.id, 2);

  t.equal((await api('GET', `/api/admin/users/${user.id}/factors`, {})).statusCode, 401, 'no token');
  t.equal(
    (await api('DELETE', `/api/admin/users/${user.id}/factors`, { authorization: 'Bearer nope' })).statusCode,
    401,
  );
  t.equal((await app.services.factors.summary(user.id)).passkeys, 1, 'nothing removed without the token');

  for (const ref of [user.id, encodeURIComponent(user.email)]) {
    const res = await api('GET', `/api/admin/users/${ref}/factors`);
    t.equal(res.statusCode, 200, ref);
    t.equal(res.headers['cache-control'], 'no-store');
    const items = res.json().items as Array<Record<string, unknown>>;
    t.same(
      items.map((f) => [f.id, f.kind, f.name]),
      [
        [passkeyId, 'passkey', 'Laptop'],
        ['totp', 'totp', 'Authenticator app'],
        ['recovery-codes', 'recovery_code', 'Recovery codes'],
      ],
    );
    t.equal(items[0]!.backedUp, false);
    t.equal(items[2]!.remaining, 8, 'eight recovery codes unused');
    t.ok(items.every((f) => typeof f.createdAt === 'string' && 'lastUsedAt' in f));
    t.notMatch(res.body, /sealed-totp-secret|DummyPublicKey|recovery-code-hash|credential/, 'never a secret');
  }

  const unknown = await api('GET', `/api/admin/users/${randomUUID()}/factors`);
  t.equal(unknown.statusCode, 404);
  t.equal(unknown.json().error, 'USER_NOT_FOUND');
  t.type(unknown.json().message, 'string');
  const noUser = await api('DELETE', `/api/admin/users/nobody@example.com/factors`);
  t.equal(noUser.statusCode, 404, 'reset of an unknown user');
  t.equal(noUser.json().error, 'USER_NOT_FOUND');
  const noUserOne = await api('DELETE', `/api/admin/users/nobody@example.com/factors/totp`);
  t.equal(noUserOne.json().error, 'USER_NOT_FOUND');

  const other = await newUser();
  for (const factorId of [randomUUID(), 'totp', 'recovery-codes', passkeyId]) {
    const res = await api('DELETE', `/api/admin/users/${other.id}/factors/${factorId}`);
    t.equal(res.statusCode, 404, `a user without ${factorId}`);
    t.same(Object.keys(res.json()).sort(), ['error', 'message']);
    t.equal(res.json().error, 'FACTOR_NOT_FOUND');
  }
  t.equal((await app.services.factors.summary(user.id)).passkeys, 1, "another user's id cannot reach this passkey");
  t.same(await events('mfa.factor_removed', other.id), [], 'nothing audited for a refused removal');
});

t.test('admin API: remove one factor ends every session, mails the user, is audited', async (t) => {
  const user = await newUser();
  // Signed in before the factors exist (inserted rows: no factor change ends the session).
  const browser = new Agent();
  await browser.signIn(user.email);
  const laptop = await givePasskey(user.id, 'Laptop <b>');
  const phone = await givePasskey(user.id, 'Phone');
  await giveTotp(user.id);
  await giveRecoveryCodes(user.id);
  t.equal(await liveSessions(user.id), 1);

  const res = await api('DELETE', `/api/admin/users/${encodeURIComponent(user.email)}/factors/${laptop}`);
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal(await liveSessions(user.id), 0, 'the session ended');
  t.notOk(await app.services.sessions.resolve(browser.jar['idp.session']), 'its cookie no longer works');
  const [event] = await events('mfa.factor_removed', user.id);
  t.equal(event?.actor, 'admin-api');
  t.match(event?.detail, { kind: 'passkey', factorId: laptop, name: 'Laptop <b>', sessionsRevoked: 1 });
  const mails = await changedMails(user.email);
  t.equal(mails.length, 1, 'the user is told');
  t.match(mails[0]!.text, /the passkey named "Laptop <b>" was removed/);
  t.match(mails[0]!.text, /An administrator made this change/);
  t.notMatch(mails[0]!.html, /<b>/, 'the name is escaped in the HTML mail');

  t.equal((await api('DELETE', `/api/admin/users/${user.id}/factors/${laptop}`)).statusCode, 404, 'gone: 404');
  t.equal((await api('DELETE', `/api/admin/users/${user.id}/factors/totp`)).statusCode, 204);
  t.equal((await api('DELETE', `/api/admin/users/${user.id}/factors/recovery-codes`)).statusCode, 204);
  const left = (await api('GET', `/api/admin/users/${user.id}/factors`)).json().items as Array<{ id: string }>;
  t.same(
    left.map((f) => f.id),
    [phone],
    'only the other passkey is left',
  );
  t.same(
    (await events('mfa.factor_removed', user.id)).map((e) => e.detail.kind),
    ['recovery_code', 'totp', 'passkey'],
    'one event per removal, newest first',
  );
  t.equal((await changedMails(user.email)).length, 3);
});

t.test('admin API: reset every factor of a user who lost them', async (t) => {
  const user = await newUser();
  await new Agent().signIn(user.email);
  await new Agent().signIn(user.email);
  await givePasskey(user.id, 'Laptop');
  await givePasskey(user.id, 'Key');
  await giveTotp(user.id);
  await giveRecoveryCodes(user.id, 3);
  const bystander = await newUser();
  await givePasskey(bystander.id, 'Theirs');

  const res = await api('DELETE', `/api/admin/users/${user.id}/factors`);
  t.equal(res.statusCode, 200);
  t.same(res.json(), { passkeys: 2, totp: 1, recoveryCodes: 10 });
  t.same((await api('GET', `/api/admin/users/${user.id}/factors`)).json(), { items: [] });
  t.equal(await liveSessions(user.id), 0, 'every session ended');
  const [event] = await events('mfa.factors_reset', user.id);
  t.equal(event?.actor, 'admin-api');
  t.match(event?.detail, { passkeys: 2, totp: 1, recoveryCodes: 10, sessionsRevoked: 2 });
  t.equal((await changedMails(user.email)).length, 1);
  t.equal((await app.services.factors.summary(bystander.id)).passkeys, 1, "another user's factors stay");

  // Without a factor the user signs in with the password alone again.
  const browser = new Agent();
  const signIn = await browser.signIn(user.email);
  t.equal(signIn.statusCode, 303);
  t.notMatch(String(signIn.headers.location), /second-factor/);
});

t.test('admin web: the Second factors section, fresh and confirmed removal and reset', async (t) => {
  const admin = await newUser('admin');
  const agent = new Agent();
  await agent.signIn(admin.email);
  const user = await newUser();
  await new Agent().signIn(user.email);
  const laptop = await givePasskey(user.id, 'Laptop "work"');
  await giveTotp(user.id);
  await giveRecoveryCodes(user.id, 1);

  const page = await agent.get(`/admin/users/${user.id}`);
  t.equal(page.statusCode, 200);
  t.match(page.body, /<h2>Second factors \(3\)<\/h2>/);
  t.match(page.body, /<th>Type<\/th><th>Name<\/th><th>Created<\/th><th>Last used<\/th>/);
  t.match(page.body, /<td>Passkey<\/td><td>Laptop &quot;work&quot;<\/td>/, 'the name is escaped');
  t.match(page.body, /<td>Authenticator app<\/td>/);
  t.match(page.body, /<td>9 unused<\/td>/);
  t.match(page.body, `href="/admin/users/${user.id}/factors/${laptop}/remove"`);
  t.match(page.body, `href="/admin/users/${user.id}/factors/totp/remove"`);
  t.match(page.body, `href="/admin/users/${user.id}/factors/reset">Reset all second factors…</a>`);
  t.notMatch(page.body, /sealed-totp-secret|DummyPublicKey|recovery-code-hash/);

  // The confirmation page, then its form.
  const confirm = await agent.get(`/admin/users/${user.id}/factors/totp/remove`);
  t.equal(confirm.statusCode, 200);
  t.match(confirm.body, /Remove the authenticator app of/);
  const action = `/admin/users/${user.id}/factors/totp/remove`;
  t.match(confirm.body, `<form method="post" action="${action}">`);
  const csrf = hiddenField(confirm.body, 'csrf');
  t.equal((await agent.post(action, {})).statusCode, 403, 'no CSRF token');
  t.equal((await agent.post(action, { csrf: 'x'.repeat(43) })).statusCode, 403, 'a wrong CSRF token');
  const stranger = new Agent();
  await stranger.csrf();
  t.equal((await stranger.post(action, { csrf: await stranger.csrf() })).statusCode, 303, 'signed out: to sign in');
  t.ok((await app.services.factors.summary(user.id)).totp, 'nothing removed so far');

  const removed = await agent.post(action, { csrf });
  t.equal(removed.statusCode, 303);
  t.equal(removed.headers.location, `/admin/users/${user.id}?done=factor-removed`);
  t.notOk((await app.services.factors.summary(user.id)).totp);
  const [event] = await events('mfa.factor_removed', user.id);
  t.equal(event?.actor, `admin:${admin.email}`);
  t.equal(await liveSessions(user.id), 0, "the user's session ended");
  t.match((await agent.get(removed.headers.location as string)).body, /Second factor removed/);

  const missing = await agent.get(`/admin/users/${user.id}/factors/totp/remove`);
  t.equal(missing.statusCode, 404, 'a factor the user does not hold');
  t.equal((await agent.post(action, { csrf })).statusCode, 404);

  // Stale password: both the confirmation page and the POST send the admin to sign in again.
  await db
    .updateTable('sessions')
    .set({ auth_time: new Date(Date.now() - 601_000) })
    .where('user_id', '=', admin.id)
    .execute();
  const reset = `/admin/users/${user.id}/factors/reset`;
  for (const res of [await agent.get(reset), await agent.post(reset, { csrf })]) {
    t.equal(res.statusCode, 303);
    t.match(res.headers.location, /\/login\/sign-in\?return_to=.*&prompt=login$/);
    t.match(decodeURIComponent(String(res.headers.location)), `${BASE}/admin/users/${user.id}/factors/reset`);
  }
  t.equal((await app.services.factors.summary(user.id)).passkeys, 1, 'a stale session removed nothing');
  await db.updateTable('sessions').set({ auth_time: new Date() }).where('user_id', '=', admin.id).execute();

  const resetPage = await agent.get(reset);
  t.equal(resetPage.statusCode, 200);
  t.match(resetPage.body, /Reset every second factor of/);
  const done = await agent.post(reset, { csrf: hiddenField(resetPage.body, 'csrf') });
  t.equal(done.headers.location, `/admin/users/${user.id}?done=factors-reset`);
  t.same(await app.services.factors.list(user.id), []);
  t.equal((await events('mfa.factors_reset', user.id))[0]?.actor, `admin:${admin.email}`);
  const after = await agent.get(String(done.headers.location));
  t.match(after.body, /Every second factor removed/);
  t.match(after.body, /No second factors\./);
  t.notMatch(after.body, /Reset all second factors/);
  t.equal((await changedMails(user.email)).length, 2);
});

t.test('admin web: a signed-in user who is not an admin removes nothing', async (t) => {
  const user = await newUser();
  await giveTotp(user.id);
  const mallory = new Agent();
  await mallory.signIn((await newUser()).email);
  const csrf = await mallory.csrf();
  for (const path of [`/admin/users/${user.id}/factors/reset`, `/admin/users/${user.id}/factors/totp/remove`]) {
    t.equal((await mallory.get(path)).statusCode, 403, `GET ${path}`);
    t.equal((await mallory.post(path, { csrf })).statusCode, 403, `POST ${path}`);
  }
  t.ok((await app.services.factors.summary(user.id)).totp, 'the factor stays');
});

t.test('ADMIN_MFA=required: enrol first, step up, then in; the admin API is unaffected', async (t) => {
  const strict = await buildTestApp(t, { database, env: { SMTP_URL: smtp.url, ADMIN_MFA: 'required' } });
  const admin = await newUser('admin');
  const agent = new Agent(strict.app);
  await agent.signIn(admin.email);
  const back = (path: string) => encodeURIComponent(`${BASE}/admin${path}`);

  let res = await agent.get('/admin/users');
  t.equal(res.statusCode, 303, 'no factor: sent away');
  t.equal(res.headers.location, `${BASE}/login/account/sign-in-methods?return_to=${back('/users')}`);
  const enrol = await agent.get(
    new URL(String(res.headers.location)).pathname + new URL(String(res.headers.location)).search,
  );
  t.equal(enrol.statusCode, 200, 'the sign-in methods page takes the admin page as return_to');
  t.match(enrol.body, /Set up a second factor to continue signing in/);

  const csrf = await agent.csrf();
  const target = await newUser();
  const post = await agent.post(`/admin/users/${target.id}/revoke-sessions`, { csrf });
  t.equal(post.statusCode, 303);
  t.match(post.headers.location, /\/login\/account\/sign-in-methods\?return_to=/, 'a POST too, doing nothing');
  t.same(await events('session.revoked', target.id), []);

  // A factor enrolled (here: inserted; the session stays a password one): a step-up is due.
  await givePasskey(admin.id, 'Admin key');
  res = await agent.get('/admin/users');
  t.equal(res.headers.location, `${BASE}/login/second-factor?return_to=${back('/users')}`);
  const step = await agent.get(`/login/second-factor?return_to=${back('/users')}`);
  t.equal(step.statusCode, 200, 'the second-factor page steps this session up');
  t.match(step.body, /Confirm it is you/);

  // Recovery codes alone are no second factor.
  const codesOnly = await newUser('admin');
  await giveRecoveryCodes(codesOnly.id);
  const other = new Agent(strict.app);
  await other.signIn(codesOnly.email);
  t.match((await other.get('/admin/keys')).headers.location, /\/login\/account\/sign-in-methods\?/);

  // A session whose amr says mfa gets in.
  await db
    .updateTable('sessions')
    .set({ amr: JSON.stringify(['pwd', 'hwk', 'mfa']) })
    .where('user_id', '=', admin.id)
    .execute();
  res = await agent.get('/admin/users');
  t.equal(res.statusCode, 200, 'an mfa session reaches the admin web');
  t.match(res.body, /<h1>Users<\/h1>/);

  const bearer = await strict.app.inject({ method: 'GET', url: '/api/admin/users', headers: adminHeaders });
  t.equal(bearer.statusCode, 200, 'the admin API with its token is not concerned');

  // The same password-only admin under ADMIN_MFA=optional (the default) gets in.
  const relaxed = new Agent();
  await relaxed.signIn((await newUser('admin')).email);
  t.equal((await relaxed.get('/admin/users')).statusCode, 200);
});

t.test('ADMIN_MFA=required with MFA=off is refused at start-up', async (t) => {
  const env = { NODE_ENV: 'test', SECRET_KEY: 'x'.repeat(40), MFA: 'off', ADMIN_MFA: 'required' };
  t.throws(() => loadConfig(env), ConfigError);
  try {
    loadConfig(env);
  } catch (error) {
    t.match((error as ConfigError).message, /ADMIN_MFA/);
  }
  t.equal(loadConfig({ ...env, ADMIN_MFA: 'optional' }).mfa.admin, 'optional');
});

t.test('a password reset neither removes the factors nor bypasses them', async (t) => {
  const user = await newUser();
  await givePasskey(user.id, 'Laptop');
  await giveTotp(user.id);
  const forgot = await formPage(app, '/login/forgot-password');
  const sent = await app.inject({
    method: 'POST',
    url: '/login/forgot-password',
    cookies: forgot.jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf: forgot.csrf, email: user.email }).toString(),
  });
  t.equal(sent.statusCode, 200);
  await app.services.recovery.drain();
  await app.services.mailer.drain();
  const mail = smtp.mails.find((m) => m.to === user.email && m.subject === 'Reset your password');
  if (!mail) return t.fail('no reset mail');
  const followed = await app.inject({
    method: 'GET',
    url: new URL(linkIn(mail)).pathname + new URL(linkIn(mail)).search,
  });
  t.equal(followed.statusCode, 302);
  const location = new URL(String(followed.headers.location));
  const reset = await formPage(app, location.pathname + location.search);
  const newPassword = 'a brand new password';
  const done = await app.inject({
    method: 'POST',
    url: '/login/reset-password',
    cookies: reset.jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      csrf: reset.csrf,
      token: hiddenField(reset.res.body, 'token'),
      newPassword,
      confirmPassword: newPassword,
    }).toString(),
  });
  t.equal(done.statusCode, 200);
  t.match(done.body, 'Password changed');
  t.same(
    await app.services.factors.summary(user.id),
    { passkeys: 1, totp: true, recoveryCodes: 0 },
    'the factors are still there',
  );

  const page = await formPage(app, '/login/sign-in');
  const signIn = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: page.jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf: page.csrf, email: user.email, password: newPassword }).toString(),
  });
  t.equal(signIn.statusCode, 303);
  t.match(signIn.headers.location, /^\/login\/second-factor/, 'the new password leads to the second factor');
  t.notOk(cookiesOf(signIn)['idp.session'], 'and no session before it');
  t.equal(await liveSessions(user.id), 0);
  const json = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: user.email, password: newPassword }),
  });
  t.equal(json.json().secondFactor, true, 'the JSON sign-in says the same');
  t.notOk(cookiesOf(json)['idp.session']);
});
