// The refresh grant: rotation, reuse detection, concurrency, grace window, scope narrowing, expiry.
import t from 'tap';
import * as jose from 'jose';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { oauthErrorLines } from '../helpers/oauth-log.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const { app, database, logs } = await buildTestApp(t);
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  {
    clientName: 'Refresh RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'rita@example.com', password: 'rita-password-1', emailVerified: true, name: 'Rita' },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'rita@example.com',
  password: 'rita-password-1',
  scope: 'openid profile email offline_access',
};
const refresh = (refreshToken: string, extra: Record<string, string> = {}, server = app) =>
  tokenRequest(server, {
    grant_type: 'refresh_token',
    refresh_token: refreshToken,
    client_id: client.clientId,
    ...extra,
  });

t.test('a chain of 50 rotations: each use gives a new token, every old one is rejected afterwards', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const chain = [tokens.refresh_token!];
  let last = tokens;
  for (let i = 0; i < 50; i++) {
    const res = await refresh(chain[chain.length - 1]!);
    t.equal(res.statusCode, 200, `rotation ${i + 1}`);
    last = res.json();
    t.not(last.refresh_token, chain[chain.length - 1]);
    chain.push(last.refresh_token!);
  }
  t.equal(new Set(chain).size, 51, 'every token is new');
  t.equal((await userinfo(app, last.access_token)).statusCode, 200, 'the newest access token works');
  // Presenting the oldest token is reuse: the whole family is revoked, the newest too.
  const old = await refresh(chain[0]!);
  t.equal(old.statusCode, 400);
  t.same(old.json(), {
    error: 'invalid_grant',
    error_description: 'the refresh token was already used; the whole grant is revoked',
  });
  t.equal((await refresh(chain[50]!)).statusCode, 400, 'the newest refresh token stopped working');
  t.equal((await userinfo(app, last.access_token)).statusCode, 401, 'access tokens of the family stopped working');
});

t.test('reuse of a middle token revokes the family and records the event', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const first = (await refresh(tokens.refresh_token!)).json();
  const second = (await refresh(first.refresh_token)).json();
  const third = (await refresh(second.refresh_token)).json();
  const reuse = await refresh(first.refresh_token);
  t.equal(reuse.statusCode, 400);
  t.equal(reuse.json().error, 'invalid_grant');
  t.equal((await refresh(third.refresh_token)).statusCode, 400);
  t.equal((await userinfo(app, third.access_token)).statusCode, 401);
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, 'the original access token too');
  const events = await listAuditEvents(database.db, { type: 'refresh_token.reuse_detected' });
  t.ok(events.length >= 1);
});

t.test('20 concurrent refreshes of one token: exactly one succeeds', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const results = await Promise.all(Array.from({ length: 20 }, () => refresh(tokens.refresh_token!)));
  const ok = results.filter((r) => r.statusCode === 200);
  t.equal(ok.length, 1);
  t.ok(results.filter((r) => r.statusCode !== 200).every((r) => r.json().error === 'invalid_grant'));
  // Without a grace window the others count as reuse: the family, the winner's tokens included, is revoked.
  t.equal((await refresh(ok[0]!.json().refresh_token)).statusCode, 400);
});

t.test('refresh responses: no-store, a new ID token for openid, sliding expiry, same subject', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  const res = await refresh(tokens.refresh_token!);
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers.pragma, 'no-cache');
  const body = res.json();
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'id_token', 'refresh_token', 'scope', 'token_type']);
  t.equal(body.scope, 'openid profile email offline_access');
  const jwks = jose.createLocalJWKSet(await app.services.keys.jwks());
  const { payload } = await jose.jwtVerify(body.id_token, jwks, {
    issuer: 'http://localhost:3000/api/auth',
    audience: client.clientId,
  });
  const original = jose.decodeJwt(tokens.id_token);
  t.equal(payload.sub, original.sub);
  t.equal(payload.auth_time, original.auth_time, 'auth_time is the original sign-in');
  const info = await userinfo(app, body.access_token);
  t.equal(info.json().name, 'Rita');
});

t.test('scope may narrow, never widen; the refresh token keeps the full grant', async (t) => {
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid email offline_access' });
  const narrowed = await refresh(tokens.refresh_token!, { scope: 'openid' });
  t.equal(narrowed.statusCode, 200);
  t.equal(narrowed.json().scope, 'openid');
  t.same(
    Object.keys((await userinfo(app, narrowed.json().access_token)).json()),
    ['sub'],
    'the narrowed access token sees only sub',
  );
  const full = await refresh(narrowed.json().refresh_token);
  t.equal(full.json().scope, 'openid email offline_access', 'a later refresh without scope gets the whole grant back');
  const wider = await refresh(full.json().refresh_token, { scope: 'openid profile' });
  t.equal(wider.statusCode, 400);
  t.same(wider.json(), { error: 'invalid_scope', error_description: 'scope exceeds the original grant' });
  // The value refused is not echoed back; the log of that request names it.
  t.same(
    oauthErrorLines(logs, wider).map(({ level, oauthError, error_description, detail }) => ({
      level,
      oauthError,
      error_description,
      detail,
    })),
    [
      {
        level: 30,
        oauthError: 'invalid_scope',
        error_description: 'scope exceeds the original grant',
        detail: 'scope profile',
      },
    ],
    'the request log line has the detail, at info',
  );
  // The refused widening was not a use: that token still rotates. Narrowed without openid: no ID token.
  const noOpenid = await refresh(full.json().refresh_token, { scope: 'email' });
  t.equal(noOpenid.statusCode, 200);
  t.equal(noOpenid.json().scope, 'email');
  t.notOk('id_token' in noOpenid.json(), 'no ID token without openid');
});

t.test('errors: missing token, unknown token, another client, disabled user, disabled application', async (t) => {
  const missing = await tokenRequest(app, { grant_type: 'refresh_token', client_id: client.clientId });
  t.same(missing.json(), { error: 'invalid_request', error_description: 'refresh_token is required' });
  const unknown = await refresh('x'.repeat(43));
  t.equal(unknown.json().error, 'invalid_grant');

  const other = await app.services.applications.create(
    { clientName: 'Other', redirectUris: [redirectUri] },
    { actor: 'test' },
  );
  const { tokens } = await obtainTokens(app, flow);
  const stolen = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: other.clientId,
  });
  t.equal(stolen.json().error, 'invalid_grant', 'a token of another client is refused');
  t.equal((await refresh(tokens.refresh_token!)).statusCode, 200, 'and stays usable by its own client');

  await app.services.users.create(
    { email: 'dora@example.com', password: 'dora-password-1', emailVerified: true },
    { actor: 'test' },
  );
  const dora = await obtainTokens(app, { ...flow, email: 'dora@example.com', password: 'dora-password-1' });
  await app.services.users.setDisabled('dora@example.com', true, { actor: 'test' });
  const disabledUser = await refresh(dora.tokens.refresh_token!);
  // Disabling a user revokes their tokens (issue 12, item 4): the refresh token is revoked, not merely refused.
  t.same(disabledUser.json(), {
    error: 'invalid_grant',
    error_description: 'the refresh token is invalid, expired or revoked',
  });

  const app2 = await app.services.applications.create(
    { clientName: 'Soon disabled', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
    { actor: 'test' },
  );
  const t2 = await obtainTokens(app, { ...flow, clientId: app2.clientId, scope: 'openid offline_access' });
  await app.services.applications.setEnabled(app2.clientId, false, { actor: 'test' });
  const disabledApp = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: t2.tokens.refresh_token!,
    client_id: app2.clientId,
  });
  t.same(disabledApp.json(), { error: 'invalid_grant', error_description: 'the application is disabled' });
});

t.test('expiry: sliding lifetime capped by the absolute lifetime', async (t) => {
  const { tokens } = await obtainTokens(app, flow);
  await database.db
    .updateTable('refresh_tokens')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('client_id', '=', client.clientId)
    .where('used_at', 'is', null)
    .execute();
  const expired = await refresh(tokens.refresh_token!);
  t.same(expired.json(), { error: 'invalid_grant', error_description: 'the refresh token has expired' });

  const fresh = await obtainTokens(app, flow);
  const cap = new Date(Date.now() + 5000);
  await database.db
    .updateTable('refresh_tokens')
    .set({ absolute_expires_at: cap })
    .where('client_id', '=', client.clientId)
    .where('used_at', 'is', null)
    .execute();
  const next = await refresh(fresh.tokens.refresh_token!);
  t.equal(next.statusCode, 200);
  const row = await database.db
    .selectFrom('refresh_tokens')
    .selectAll()
    .where('used_at', 'is', null)
    .where('absolute_expires_at', '=', cap)
    .executeTakeFirstOrThrow();
  t.ok(new Date(row.expires_at).getTime() <= cap.getTime(), 'the successor does not outlive the absolute cap');
});

t.test('grace window: a retry of the just-used token gets the same successor, never a sibling', async (t) => {
  const graceApp = await buildTestApp(t, { env: { REFRESH_TOKEN_GRACE: '30' }, database });
  const { tokens } = await obtainTokens(graceApp.app, flow);
  const firstTry = (await refresh(tokens.refresh_token!, {}, graceApp.app)).json();
  const retry = await refresh(tokens.refresh_token!, {}, graceApp.app);
  t.equal(retry.statusCode, 200);
  t.equal(retry.json().refresh_token, firstTry.refresh_token, 'the same successor');
  t.equal(retry.json().access_token, firstTry.access_token, 'and the same access token');
  // Once the successor is used, the old token is plain reuse again.
  const next = (await refresh(firstTry.refresh_token, {}, graceApp.app)).json();
  const late = await refresh(tokens.refresh_token!, {}, graceApp.app);
  t.equal(late.statusCode, 400);
  t.equal(
    (await refresh(next.refresh_token, {}, graceApp.app)).statusCode,
    400,
    'reuse after the successor was used revokes the family',
  );

  // Outside the window it is reuse.
  const other = await obtainTokens(graceApp.app, flow);
  await refresh(other.tokens.refresh_token!, {}, graceApp.app);
  await database.db
    .updateTable('refresh_tokens')
    .set({ used_at: new Date(Date.now() - 60_000) })
    .where('used_at', 'is not', null)
    .where('revoked_at', 'is', null)
    .execute();
  t.equal((await refresh(other.tokens.refresh_token!, {}, graceApp.app)).statusCode, 400);
});

t.test(
  'grace window: a retry after the application or the user was disabled gets invalid_grant, no tokens',
  async (t) => {
    const graceApp = await buildTestApp(t, { env: { REFRESH_TOKEN_GRACE: '30' }, database });
    const services = graceApp.app.services;
    const own = await services.applications.create(
      { clientName: 'Grace RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
      { actor: 'test' },
    );
    await services.users.create(
      { email: 'gina@example.com', password: 'gina-password-1', emailVerified: true },
      { actor: 'test' },
    );
    const ownFlow = {
      clientId: own.clientId,
      redirectUri,
      email: 'gina@example.com',
      password: 'gina-password-1',
      scope: 'openid offline_access',
    };
    const retry = (token: string) =>
      tokenRequest(graceApp.app, { grant_type: 'refresh_token', refresh_token: token, client_id: own.clientId });

    // The application is disabled between the rotation and the retry.
    const first = await obtainTokens(graceApp.app, ownFlow);
    t.equal((await retry(first.tokens.refresh_token!)).statusCode, 200, 'rotated');
    await services.applications.setEnabled(own.clientId, false, { actor: 'test' });
    const afterAppDisabled = await retry(first.tokens.refresh_token!);
    t.equal(afterAppDisabled.statusCode, 400);
    t.equal(afterAppDisabled.json().error, 'invalid_grant');
    t.notOk(afterAppDisabled.json().access_token, 'no access token');
    t.notOk(afterAppDisabled.json().refresh_token, 'no refresh token');
    await services.applications.setEnabled(own.clientId, true, { actor: 'test' });

    // The user is disabled between the rotation and the retry.
    const second = await obtainTokens(graceApp.app, ownFlow);
    t.equal((await retry(second.tokens.refresh_token!)).statusCode, 200, 'rotated');
    await services.users.setDisabled('gina@example.com', true, { actor: 'test' });
    const afterUserDisabled = await retry(second.tokens.refresh_token!);
    t.equal(afterUserDisabled.statusCode, 400);
    t.equal(afterUserDisabled.json().error, 'invalid_grant');
    t.notOk(afterUserDisabled.json().access_token, 'no access token');
    t.notOk(afterUserDisabled.json().refresh_token, 'no refresh token');

    // And the user deleted: the retry finds nobody to issue for.
    await services.users.setDisabled('gina@example.com', false, { actor: 'test' });
    const third = await obtainTokens(graceApp.app, ownFlow);
    t.equal((await retry(third.tokens.refresh_token!)).statusCode, 200, 'rotated');
    await services.users.remove('gina@example.com', { actor: 'test' });
    const afterUserDeleted = await retry(third.tokens.refresh_token!);
    t.equal(afterUserDeleted.statusCode, 400);
    t.equal(afterUserDeleted.json().error, 'invalid_grant');
    t.notOk(afterUserDeleted.json().access_token, 'no access token');
  },
);
