// The code exchange is one statement (issue 14): it spends the sealed code (by creating its grant), checks it
// against the request and records the tokens, authorization.granted and token.issued only when every check
// passes. A failed check spends the code (its grant is created revoked) and writes nothing else; the first failed
// check in the handler's order is the answer; a refresh token only with offline_access; a redirect_uri PostgreSQL
// text cannot hold fails its check like any other mismatch. A code is sealed under SECRET_KEY: a forged, altered
// or foreign one is unknown; a code dies with its session, with a revocation of the user's codes and with the
// consent it was issued under.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainCode, obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { type CodeContents, openCode, sealCode } from '../../src/oauth/sealed-code.js';
import { revokeUserAccess } from '../../src/services/revocation.js';
import { revokeClientAccess } from '../../db/repositories/self-service.js';

const { app, database, config } = await buildTestApp(t);
const secretKey = config.secretKey!;
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
const contents = (code: string): CodeContents => openCode(code, secretKey)!;
const grantRow = async (grantId: string) =>
  (await sql<{ revoked_at: Date | null }>`select revoked_at from grants where id = ${grantId}`.execute(db)).rows[0];
const grantRevoked = async (grantId: string) => (await grantRow(grantId))?.revoked_at != null;
const events = async (type: string, grantId: string) =>
  Number(
    (
      await sql<{ n: number }>`select count(*)::int as n from audit_events
        where type = ${type} and detail->>'grantId' = ${grantId}`.execute(db)
    ).rows[0]!.n,
  );

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
    const { grantId } = contents(code.code);
    t.notOk(await grantRow(grantId), `${scope}: issuing the code wrote no grant`);
    const res = await exchange(code);
    t.equal(res.statusCode, 200, scope);
    const body = res.json();
    const offline = scope.includes('offline_access');
    t.equal(body.refresh_token !== undefined, offline, `${scope}: refresh_token in the answer`);
    t.equal(await count('access_tokens', grantId), 1, `${scope}: one access token`);
    t.equal(await count('refresh_tokens', grantId), offline ? 1 : 0, `${scope}: refresh tokens`);
    t.same(await issuedEvents(grantId), [{ grantId, scope, refresh: offline }], `${scope}: one token.issued`);
    t.equal(await events('authorization.granted', grantId), 1, `${scope}: one authorization.granted`);
    t.ok(await grantRow(grantId), 'the code is spent: its grant exists');
    t.notOk(await grantRevoked(grantId), 'and is live');
    t.equal((await userinfo(app, body.access_token)).statusCode, 200, 'the new access token works at once');
  }
});

t.test('a failed check spends the code and writes nothing else; its retry is a replay', async (t) => {
  const cases: Array<{
    name: string;
    extra?: Record<string, string>;
    expired?: boolean;
    before?: (grantId: string) => Promise<void>;
  }> = [
    { name: 'another client', extra: { client_id: other.clientId } },
    { name: 'another registered redirect_uri', extra: { redirect_uri: 'https://rp.example.com/other' } },
    { name: 'redirect_uri with U+0000', extra: { redirect_uri: `${redirectUri}\u0000` } },
    { name: 'wrong verifier', extra: { code_verifier: 'w'.repeat(43) } },
    { name: 'expired', expired: true },
    {
      // Behind the service's back: disabling through it revokes the user's codes first.
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
    const issued = await obtainCode(app, { ...flow, scope: 'openid offline_access' }, jar);
    const { grantId } = contents(issued.code);
    // An expired code, sealed as this server would have sealed it a minute ago.
    const code = c.expired
      ? { ...issued, code: sealCode({ ...contents(issued.code), expiresAt: new Date(Date.now() - 1000) }, secretKey) }
      : issued;
    await c.before?.(grantId);
    const res = await exchange(code, c.extra);
    await sql`update users set disabled = false where id = ${user.id}`.execute(db);
    t.equal(res.statusCode, 400, `${c.name}: 400`);
    t.equal(res.json().error, 'invalid_grant', `${c.name}: invalid_grant`);
    t.match(res.json().error_description, expected[c.name]!, `${c.name}: the check's description`);
    t.ok(await grantRevoked(grantId), `${c.name}: the code is spent: its grant exists, revoked`);
    t.equal(await count('access_tokens', grantId), 0, `${c.name}: no access token`);
    t.equal(await count('refresh_tokens', grantId), 0, `${c.name}: no refresh token`);
    t.same(await issuedEvents(grantId), [], `${c.name}: no token.issued`);
    t.equal(await events('authorization.granted', grantId), 0, `${c.name}: no authorization.granted`);
    const retry = await exchange(code);
    t.equal(retry.json().error, 'invalid_grant', `${c.name}: the corrected retry is refused`);
    t.equal(await events('code.reuse_detected', grantId), 1, `${c.name}: as a replay`);
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

t.test('a forged, altered or foreign code is unknown and writes nothing', async (t) => {
  const code = await obtainCode(app, flow, jar);
  const { grantId } = contents(code.code);
  const [version, iv, ciphertext, tag] = code.code.split('.') as [string, string, string, string];
  const flipped = `${ciphertext.slice(0, 10)}${ciphertext[10] === 'A' ? 'B' : 'A'}${ciphertext.slice(11)}`;
  const forged = {
    'one character of the ciphertext changed': [version, iv, flipped, tag].join('.'),
    'sealed under another SECRET_KEY': sealCode(contents(code.code), 'another-secret-key-of-32-characters!!'),
    'another user in the same code, sealed by the attacker': sealCode(
      { ...contents(code.code), userId: 'someone-else' },
      'attacker-key-attacker-key-attacker-key',
    ),
    'a truncated code': code.code.slice(0, -4),
  };
  for (const [name, value] of Object.entries(forged)) {
    const res = await exchange({ ...code, code: value });
    t.equal(res.json().error, 'invalid_grant', `${name}: invalid_grant`);
    t.match(res.json().error_description, /invalid, expired or already used/, `${name}: as unknown`);
  }
  t.notOk(await grantRow(grantId), 'nothing was spent: no grant');
  t.equal((await exchange(code)).statusCode, 200, 'the genuine code still works');
});

t.test('a code dies with its session, with a revocation of the user and with its consent', async (t) => {
  const second = { clientId: other.clientId, redirectUri, email, password: flow.password, scope: 'openid' };
  const fresh = await obtainTokens(app, flow);
  const signedOut = await obtainCode(app, flow, fresh.jar);
  await sql`update sessions set revoked_at = now() where id = ${contents(signedOut.code).sessionId}`.execute(db);
  const res = await exchange(signedOut);
  t.match(res.json().error_description, /session of the authorization code has ended/, 'its session ended: refused');
  t.ok(await grantRevoked(contents(signedOut.code).grantId), 'and spent');

  // A password change keeps the session it was made in but kills every unexchanged code (decisions.md).
  const { jar: kept } = await obtainTokens(app, flow);
  const beforeChange = await obtainCode(app, flow, kept);
  const keepSessionId = contents(beforeChange.code).sessionId;
  await db
    .transaction()
    .execute((trx) => revokeUserAccess(trx, user.id, { reason: 'password_changed', keepSessionId }));
  const res2 = await exchange(beforeChange);
  t.match(res2.json().error_description, /session of the authorization code has ended/, 'codes revoked: refused');
  const afterChange = await obtainCode(app, flow, kept);
  t.equal((await exchange(afterChange)).statusCode, 200, 'a code issued after the revocation works');

  // Revoking one application's access kills its codes, not another application's.
  await obtainTokens(app, second, kept);
  const mine = await obtainCode(app, flow, kept);
  const theirs = await obtainCode(app, second, kept);
  await db.transaction().execute((trx) => revokeClientAccess(trx, user.id, client.clientId));
  const res3 = await exchange(mine);
  t.match(res3.json().error_description, /revoked the application's access/, 'the revoked application: refused');
  const res4 = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: theirs.code,
    code_verifier: theirs.verifier,
    client_id: other.clientId,
    redirect_uri: redirectUri,
  });
  t.equal(res4.statusCode, 200, "the other application's code still works");
});
