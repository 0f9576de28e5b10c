// /api/me/sessions (issue 17): the user's live sessions with the current flag; revoking one ends it,
// its access tokens and the grants made in it (the admin's semantics); revoking the current one signs
// this browser out. Ids that are not UUIDs, or not the user's, are 404.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { obtainTokens, tokenRequest } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';

const { app, database, newUser, signIn, me } = await meTestApp(t);
const db = database.db;
const redirectUri = 'https://rp.example/cb';
const client = await app.services.applications.create(
  { clientName: 'Sessions RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);

const alice = await newUser();
const bob = await newUser();
const laptop = await signIn(alice.email, alice.password, 'Laptop/1.0');
const phone = await signIn(alice.email, alice.password, 'Phone/2.0');
const bobJar = await signIn(bob.email, bob.password);
// A token obtained in the phone's session (no offline_access: bound to the session).
const phoneTokens = (
  await obtainTokens(
    app,
    { clientId: client.clientId, redirectUri, email: alice.email, password: alice.password, scope: 'openid' },
    phone,
  )
).tokens;
const laptopTokens = (
  await obtainTokens(
    app,
    {
      clientId: client.clientId,
      redirectUri,
      email: alice.email,
      password: alice.password,
      scope: 'openid offline_access',
    },
    laptop,
  )
).tokens;
const external = (token: string) =>
  app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });

type Listed = { id: string; userAgent: string | null; current: boolean; ip: string | null };
const list = async (jar: Record<string, string>) => {
  const res = await me('GET', '/sessions', { jar });
  t.equal(res.statusCode, 200);
  return res.json().sessions as Listed[];
};

t.test('lists the live sessions with user agent, IP, times and the current flag', async (t) => {
  const res = await me('GET', '/sessions', { jar: laptop });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  const sessions = res.json().sessions;
  t.equal(sessions.length, 2, "only alice's two sessions");
  const current = sessions.filter((s: Listed) => s.current);
  t.equal(current.length, 1);
  t.equal(current[0].userAgent, 'Laptop/1.0');
  t.equal(sessions.find((s: Listed) => !s.current).userAgent, 'Phone/2.0');
  for (const s of sessions) {
    t.equal(s.ip, '127.0.0.1');
    t.ok(Date.parse(s.createdAt) && Date.parse(s.lastSeenAt) && Date.parse(s.expiresAt));
    t.same(Object.keys(s).sort(), ['createdAt', 'current', 'expiresAt', 'id', 'ip', 'lastSeenAt', 'userAgent']);
  }
  const fromPhone = await list(phone);
  t.equal(fromPhone.find((s) => s.current)!.userAgent, 'Phone/2.0');
});

t.test('ids that are not UUIDs, unknown, or of another user are 404 SESSION_NOT_FOUND', async (t) => {
  const bobSession = (await list(bobJar))[0]!.id;
  for (const id of [
    'not-a-uuid',
    "1' or '1'='1",
    'x'.repeat(500),
    '00000000-0000-4000-8000-000000000000',
    bobSession,
  ]) {
    const res = await me('DELETE', `/sessions/${encodeURIComponent(id)}`, { jar: laptop });
    t.equal(res.statusCode, 404, id.slice(0, 40));
    t.same(Object.keys(res.json()).sort(), ['error', 'message']);
    t.equal(res.json().error, 'SESSION_NOT_FOUND');
    t.equal(res.headers['cache-control'], 'no-store');
  }
  t.equal((await me('GET', '', { jar: bobJar })).statusCode, 200, "bob's session is untouched");
});

t.test('revoking another session ends it, its access tokens and the grants made in it', async (t) => {
  const phoneId = (await list(phone)).find((s) => s.current)!.id;
  t.equal((await external(phoneTokens.access_token)).statusCode, 200);
  const res = await me('DELETE', `/sessions/${phoneId}`, { jar: laptop });
  t.equal(res.statusCode, 204);
  t.equal(res.headers['cache-control'], 'no-store');
  t.notOk(res.headers['set-cookie'], 'the laptop keeps its cookie');
  t.equal((await me('GET', '', { jar: phone })).statusCode, 401, 'the phone is signed out');
  t.equal((await external(phoneTokens.access_token)).statusCode, 401, "the phone session's token is dead");
  t.equal((await me('GET', '', { jar: laptop })).statusCode, 200, 'the laptop stays');
  t.equal((await external(laptopTokens.access_token)).statusCode, 200, "the laptop's token lives");
  t.equal((await list(laptop)).length, 1, 'the revoked session is not listed');
  const grants = await db
    .selectFrom('grants')
    .select(['session_id', 'revoked_at'])
    .where('user_id', '=', alice.id)
    .execute();
  t.ok(
    grants.filter((g) => g.session_id === phoneId).every((g) => g.revoked_at),
    'grants of the phone revoked',
  );
  const events = await listAuditEvents(db, { type: 'session.revoked', userId: alice.id });
  t.match(events.at(-1), { actor: 'self', detail: { sessionId: phoneId, reason: 'self' } });
  const again = await me('DELETE', `/sessions/${phoneId}`, { jar: laptop });
  t.equal(again.statusCode, 404, 'a revoked session is not found any more');
});

t.test('revoking the current session signs out: cookie cleared, then 401', async (t) => {
  const laptopId = (await list(laptop)).find((s) => s.current)!.id;
  const res = await me('DELETE', `/sessions/${laptopId}`, { jar: laptop });
  t.equal(res.statusCode, 204);
  const cleared = (res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>).find(
    (c) => c.name === app.sessionCookieName,
  );
  t.ok(cleared, 'the session cookie is set again');
  t.equal(cleared?.value, '');
  t.equal((await me('GET', '', { jar: laptop })).statusCode, 401);
  t.equal((await external(laptopTokens.access_token)).statusCode, 401, 'its access token ends with it');
  // Its offline refresh token came from a grant made in the session: revoked too (the admin's semantics).
  const refreshed = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: laptopTokens.refresh_token!,
    client_id: client.clientId,
  });
  t.equal(refreshed.statusCode, 400);
  t.equal(refreshed.json().error, 'invalid_grant');
});
