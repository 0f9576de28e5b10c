// /api/me/applications (issue 17): the applications the user gave access to, and revoking one: its
// refresh token then fails with invalid_grant, its access token gets 401, the next authorize asks for
// consent again, and nothing of another application or another user is touched.
import t from 'tap';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { obtainTokens, tokenRequest } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';

const { app, database, newUser, signIn, me } = await meTestApp(t);
const db = database.db;
const actor = { actor: 'test' };
const redirectA = 'https://a.example/cb';
const redirectB = 'https://b.example/cb';
const appA = await app.services.applications.create(
  { clientName: 'Alpha Notes', redirectUris: [redirectA], clientLogoUrl: 'https://a.example/logo.png' },
  actor,
);
const appB = await app.services.applications.create({ clientName: 'Beta Mail', redirectUris: [redirectB] }, actor);

const alice = await newUser();
const bob = await newUser();
const carol = await newUser();
const jar = await signIn(alice.email);
const carolJar = await signIn(carol.email);

const flow = (clientId: string, redirectUri: string, who = alice, scope = 'openid profile offline_access') =>
  obtainTokens(app, { clientId, redirectUri, email: who.email, password: who.password, scope });
const external = (token: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
const refresh = (clientId: string, refreshToken: string) =>
  tokenRequest(app, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

const a1 = await flow(appA.clientId, redirectA);
const b1 = await flow(appB.clientId, redirectB, alice, 'openid email');
const bobA = await flow(appA.clientId, redirectA, bob);

t.test('no application yet: an empty list', async (t) => {
  const res = await me('GET', '/applications', { jar: carolJar });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  t.same(res.json(), { applications: [] });
});

t.test('lists each application with scopes, date granted and last use', async (t) => {
  const res = await me('GET', '/applications', { jar });
  t.equal(res.statusCode, 200);
  const list = res.json().applications;
  t.same(
    list.map((a: { clientId: string }) => a.clientId),
    [appA.clientId, appB.clientId],
    'sorted by name',
  );
  const [a, b] = list;
  t.equal(a.clientName, 'Alpha Notes');
  t.equal(a.logoUrl, 'https://a.example/logo.png');
  t.same([...a.scopes].sort(), ['offline_access', 'openid', 'profile']);
  t.ok(Date.parse(a.grantedAt));
  t.ok(Date.parse(a.lastUsedAt));
  t.equal(b.clientName, 'Beta Mail');
  t.equal(b.logoUrl, null);
  t.same([...b.scopes].sort(), ['email', 'openid']);
  t.ok(Date.parse(a.grantedAt) <= Date.parse(a.lastUsedAt));
});

t.test('last use follows a refresh rotation', async (t) => {
  const before = (await me('GET', '/applications', { jar })).json().applications[0].lastUsedAt;
  await new Promise((r) => setTimeout(r, 20));
  const rotated = await refresh(appA.clientId, a1.tokens.refresh_token!);
  t.equal(rotated.statusCode, 200);
  a1.tokens.refresh_token = rotated.json().refresh_token;
  a1.tokens.access_token = rotated.json().access_token;
  const after = (await me('GET', '/applications', { jar })).json().applications[0].lastUsedAt;
  t.ok(Date.parse(after) > Date.parse(before), `${after} > ${before}`);
});

t.test('revoking an unknown or foreign application is 404 APPLICATION_NOT_FOUND', async (t) => {
  for (const id of ['no-such-client', 'x'.repeat(300), '%20', encodeURIComponent('é')]) {
    const res = await me('DELETE', `/applications/${id}`, { jar });
    t.equal(res.statusCode, 404, id);
    t.equal(res.json().error, 'APPLICATION_NOT_FOUND');
    t.equal(res.headers['cache-control'], 'no-store');
  }
});

t.test('revoking an application ends its consent, grants, tokens and codes, and only those', async (t) => {
  const res = await me('DELETE', `/applications/${appA.clientId}`, { jar });
  t.equal(res.statusCode, 204);
  t.equal(res.body, '');
  t.equal(res.headers['cache-control'], 'no-store');

  const refreshed = await refresh(appA.clientId, a1.tokens.refresh_token!);
  t.equal(refreshed.statusCode, 400);
  t.equal(refreshed.json().error, 'invalid_grant');
  const ext = await external(a1.tokens.access_token);
  t.equal(ext.statusCode, 401);
  t.equal(ext.json().error, 'UNAUTHORIZED');

  // Beta and Bob keep theirs.
  t.equal((await external(b1.tokens.access_token)).statusCode, 200, "another application's token still works");
  t.equal((await external(bobA.tokens.access_token)).statusCode, 200, "another user's token still works");
  t.equal((await refresh(appA.clientId, bobA.tokens.refresh_token!)).statusCode, 200);

  const list = (await me('GET', '/applications', { jar })).json().applications;
  t.same(
    list.map((a: { clientId: string }) => a.clientId),
    [appB.clientId],
  );
  const consent = await db
    .selectFrom('consents')
    .selectAll()
    .where('user_id', '=', alice.id)
    .where('client_id', '=', appA.clientId)
    .execute();
  t.same(consent, []);
  const live = await db
    .selectFrom('grants')
    .select('id')
    .where('user_id', '=', alice.id)
    .where('client_id', '=', appA.clientId)
    .where('revoked_at', 'is', null)
    .execute();
  t.same(live, []);

  const consentEvents = await listAuditEvents(db, { type: 'consent.revoked', userId: alice.id });
  t.equal(consentEvents.length, 1);
  t.match(consentEvents[0], { actor: 'self', client_id: appA.clientId });
  const tokenEvents = await listAuditEvents(db, { type: 'token.revoked', userId: alice.id });
  t.ok(tokenEvents.length >= 1);
  t.ok(tokenEvents.every((e) => e.client_id === appA.clientId && e.actor === 'self'));

  const again = await me('DELETE', `/applications/${appA.clientId}`, { jar });
  t.equal(again.statusCode, 404, 'nothing left to revoke');
});

t.test('the next authorize for the revoked application asks for consent again', async (t) => {
  const verifier = 'v'.repeat(50);
  const query = new URLSearchParams({
    client_id: appA.clientId,
    redirect_uri: redirectA,
    response_type: 'code',
    scope: 'openid profile',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  });
  const res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
  t.equal(res.statusCode, 303);
  t.match(res.headers.location, /\/login\/consent\?request=/, 'the consent page, not a code');
  // Beta's remembered consent still skips the page.
  const beta = new URLSearchParams({
    client_id: appB.clientId,
    redirect_uri: redirectB,
    response_type: 'code',
    scope: 'openid email',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
  });
  const b = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${beta}`, cookies: jar });
  t.match(b.headers.location, /^https:\/\/b\.example\/cb\?code=/);
});

t.test('an unexchanged code of the revoked application is dead', async (t) => {
  const { obtainCode } = await import('../helpers/flow.js');
  const pending = await obtainCode(app, {
    clientId: appA.clientId,
    redirectUri: redirectA,
    email: alice.email,
    password: alice.password,
    scope: 'openid',
  });
  t.equal((await me('DELETE', `/applications/${appA.clientId}`, { jar })).statusCode, 204);
  const res = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: pending.code,
    code_verifier: pending.verifier,
    client_id: appA.clientId,
    redirect_uri: redirectA,
  });
  t.equal(res.statusCode, 400);
  t.equal(res.json().error, 'invalid_grant');
});
