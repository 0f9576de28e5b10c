// POST /api/me/password (issue 17): the current password is required; the new one follows the reset's
// rule; every other session, every access and refresh token, unexchanged codes and reset links end,
// the current session stays under a new cookie secret (a copy of the old cookie is signed out), and the
// "password changed" mail goes out. Wrong passwords count against
// the account's sign-in limits, so a stolen session cookie cannot guess the password faster.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { cookiesOf, obtainCode, obtainTokens, tokenRequest } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';

const { app, database, smtp, newUser, signIn, me, settle } = await meTestApp(t);
const db = database.db;
const redirectUri = 'https://rp.example/cb';
const client = await app.services.applications.create(
  { clientName: 'Password RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
const NEW_PASSWORD = 'a completely new passphrase';
const external = (token: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
const jsonSignIn = (email: string, password: string) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email, password }),
  });

t.test('bad input: wrong current password, too short, too long, too common, malformed; nothing changes', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const cases: Array<[unknown, string, string | undefined]> = [
    [{ currentPassword: 'wrong password', newPassword: NEW_PASSWORD }, 'INVALID_PASSWORD', 'currentPassword'],
    [{ currentPassword: user.password, newPassword: 'short' }, 'PASSWORD_TOO_SHORT', 'newPassword'],
    [{ currentPassword: user.password, newPassword: 'x'.repeat(129) }, 'PASSWORD_TOO_LONG', 'newPassword'],
    [{ currentPassword: user.password, newPassword: 'password123' }, 'PASSWORD_TOO_COMMON', 'newPassword'],
    [{ currentPassword: user.password, newPassword: ' Qwerty123 ' }, 'PASSWORD_TOO_COMMON', 'newPassword'],
    [{ currentPassword: user.password }, 'VALIDATION_ERROR', undefined],
    [{ currentPassword: user.password, newPassword: NEW_PASSWORD, x: 1 }, 'VALIDATION_ERROR', undefined],
  ];
  for (const [body, error, field] of cases) {
    const res = await me('POST', '/password', { jar, body });
    t.equal(res.statusCode, 400, error);
    t.equal(res.json().error, error);
    if (field) t.equal(res.json().details?.[0]?.field, field);
    t.equal(res.headers['cache-control'], 'no-store');
  }
  t.equal((await jsonSignIn(user.email, user.password)).statusCode, 200, 'the password is unchanged');
  t.equal((await me('GET', '', { jar })).statusCode, 200, 'a wrong password is 400, never a sign-out 401');
});

t.test('a change revokes everything but the current session, and mails the user', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email, user.password, 'Current/1');
  const other = await signIn(user.email, user.password, 'Other/1');
  const opts = { clientId: client.clientId, redirectUri, email: user.email, password: user.password };
  const inCurrent = (await obtainTokens(app, { ...opts, scope: 'openid offline_access' }, jar)).tokens;
  const inOther = (await obtainTokens(app, { ...opts, scope: 'openid offline_access' }, other)).tokens;
  const pending = await obtainCode(app, { ...opts, scope: 'openid' }, jar);
  await app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: user.email, redirectTo: '/login/reset-password' }),
  });
  await app.services.recovery.drain();
  const resetRow = await db.selectFrom('password_reset_tokens').selectAll().where('user_id', '=', user.id).execute();
  t.equal(resetRow.length, 1);

  const currentId = (await me('GET', '/sessions', { jar }))
    .json()
    .sessions.find((s: { current: boolean }) => s.current)?.id;
  t.ok(currentId);
  const res = await me('POST', '/password', {
    jar,
    body: { currentPassword: user.password, newPassword: NEW_PASSWORD },
  });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: true });
  t.equal(res.headers['cache-control'], 'no-store');
  const renewed = cookiesOf(res)['idp.session'];
  t.match(renewed, /^[A-Za-z0-9_-]{43}$/, 'the current session gets a new cookie secret');
  t.not(renewed, jar['idp.session']);
  t.match(String(res.headers['set-cookie']), /idp\.session=[^;]+; Max-Age=\d+; Path=\/; HttpOnly; SameSite=Lax/);

  const sessions = await me('GET', '/sessions', { jar: { ...jar, 'idp.session': renewed! } });
  t.equal(sessions.statusCode, 200, 'the current session stays, under the new cookie');
  t.match(sessions.json().sessions, [{ id: currentId, current: true }], 'the same session, not a new sign-in');
  t.equal(sessions.json().sessions.length, 1);
  t.equal((await me('GET', '', { jar })).statusCode, 401, 'a copy of the old cookie is signed out');
  t.equal((await me('GET', '', { jar: other })).statusCode, 401, 'the other session ended');
  for (const tokens of [inCurrent, inOther]) {
    t.equal((await external(tokens.access_token)).statusCode, 401, 'every access token is revoked');
    const refreshed = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.clientId,
    });
    t.equal(refreshed.statusCode, 400);
    t.equal(refreshed.json().error, 'invalid_grant', 'every refresh token is revoked');
  }
  const exchange = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: pending.code,
    code_verifier: pending.verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  });
  t.equal(exchange.json().error, 'invalid_grant', 'the unexchanged code is gone');
  const live = await db
    .selectFrom('password_reset_tokens')
    .select('token_hash')
    .where('user_id', '=', user.id)
    .where('revoked_at', 'is', null)
    .execute();
  t.same(live, [], 'the reset link is dead');

  t.equal((await jsonSignIn(user.email, user.password)).statusCode, 401, 'the old password is refused');
  t.equal((await jsonSignIn(user.email, NEW_PASSWORD)).statusCode, 200, 'the new one signs in');

  await settle();
  const mail = smtp.mails.find((m) => m.to === user.email && m.subject === 'Your password was changed');
  t.ok(mail, 'the "password changed" mail was sent');
  t.match(mail?.text, /Every other session was signed out/);
  const events = await listAuditEvents(db, { type: 'password.changed', userId: user.id });
  t.equal(events.length, 1);
  t.match(events[0], { actor: 'self', detail: { sessionsRevoked: 1 } });
  const sessionEvents = await listAuditEvents(db, { type: 'session.revoked', userId: user.id });
  t.ok(sessionEvents.some((e) => (e.detail as { reason?: string }).reason === 'password_changed'));
});

t.test('the renewed cookie ends with the session, not SESSION_TTL after the change', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const [current] = (await me('GET', '/sessions', { jar })).json().sessions as Array<{ id: string }>;
  // A session signed in long ago: two minutes of it are left.
  const end = new Date(Date.now() + 120_000);
  await db.updateTable('sessions').set({ expires_at: end }).where('id', '=', current!.id).execute();
  const res = await me('POST', '/password', {
    jar,
    body: { currentPassword: user.password, newPassword: NEW_PASSWORD },
  });
  t.equal(res.statusCode, 200);
  const maxAge = Number(/idp\.session=[^;]+; Max-Age=(\d+);/.exec(String(res.headers['set-cookie']))?.[1]);
  t.ok(maxAge >= 100 && maxAge <= 120, `Max-Age ${maxAge} is what is left of the session (at most 120 s)`);
  const row = await db.selectFrom('sessions').select('expires_at').where('id', '=', current!.id).executeTakeFirst();
  t.equal(row?.expires_at.getTime(), end.getTime(), "the session's own end is unchanged");
});

t.test('a session that ended while its change was under way: nothing changes', async (t) => {
  const user = await newUser();
  const jar = await signIn(user.email);
  const [current] = (await me('GET', '/sessions', { jar })).json().sessions as Array<{ id: string }>;
  // Signed out in another tab after this request was authenticated, before its transaction.
  await db.updateTable('sessions').set({ revoked_at: new Date() }).where('id', '=', current!.id).execute();
  await t.rejects(
    app.services.me.changePassword(
      user.id,
      current!.id,
      { currentPassword: user.password, newPassword: NEW_PASSWORD },
      { ip: '127.0.0.1', userAgent: null },
    ),
    { statusCode: 401, code: 'UNAUTHENTICATED' },
  );
  t.equal((await jsonSignIn(user.email, user.password)).statusCode, 200, 'the password is unchanged');
  t.equal((await jsonSignIn(user.email, NEW_PASSWORD)).statusCode, 401);
});

t.test('password confirmation failures hit the per-account delay, like failed sign-ins', async (t) => {
  const limited = await meTestApp(t, {
    RATE_LIMITS: 'on',
    RATE_LIMIT_SIGN_IN_EMAIL: '2/900',
    SIGN_IN_DELAY_FIRST: '30',
    SIGN_IN_DELAY_MAX: '60',
  });
  const user = await limited.newUser();
  const jar = await limited.signIn(user.email);
  const wrong = { currentPassword: 'guess-1234', newPassword: NEW_PASSWORD };
  t.equal((await limited.me('POST', '/password', { jar, body: wrong })).statusCode, 400);
  t.equal((await limited.me('POST', '/password', { jar, body: wrong })).statusCode, 400);
  const delayed = await limited.me('POST', '/password', { jar, body: wrong });
  t.equal(delayed.statusCode, 429, 'the account is in its delay');
  t.equal(delayed.json().error, 'TOO_MANY_REQUESTS');
  t.ok(Number(delayed.headers['retry-after']) >= 1 && Number(delayed.headers['retry-after']) <= 30);
  t.equal(delayed.headers['cache-control'], 'no-store');
  // The right password gets no check during the delay either (no oracle), on every confirming route.
  const right = await limited.me('POST', '/password', {
    jar,
    body: { currentPassword: user.password, newPassword: NEW_PASSWORD },
  });
  t.equal(right.statusCode, 429);
  const del = await limited.me('DELETE', '', { jar, body: { password: user.password } });
  t.equal(del.statusCode, 429);
  const email = await limited.me('POST', '/email', { jar, body: { newEmail: 'x@example.org', password: 'y' } });
  t.equal(email.statusCode, 429);
  // The same budget as the sign-in form: an unknown browser is delayed too.
  const signIn = await limited.app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: user.email, password: user.password }),
  });
  t.equal(signIn.statusCode, 429);
  t.equal((await limited.me('GET', '', { jar })).statusCode, 200, 'the session itself is not locked out');
});
