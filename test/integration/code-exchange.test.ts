// The code exchange is one statement (issue 14): it consumes the code, checks it against the request and
// records the tokens and token.issued only when every check passes. A failed check spends the code and writes
// nothing else; the first failed check in the handler's order is the answer; a refresh token only with
// offline_access; a redirect_uri PostgreSQL text cannot hold fails its check like any other mismatch.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainCode, obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { hashToken } from '../../src/oauth/tokens.js';

const { app, database } = await buildTestApp(t);
const db = database.db;
const actor = { actor: 'test' };
const redirectUri = 'https://rp.example.com/cb';
const allowedScopes = ['openid', 'profile', 'email', 'offline_access'] as const;
const client = await app.services.applications.create(
  {
    clientName: 'Exchange RP',
    redirectUris: [redirectUri, 'https://rp.example.com/other'],
    allowedScopes: [...allowedScopes],
  },
  actor,
);
const other = await app.services.applications.create(
  { clientName: 'Other RP', redirectUris: [redirectUri], allowedScopes: [...allowedScopes] },
  actor,
);
const email = 'exchange@example.com';
const user = await app.services.users.create({ email, password: 'exchange-password-1', emailVerified: true }, actor);
const flow = { clientId: client.clientId, redirectUri, email, password: 'exchange-password-1', scope: 'openid' };
const { jar } = await obtainTokens(app, { ...flow, scope: 'openid offline_access' });

const count = async (table: 'access_tokens' | 'refresh_tokens', grantId: string) =>
  Number(
    (
      await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where grant_id = ${grantId}`.execute(
        db,
      )
    ).rows[0]!.n,
  );
const issuedEvents = async (grantId: string) =>
  (
    await sql<{ detail: Record<string, unknown> }>`select detail from audit_events
      where type = 'token.issued' and detail->>'grantId' = ${grantId}`.execute(db)
  ).rows.map((r) => r.detail);
const codeRow = async (code: string) =>
  (
    await sql<{ grant_id: string; consumed_at: Date | null }>`select grant_id, consumed_at from authorization_codes
      where code_hash = ${hashToken(code)}`.execute(db)
  ).rows[0]!;
const grantRevoked = async (grantId: string) =>
  (await sql<{ revoked_at: Date | null }>`select revoked_at from grants where id = ${grantId}`.execute(db)).rows[0]!
    .revoked_at !== null;

const exchange = (code: { code: string; verifier: string }, extra: Record<string, string> = {}) =>
  tokenRequest(app, {
    grant_type: 'authorization_code',
    code: code.code,
    code_verifier: code.verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
    ...extra,
  });

t.test('success: tokens and token.issued by the one statement; a refresh token only with offline_access', async (t) => {
  for (const scope of ['openid', 'openid offline_access']) {
    const code = await obtainCode(app, { ...flow, scope }, jar);
    const { grant_id: grantId } = await codeRow(code.code);
    const res = await exchange(code);
    t.equal(res.statusCode, 200, scope);
    const body = res.json();
    const offline = scope.includes('offline_access');
    t.equal(body.refresh_token !== undefined, offline, `${scope}: refresh_token in the answer`);
    t.equal(await count('access_tokens', grantId), 1, `${scope}: one access token`);
    t.equal(await count('refresh_tokens', grantId), offline ? 1 : 0, `${scope}: refresh tokens`);
    t.same(await issuedEvents(grantId), [{ grantId, scope, refresh: offline }], `${scope}: one token.issued`);
    t.ok((await codeRow(code.code)).consumed_at, 'the code is consumed');
    t.equal((await userinfo(app, body.access_token)).statusCode, 200, 'the new access token works at once');
  }
});

t.test('a failed check spends the code and writes nothing else; its retry is a replay', async (t) => {
  const cases: Array<{ name: string; extra?: Record<string, string>; before?: (grantId: string) => Promise<void> }> = [
    { name: 'another client', extra: { client_id: other.clientId } },
    { name: 'another registered redirect_uri', extra: { redirect_uri: 'https://rp.example.com/other' } },
    { name: 'redirect_uri with U+0000', extra: { redirect_uri: `${redirectUri}\u0000` } },
    { name: 'wrong verifier', extra: { code_verifier: 'w'.repeat(43) } },
    {
      name: 'expired',
      before: async (grantId) => {
        await sql`update authorization_codes set expires_at = now() - interval '1 second'
          where grant_id = ${grantId}`.execute(db);
      },
    },
    {
      // Behind the service's back: disabling through it deletes unexchanged codes first.
      name: 'user disabled',
      before: async () => {
        await sql`update users set disabled = true where id = ${user.id}`.execute(db);
      },
    },
  ];
  const expected: Record<string, RegExp> = {
    'another client': /another client/,
    'another registered redirect_uri': /redirect_uri/,
    'redirect_uri with U+0000': /redirect_uri/,
    'wrong verifier': /code_verifier/,
    expired: /invalid, expired or already used/,
    'user disabled': /user is not available/,
  };
  for (const c of cases) {
    const code = await obtainCode(app, { ...flow, scope: 'openid offline_access' }, jar);
    const { grant_id: grantId } = await codeRow(code.code);
    await c.before?.(grantId);
    const res = await exchange(code, c.extra);
    await sql`update users set disabled = false where id = ${user.id}`.execute(db);
    t.equal(res.statusCode, 400, `${c.name}: 400`);
    t.equal(res.json().error, 'invalid_grant', `${c.name}: invalid_grant`);
    t.match(res.json().error_description, expected[c.name]!, `${c.name}: the check's description`);
    t.ok((await codeRow(code.code)).consumed_at, `${c.name}: the code is spent`);
    t.equal(await count('access_tokens', grantId), 0, `${c.name}: no access token`);
    t.equal(await count('refresh_tokens', grantId), 0, `${c.name}: no refresh token`);
    t.same(await issuedEvents(grantId), [], `${c.name}: no token.issued`);
    t.notOk(await grantRevoked(grantId), `${c.name}: the grant is not revoked by a failed check`);
    const retry = await exchange(code);
    t.equal(retry.json().error, 'invalid_grant', `${c.name}: the corrected retry is refused`);
    t.ok(await grantRevoked(grantId), `${c.name}: and revokes the grant as a replay`);
  }
});

t.test("several failed checks: the answer is the first in the handler's order", async (t) => {
  const both = await obtainCode(app, flow, jar);
  const res = await exchange(both, { client_id: other.clientId, redirect_uri: 'https://rp.example.com/other' });
  t.match(res.json().error_description, /another client/, 'client before redirect_uri');
  const redirectAndPkce = await obtainCode(app, flow, jar);
  const res2 = await exchange(redirectAndPkce, {
    redirect_uri: 'https://rp.example.com/other',
    code_verifier: 'w'.repeat(43),
  });
  t.match(res2.json().error_description, /redirect_uri/, 'redirect_uri before PKCE');
  const pkceAndUser = await obtainCode(app, flow, jar);
  await sql`update users set disabled = true where id = ${user.id}`.execute(db);
  const res3 = await exchange(pkceAndUser, { code_verifier: 'w'.repeat(43) });
  await sql`update users set disabled = false where id = ${user.id}`.execute(db);
  t.match(res3.json().error_description, /code_verifier/, 'PKCE before the user');
});

t.test('an unknown code writes nothing and revokes nothing', async (t) => {
  const res = await exchange({ code: 'x'.repeat(43), verifier: 'v'.repeat(43) });
  t.equal(res.json().error, 'invalid_grant');
  t.match(res.json().error_description, /invalid, expired or already used/);
});
