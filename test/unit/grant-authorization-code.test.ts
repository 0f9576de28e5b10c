// grant_type=authorization_code (src/oauth/grants/authorization-code.ts) against an in-memory store that keeps
// the AuthorizationCodeStore contract: no database, no HTTP. Every refusal of RFC 6749 §4.1.3 / §5.2, RFC 7636
// §4.6 and OIDC Core §3.1.3.2, the order in which failed checks are answered, single use and replay revocation
// (RFC 6749 §4.1.2, §10.5), and the success answer (what was issued, returned as is: the binding signs).
import t from 'tap';
import type {
  AuthorizationCodeStore,
  CodeChecks,
  CodeExchange,
  CodeExchangeRequest,
  CodeGrant,
} from '../../src/oauth/grants/authorization-code.js';
import { authorizationCodeGrant } from '../../src/oauth/grants/authorization-code.js';
import type { GrantClient, IssuedTokens, TokenParams } from '../../src/oauth/grants/grant.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { refused } from '../helpers/refused.js';
import { s256Challenge } from '../../src/oauth/pkce.js';

// The public descriptions, in one place (the wording is src/oauth's; the tests check which refusal is given).
const said = {
  invalidCode: 'the authorization code is invalid, expired or already used',
  otherClient: 'the authorization code was issued to another client',
  redirectUri: 'redirect_uri does not match the authorization request',
  pkce: 'code_verifier does not match the code_challenge',
  user: 'the user is not available',
  session: 'the sign-in session of the authorization code has ended',
  consent: "the user revoked the application's access",
  disabledClient: 'this application is disabled',
  verifierSyntax: 'code_verifier must be 43-128 unreserved characters',
};

const VERIFIER = 'v'.repeat(43);
const REDIRECT = 'https://rp.example/cb';

/** One code as the store knows it; the flags stand for the database's side of the checks. */
interface FakeCode {
  grant: CodeGrant;
  redirectUri: string;
  /** null: issued without PKCE (an application whose PKCE is optional). */
  codeChallenge: string | null;
  scope: string;
  expired?: boolean;
  userActive?: boolean;
  sessionLive?: boolean;
  consented?: boolean;
  /** What the store records, per the contract: tokens only when every check passed. */
  spent?: boolean;
}

/** The AuthorizationCodeStore contract in memory: single use, checks, tokens only when all pass, replay. */
function fakeStore(codes: Record<string, FakeCode>) {
  let n = 0;
  const calls: { consumed: CodeExchangeRequest[]; revoked: CodeGrant[] } = { consumed: [], revoked: [] };
  const issued = new Map<string, { grantId: string; revoked: boolean }>();
  const store: AuthorizationCodeStore = {
    async consumeAndIssue(request) {
      calls.consumed.push(request);
      const code = codes[request.code];
      if (!code) return { kind: 'unknown' };
      if (code.spent) return { kind: 'replayed', code: code.grant };
      code.spent = true;
      const checks: CodeChecks = {
        sameClient: code.grant.clientId === request.clientId,
        unexpired: !code.expired,
        sameRedirectUri: code.redirectUri === request.redirectUri,
        pkce: code.codeChallenge === request.codeChallenge,
        userActive: code.userActive ?? true,
        sessionLive: code.sessionLive ?? true,
        consented: code.consented ?? true,
      };
      if (!Object.values(checks).every(Boolean)) return { kind: 'consumed', checks, issued: undefined };
      n += 1;
      const tokens: IssuedTokens = {
        accessToken: `access-${n}`,
        refreshToken: code.scope.split(' ').includes('offline_access') ? `refresh-${n}` : undefined,
        scope: code.scope,
        expiresIn: 3600,
        subject: code.grant.userId,
        clientId: code.grant.clientId,
        authTime: new Date(1_700_000_000_000),
        nonce: 'nonce-1',
        sessionId: 'session-1',
      };
      issued.set(tokens.accessToken, { grantId: code.grant.grantId, revoked: false });
      return { kind: 'consumed', checks, issued: tokens } satisfies CodeExchange;
    },
    async revokeReplayedGrant(grant) {
      calls.revoked.push(grant);
      for (const token of issued.values()) if (token.grantId === grant.grantId) token.revoked = true;
    },
  };
  return { store, calls, issued };
}

const client: GrantClient = { clientId: 'client-a', enabled: true };
const newCode = (extra: Partial<FakeCode> = {}): FakeCode => ({
  grant: { grantId: 'grant-1', clientId: 'client-a', userId: 'user-1' },
  redirectUri: REDIRECT,
  codeChallenge: s256Challenge(VERIFIER),
  scope: 'openid profile',
  ...extra,
});
const params = (extra: Record<string, string | undefined> = {}): TokenParams => ({
  grant_type: 'authorization_code',
  client_id: client.clientId,
  code: 'code-1',
  code_verifier: VERIFIER,
  redirect_uri: REDIRECT,
  ...extra,
});

t.test('success: the issued tokens come back as recorded; the request binds client, redirect_uri, S256', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode({ scope: 'openid offline_access' }) });
  const issued = await authorizationCodeGrant.handle(params(), client, store);
  t.match(issued, {
    accessToken: 'access-1',
    refreshToken: 'refresh-1',
    scope: 'openid offline_access',
    subject: 'user-1',
    clientId: 'client-a',
    nonce: 'nonce-1',
    sessionId: 'session-1',
  });
  t.same(calls.consumed, [
    { code: 'code-1', clientId: 'client-a', redirectUri: REDIRECT, codeChallenge: s256Challenge(VERIFIER) },
  ]);
  t.equal(authorizationCodeGrant.grantType, 'authorization_code');
  const again = await authorizationCodeGrant.handle(params(), client, store).catch((e: unknown) => e);
  t.ok(again instanceof OAuthError, 'the code is single use');
});

t.test('no offline_access: no refresh token (decisions.md, Protocol)', async (t) => {
  const { store } = fakeStore({ 'code-1': newCode() });
  const issued = await authorizationCodeGrant.handle(params(), client, store);
  t.equal(issued.refreshToken, undefined);
  t.equal(issued.scope, 'openid profile');
});

t.test('a disabled application is invalid_client (401), before anything else is read', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  const disabled = { ...client, enabled: false };
  await refused(
    t,
    authorizationCodeGrant.handle(params(), disabled, store),
    'invalid_client',
    said.disabledClient,
    'disabled',
    401,
  );
  await refused(
    t,
    authorizationCodeGrant.handle({ grant_type: 'authorization_code' }, disabled, store),
    'invalid_client',
    said.disabledClient,
    'disabled, even with parameters missing',
    401,
  );
  t.same(calls.consumed, [], 'the code was not touched');
  t.equal((await authorizationCodeGrant.handle(params(), client, store)).accessToken, 'access-1', 'enabled: issued');
});

t.test('required parameters, the first missing one named (RFC 6749 §4.1.3, RFC 7636 §4.5)', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  t.same(authorizationCodeGrant.parameters, ['code', 'code_verifier', 'redirect_uri']);
  const cases: Array<[Record<string, string | undefined>, string]> = [
    [{ code: undefined }, 'code is required'],
    [{ code: '' }, 'code is required'],
    [{ code_verifier: undefined }, 'code_verifier is required'],
    [{ redirect_uri: undefined }, 'redirect_uri is required'],
    [{ redirect_uri: '' }, 'redirect_uri is required'],
    [{ code: undefined, code_verifier: undefined, redirect_uri: undefined }, 'code is required'],
    [{ code_verifier: undefined, redirect_uri: undefined }, 'code_verifier is required'],
  ];
  for (const [extra, description] of cases) {
    await refused(
      t,
      authorizationCodeGrant.handle(params(extra), client, store),
      'invalid_request',
      description,
      description,
    );
  }
  t.same(calls.consumed, [], 'the code was not touched');
});

t.test('a code_verifier that is not 43-128 unreserved characters is invalid_request (RFC 7636 §4.1)', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  for (const verifier of [
    'v'.repeat(42),
    'v'.repeat(129),
    `${'v'.repeat(42)}+`,
    `${'v'.repeat(42)} `,
    'é'.repeat(43),
  ]) {
    await refused(
      t,
      authorizationCodeGrant.handle(params({ code_verifier: verifier }), client, store),
      'invalid_request',
      said.verifierSyntax,
      JSON.stringify(verifier),
    );
  }
  t.same(calls.consumed, [], 'the code was not touched');
});

t.test('an oversized code is invalid_grant without reaching the store', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  await refused(
    t,
    authorizationCodeGrant.handle(params({ code: 'c'.repeat(12_001) }), client, store),
    'invalid_grant',
    said.invalidCode,
    '12,001',
  );
  t.same(calls.consumed, []);
  // 12,000 characters still reaches the store (and is unknown there).
  await refused(
    t,
    authorizationCodeGrant.handle(params({ code: 'c'.repeat(12_000) }), client, store),
    'invalid_grant',
    said.invalidCode,
    '12,000',
  );
  t.equal(calls.consumed.length, 1);
});

t.test('an unknown code is invalid_grant, and revokes nothing', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  await refused(
    t,
    authorizationCodeGrant.handle(params({ code: 'code-2' }), client, store),
    'invalid_grant',
    said.invalidCode,
    'unknown',
  );
  t.same(calls.revoked, []);
});

t.test('a replayed code is invalid_grant and revokes the tokens of its grant (RFC 6749 §4.1.2)', async (t) => {
  const { store, calls, issued } = fakeStore({ 'code-1': newCode() });
  const first = await authorizationCodeGrant.handle(params(), client, store);
  t.equal(issued.get(first.accessToken)?.revoked, false);
  await refused(t, authorizationCodeGrant.handle(params(), client, store), 'invalid_grant', said.invalidCode, 'replay');
  t.same(calls.revoked, [{ grantId: 'grant-1', clientId: 'client-a', userId: 'user-1' }], 'its grant, once');
  t.equal(issued.get(first.accessToken)?.revoked, true, "the first exchange's tokens are revoked");
});

t.test('a replay by another client also revokes the grant (the code leaked)', async (t) => {
  const { store, calls } = fakeStore({ 'code-1': newCode() });
  await authorizationCodeGrant.handle(params(), client, store);
  const other = { clientId: 'client-b', enabled: true };
  await refused(
    t,
    authorizationCodeGrant.handle(params({ client_id: 'client-b' }), other, store),
    'invalid_grant',
    said.invalidCode,
    'replay by client-b',
  );
  t.equal(calls.revoked.length, 1);
});

// Each check of a consumed code alone, as the request or the database makes it fail.
const failures: Array<{
  check: keyof CodeChecks;
  said: string;
  code?: Partial<FakeCode>;
  request?: Record<string, string>;
}> = [
  {
    check: 'sameClient',
    said: said.otherClient,
    code: { grant: { grantId: 'grant-1', clientId: 'client-b', userId: 'user-1' } },
  },
  { check: 'unexpired', said: said.invalidCode, code: { expired: true } },
  { check: 'sameRedirectUri', said: said.redirectUri, request: { redirect_uri: `${REDIRECT}/` } },
  { check: 'sameRedirectUri', said: said.redirectUri, request: { redirect_uri: 'https://RP.example/cb' } },
  { check: 'pkce', said: said.pkce, request: { code_verifier: 'w'.repeat(43) } },
  { check: 'userActive', said: said.user, code: { userActive: false } },
  { check: 'sessionLive', said: said.session, code: { sessionLive: false } },
  { check: 'consented', said: said.consent, code: { consented: false } },
];

t.test('each failed check: invalid_grant with its reason; the code is spent all the same', async (t) => {
  for (const f of failures) {
    const { store, calls } = fakeStore({ 'code-1': newCode(f.code) });
    const name = `${f.check} ${JSON.stringify(f.request ?? f.code)}`;
    await refused(t, authorizationCodeGrant.handle(params(f.request), client, store), 'invalid_grant', f.said, name);
    t.same(calls.revoked, [], `${name}: a failed check revokes nothing`);
    // The code is spent: even the right request now finds it replayed (and that revokes its grant).
    await refused(
      t,
      authorizationCodeGrant.handle(params(), client, store),
      'invalid_grant',
      said.invalidCode,
      `${name}: spent`,
    );
    t.equal(calls.revoked.length, 1, `${name}: the retry is a replay`);
  }
});

t.test("several failed checks: the first in the handler's order is the answer (all 128 combinations)", async (t) => {
  const order: Array<[keyof CodeChecks, string]> = [
    ['sameClient', said.otherClient],
    ['unexpired', said.invalidCode],
    ['sameRedirectUri', said.redirectUri],
    ['pkce', said.pkce],
    ['userActive', said.user],
    ['sessionLive', said.session],
    ['consented', said.consent],
  ];
  for (let mask = 1; mask < 1 << order.length; mask++) {
    const failing = order.filter((_, i) => mask & (1 << i)).map(([check]) => check);
    const code = newCode({
      ...(failing.includes('sameClient') && { grant: { grantId: 'grant-1', clientId: 'client-b', userId: 'user-1' } }),
      expired: failing.includes('unexpired'),
      userActive: !failing.includes('userActive'),
      sessionLive: !failing.includes('sessionLive'),
      consented: !failing.includes('consented'),
    });
    const request = {
      ...(failing.includes('sameRedirectUri') && { redirect_uri: `${REDIRECT}?x=1` }),
      ...(failing.includes('pkce') && { code_verifier: 'w'.repeat(43) }),
    };
    const { store } = fakeStore({ 'code-1': code });
    const expected = order.find(([check]) => failing.includes(check))![1];
    const thrown = (await authorizationCodeGrant
      .handle(params(request), client, store)
      .catch((e: unknown) => e)) as OAuthError;
    if (thrown.error !== 'invalid_grant' || thrown.error_description !== expected)
      t.fail(`${failing.join('+')}: ${thrown.error} ${thrown.error_description}, expected ${expected}`);
  }
  t.pass('every combination answered its first failed check');
});

t.test('a store that passes every check but records no tokens is a server error, not a response', async (t) => {
  const store: AuthorizationCodeStore = {
    consumeAndIssue: async () => ({
      kind: 'consumed',
      checks: {
        sameClient: true,
        unexpired: true,
        sameRedirectUri: true,
        pkce: true,
        userActive: true,
        sessionLive: true,
        consented: true,
      },
      issued: undefined,
    }),
    revokeReplayedGrant: async () => {},
  };
  const thrown = await authorizationCodeGrant.handle(params(), client, store).catch((e: unknown) => e);
  t.ok(thrown instanceof Error && !(thrown instanceof OAuthError), 'a plain Error (server_error at the edge)');
});

t.test('PKCE optional (confidential clients): a code without a challenge, and the downgrade check', async (t) => {
  const confidential: GrantClient = { ...client, clientType: 'confidential' };
  const noVerifier = params({ code_verifier: undefined });

  // A code issued without a challenge: exchanged without a verifier.
  const plain = fakeStore({ 'code-1': newCode({ codeChallenge: null }) });
  t.equal((await authorizationCodeGrant.handle(noVerifier, confidential, plain.store)).accessToken, 'access-1');
  t.same(plain.calls.consumed[0]?.codeChallenge, null, 'no verifier: no challenge asked of the store');

  // RFC 9700 §4.8.2: a verifier sent for a code issued without a challenge is refused (and the code is spent).
  const downgrade = fakeStore({ 'code-1': newCode({ codeChallenge: null }) });
  await refused(
    t,
    authorizationCodeGrant.handle(params(), confidential, downgrade.store),
    'invalid_grant',
    said.pkce,
    'a verifier for a code without a challenge',
  );
  await refused(
    t,
    authorizationCodeGrant.handle(noVerifier, confidential, downgrade.store),
    'invalid_grant',
    said.invalidCode,
    'the code is spent all the same',
  );

  // A code issued with a challenge needs its verifier, from a confidential client too.
  const withChallenge = fakeStore({ 'code-1': newCode() });
  await refused(
    t,
    authorizationCodeGrant.handle(noVerifier, confidential, withChallenge.store),
    'invalid_grant',
    'the authorization code needs its code_verifier',
    'a challenge and no verifier',
  );
  const wrong = fakeStore({ 'code-1': newCode() });
  await refused(
    t,
    authorizationCodeGrant.handle(params({ code_verifier: 'w'.repeat(43) }), confidential, wrong.store),
    'invalid_grant',
    said.pkce,
    'a wrong verifier',
  );
  const right = fakeStore({ 'code-1': newCode() });
  t.equal(
    (await authorizationCodeGrant.handle(params(), confidential, right.store)).accessToken,
    'access-1',
    'the right verifier',
  );

  // A public client must send a verifier before its code is even looked at, whatever the code says.
  const pub = fakeStore({ 'code-1': newCode({ codeChallenge: null }) });
  await refused(
    t,
    authorizationCodeGrant.handle(noVerifier, { ...client, clientType: 'public' }, pub.store),
    'invalid_request',
    'code_verifier is required',
    'public client',
  );
  t.same(pub.calls.consumed, [], 'the code was not touched');
});
