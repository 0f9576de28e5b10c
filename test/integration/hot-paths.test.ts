// The one-statement paths of the common flows (issue 14) keep every rule of the slower paths they
// bypass: single sign-on with nothing to ask stores no pending request, but never issues a code
// without remembered consent; the session's last-seen time is written only now and then; a refresh
// that the one-statement rotation refuses still gets its precise answer from the locked path.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainCode, obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const { app, database } = await buildTestApp(t);
const db = database.db;
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  {
    clientName: 'Hot RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  actor,
);
let n = 0;
async function signedInUser() {
  const email = `hot-${++n}@example.com`;
  const user = await app.services.users.create({ email, password: 'hot-password-1', emailVerified: true }, actor);
  const flow = {
    clientId: client.clientId,
    redirectUri,
    email,
    password: 'hot-password-1',
    scope: 'openid offline_access',
  };
  const first = await obtainTokens(app, flow);
  return { user, flow, jar: first.jar, tokens: first.tokens };
}
const requestRows = async () =>
  Number((await sql<{ n: number }>`select count(*)::int as n from authorization_requests`.execute(db)).rows[0]!.n);

function authorize(jar: Record<string, string>, extra: Record<string, string> = {}) {
  const query = new URLSearchParams({
    client_id: client.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid offline_access',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
    state: 'st',
    ...extra,
  });
  return app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
}

t.test('single sign-on with remembered consent: a code at once, no pending request stored', async (t) => {
  const { jar, flow, user } = await signedInUser();
  const before = await requestRows();
  const granted = (await listAuditEvents(db, { type: 'authorization.granted', userId: user.id })).length;
  const { code, verifier } = await obtainCode(app, flow, jar);
  t.equal(await requestRows(), before, 'no authorization_requests row');
  const events = async () => (await listAuditEvents(db, { type: 'authorization.granted', userId: user.id })).length;
  t.equal(await events(), granted, 'the code is sealed: issuing it wrote nothing');
  const res = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  });
  t.equal(res.statusCode, 200);
  t.equal(await events(), granted + 1, 'authorization.granted, with the grant the exchange created');
  t.equal((await userinfo(app, res.json().access_token)).statusCode, 200);
});

t.test('signed in, but the consent was withdrawn: the consent page, never a code', async (t) => {
  const { jar, user } = await signedInUser();
  await sql`delete from consents where user_id = ${user.id}`.execute(db);
  const grants = async () =>
    Number(
      (await sql<{ n: number }>`select count(*)::int as n from grants where user_id = ${user.id}`.execute(db)).rows[0]!
        .n,
    );
  const before = await grants();
  const res = await authorize(jar);
  t.equal(res.statusCode, 303);
  t.match(res.headers.location, /\/login\/consent\?request=/);
  t.equal(await grants(), before, 'nothing written by the refused one-statement issue');
  const requestId = new URL(res.headers.location as string, 'http://x').searchParams.get('request')!;
  const stored = await sql<{
    browser_hash: string | null;
  }>`select browser_hash from authorization_requests where id = ${requestId}`.execute(db);
  t.ok(stored.rows[0]?.browser_hash, 'the request shown is stored and bound to the browser');
  // Scopes beyond the remembered consent are asked for too.
  const wider = await signedInUser();
  const more = await authorize(wider.jar, { scope: 'openid offline_access profile' });
  t.match(more.headers.location, /\/login\/consent\?request=/);
});

t.test('prompt=none without consent: consent_required, nothing stored', async (t) => {
  const { jar, user } = await signedInUser();
  await sql`delete from consents where user_id = ${user.id}`.execute(db);
  const before = await requestRows();
  const res = await authorize(jar, { prompt: 'none' });
  const location = new URL(res.headers.location as string);
  t.equal(location.origin + location.pathname, redirectUri);
  t.equal(location.searchParams.get('error'), 'consent_required');
  t.equal(location.searchParams.get('state'), 'st');
  t.equal(await requestRows(), before);
});

t.test('prompt=consent with remembered consent still asks', async (t) => {
  const { jar } = await signedInUser();
  const res = await authorize(jar, { prompt: 'consent' });
  t.match(res.headers.location, /\/login\/consent\?request=/);
});

t.test("the session's last-seen time: written when older than the touch interval, not on every request", async (t) => {
  const { jar, user } = await signedInUser();
  const lastSeen = async () =>
    (
      await sql<{ at: Date }>`select last_seen_at as at from sessions where user_id = ${user.id}`.execute(db)
    ).rows[0]!.at.valueOf();
  const old = new Date(Date.now() - 120_000);
  await sql`update sessions set last_seen_at = ${old} where user_id = ${user.id}`.execute(db);
  t.equal((await authorize(jar)).statusCode, 303);
  const touched = await lastSeen();
  t.ok(touched > old.valueOf() + 100_000, 'a stale last-seen time is refreshed');
  t.equal((await authorize(jar)).statusCode, 303);
  t.equal(await lastSeen(), touched, 'a recent one is left alone');
});

t.test("refresh: what the one-statement rotation refuses gets the locked path's answer", async (t) => {
  const { tokens, user } = await signedInUser();
  const refresh = (token: string, extra: Record<string, string> = {}) =>
    tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: client.clientId, ...extra });
  const first = await refresh(tokens.refresh_token!);
  t.equal(first.statusCode, 200);
  t.equal(first.json().scope, 'openid offline_access');
  // Narrowing goes through the locked path.
  const narrowed = await refresh(first.json().refresh_token, { scope: 'openid' });
  t.equal(narrowed.statusCode, 200);
  t.equal(narrowed.json().scope, 'openid');
  // A disabled user: refused, and nothing rotated.
  await app.services.users.setDisabled(user.id, true, actor);
  const refused = await refresh(narrowed.json().refresh_token);
  t.equal(refused.statusCode, 400);
  t.equal(refused.json().error, 'invalid_grant');
  // The used token: reuse detection revokes the family, as before.
  const replay = await refresh(tokens.refresh_token!);
  t.equal(replay.json().error, 'invalid_grant');
  const rotated = await listAuditEvents(db, { type: 'refresh_token.rotated', userId: user.id });
  t.equal(rotated.length, 2, 'one rotated event per successful refresh');
  t.same(Object.keys(rotated[0]!.detail).sort(), ['grantId', 'scope']);
});
