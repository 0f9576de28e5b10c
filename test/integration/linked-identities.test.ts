// Linked identities (issue 35) on the account pages and /api/me/identities: the list (provider, upstream address,
// linked and last used), "Link {Provider}" forms for the enabled providers not linked yet (to the round trip's
// start, with the page's CSRF token and purpose=link), unlinking (CSRF, a recent authentication, never the last way
// to sign in, even when two unlinks race), and what a link or an unlink does: audited, mailed (through the real
// SMTP server, past the per-recipient cap), the user's other sessions ended, never the one that acted.
// The identities are made with services.upstreams.identities.link: the round trip itself is another file's.
import t from 'tap';
import { sql } from 'kysely';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { buildTestApp } from '../helpers/app.js';
import { cookiesOf, hiddenField } from '../helpers/flow.js';
import { meTestApp, PASSWORD } from '../helpers/me.js';

const { app, database, smtp, newUser, me, settle } = await meTestApp(t);
const db = database.db;

const github = await app.services.upstreams.providers.create({
  id: 'github',
  kind: 'oauth2',
  name: 'GitHub',
  authorizationEndpoint: 'https://github.example/login/oauth/authorize',
  tokenEndpoint: 'https://github.example/login/oauth/access_token',
  userinfoEndpoint: 'https://api.github.example/user',
  emailsEndpoint: 'https://api.github.example/user/emails',
  clientId: 'gh-client',
  clientSecret: 'gh-secret-0123456789',
  clientAuth: 'client_secret_post',
  scopes: ['read:user', 'user:email'],
});
const acme = await app.services.upstreams.providers.create({
  id: 'acme',
  kind: 'oidc',
  name: 'Acme Workforce',
  issuer: 'https://id.acme.example',
  clientId: 'acme-client',
  clientSecret: 'acme-secret-0123456789',
});
await app.services.upstreams.providers.create({
  id: 'retired',
  kind: 'oidc',
  name: 'Retired Provider',
  issuer: 'https://old.example',
  clientId: 'old-client',
  clientSecret: 'old-secret-0123456789',
  enabled: false,
});

type Jar = Record<string, string>;
const METHODS = '/login/account/sign-in-methods';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const post = (url: string, form: Record<string, string>, jar: Jar, remoteAddress?: string) =>
  app.inject({
    method: 'POST',
    url,
    cookies: jar,
    headers: FORM,
    payload: new URLSearchParams(form).toString(),
    ...(remoteAddress && { remoteAddress }),
  });

let subjects = 0;
const link = (userId: string, providerId: string, o: { email?: string | null; keepSessionId?: string } = {}) =>
  app.services.upstreams.identities.link(
    { userId, providerId, subject: `subject-${++subjects}`, email: o.email === undefined ? null : o.email },
    { ip: '198.51.100.7', ...(o.keepSessionId && { keepSessionId: o.keepSessionId }) },
  );

/** A browser signed in to `userId` (a session made as a sign-in would make it): its jar. */
async function sessionOf(userId: string, amr = ['pwd']) {
  const { token, session } = await app.services.sessions.signedIn(userId, { ip: '127.0.0.1', userAgent: 'test' }, amr);
  return { jar: { 'idp.session': token } as Jar, sessionId: session.id };
}

/** The sign-in methods page in this browser: the answer, the jar with the CSRF cookie, the token. */
async function methodsPage(jar: Jar) {
  const res = await app.inject({ method: 'GET', url: METHODS, cookies: jar });
  const next = { ...jar, ...cookiesOf(res) };
  return { res, jar: next, csrf: res.statusCode === 200 ? hiddenField(res.body, 'csrf') : '' };
}

/** A user without a password: only links sign it in (an account made just in time by an upstream). */
async function linkOnlyUser() {
  const email = `jit-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const user = await app.services.users.create({ email, emailVerified: true }, { actor: 'test' });
  return { id: user.id, email };
}

const stale = (sessionId: string) =>
  sql`update sessions set auth_time = now() - interval '2 days' where id = ${sessionId}`.execute(db);
const linksOf = async (userId: string) => app.services.upstreams.identities.listForUser(userId);
const mailsTo = (email: string) => smtp.mails.filter((m) => m.to.toLowerCase().includes(email.toLowerCase()));

t.test('the page lists linked identities and offers "Link" for each enabled provider not linked', async (t) => {
  const user = await newUser();
  await link(user.id, 'github', { email: 'octo@users.github.example' });
  const { jar } = await sessionOf(user.id);
  const { res, csrf } = await methodsPage(jar);
  t.equal(res.statusCode, 200);
  const body = res.body;
  t.match(body, /<h2 id="identities-heading">Linked identities<\/h2>/);
  t.match(body, /<strong>GitHub<\/strong> · octo@users\.github\.example/);
  t.match(body, /Linked <time datetime="[^"]+">\d{4}-\d\d-\d\d \d\d:\d\d UTC<\/time> · Last used <time/);
  const [identity] = await linksOf(user.id);
  t.match(body, `action="/login/account/identities/${identity!.id}/unlink"`);
  t.notMatch(body, /Link GitHub</, 'no "Link" for a provider linked already');
  // Link another: a form that POSTs to the round trip's start with the page's CSRF token and purpose=link.
  const form =
    /<form method="post" action="\/login\/upstream\/acme\/start" class="link-identity">([\s\S]*?)<\/form>/.exec(body);
  t.ok(form, 'a form to link Acme');
  t.match(form![1], `name="csrf" value="${csrf}"`);
  t.match(form![1], 'name="purpose" value="link"');
  t.match(form![1], 'name="return_to" value="/login/account/sign-in-methods?m=identity-linked"');
  t.match(form![1], '<button type="submit" class="secondary">Link Acme Workforce</button>');
  t.notMatch(body, /Retired Provider/, 'a disabled provider is not offered');
  // The token of the Link form passes the login pages' CSRF check (one cookie, one token): the sign-in form takes
  // it (a wrong password: 401, not 403).
  const jarWithCsrf = { ...jar, ...cookiesOf(res) };
  const login = await post('/login/sign-in', { csrf, email: user.email, password: 'wrong password' }, jarWithCsrf);
  t.equal(login.statusCode, 401, "the same token passes the login pages' CSRF check");
});

t.test('without providers the section is absent; with MFA=off it is still shown', async (t) => {
  const { app: bare } = await buildTestApp(t);
  const u = await bare.services.users.create(
    { email: 'bare@example.com', password: PASSWORD, emailVerified: true },
    { actor: 't' },
  );
  const { token } = await bare.services.sessions.signedIn(u.id, { ip: null, userAgent: null });
  const page = await bare.inject({ method: 'GET', url: METHODS, cookies: { 'idp.session': token } });
  t.equal(page.statusCode, 200);
  t.notMatch(page.body, /Linked identities/, 'no provider, no section');

  const { app: off } = await buildTestApp(t, { env: { MFA: 'off' } });
  await off.services.upstreams.providers.create({
    id: 'acme',
    kind: 'oidc',
    name: 'Acme',
    issuer: 'https://id.acme.example',
    clientId: 'c',
    clientSecret: 'secret-0123456789',
  });
  const v = await off.services.users.create(
    { email: 'off@example.com', password: PASSWORD, emailVerified: true },
    { actor: 't' },
  );
  const offSession = await off.services.sessions.signedIn(v.id, { ip: null, userAgent: null });
  const offPage = await off.inject({ method: 'GET', url: METHODS, cookies: { 'idp.session': offSession.token } });
  t.match(offPage.body, /Second factors are switched off on this server/);
  t.match(offPage.body, /Linked identities/);
  t.match(offPage.body, /Link Acme</);
});

t.test('unlinking on the page: audited, mailed, the other sessions end, this one stays', async (t) => {
  const user = await newUser();
  const id = await link(user.id, 'github', { email: 'octo2@users.github.example' });
  await settle();
  const before = mailsTo(user.email).length;
  const other = await sessionOf(user.id);
  const { jar, csrf } = await methodsPage((await sessionOf(user.id)).jar);
  const res = await post(`/login/account/identities/${id}/unlink`, { csrf }, jar, '203.0.113.9');
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, `${METHODS}?m=identity-unlinked`);
  t.same(await linksOf(user.id), []);
  const after = await app.inject({ method: 'GET', url: `${METHODS}?m=identity-unlinked`, cookies: jar });
  t.equal(after.statusCode, 200, 'this session stays');
  t.match(after.body, 'The identity is unlinked: it no longer signs you in. Your other sessions were signed out.');
  t.equal((await me('GET', '', { jar: other.jar })).statusCode, 401, 'the other session ended');

  const events = await listAuditEvents(db, { userId: user.id });
  const unlinked = events.find((e) => e.type === 'upstream.unlinked');
  t.ok(unlinked, 'audited');
  t.match(unlinked!.detail, { provider: 'github', identity: id, sessionsRevoked: 1 });
  t.equal(unlinked!.ip, '203.0.113.9');
  t.ok(events.some((e) => e.type === 'session.revoked' && e.detail.sessionId === other.sessionId));

  await settle();
  const mails = mailsTo(user.email).slice(before);
  t.equal(mails.length, 1, 'one mail');
  t.equal(mails[0]!.subject, 'GitHub was unlinked from your account');
  t.match(mails[0]!.text, 'the GitHub account octo2@users.github.example was unlinked from the account');
  t.match(mails[0]!.text, 'The change came from the IP address 203.0.113.9.');
  t.match(mails[0]!.text, 'Your other sessions were signed out.');
  t.match(mails[0]!.text, 'If this was not you, reset your password now');
  t.match(mails[0]!.text, 'http://localhost:3000/login/account/sign-in-methods');
  t.match(mails[0]!.text, 'http://localhost:3000/login/forgot-password');
});

t.test('unlinking needs the CSRF token and a recent authentication', async (t) => {
  const user = await newUser();
  const id = await link(user.id, 'github');
  const { jar, sessionId } = await sessionOf(user.id);
  const page = await methodsPage(jar);
  const noToken = await post(`/login/account/identities/${id}/unlink`, {}, page.jar);
  t.equal(noToken.statusCode, 403);
  const wrong = await post(`/login/account/identities/${id}/unlink`, { csrf: 'x'.repeat(43) }, page.jar);
  t.equal(wrong.statusCode, 403);
  await stale(sessionId);
  const stalePage = await methodsPage(jar);
  t.match(stalePage.res.body, 'You will be asked to sign in again before unlinking.');
  const res = await post(`/login/account/identities/${id}/unlink`, { csrf: page.csrf }, page.jar);
  t.equal(res.statusCode, 303);
  t.equal(
    res.headers.location,
    `/login/sign-in?return_to=${encodeURIComponent('/login/account/sign-in-methods')}`,
    'sign in again, then back to the page',
  );
  t.equal((await linksOf(user.id)).length, 1, 'still linked');
  const signedOut = await post(
    `/login/account/identities/${id}/unlink`,
    { csrf: page.csrf },
    {
      'idp.csrf': page.jar['idp.csrf']!,
    },
  );
  t.equal(signedOut.statusCode, 303);
  t.match(String(signedOut.headers.location), /^\/login\/sign-in\?return_to=/);
});

t.test("another user's identity, or an unknown one, is not found", async (t) => {
  const alice = await newUser();
  const bob = await newUser();
  const bobs = await link(bob.id, 'github');
  const { jar, csrf } = await methodsPage((await sessionOf(alice.id)).jar);
  for (const id of [bobs, '00000000-0000-4000-8000-000000000000', 'not-an-id']) {
    const res = await post(`/login/account/identities/${id}/unlink`, { csrf }, jar);
    t.equal(res.statusCode, 404, id);
    t.match(res.body, 'This identity is not linked to your account (any more).');
  }
  t.equal((await linksOf(bob.id)).length, 1, "bob's link stays");
  const api = await me('DELETE', `/identities/${bobs}`, { jar });
  t.equal(api.statusCode, 404);
  t.same(api.json(), { error: 'UPSTREAM_IDENTITY_NOT_FOUND', message: 'no such linked identity' });
});

t.test('the last way to sign in cannot be unlinked; with a password (or another link) it can', async (t) => {
  const only = await linkOnlyUser();
  const id = await link(only.id, 'acme', { email: only.email });
  const { jar, csrf } = await methodsPage((await sessionOf(only.id, ['fed'])).jar);
  const page = await post(`/login/account/identities/${id}/unlink`, { csrf }, jar);
  t.equal(page.statusCode, 409);
  t.match(page.body, 'This is the only way to sign in to your account, so it cannot be unlinked.');
  t.match(page.body, /<li id="identity-[^"]+">[\s\S]*role="alert"/, 'the refusal next to the identity');
  const api = await me('DELETE', `/identities/${id}`, { jar });
  t.equal(api.statusCode, 409);
  t.equal(api.json().error, 'LAST_SIGN_IN_METHOD');
  t.equal(api.headers['cache-control'], 'no-store');
  t.equal((await linksOf(only.id)).length, 1, 'still linked');

  // A second link: now either one can go (not both).
  const second = await link(only.id, 'github');
  t.equal((await me('DELETE', `/identities/${id}`, { jar })).statusCode, 204);
  t.equal((await me('DELETE', `/identities/${second}`, { jar })).statusCode, 409, 'the last one stays');

  // A password is a way to sign in: its only link can go.
  const withPassword = await newUser();
  const linked = await link(withPassword.id, 'acme');
  const session = await sessionOf(withPassword.id);
  t.equal((await me('DELETE', `/identities/${linked}`, { jar: session.jar })).statusCode, 204);
  t.same(await linksOf(withPassword.id), []);
});

t.test('two unlinks of the last two links at once leave one', async (t) => {
  for (let round = 0; round < 3; round++) {
    const user = await linkOnlyUser();
    const ids = [await link(user.id, 'acme'), await link(user.id, 'github')];
    const jars = [(await sessionOf(user.id, ['fed'])).jar, (await sessionOf(user.id, ['fed'])).jar];
    // Each request keeps its own session: both are live when the unlinks start.
    const answers = await Promise.all(ids.map((id, i) => me('DELETE', `/identities/${id}`, { jar: jars[i]! })));
    const codes = answers.map((a) => a.statusCode).sort();
    t.same(codes, [204, 409], `round ${round}: one unlinked, one refused`);
    t.equal(answers.find((a) => a.statusCode === 409)!.json().error, 'LAST_SIGN_IN_METHOD');
    t.equal((await linksOf(user.id)).length, 1, 'one link left');
  }
});

t.test('GET /api/me/identities: the linked identities, no token, no-store', async (t) => {
  const user = await newUser();
  const a = await link(user.id, 'github', { email: 'octo3@users.github.example' });
  const b = await link(user.id, 'acme');
  const { jar } = await sessionOf(user.id);
  const res = await me('GET', '/identities', { jar });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  const { identities } = res.json();
  t.same(
    identities.map((i: { id: string }) => i.id),
    [a, b],
  );
  t.same(Object.keys(identities[0]).sort(), [
    'createdAt',
    'email',
    'id',
    'lastUsedAt',
    'providerId',
    'providerName',
    'subject',
  ]);
  t.match(identities[0], {
    providerId: 'github',
    providerName: github.name,
    email: 'octo3@users.github.example',
  });
  t.match(identities[1], { providerId: 'acme', providerName: acme.name, email: null });
  t.ok(Date.parse(identities[0].createdAt));
  const anonymous = await me('GET', '/identities');
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.json().error, 'UNAUTHENTICATED');
  const foreign = await me('GET', '/identities', { jar, headers: { origin: 'https://evil.example' } });
  t.equal(foreign.statusCode, 403);
});

t.test('DELETE /api/me/identities/:id: 204, needs a recent authentication, ends the other sessions', async (t) => {
  const user = await newUser();
  const id = await link(user.id, 'github');
  const mine = await sessionOf(user.id);
  const other = await sessionOf(user.id);
  await stale(mine.sessionId);
  const refused = await me('DELETE', `/identities/${id}`, { jar: mine.jar });
  t.equal(refused.statusCode, 401);
  t.same(refused.json(), { error: 'REAUTHENTICATION_REQUIRED', message: 'Sign in again to unlink an identity' });
  t.equal((await linksOf(user.id)).length, 1);
  const withBody = await me('DELETE', `/identities/${id}`, {
    jar: other.jar,
    body: '{}',
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(withBody.statusCode, 415, 'a body must be JSON (no cross-site form)');
  const done = await me('DELETE', `/identities/${id}`, { jar: other.jar });
  t.equal(done.statusCode, 204);
  t.equal(done.body, '');
  t.equal((await me('GET', '', { jar: mine.jar })).statusCode, 401, 'the other session ended');
  t.equal((await me('GET', '', { jar: other.jar })).statusCode, 200, 'this one stays');
});

t.test('a link is audited and mailed; a user-made one ends the other sessions, a proof keeps its own', async (t) => {
  const user = await newUser();
  const older = await sessionOf(user.id);
  const acting = await sessionOf(user.id);
  await settle();
  const before = mailsTo(user.email).length;
  const id = await link(user.id, 'acme', { email: 'someone@acme.example', keepSessionId: acting.sessionId });
  t.equal((await me('GET', '', { jar: acting.jar })).statusCode, 200, 'the session that linked stays');
  t.equal((await me('GET', '', { jar: older.jar })).statusCode, 401, 'another session ended');
  const events = await listAuditEvents(db, { userId: user.id });
  const linked = events.find((e) => e.type === 'upstream.linked');
  t.match(linked, { ip: '198.51.100.7', detail: { provider: 'acme', identity: id, sessionsRevoked: 1 } });
  await settle();
  const mails = mailsTo(user.email).slice(before);
  t.equal(mails.length, 1);
  t.equal(mails[0]!.subject, 'Acme Workforce was linked to your account');
  t.match(mails[0]!.text, `a Acme Workforce account someone@acme.example was linked to the account ${user.email}`);
  t.match(mails[0]!.text, 'The change came from the IP address 198.51.100.7.');
  t.match(mails[0]!.text, 'If this was not you, sign in, unlink it on your sign-in methods page');
  t.match(mails[0]!.html, '<a href="http://localhost:3000/login/account/sign-in-methods">');

  // A link made by the sign-in flow without a session to keep (e.g. after a pending link's proof): no session
  // ends, the mail still goes.
  const proof = await sessionOf(user.id);
  await link(user.id, 'github');
  t.equal((await me('GET', '', { jar: proof.jar })).statusCode, 200, 'the session that proved it stays');
  t.equal((await me('GET', '', { jar: acting.jar })).statusCode, 200);
  await settle();
  const more = mailsTo(user.email).slice(before + 1);
  t.equal(more.length, 1);
  t.equal(more[0]!.subject, 'GitHub was linked to your account');
  t.notMatch(more[0]!.text, /signed out/);

  // Linked already (to anyone): 409, nothing mailed.
  const row = (await linksOf(user.id)).find((i) => i.providerId === 'github')!;
  await t.rejects(
    app.services.upstreams.identities.link(
      { userId: (await newUser()).id, providerId: 'github', subject: row.subject, email: null },
      { ip: null },
    ),
    { statusCode: 409, code: 'UPSTREAM_IDENTITY_TAKEN' },
  );
});

t.test('an account created with its link in one transaction gets no link mail', async (t) => {
  const email = `created-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await db.transaction().execute(async (trx) => {
    const row = await trx
      .insertInto('users')
      .values({
        id: crypto.randomUUID(),
        email,
        password_hash: null,
        name: null,
        given_name: null,
        family_name: null,
        picture: null,
        permissions: '[]',
        email_verified: true,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    await app.services.upstreams.identities.link(
      { userId: row.id, providerId: 'github', subject: 'jit-subject', email },
      { ip: null },
      trx,
    );
  });
  const created = await app.services.upstreams.identities.find('github', 'jit-subject');
  t.ok(created, 'linked');
  // A mail sent to some other address after it: when it has arrived, a mail to the new account would have too.
  const marker = await newUser();
  await link(marker.id, 'github');
  await smtp.waitFor(marker.email);
  await settle();
  t.same(mailsTo(email), []);
});

t.test('the link and unlink notices pass the per-recipient cap', async (t) => {
  const { app: capped } = await buildTestApp(t, {
    env: { RATE_LIMITS: 'on', SMTP_URL: smtp.url, RATE_LIMIT_MAIL_RECIPIENT: '1/3600' },
    database,
  });
  const user = await newUser();
  // The recipient's budget is spent.
  t.equal(await capped.mailRecipientCap(user.email), true);
  t.equal(await capped.mailRecipientCap(user.email), false);
  const id = await capped.services.upstreams.identities.link(
    { userId: user.id, providerId: 'acme', subject: `capped-${user.id}`, email: null },
    { ip: null },
  );
  await capped.services.upstreams.identities.unlink(user.id, id, { ip: null, actor: 'operator@example.com' });
  await capped.services.mailer.drain();
  t.same(
    mailsTo(user.email).map((m) => m.subject),
    ['Acme Workforce was linked to your account', 'Acme Workforce was unlinked from your account'],
  );
  const unlinked = mailsTo(user.email)[1]!;
  t.match(unlinked.text, 'An administrator made this change. Every session was signed out.');
});

t.test('an account without a password: its export lists its links, and a recent sign-in deletes it', async (t) => {
  const fed = await app.services.users.create(
    { email: 'fed-only@example.com', emailVerified: true },
    { actor: 'test' },
  );
  await link(fed.id, 'github', { email: 'fed@users.github.example' });
  const { jar, sessionId } = await sessionOf(fed.id, ['fed']);

  const exported = await me('GET', '/export', { jar });
  t.equal(exported.statusCode, 200);
  const identities = exported.json().linkedIdentities as Array<Record<string, unknown>>;
  t.same(
    identities.map((i) => [i.providerId, i.email]),
    [['github', 'fed@users.github.example']],
  );
  t.notOk(
    Object.keys(identities[0]!).some((k) => /token/i.test(k)),
    'never the upstream tokens',
  );

  // Signed in long ago: no password to give, so a new sign-in is asked for; nothing is deleted.
  await db
    .updateTable('sessions')
    .set({ auth_time: sql`now() - interval '1 hour'` })
    .where('id', '=', sessionId)
    .execute();
  const stale = await me('DELETE', '', { jar, body: {} });
  t.equal(stale.statusCode, 401);
  t.equal(stale.json().error, 'REAUTHENTICATION_REQUIRED');
  t.ok(await app.services.users.get(fed.id), 'still there');

  const fresh = await sessionOf(fed.id, ['fed']);
  const deleted = await me('DELETE', '', { jar: fresh.jar, body: {} });
  t.equal(deleted.statusCode, 204, deleted.body);
  t.equal(
    (await db.selectFrom('upstream_identities').select('id').where('user_id', '=', fed.id).execute()).length,
    0,
    'the link went with the account',
  );
});

t.test('an account with a password still gives it to be deleted', async (t) => {
  const user = await newUser();
  const { jar } = await sessionOf(user.id);
  const res = await me('DELETE', '', { jar, body: {} });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'VALIDATION_ERROR');
  t.match(res.json().message, /Enter your current password/);
  t.ok(await app.services.users.get(user.id), 'still there');
});
