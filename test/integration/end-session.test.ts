// RP-initiated logout, and the admin view of a user's sessions and grants.
import t from 'tap';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { oauthErrorLines } from '../helpers/oauth-log.js';

const { app, logs } = await buildTestApp(t);
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'Logout RP', redirectUris: [redirectUri], postLogoutRedirectUris: ['https://rp.example.com/bye'] },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'lou@example.com', password: 'lou-password-1', emailVerified: true },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'max@example.com', password: 'max-password-1', emailVerified: true },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'lou@example.com',
  password: 'lou-password-1',
  scope: 'openid offline_access',
};
const endSession = (query: Record<string, string>, cookies: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: `/api/auth/oauth2/end-session?${new URLSearchParams(query)}`, cookies });
const signedIn = async (jar: Record<string, string>) =>
  (await app.inject({ method: 'GET', url: '/login/', cookies: jar })).statusCode === 200;

t.test('a matching id_token_hint signs out at once and returns to the registered URI with state', async (t) => {
  const { tokens, jar } = await obtainTokens(app, flow);
  const refreshed = (
    await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: client.clientId,
    })
  ).json();
  const res = await endSession(
    { id_token_hint: tokens.id_token, post_logout_redirect_uri: 'https://rp.example.com/bye', state: 'bye-state' },
    jar,
  );
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, 'https://rp.example.com/bye?state=bye-state');
  t.notOk(await signedIn(jar), 'the hosted session ended');
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, 'its access tokens are revoked');
  t.equal((await userinfo(app, refreshed.access_token)).statusCode, 200, 'offline tokens survive');
  const again = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: refreshed.refresh_token,
    client_id: client.clientId,
  });
  t.equal(again.statusCode, 200, 'offline refresh tokens survive');
});

t.test('without a hint the user confirms; "stay" keeps the session', async (t) => {
  const { jar } = await obtainTokens(app, flow);
  const page = await endSession(
    { client_id: client.clientId, post_logout_redirect_uri: 'https://rp.example.com/bye', state: 's1' },
    jar,
  );
  t.equal(page.statusCode, 200);
  t.match(page.body, /Sign out\?/);
  t.match(page.body, /Logout RP asks to sign you out/);
  t.equal(page.headers['cache-control'], 'no-store');
  const csrfCookie = (page.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.csrf');
  const cookies = { ...jar, ...(csrfCookie ? { 'idp.csrf': csrfCookie.value } : {}) };
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
  const form = (decision: string, extra: Record<string, string> = {}) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/oauth2/end-session/confirm',
      cookies,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        csrf,
        client_id: client.clientId,
        post_logout_redirect_uri: 'https://rp.example.com/bye',
        state: 's1',
        decision,
        ...extra,
      }).toString(),
    });
  const stay = await form('stay');
  t.equal(stay.statusCode, 303);
  t.ok(await signedIn(jar), 'still signed in');
  const noCsrf = await form('sign-out', { csrf: 'y'.repeat(43) });
  t.equal(noCsrf.statusCode, 403, 'a forged confirmation is refused');
  t.match(noCsrf.body, /This form has expired/);
  t.ok(await signedIn(jar));
  const out = await form('sign-out');
  t.equal(out.statusCode, 303);
  t.equal(out.headers.location, 'https://rp.example.com/bye?state=s1');
  t.notOk(await signedIn(jar));
});

t.test('a hint for another user asks for confirmation instead of signing out', async (t) => {
  const max = await obtainTokens(app, { ...flow, email: 'max@example.com', password: 'max-password-1' });
  const { jar } = await obtainTokens(app, flow);
  const res = await endSession({ id_token_hint: max.tokens.id_token }, jar);
  t.equal(res.statusCode, 200);
  t.match(res.body, /Sign out\?/);
  t.ok(await signedIn(jar));
});

t.test('bad requests are rendered, never redirected', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const unregistered = await endSession({
    client_id: client.clientId,
    post_logout_redirect_uri: 'https://evil.example/bye',
  });
  t.equal(unregistered.statusCode, 400);
  t.notOk(unregistered.headers.location);
  t.match(unregistered.body, /post_logout_redirect_uri is not registered/);
  t.notMatch(unregistered.body, /evil\.example/, 'the refused URI is not echoed');
  t.same(
    oauthErrorLines(logs, unregistered).map((l) => [l.level, l.oauthError, l.detail]),
    [[30, 'invalid_request', 'https://evil.example/bye']],
    'the request log line has it',
  );
  const noClient = await endSession({ post_logout_redirect_uri: 'https://rp.example.com/bye' });
  t.equal(noClient.statusCode, 400);
  t.match(noClient.body, /needs client_id or id_token_hint/);
  const forged = await endSession({ id_token_hint: `${tokens.id_token.slice(0, -4)}AAAA` }, {});
  t.equal(forged.statusCode, 400);
  t.match(forged.body, /not an ID token issued here/);
  const other = await app.services.applications.create(
    { clientName: 'Other', redirectUris: [redirectUri] },
    { actor: 'test' },
  );
  const mismatch = await endSession({ id_token_hint: tokens.id_token, client_id: other.clientId });
  t.equal(mismatch.statusCode, 400);
  const json = await app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/end-session?client_id=nope`,
    headers: { accept: 'application/json' },
  });
  t.same(json.json(), { error: 'invalid_request', error_description: 'unknown client_id' });
  t.same(
    oauthErrorLines(logs, json).map((l) => [l.level, l.oauthError, l.error_description, l.detail]),
    [[30, 'invalid_request', 'unknown client_id', 'client_id nope']],
  );
});

t.test('without a session it simply returns (or says signed out)', async (t) => {
  const res = await endSession({ client_id: client.clientId, post_logout_redirect_uri: 'https://rp.example.com/bye' });
  t.equal(res.headers.location, 'https://rp.example.com/bye');
  const page = await endSession({});
  t.equal(page.statusCode, 200);
  t.match(page.body, /You are not signed in\./);
});

t.test('discovery advertises end_session_endpoint', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration' })).json();
  t.equal(doc.end_session_endpoint, 'http://localhost:3000/api/auth/oauth2/end-session');
});

t.test("admin: list and revoke a user's sessions and grants", async (t) => {
  const one = await obtainTokens(app, flow);
  const two = await obtainTokens(app, flow);
  const sessions = await app.inject({
    method: 'GET',
    url: '/api/admin/users/lou@example.com/sessions',
    headers: adminHeaders,
  });
  t.equal(sessions.statusCode, 200);
  const live = sessions.json().items.filter((s: { active: boolean }) => s.active);
  t.ok(live.length >= 2);
  const grants = await app.inject({
    method: 'GET',
    url: '/api/admin/users/lou@example.com/grants',
    headers: adminHeaders,
  });
  t.ok(
    grants
      .json()
      .items.some(
        (g: { clientId: string; revokedAt: string | null }) => g.clientId === client.clientId && g.revokedAt === null,
      ),
  );

  const revoked = await app.inject({
    method: 'POST',
    url: '/api/admin/users/lou@example.com/sessions/revoke',
    headers: adminHeaders,
  });
  t.equal(revoked.statusCode, 200);
  t.ok(revoked.json().sessions >= 2);
  t.notOk(await signedIn(one.jar));
  t.equal((await userinfo(app, two.tokens.access_token)).statusCode, 401);
  const refresh = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: one.tokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refresh.json().error, 'invalid_grant', 'admin revocation ends offline tokens too');

  const three = await obtainTokens(app, flow);
  const g = await app.inject({
    method: 'POST',
    url: '/api/admin/users/lou@example.com/grants/revoke',
    headers: adminHeaders,
  });
  t.equal(g.statusCode, 200);
  t.ok(g.json().grants >= 1);
  t.equal((await userinfo(app, three.tokens.access_token)).statusCode, 401);
  const missing = await app.inject({
    method: 'DELETE',
    url: '/api/admin/users/lou@example.com/grants/nope',
    headers: adminHeaders,
  });
  t.equal(missing.statusCode, 404);
  t.equal(missing.json().error, 'GRANT_NOT_FOUND');
  const noUser = await app.inject({
    method: 'GET',
    url: '/api/admin/users/nobody@example.com/sessions',
    headers: adminHeaders,
  });
  t.equal(noUser.statusCode, 404);
});
