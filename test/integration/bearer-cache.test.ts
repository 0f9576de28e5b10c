// The bearer cache (src/services/bearer.ts, src/services/invalidation.ts): a cached answer of
// /api/external/me and UserInfo never outlives a revocation made through the service. Every test warms
// the cache (the token works on both routes), revokes or changes something through the real endpoint
// or service, and expects the very next request to see it. The TTL is 60 s here, so that no test can
// pass by the cache expiring.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { obtainCode, obtainTokens, tokenRequest } from '../helpers/flow.js';
import { classifyWrite } from '../../src/services/invalidation.js';

const ENV = { BEARER_CACHE_SECONDS: '60' };
const { app, database, config } = await buildTestApp(t, { env: ENV });
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const LOGIN_ORIGIN = 'http://localhost:3000';

async function newClient(name = 'RP') {
  return app.services.applications.create(
    {
      clientName: name,
      redirectUris: [redirectUri],
      postLogoutRedirectUris: ['https://rp.example.com/bye'],
      allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
    },
    actor,
  );
}
const client = await newClient();

let counter = 0;
async function newUser(password = 'cache-password-1') {
  const email = `cache${++counter}@example.com`;
  const user = await app.services.users.create({ email, password, emailVerified: true, name: 'Cached' }, actor);
  return { id: user.id, email, password };
}

async function tokensOf(
  user: { email: string; password: string },
  o: { scope?: string; clientId?: string; server?: typeof app } = {},
) {
  return obtainTokens(o.server ?? app, {
    clientId: o.clientId ?? client.clientId,
    redirectUri,
    email: user.email,
    password: user.password,
    scope: o.scope ?? 'openid profile email offline_access',
  });
}

const me = (token: string, server = app) =>
  server.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${token}` } });
const userinfo = (token: string, server = app) =>
  server.inject({ method: 'GET', url: '/api/auth/oauth2/userinfo', headers: { authorization: `Bearer ${token}` } });

/** The token works on both routes (and is now cached on both). */
async function warm(t: Test, token: string, server = app) {
  t.equal((await me(token, server)).statusCode, 200, 'warm: /api/external/me');
  t.equal((await userinfo(token, server)).statusCode, 200, 'warm: UserInfo');
}
async function expectRejected(t: Test, token: string, what: string) {
  t.equal((await me(token)).statusCode, 401, `${what}: /api/external/me at once`);
  t.equal((await userinfo(token)).statusCode, 401, `${what}: UserInfo at once`);
}
const admin = (method: 'POST' | 'PATCH' | 'DELETE', url: string, payload?: unknown) =>
  app.inject({
    method,
    url: `/api/admin${url}`,
    headers: { ...adminHeaders, ...(payload !== undefined && { 'content-type': 'application/json' }) },
    ...(payload !== undefined && { payload: JSON.stringify(payload) }),
  });

t.test('the cache is really used: a change behind the services (raw SQL on PGlite) is not seen', async (t) => {
  if (database.engine !== 'pglite') {
    t.pass('on PostgreSQL the triggers announce even raw SQL changes (see the two-instance test)');
    return;
  }
  const { tokens } = await tokensOf(await newUser());
  await warm(t, tokens.access_token);
  await sql`update users set name = 'Behind the back'`.execute(database.db);
  t.equal((await me(tokens.access_token)).json().name, 'Cached', 'served from the cache');
});

t.test('revocation endpoint (RFC 7009)', async (t) => {
  const { tokens } = await tokensOf(await newUser());
  await warm(t, tokens.access_token);
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: client.clientId, token: tokens.access_token }).toString(),
  });
  t.equal(res.statusCode, 200);
  await expectRejected(t, tokens.access_token, 'revoked access token');
});

t.test('revocation of the refresh token ends the grant, access tokens included', async (t) => {
  const { tokens } = await tokensOf(await newUser());
  await warm(t, tokens.access_token);
  await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ client_id: client.clientId, token: tokens.refresh_token! }).toString(),
  });
  await expectRejected(t, tokens.access_token, 'revoked refresh family');
});

t.test('cookie-logout', async (t) => {
  const user = await newUser();
  const { code, verifier } = await obtainCode(app, {
    clientId: client.clientId,
    redirectUri,
    ...user,
    scope: 'openid offline_access',
  });
  const res = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token/cookie',
    headers: { origin: LOGIN_ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      client_id: client.clientId,
      redirect_uri: redirectUri,
    }).toString(),
  });
  t.equal(res.statusCode, 200, res.body);
  const cookie = res.cookies.find((c) => c.name.endsWith('idp.refresh'))!;
  const accessToken = res.json().access_token as string;
  await warm(t, accessToken);
  const out = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token/cookie-logout',
    headers: { origin: LOGIN_ORIGIN },
    cookies: { [cookie.name]: cookie.value },
  });
  t.equal(out.statusCode, 204);
  await expectRejected(t, accessToken, 'cookie-logout');
});

t.test('code replay revokes the grant', async (t) => {
  const user = await newUser();
  const { code, verifier } = await obtainCode(app, {
    clientId: client.clientId,
    redirectUri,
    ...user,
    scope: 'openid',
  });
  const form = {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  const first = await tokenRequest(app, form);
  t.equal(first.statusCode, 200);
  const accessToken = first.json().access_token as string;
  await warm(t, accessToken);
  const replay = await tokenRequest(app, form);
  t.equal(replay.json().error, 'invalid_grant');
  await expectRejected(t, accessToken, 'code replay');
});

t.test('refresh-token reuse revokes the family', async (t) => {
  const { tokens } = await tokensOf(await newUser());
  const refresh = (token: string) =>
    tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: client.clientId });
  const rotated = await refresh(tokens.refresh_token!);
  t.equal(rotated.statusCode, 200);
  const offline = rotated.json().access_token as string;
  await warm(t, tokens.access_token);
  await warm(t, offline);
  const reuse = await refresh(tokens.refresh_token!);
  t.equal(reuse.json().error, 'invalid_grant');
  await expectRejected(t, offline, 'refresh reuse: the offline token');
  await expectRejected(t, tokens.access_token, 'refresh reuse: the first token');
});

t.test('admin revocations: sessions, one session, grants, one grant', async (t) => {
  for (const path of ['sessions/revoke', 'grants/revoke', 'session', 'grant'] as const) {
    const user = await newUser();
    const { tokens } = await tokensOf(user);
    await warm(t, tokens.access_token);
    if (path === 'session' || path === 'grant') {
      const list = await app.inject({
        method: 'GET',
        url: `/api/admin/users/${user.id}/${path}s`,
        headers: adminHeaders,
      });
      const id = (list.json().items as Array<{ id: string }>)[0]!.id;
      t.equal((await admin('DELETE', `/users/${user.id}/${path}s/${id}`)).statusCode, 204, path);
    } else {
      t.equal((await admin('POST', `/users/${user.id}/${path}`)).statusCode, 200, path);
    }
    await expectRejected(t, tokens.access_token, `admin ${path}`);
  }
});

t.test('sign-out ends the session and its tokens', async (t) => {
  const { tokens, jar } = await tokensOf(await newUser());
  await warm(t, tokens.access_token);
  const res = await app.inject({ method: 'POST', url: '/api/auth/sign-out', cookies: jar });
  t.equal(res.statusCode, 204);
  await expectRejected(t, tokens.access_token, 'sign-out');
});

t.test('end-session with a matching id_token_hint', async (t) => {
  const { tokens, jar } = await tokensOf(await newUser());
  await warm(t, tokens.access_token);
  const res = await app.inject({
    method: 'GET',
    url: `/api/auth/oauth2/end-session?${new URLSearchParams({
      id_token_hint: tokens.id_token,
      post_logout_redirect_uri: 'https://rp.example.com/bye',
    })}`,
    cookies: jar,
  });
  t.equal(res.statusCode, 303);
  await expectRejected(t, tokens.access_token, 'end-session');
});

t.test('user disabled, deleted, password set by an operator', async (t) => {
  for (const change of ['disable', 'delete', 'password'] as const) {
    const user = await newUser();
    const { tokens } = await tokensOf(user);
    await warm(t, tokens.access_token);
    const res =
      change === 'disable'
        ? await admin('POST', `/users/${user.id}/disable`)
        : change === 'delete'
          ? await admin('DELETE', `/users/${user.id}`)
          : await admin('PATCH', `/users/${user.id}`, { password: 'a-new-password-2' });
    t.ok(res.statusCode < 300, `${change}: ${res.statusCode}`);
    await expectRejected(t, tokens.access_token, `user ${change}`);
  }
});

t.test('password reset by e-mail link', async (t) => {
  const user = await newUser();
  const { tokens } = await tokensOf(user);
  await warm(t, tokens.access_token);
  const json = { 'content-type': 'application/json' };
  const asked = await app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: json,
    payload: JSON.stringify({ email: user.email, redirectTo: '/login/reset-password' }),
  });
  t.equal(asked.statusCode, 200);
  await app.services.recovery.drain();
  await app.services.mailer.drain();
  const mails = readFileSync(join(config.dataDir, 'outbox.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const mail = mails.reverse().find((m: { to: string }) => m.to === user.email) as { text: string };
  const resetToken = /reset-password\/([A-Za-z0-9_-]+)/.exec(mail.text)![1]!;
  const reset = await app.inject({
    method: 'POST',
    url: '/api/auth/reset-password',
    headers: json,
    payload: JSON.stringify({ token: resetToken, newPassword: 'reset-password-2' }),
  });
  t.equal(reset.statusCode, 200, reset.body);
  await expectRejected(t, tokens.access_token, 'password reset');
});

t.test('an e-mail or profile change is served at once (no stale claims)', async (t) => {
  const user = await newUser();
  const { tokens } = await tokensOf(user);
  await warm(t, tokens.access_token);
  t.equal(
    (await admin('PATCH', `/users/${user.id}`, { name: 'Renamed', email: 'renamed@example.com' })).statusCode,
    200,
  );
  const body = (await me(tokens.access_token)).json();
  t.equal(body.name, 'Renamed');
  t.equal(body.email, 'renamed@example.com');
  t.equal(body.email_verified, false, 'a new address is not verified');
  t.equal((await userinfo(tokens.access_token)).json().name, 'Renamed', 'UserInfo too');
});

t.test('application disabled or deleted through the admin API', async (t) => {
  for (const change of ['disable', 'delete'] as const) {
    const app2 = await newClient(`RP ${change}`);
    const { tokens } = await tokensOf(await newUser(), { clientId: app2.clientId });
    await warm(t, tokens.access_token);
    const res =
      change === 'disable'
        ? await admin('POST', `/applications/${app2.clientId}/disable`)
        : await admin('DELETE', `/applications/${app2.clientId}`);
    t.ok(res.statusCode < 300, `${change}: ${res.statusCode}`);
    await expectRejected(t, tokens.access_token, `application ${change}`);
  }
});

t.test('a cached answer never outlives the session idle deadline or the token expiry', async (t) => {
  const short = await buildTestApp(t, {
    database,
    env: { ...ENV, SESSION_IDLE_TTL: '2', ACCESS_TOKEN_TTL: '3' },
  });
  const user = await newUser();
  const { tokens } = await tokensOf(user, { server: short.app });
  const rotated = await tokenRequest(short.app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
  });
  const offline = rotated.json().access_token as string; // not bound to the session: only its expiry counts
  await warm(t, tokens.access_token, short.app);
  await warm(t, offline, short.app);
  await new Promise((r) => setTimeout(r, 2200));
  t.equal((await me(tokens.access_token, short.app)).statusCode, 401, 'the session went idle');
  t.equal((await me(offline, short.app)).statusCode, 200, 'the offline token still lives (cached or not)');
  await new Promise((r) => setTimeout(r, 1000));
  t.equal((await me(offline, short.app)).statusCode, 401, 'the token expired');
});

t.test('expired answers are swept as new ones come, not held until the size cap', async (t) => {
  const brief = await buildTestApp(t, { database, env: { BEARER_CACHE_SECONDS: '1' } });
  const bearers = brief.app.services.bearers;
  const user = await newUser();
  const first = await tokensOf(user, { server: brief.app });
  const second = await tokensOf(user, { server: brief.app });
  await warm(t, first.tokens.access_token, brief.app);
  await warm(t, second.tokens.access_token, brief.app);
  t.equal(bearers.size(), 2, 'both answers are cached');
  await new Promise((r) => setTimeout(r, 1100));
  const third = await tokensOf(user, { server: brief.app });
  t.equal(bearers.size(), 1, 'the two expired answers went when the third token was cached');
  await warm(t, first.tokens.access_token, brief.app);
  t.equal(bearers.size(), 2, 'an expired token still works: it is looked up again and cached anew');
  await warm(t, third.tokens.access_token, brief.app);
});

t.test('BEARER_CACHE_SECONDS=0 turns the cache off', async (t) => {
  if (database.engine !== 'pglite') {
    t.pass('checked on PGlite (raw SQL changes are announced on PostgreSQL)');
    return;
  }
  const off = await buildTestApp(t, { database, env: { BEARER_CACHE_SECONDS: '0' } });
  const { tokens } = await tokensOf(await newUser(), { server: off.app });
  t.equal((await me(tokens.access_token, off.app)).json().name, 'Cached');
  await sql`update users set name = 'Seen at once'`.execute(database.db);
  t.equal((await me(tokens.access_token, off.app)).json().name, 'Seen at once');
});

t.test(
  'another instance on the same PostgreSQL database drops its cached answers (NOTIFY)',
  { skip: database.engine === 'pglite' ? 'PGlite is one process: no other instance can share it' : false },
  async (t) => {
    const second = await buildTestApp(t, { database, env: ENV });
    await second.app.ready();
    const eventually = async (token: string, status: number) => {
      let last = 0;
      for (let i = 0; i < 40 && last !== status; i++) {
        last = (await me(token, second.app)).statusCode;
        if (last !== status) await new Promise((r) => setTimeout(r, 50));
      }
      return last;
    };
    const changes: Array<[string, (user: { id: string }, token: string) => Promise<unknown>]> = [
      [
        'token revoked',
        (_u, token) =>
          app.inject({
            method: 'POST',
            url: '/api/auth/oauth2/revoke',
            headers: { 'content-type': 'application/x-www-form-urlencoded' },
            payload: new URLSearchParams({ client_id: client.clientId, token }).toString(),
          }),
      ],
      ['user disabled', (u) => admin('POST', `/users/${u.id}/disable`)],
      ['sessions revoked', (u) => admin('POST', `/users/${u.id}/sessions/revoke`)],
      // Behind the services' back: the database's own trigger tells every instance.
      ['raw SQL', (u) => sql`update grants set revoked_at = now() where user_id = ${u.id}`.execute(database.db)],
    ];
    for (const [what, change] of changes) {
      const user = await newUser();
      const { tokens } = await tokensOf(user);
      await warm(t, tokens.access_token, second.app);
      await change(user, tokens.access_token);
      t.equal(await eventually(tokens.access_token, 401), 401, `${what}: seen on the other instance within 2 s`);
    }
    const user = await newUser();
    const { tokens } = await tokensOf(user);
    await warm(t, tokens.access_token, second.app);
    await admin('PATCH', `/users/${user.id}`, { name: 'Told by NOTIFY' });
    let name: string | undefined;
    for (let i = 0; i < 40 && name !== 'Told by NOTIFY'; i++) {
      name = (await me(tokens.access_token, second.app)).json().name;
      if (name !== 'Told by NOTIFY') await new Promise((r) => setTimeout(r, 50));
    }
    t.equal(name, 'Told by NOTIFY', 'a profile change reaches the other instance');
  },
);

t.test('which writes invalidate (the observer of the services database)', async (t) => {
  const db = database.db;
  const kind = (q: { toOperationNode(): unknown }) => classifyWrite(q.toOperationNode() as never)?.kind;
  t.equal(kind(db.updateTable('sessions').set({ last_seen_at: new Date() })), undefined, 'a session touch');
  t.equal(kind(db.updateTable('sessions').set({ revoked_at: new Date() })), 'access', 'a session ends');
  t.equal(kind(db.updateTable('access_tokens').set({ revoked_at: new Date() })), 'access');
  t.equal(kind(db.updateTable('grants').set({ revoked_at: new Date() })), 'access');
  t.equal(kind(db.updateTable('users').set({ updated_at: new Date() })), undefined, 'no claim changed');
  t.equal(kind(db.updateTable('users').set({ name: 'x' })), 'access');
  t.equal(kind(db.deleteFrom('users')), 'access');
  t.equal(kind(db.updateTable('applications').set({ enabled: false })), 'application');
  t.equal(kind(db.deleteFrom('applications')), 'application');
  t.equal(kind(db.insertInto('access_tokens').values({} as never)), undefined, 'a new token');
  t.equal(kind(db.selectFrom('users').selectAll()), undefined, 'a read');
  t.equal(kind(sql`delete from grants where id = ${'x'}`), 'access', 'raw SQL: judged by its clauses');
  t.equal(kind(sql`update sessions set last_seen_at = now() where id = ${'x'}`), undefined, 'a raw session touch');
  t.equal(kind(sql`update sessions set last_seen_at = now(), revoked_at = now()`), 'access');
  t.equal(kind(sql`delete from ${sql.table('grants')}`), 'reset', 'a table it cannot read: everything');
  t.equal(kind(sql`select 'delete me'`), 'reset', 'the word alone: everything');
});

t.test('a token response seeds the cache: the first use of the new access token needs no lookup', async (t) => {
  const user = await newUser();
  const { tokens } = await tokensOf(user, { scope: 'openid profile email' });
  const bearers = app.services.bearers;
  const cached = await me(tokens.access_token);
  t.equal(cached.statusCode, 200);
  // What the issuing statement read answers exactly as a lookup does.
  bearers.invalidate();
  const looked = await me(tokens.access_token);
  t.same(looked.json(), cached.json(), 'the seeded answer is the lookup answer');
  if (database.engine !== 'pglite') return; // raw SQL changes are announced on PostgreSQL
  const fresh = await tokensOf(await newUser(), { scope: 'openid profile' });
  await sql`update users set name = 'Behind the back'`.execute(database.db);
  t.equal((await me(fresh.tokens.access_token)).json().name, 'Cached', 'never looked up: served from the seed');
  bearers.invalidate();
  t.equal((await me(fresh.tokens.access_token)).json().name, 'Behind the back', 'dropped like any entry');
});

t.test('a seed is not kept when the cache was dropped while the token was being issued', async (t) => {
  if (database.engine !== 'pglite') {
    t.pass('checked on PGlite (raw SQL changes are announced on PostgreSQL)');
    return;
  }
  // The sink the token issuer calls, driven by hand: take the generation, then drop, then seed.
  const bearers = app.services.bearers;
  const { tokens } = await tokensOf(await newUser(), { scope: 'openid profile' });
  bearers.invalidate();
  const started = bearers.generation();
  const { findBearer } = await import('../../db/repositories/access-tokens.js');
  const found = await findBearer(
    database.db,
    (await import('../../src/oauth/tokens.js')).hashToken(tokens.access_token),
    900,
  );
  t.ok(found, 'the token is live');
  bearers.invalidate(); // a revocation committed while the statement ran
  bearers.issued(tokens.access_token, found!, started);
  await sql`update users set name = 'After the drop'`.execute(database.db);
  t.equal((await me(tokens.access_token)).json().name, 'After the drop', 'not seeded: looked up');
});

t.test('a token issued inside a transaction (the locked refresh path) is not seeded', async (t) => {
  if (database.engine !== 'pglite') {
    t.pass('checked on PGlite (raw SQL changes are announced on PostgreSQL)');
    return;
  }
  const { tokens } = await tokensOf(await newUser());
  // Sending `scope` takes the locked path (a transaction) instead of the one-statement rotation.
  const rotated = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: client.clientId,
    scope: 'openid profile',
  });
  t.equal(rotated.statusCode, 200, rotated.body);
  await sql`update users set name = 'Seen by a lookup'`.execute(database.db);
  t.equal((await me(rotated.json().access_token)).json().name, 'Seen by a lookup', 'not seeded: looked up');
});
