// Single sign-on in one statement (issue 14): authorize with a session cookie finds the live session, checks
// what nextStep() would (enabled user, verified e-mail, max_age, remembered consent, no prompt=login/consent)
// and answers with a sealed code bound to that session, writing nothing (the exchange writes the grant and
// authorization.granted); whenever one of these does not hold the long way answers exactly as before.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { openCode, redirectUriHash } from '../../src/oauth/sealed-code.js';

const { app, database, config } = await buildTestApp(t);
const db = database.db;
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  {
    clientName: 'SSO RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  actor,
);
const email = 'sso-one@example.com';
const user = await app.services.users.create({ email, password: 'sso-one-password', emailVerified: true }, actor);
const flow = { clientId: client.clientId, redirectUri, email, password: 'sso-one-password', scope: 'openid profile' };
const { jar } = await obtainTokens(app, flow);
const session = (
  await sql<{ id: string; auth_time: Date }>`select id, auth_time from sessions where user_id = ${user.id}`.execute(db)
).rows[0]!;

const authorize = (extra: Record<string, string> = {}) =>
  app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: client.clientId,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'openid profile',
      state: 'st',
      code_challenge: s256Challenge('v'.repeat(43)),
      code_challenge_method: 'S256',
      ...extra,
    })}`,
    cookies: jar,
  });
const where = (location: string) => {
  const url = new URL(location, 'http://localhost');
  return url.origin === 'https://rp.example.com' ? (url.searchParams.get('code') ? 'code' : 'error') : url.pathname;
};
const count = async (table: 'grants' | 'authorization_requests') =>
  Number((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)).rows[0]!.n);

t.test('a code at once, bound to the presenting session; the exchange writes its grant', async (t) => {
  const requests = await count('authorization_requests');
  const grants = await count('grants');
  const res = await authorize({ nonce: 'n-1' });
  t.equal(res.statusCode, 303);
  const location = new URL(String(res.headers.location));
  t.equal(location.searchParams.get('state'), 'st');
  t.equal(location.searchParams.get('iss'), 'http://localhost:3000/api/auth');
  const code = openCode(location.searchParams.get('code')!, config.secretKey!)!;
  t.equal(code.userId, user.id);
  t.equal(code.sessionId, session.id);
  t.equal(code.authTime.getTime(), new Date(session.auth_time).getTime(), "the session's auth_time");
  t.equal(code.nonce, 'n-1');
  t.equal(code.scope, 'openid profile');
  t.equal(code.clientId, client.clientId);
  t.equal(code.redirectUriHash, redirectUriHash(redirectUri));
  t.equal(code.codeChallenge, s256Challenge('v'.repeat(43)));
  t.equal(await count('grants'), grants, 'no grant written by authorize');
  const exchanged = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code')!,
    code_verifier: 'v'.repeat(43),
    client_id: client.clientId,
    redirect_uri: redirectUri,
  });
  t.equal(exchanged.statusCode, 200, 'the code exchanges');
  const grant = (
    await sql<{ user_id: string; session_id: string }>`select user_id, session_id from grants
      where id = ${code.grantId}`.execute(db)
  ).rows[0]!;
  t.same(grant, { user_id: user.id, session_id: session.id });
  const events = await sql<{ n: number }>`select count(*)::int as n from audit_events
    where type = 'authorization.granted' and detail->>'grantId' = ${code.grantId}`.execute(db);
  t.equal(events.rows[0]!.n, 1);
  t.equal(await count('authorization_requests'), requests, 'no pending request stored');
});

t.test('whatever nextStep would ask for, nothing is written and the long way answers', async (t) => {
  const cases: Array<{
    name: string;
    extra?: Record<string, string>;
    setup?: string;
    undo?: string;
    expect: string;
  }> = [
    { name: 'prompt=login', extra: { prompt: 'login' }, expect: '/login/sign-in' },
    { name: 'prompt=consent', extra: { prompt: 'consent' }, expect: '/login/consent' },
    { name: 'scopes beyond the remembered consent', extra: { scope: 'openid email' }, expect: '/login/consent' },
    {
      name: 'prompt=none, scopes beyond the consent',
      extra: { scope: 'openid email', prompt: 'none' },
      expect: 'error',
    },
    {
      name: 'a sign-in older than max_age',
      extra: { max_age: '60' },
      setup: `update sessions set auth_time = now() - interval '2 minutes' where user_id = $1`,
      undo: `update sessions set auth_time = now() where user_id = $1`,
      expect: '/login/sign-in',
    },
    {
      name: 'an unverified e-mail',
      setup: 'update users set email_verified = false where id = $1',
      undo: 'update users set email_verified = true where id = $1',
      expect: '/login/verify-email',
    },
    {
      name: 'a revoked session',
      setup: 'update sessions set revoked_at = now() where user_id = $1',
      undo: 'update sessions set revoked_at = null where user_id = $1',
      expect: '/login/sign-in',
    },
    {
      name: 'a session idle for too long',
      setup: `update sessions set last_seen_at = now() - interval '400 days' where user_id = $1`,
      undo: 'update sessions set last_seen_at = now() where user_id = $1',
      expect: '/login/sign-in',
    },
    // Issue 34: a level the password-only session lacks: no code, the long way asks for it.
    {
      name: 'acr_values=urn:idp:mfa, no factor',
      extra: { acr_values: 'urn:idp:mfa' },
      expect: '/login/account/sign-in-methods',
    },
    {
      name: 'acr_values=urn:idp:mfa, prompt=none',
      extra: { acr_values: 'urn:idp:mfa', prompt: 'none' },
      expect: 'error',
    },
    {
      name: 'a max_age within the sign-in, a level it lacks',
      extra: { acr_values: 'urn:idp:mfa', max_age: '3600' },
      expect: '/login/account/sign-in-methods',
    },
    {
      name: 'a disabled user',
      setup: 'update users set disabled = true where id = $1',
      undo: 'update users set disabled = false where id = $1',
      expect: '/login/sign-in',
    },
  ];
  for (const c of cases) {
    const run = (text: string) => sql.raw(text.replace('$1', `'${user.id}'`)).execute(db);
    if (c.setup) await run(c.setup);
    const grants = await count('grants');
    const res = await authorize(c.extra);
    if (c.undo) await run(c.undo);
    t.equal(res.statusCode, 303, `${c.name}: 303`);
    t.equal(where(String(res.headers.location)), c.expect, `${c.name}: ${c.expect}`);
    t.equal(await count('grants'), grants, `${c.name}: no grant`);
  }
  t.equal(where(String((await authorize({ max_age: '3600' })).headers.location)), 'code', 'within max_age: a code');
  const pwd = { acr_values: 'urn:idp:pwd' };
  t.equal(where(String((await authorize(pwd)).headers.location)), 'code', 'acr_values=urn:idp:pwd: a code');
  t.equal(where(String((await authorize()).headers.location)), 'code', 'and afterwards as before');
});
