// DELETE /api/me (issue 17): after the password, one transaction deletes the user and every row that
// references it, in every table of the schema (listed from information_schema, so a future table is
// covered too), except the user's audit events, which stay under a pseudonym with no personal data
// (issue 31 item 7a); then it records one user.deleted event with the pseudonym and the request's IP.
// The user's tokens stop at once.
import t from 'tap';
import { sql } from 'kysely';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { obtainCode, obtainTokens, signInWithInject, userinfo } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';
import { usingPostgres } from '../helpers/db.js';

// Rate limits on (generous for this file's own traffic), so that rows keyed by the account exist where
// the counts are stored in the database (PostgreSQL's rate_limits table).
const { app, database, smtp, newUser, signIn, me, settle } = await meTestApp(t, {
  RATE_LIMITS: 'on',
  RATE_LIMIT_SIGN_IN_IP: '1000/60',
  RATE_LIMIT_AUTHORIZE: '1000/60',
  RATE_LIMIT_RESET_REQUEST_IP: '100/60',
  RATE_LIMIT_SIGN_IN_EMAIL: '100/900',
});
const db = database.db;
const MAIL_RULES = [
  'SIGN_UP_EMAIL:',
  'RESEND_EMAIL:',
  'RESET_REQUEST_EMAIL:',
  'RESET_REQUEST_EMAIL_DAY:',
  'MAIL_RECIPIENT:',
];
const actor = { actor: 'test' };
const redirectA = 'https://a.example/cb';
const redirectB = 'https://b.example/cb';
const appA = await app.services.applications.create({ clientName: 'Alpha', redirectUris: [redirectA] }, actor);
const appB = await app.services.applications.create({ clientName: 'Beta', redirectUris: [redirectB] }, actor);

const NAME = `Zelda Uniquename ${Math.random().toString(36).slice(2, 8)}`;
const alice = await newUser({ name: NAME });
const bob = await newUser();
const PENDING_EMAIL = `pending-${Math.random().toString(36).slice(2, 8)}@example.org`;

/** Every trace the user leaves: id, address, name, the address of a pending change. */
const needles = [alice.id, alice.email, NAME, PENDING_EMAIL];

/** Table -> columns, for every table of the schema the app uses. */
async function allColumns(): Promise<Map<string, string[]>> {
  const { rows } = await sql<{ table_name: string; column_name: string }>`
    select c.table_name, c.column_name from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where c.table_schema = current_schema() and t.table_type = 'BASE TABLE'
    order by c.table_name, c.ordinal_position`.execute(db);
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.table_name, [...(out.get(r.table_name) ?? []), r.column_name]);
  return out;
}

/** Rows of `table` where any column, as text, contains any needle (case-insensitive). */
async function rowsMentioning(table: string, columns: string[], words: string[]): Promise<unknown[]> {
  const conditions = columns.flatMap((c) =>
    words.map((w) => sql`lower(${sql.ref(c)}::text) like ${`%${w.toLowerCase()}%`}`),
  );
  const { rows } = await sql`select * from ${sql.table(table)} where ${sql.join(conditions, sql` or `)}`.execute(db);
  return rows;
}

// Alice leaves traces everywhere: sessions (two browsers), consents, grants, codes, access and refresh
// tokens for two applications, a pending authorization request she signed in on, a verification link,
// a reset link, a pending e-mail change, audit events, and failed sign-ins counted by her address.
const jar = await signIn(alice.email, alice.password, 'Main/1');
const otherJar = await signIn(alice.email, alice.password, 'Other/1');
const optsA = { clientId: appA.clientId, redirectUri: redirectA, email: alice.email, password: alice.password };
const tokensA = (await obtainTokens(app, { ...optsA, scope: 'openid profile email offline_access' }, jar)).tokens;
const tokensB = (
  await obtainTokens(
    app,
    { clientId: appB.clientId, redirectUri: redirectB, email: alice.email, password: alice.password },
    otherJar,
  )
).tokens;
await obtainCode(app, { ...optsA, scope: 'openid' }, jar);
// A code stored by the release before sealed codes (db/migrations/0012-sealed-codes.ts), not yet expired.
await sql`insert into authorization_codes (code_hash, grant_id, client_id, user_id, redirect_uri, code_challenge,
    scope, auth_time, session_id, expires_at)
  select 'legacy-code-hash', g.id, g.client_id, g.user_id, ${redirectA}, ${s256Challenge('w'.repeat(50))}, 'openid',
    now(), g.session_id, now() + interval '60 seconds'
  from grants g where g.user_id = ${alice.id} limit 1`.execute(db);
{
  // An authorization request she signed in on (a fresh browser) and left at the consent step.
  const query = new URLSearchParams({
    client_id: appB.clientId,
    redirect_uri: redirectB,
    response_type: 'code',
    scope: 'openid profile',
    code_challenge: s256Challenge('v'.repeat(50)),
    code_challenge_method: 'S256',
  });
  const start = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}` });
  const requestId = new URL(start.headers.location as string, 'http://x').searchParams.get('request')!;
  const cookies = Object.fromEntries(
    (start.cookies as Array<{ name: string; value: string }>).map((c) => [c.name, c.value]),
  );
  await signInWithInject(app, alice.email, alice.password, requestId, cookies);
}
{
  // A request another browser started for her address (login_hint), nobody signed in yet.
  const query = new URLSearchParams({
    client_id: appA.clientId,
    redirect_uri: redirectA,
    response_type: 'code',
    scope: 'openid',
    code_challenge: s256Challenge('w'.repeat(50)),
    code_challenge_method: 'S256',
    login_hint: alice.email,
  });
  const hinted = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}` });
  if (hinted.statusCode !== 303) throw new Error(`authorize with login_hint: ${hinted.statusCode}`);
}
await app.services.accounts.sendVerification(alice, {});
await app.inject({
  method: 'POST',
  url: '/api/auth/request-password-reset',
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify({ email: alice.email, redirectTo: '/login/reset-password' }),
});
await app.services.recovery.drain();
await app.inject({
  method: 'POST',
  url: '/api/auth/sign-in',
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify({ email: alice.email, password: 'a wrong guess' }),
});
const changeRes = await me('POST', '/email', { jar, body: { newEmail: PENDING_EMAIL, password: alice.password } });
const bobTokens = (
  await obtainTokens(app, { ...optsA, email: bob.email, password: bob.password, scope: 'openid offline_access' })
).tokens;

const external = (token: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });

t.test('the set-up left traces of the user in many tables', async (t) => {
  t.equal(changeRes.statusCode, 202);
  const columns = await allColumns();
  const found: string[] = [];
  for (const [table, cols] of columns) if ((await rowsMentioning(table, cols, needles)).length) found.push(table);
  for (const table of [
    'users',
    'sessions',
    'consents',
    'grants',
    'authorization_codes',
    'access_tokens',
    'refresh_tokens',
    'authorization_requests',
    'email_verification_tokens',
    'password_reset_tokens',
    'email_change_tokens',
    'audit_events',
    ...(usingPostgres ? ['rate_limits'] : []),
  ]) {
    t.ok(found.includes(table), `${table} mentions the user before`);
  }
  // The tokens work, and the bearer cache holds them.
  t.equal((await external(tokensA.access_token)).statusCode, 200);
  t.equal((await userinfo(app, tokensA.access_token)).statusCode, 200);
});

t.test('bad requests delete nothing', async (t) => {
  const cases: Array<[unknown, number, string]> = [
    [{ password: 'not the password' }, 400, 'INVALID_PASSWORD'],
    [{}, 400, 'VALIDATION_ERROR'],
    [{ password: alice.password, also: 'x' }, 400, 'VALIDATION_ERROR'],
  ];
  for (const [body, status, error] of cases) {
    const res = await me('DELETE', '', { jar, body });
    t.equal(res.statusCode, status, JSON.stringify(body));
    t.equal(res.json().error, error);
    t.equal(res.headers['cache-control'], 'no-store');
  }
  const bodiless = await me('DELETE', '', { jar });
  t.equal(bodiless.statusCode, 400, 'no body: the password is missing');
  const form = await me('DELETE', '', {
    jar,
    body: `password=${encodeURIComponent(alice.password)}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(form.statusCode, 415);
  const foreign = await me('DELETE', '', {
    jar,
    body: { password: alice.password },
    headers: { origin: 'https://evil.example' },
  });
  t.equal(foreign.statusCode, 403);
  t.equal((await me('GET', '', { jar })).statusCode, 200, 'still there');
});

t.test('deleting the account leaves no row about the user in any table', async (t) => {
  const before = await listAuditEvents(db, { userId: alice.id });
  t.ok(before.length >= 5, `${before.length} security events of the user before`);
  const res = await me('DELETE', '', { jar, body: { password: alice.password } });
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal(res.headers['cache-control'], 'no-store');
  const cleared = (res.cookies as Array<{ name: string; value: string }>).find((c) => c.name === app.sessionCookieName);
  t.equal(cleared?.value, '', 'the session cookie is cleared');

  const columns = await allColumns();
  t.ok(columns.size >= 14, `${columns.size} tables checked`);
  const hinted = await sql`select id from authorization_requests where params->>'login_hint' = ${alice.email}`.execute(
    db,
  );
  t.same(hinted.rows, [], 'no pending request names her address');
  for (const [table, cols] of columns) {
    let rows = (await rowsMentioning(table, cols, needles)) as Array<Record<string, unknown>>;
    // Issue 31, item 5: the limits on mail to an address are keyed by it and outlive the account (their
    // windows end by themselves); every other count keyed by the account goes.
    if (table === 'rate_limits') rows = rows.filter((r) => !MAIL_RULES.some((rule) => String(r.key).startsWith(rule)));
    t.same(rows, [], `${table}: nothing mentions the user`);
  }
  // Issue 31, item 7a: the security events stay, under a pseudonym, and the deletion is one of them.
  // (Until then the deletion erased them and its own event named nobody, without an IP.)
  const deleted = await listAuditEvents(db, { type: 'user.deleted' });
  t.equal(deleted.length, 1);
  t.match(deleted[0], { actor: 'self', ip: '127.0.0.1', client_id: null }, "with the deleting request's IP");
  const pseudonym = deleted[0]!.user_id!;
  t.match(pseudonym, /^deleted-user:[0-9a-f-]{36}$/, 'the user.deleted event names a pseudonym');
  const after = await listAuditEvents(db, { userId: pseudonym });
  t.same(
    after.map((e) => [e.id, e.type]),
    [...before, deleted[0]!].map((e) => [e.id, e.type]),
    "every event of the user is kept, with the deletion's, all under the pseudonym",
  );
  t.same(await listAuditEvents(db, { userId: alice.id }), [], 'none names the user id');
  const change = after.find((e) => e.type === 'email_change.requested');
  t.ok(change, 'the e-mail change request is still on record');
  t.notOk('newEmail' in (change!.detail as object), 'without the address it was for');
  const text = JSON.stringify(after).toLowerCase();
  for (const needle of needles) t.notOk(text.includes(needle.toLowerCase()), `no event mentions ${needle}`);
  t.notMatch(text, /@example\./, 'no e-mail address remains in them');
});

t.test("the deleted user's tokens and sessions stop at once; others are untouched", async (t) => {
  for (const token of [tokensA.access_token, tokensB.access_token]) {
    const ext = await external(token);
    t.equal(ext.statusCode, 401, 'not 404: the token is dead');
    t.equal(ext.json().error, 'UNAUTHORIZED');
    const info = await userinfo(app, token);
    t.equal(info.statusCode, 401);
  }
  const refreshed = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: tokensA.refresh_token!,
      client_id: appA.clientId,
    }).toString(),
  });
  t.equal(refreshed.json().error, 'invalid_grant');
  t.equal((await me('GET', '', { jar: otherJar })).statusCode, 401, 'the other browser is signed out');
  t.equal((await external(bobTokens.access_token)).statusCode, 200, "bob's token still works");
  const signInAgain = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: alice.email, password: alice.password }),
  });
  t.equal(signInAgain.statusCode, 401);
  const signUp = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-up',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ email: alice.email, password: 'a fresh start here' }),
  });
  t.equal(signUp.statusCode, 201, 'the address is free again');
  await settle();
  t.ok(smtp.mails.length > 0);
  // Issue 31: every sign-up answers 201; that the address is free shows in the mail it gets.
  t.ok(
    smtp.mails.some(
      (m) => m.to.includes(alice.email) && m.subject === 'Confirm your e-mail address to create your account',
    ),
    'the sign-up link for a free address, not the "someone tried" mail',
  );
});

t.test('the last enabled administrator cannot delete their account; with another one, they can', async (t) => {
  const password = 'admin-password-1';
  const email = `admin-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const admin = await app.services.users.create({ email, password, emailVerified: true, role: 'admin' }, actor);
  const adminJar = await signIn(email, password);
  const refused = await me('DELETE', '', { jar: adminJar, body: { password } });
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().error, 'LAST_ADMIN');
  t.match(refused.json().message, /make another user an administrator/);
  t.equal((await me('GET', '', { jar: adminJar })).statusCode, 200, 'still there, still signed in');

  // A disabled administrator does not count.
  const other = await app.services.users.create(
    { email: `other-${email}`, password, role: 'admin', disabled: true },
    actor,
  );
  t.equal((await me('DELETE', '', { jar: adminJar, body: { password } })).json().error, 'LAST_ADMIN');
  await app.services.users.setDisabled(other.id, false, actor);
  const deleted = await me('DELETE', '', { jar: adminJar, body: { password } });
  t.equal(deleted.statusCode, 204);
  t.same(await db.selectFrom('users').select('id').where('id', '=', admin.id).execute(), []);
});
