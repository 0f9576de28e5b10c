// The passkey routes (issue 34) over HTTP, with a software authenticator (test/helpers/webauthn.ts), as someone
// other than the user would try them: the JSON ceremonies refuse a request without the CSRF token, another
// content type or a foreign Origin; a challenge fetched by one browser is refused in another; a passkey-only
// sign-in continues the authorization request that this browser started; as a second factor, another user's
// passkey counts as a wrong attempt and enough of them end the pending sign-in; adding a passkey needs a recent
// authentication; another user's passkey can be neither renamed nor removed; the assets are served with the
// CSP that lets the pages load them (and nothing inline).
import t from 'tap';
import { sql } from 'kysely';
import { cookiesOf, formPage } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';
import { softwareAuthenticator } from '../helpers/webauthn.js';

const { app, database, newUser } = await meTestApp(t);
const origin = 'http://localhost:3000';
const rpId = 'localhost';

/** A browser: its cookie jar and the CSRF token of the sign-in page. */
async function browser(path = '/login/sign-in', jar: Record<string, string> = {}) {
  const page = await formPage(app, path, jar);
  return { jar: page.jar, csrf: page.csrf, body: page.res.body };
}

async function json(
  url: string,
  b: { jar: Record<string, string> },
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
) {
  const res = await app.inject({
    method: 'POST',
    url,
    cookies: b.jar,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body),
  });
  Object.assign(b.jar, cookiesOf(res));
  return res;
}

/** Signs in with the password on the hosted page: the browser's jar then holds a session (or a pending one). */
async function passwordSignIn(b: { jar: Record<string, string>; csrf: string }, email: string, password: string) {
  const res = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: b.jar,
    payload: { csrf: b.csrf, email, password },
  });
  Object.assign(b.jar, cookiesOf(res));
  return res;
}

const userKeys = new Map<string, { key: ReturnType<typeof softwareAuthenticator> }>();

/** A user with a passkey registered through the account page's JSON endpoints. */
async function userWithPasskey(o: { uv?: boolean } = {}) {
  const user = await newUser();
  const key = softwareAuthenticator({ origin, rpId, uv: o.uv ?? true });
  const b = await browser();
  t.equal((await passwordSignIn(b, user.email, user.password)).statusCode, 303);
  const methods = await browser('/login/account/sign-in-methods', b.jar);
  const options = await json('/login/account/passkeys/options', b, { csrf: methods.csrf });
  if (options.statusCode !== 200) throw new Error(`options: ${options.statusCode} ${options.body}`);
  const verify = await json('/login/account/passkeys/verify', b, {
    csrf: methods.csrf,
    response: key.register(options.json()),
    name: 'Test key',
  });
  if (verify.statusCode !== 200) throw new Error(`verify: ${verify.statusCode} ${verify.body}`);
  userKeys.set(user.id, { key });
  return { user, key, b };
}

t.test('the assets and the pages that load them', async (t) => {
  const bundle = await app.inject({ method: 'GET', url: '/login/assets/webauthn.js' });
  t.equal(bundle.statusCode, 200);
  t.match(bundle.headers['content-type'], /text\/javascript/);
  t.match(bundle.body, /SimpleWebAuthnBrowser/);
  const ours = await app.inject({ method: 'GET', url: '/login/assets/passkeys.js' });
  t.match(ours.body, /passkey-config/);
  const count = async () =>
    Number((await sql<{ n: string }>`select count(*) as n from webauthn_challenges`.execute(database.db)).rows[0]!.n);
  const rowsBefore = await count();
  const page = await app.inject({ method: 'GET', url: '/login/sign-in' });
  t.equal(await count(), rowsBefore, 'the page offers a challenge without writing anything (it is sealed)');
  t.match(page.headers['content-security-policy'], /script-src 'self'; connect-src 'self'/);
  t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/);
  t.match(page.body, /autocomplete="username webauthn"/);
  t.match(page.body, /data-options="[^"]*challenge[^"]*"/, 'the autofill request comes with the page');
  t.match(String(page.headers['set-cookie']), /idp\.authz=/, 'its challenge bound to this browser');
  t.notMatch(page.body, /<script>/, 'no inline script');
  const plain = await app.inject({ method: 'GET', url: '/login/forgot-password' });
  t.notMatch(plain.headers['content-security-policy'], /script-src/, 'pages without scripts keep the strict CSP');
});

t.test('first party only', async (t) => {
  const b = await browser();
  const ok = await json('/login/passkeys/sign-in/options', b, { csrf: b.csrf });
  t.equal(ok.statusCode, 200);
  t.equal(ok.json().userVerification, 'required');
  t.equal(ok.headers['cache-control'], 'no-store');
  const noCsrf = await json('/login/passkeys/sign-in/options', b, { csrf: 'x'.repeat(43) });
  t.equal(noCsrf.statusCode, 403);
  t.equal(noCsrf.json().error, 'CSRF');
  const foreign = await json(
    '/login/passkeys/sign-in/options',
    b,
    { csrf: b.csrf },
    { origin: 'https://evil.example' },
  );
  t.equal(foreign.statusCode, 403);
  const form = await app.inject({
    method: 'POST',
    url: '/login/passkeys/sign-in/options',
    cookies: b.jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `csrf=${b.csrf}`,
  });
  t.equal(form.statusCode, 415, 'a form post (what another site can send) is refused');
  t.equal(form.json().error, 'UNSUPPORTED_MEDIA_TYPE');
  const bad = await json('/login/passkeys/sign-in/verify', b, { csrf: b.csrf, response: { id: 'x' } });
  t.equal(bad.statusCode, 400);
  t.equal(bad.json().error, 'VALIDATION_ERROR');
});

t.test('passkey-only sign-in: bound to the browser, continues the authorization request', async (t) => {
  const { user, key } = await userWithPasskey();
  const client = await app.services.applications.create(
    { clientName: 'RP', redirectUris: ['https://rp.example/cb'] },
    { actor: 'test' },
  );
  // Browser A starts an authorization request and fetches a challenge.
  const a = { jar: {} as Record<string, string>, csrf: '' };
  const authorize = await app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: 'https://rp.example/cb',
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 's',
    })}`,
  });
  Object.assign(a.jar, cookiesOf(authorize));
  const requestId = new URL(authorize.headers.location as string, origin).searchParams.get('request')!;
  const page = await browser(`/login/sign-in?request=${requestId}`, a.jar);
  a.csrf = page.csrf;
  a.jar = page.jar;
  const options = await json('/login/passkeys/sign-in/options', a, { csrf: a.csrf });

  // Browser B (its own cookies) replays A's challenge: refused.
  const b = await browser();
  await json('/login/passkeys/sign-in/options', b, { csrf: b.csrf }); // B's own binding cookie
  t.ok(b.jar['idp.authz'], 'B has a binding of its own');
  const stolen = await json('/login/passkeys/sign-in/verify', b, {
    csrf: b.csrf,
    response: key.authenticate(options.json()),
  });
  t.equal(stolen.statusCode, 400, `another browser cannot use this browser's challenge: ${stolen.body}`);
  t.equal(stolen.json().error, 'PASSKEY_CHALLENGE_INVALID');
  t.notOk(cookiesOf(stolen)['idp.session'], 'no session');

  // B cannot continue A's authorization request either.
  const bOptions = await json('/login/passkeys/sign-in/options', b, { csrf: b.csrf });
  const other = await json('/login/passkeys/sign-in/verify', b, {
    csrf: b.csrf,
    response: key.authenticate(bOptions.json()),
    request: requestId,
  });
  t.equal(other.statusCode, 404, "another browser's authorization request is not found");

  const fresh = await json('/login/passkeys/sign-in/options', a, { csrf: a.csrf });
  const done = await json('/login/passkeys/sign-in/verify', a, {
    csrf: a.csrf,
    response: key.authenticate(fresh.json()),
    request: requestId,
  });
  t.equal(done.statusCode, 200, done.body);
  t.match(done.json().redirectTo, /\/authorize\/continue|request=/, 'goes on with the authorization request');
  t.ok(a.jar['idp.session'], 'signed in');
  const ctx = await app.services.sessions.resolve(a.jar['idp.session']);
  t.equal(ctx?.user.id, user.id);
  t.same(ctx?.session.amr, ['hwk', 'user', 'mfa']);
});

t.test('second factor: only the own passkey, attempts counted', async (t) => {
  const { user, key } = await userWithPasskey({ uv: false });
  const { key: otherKey } = await userWithPasskey();
  const b = await browser();
  const pending = await passwordSignIn(b, user.email, user.password);
  t.equal(pending.statusCode, 303);
  t.match(pending.headers.location, /\/login\/second-factor/, 'a second factor is due');
  t.notOk(b.jar['idp.session'], 'no session yet');
  const page = await browser('/login/second-factor', b.jar);
  t.match(page.body, /id="passkey-button"/, 'the page offers the passkey');

  let options = await json('/login/passkeys/second-factor/options', b, { csrf: b.csrf });
  t.equal(options.statusCode, 200);
  t.equal(options.json().allowCredentials.length, 1, 'only this user’s passkeys');
  const wrong = await json('/login/passkeys/second-factor/verify', b, {
    csrf: b.csrf,
    response: otherKey.authenticate({ ...options.json(), allowCredentials: undefined }),
  });
  t.equal(wrong.statusCode, 401, "another user's passkey is refused");
  t.equal(wrong.json().error, 'INVALID_SECOND_FACTOR');

  // Someone without the pending sign-in's cookie gets nothing to continue.
  const stranger = await browser();
  const none = await json('/login/passkeys/second-factor/options', stranger, { csrf: stranger.csrf });
  t.equal(none.statusCode, 401);
  t.equal(none.json().error, 'NO_PENDING_SIGN_IN');

  options = await json('/login/passkeys/second-factor/options', b, { csrf: b.csrf });
  const right = await json('/login/passkeys/second-factor/verify', b, {
    csrf: b.csrf,
    response: key.authenticate(options.json()),
  });
  t.equal(right.statusCode, 200, right.body);
  t.equal(right.json().redirectTo, '/login/');
  const ctx = await app.services.sessions.resolve(b.jar['idp.session']);
  t.same(ctx?.session.amr, ['pwd', 'hwk', 'mfa'], 'password and a device-bound passkey');

  // Enough wrong attempts end the pending sign-in.
  const c = await browser();
  await passwordSignIn(c, user.email, user.password);
  let last: Awaited<ReturnType<typeof json>> | undefined;
  for (let i = 0; i < 5; i++) {
    const o = await json('/login/passkeys/second-factor/options', c, { csrf: c.csrf });
    last = await json('/login/passkeys/second-factor/verify', c, {
      csrf: c.csrf,
      response: otherKey.authenticate({ ...o.json(), allowCredentials: undefined }),
    });
  }
  t.equal(last?.json().error, 'SECOND_FACTOR_ENDED', 'the fifth wrong attempt ends the pending sign-in');
  const after = await json('/login/passkeys/second-factor/options', c, { csrf: c.csrf });
  t.equal(after.statusCode, 401);
});

t.test('step-up: a password session adds the passkey in place', async (t) => {
  const { b } = await userWithPasskey();
  const registered = await app.services.sessions.resolve(b.jar['idp.session']);
  t.same(
    registered?.session.amr,
    ['pwd', 'hwk', 'user', 'mfa'],
    'the registration proved the key: the session that added it has two factors',
  );
  // A session signed in with the password alone while the user held the passkey (second factors were off then).
  await sql`update sessions set amr = '["pwd"]'::jsonb where id = ${registered!.session.id}`.execute(database.db);
  const before = await app.services.sessions.resolve(b.jar['idp.session']);
  t.same(before?.session.amr, ['pwd']);
  const page = await browser('/login/second-factor', b.jar);
  t.match(page.body, /Confirm it is you/);
  const options = await json('/login/passkeys/second-factor/options', b, { csrf: page.csrf });
  t.equal(options.statusCode, 200);
  const { key } = userKeys.get(before!.user.id)!;
  const done = await json('/login/passkeys/second-factor/verify', b, {
    csrf: page.csrf,
    response: key.authenticate(options.json()),
  });
  t.equal(done.statusCode, 200, done.body);
  const after = await app.services.sessions.resolve(b.jar['idp.session']);
  t.equal(after?.session.id, before?.session.id, 'the same session');
  t.same(after?.session.amr, ['pwd', 'hwk', 'user', 'mfa'], 'stepped up');
});

t.test('account: fresh authentication to add or remove; only own passkeys', async (t) => {
  const { user, b } = await userWithPasskey();
  const [mine] = await app.services.passkeys.list(user.id);
  const methods = await browser('/login/account/sign-in-methods', b.jar);
  t.match(methods.body, /Test key/);
  t.match(methods.body, /On one device only/);

  const stranger = await browser();
  const anon = await json('/login/account/passkeys/options', stranger, { csrf: stranger.csrf });
  t.equal(anon.statusCode, 401);
  t.equal(anon.json().error, 'NOT_SIGNED_IN');

  // Another user cannot rename or remove it.
  const other = await newUser();
  const o = await browser();
  await passwordSignIn(o, other.email, other.password);
  const otherPage = await browser('/login/account/sign-in-methods', o.jar);
  const rename = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/rename`,
    cookies: o.jar,
    payload: { csrf: otherPage.csrf, name: 'Mine now' },
  });
  t.equal(rename.statusCode, 404);
  const remove = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/remove`,
    cookies: o.jar,
    payload: { csrf: otherPage.csrf },
  });
  t.equal(remove.statusCode, 404);
  t.equal((await app.services.passkeys.list(user.id))[0]?.name, 'Test key', 'unchanged');

  // Rename by the owner (Post/Redirect/Get); an empty name is refused next to its field.
  const renamed = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/rename`,
    cookies: b.jar,
    payload: { csrf: methods.csrf, name: 'Phone' },
  });
  t.equal(renamed.statusCode, 303);
  t.match(renamed.headers.location, /m=passkey-renamed/);
  const empty = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/rename`,
    cookies: b.jar,
    payload: { csrf: methods.csrf, name: ' ' },
  });
  t.equal(empty.statusCode, 400);
  t.match(empty.body, /Give the passkey a name/);

  // Not fresh any more: adding answers REAUTHENTICATION_REQUIRED, removing sends to sign in again.
  const ctx = await app.services.sessions.resolve(b.jar['idp.session']);
  await database.db
    .updateTable('sessions')
    .set({ auth_time: new Date(Date.now() - 3600_000) })
    .where('id', '=', ctx!.session.id)
    .execute();
  const stale = await json('/login/account/passkeys/options', b, { csrf: methods.csrf });
  t.equal(stale.statusCode, 401);
  t.equal(stale.json().error, 'REAUTHENTICATION_REQUIRED');
  const add = await app.inject({
    method: 'POST',
    url: '/login/account/passkeys/add',
    cookies: b.jar,
    payload: { csrf: methods.csrf },
  });
  t.equal(add.statusCode, 303);
  t.match(add.headers.location, /^\/login\/sign-in\?return_to=/, 'sign in again, then come back');
  const staleRemove = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/remove`,
    cookies: b.jar,
    payload: { csrf: methods.csrf },
  });
  t.equal(staleRemove.statusCode, 303);
  t.match(staleRemove.headers.location, /^\/login\/sign-in\?return_to=/);
  t.equal((await app.services.passkeys.list(user.id)).length, 1, 'not removed');
  await database.db.updateTable('sessions').set({ auth_time: new Date() }).where('id', '=', ctx!.session.id).execute();
  const removed = await app.inject({
    method: 'POST',
    url: `/login/account/passkeys/${mine!.id}/remove`,
    cookies: b.jar,
    payload: { csrf: methods.csrf },
  });
  t.equal(removed.statusCode, 303);
  t.match(removed.headers.location, /m=passkey-removed/);
  t.same(await app.services.passkeys.list(user.id), []);
});
