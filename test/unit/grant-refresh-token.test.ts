// grant_type=refresh_token (src/oauth/grants/refresh-token.ts) against an in-memory store that keeps the
// RefreshTokenStore contract (one atomic rotation of a current token; otherwise one transaction over the locked
// row, rolled back if the work throws): no database, no HTTP. Every refusal of RFC 6749 §6 / §5.2 and of
// rotation with reuse detection (RFC 9700 §4.14.2), the order they are answered in, the grace-window retry,
// scope narrowing, and the success answers.
import t from 'tap';
import type {
  LockedRefreshToken,
  RefreshChecks,
  RefreshTokenStore,
  RefreshTransaction,
} from '../../src/oauth/grants/refresh-token.js';
import { refreshTokenGrant } from '../../src/oauth/grants/refresh-token.js';
import type { GrantClient, IssuedTokens, TokenParams } from '../../src/oauth/grants/grant.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { refused } from '../helpers/refused.js';
import { hashToken } from '../../src/oauth/tokens.js';

// The public descriptions, in one place (the wording is src/oauth's; the tests check which refusal is given).
const said = {
  invalid: 'the refresh token is invalid, expired or revoked',
  reused: 'the refresh token was already used; the whole grant is revoked',
  expired: 'the refresh token has expired',
  disabledClient: 'the application is disabled',
  user: 'the user is not available',
  emptyScope: 'scope must not be empty',
};

const HOUR = 3_600_000;

interface FakeToken {
  grantId: string;
  clientId: string;
  userId: string;
  scope: string;
  usedAt: number | null;
  revoked: boolean;
  expiresAt: number;
  absoluteExpiresAt: number;
  successor?: { hash: string; issued: IssuedTokens };
}

interface State {
  tokens: Map<string, FakeToken>;
  grants: Map<string, { revoked: boolean }>;
  users: Map<string, { disabled: boolean }>;
  /** Access tokens issued, by value: their grant and whether they were revoked with it. */
  access: Map<string, { grantId: string; scope: string }>;
  reuseDetected: string[];
}

/** The RefreshTokenStore contract in memory, with a clock and a grace window (ms; 0: none). */
function fakeStore(options: { grace?: number } = {}) {
  let n = 0;
  const clock = { now: 1_800_000_000_000 };
  let state: State = {
    tokens: new Map(),
    grants: new Map([['grant-1', { revoked: false }]]),
    users: new Map([['user-1', { disabled: false }]]),
    access: new Map(),
    reuseDetected: [],
  };
  const calls = { rotateIfCurrent: 0, lockedRotations: 0 };
  const checksOf = (token: FakeToken, clientId: string): RefreshChecks => ({
    sameClient: token.clientId === clientId,
    unrevoked: !token.revoked && !state.grants.get(token.grantId)!.revoked,
    unused: token.usedAt === null,
    unexpired: token.expiresAt > clock.now && token.absoluteExpiresAt > clock.now,
    userActive: !state.users.get(token.userId)!.disabled,
  });
  /** Records a successor pair for `presentedHash` (the refresh token keeps the grant's scope). */
  const rotate = (presentedHash: string, accessScope: string): IssuedTokens => {
    const presented = state.tokens.get(presentedHash)!;
    n += 1;
    const refreshToken = `refresh-${n}`;
    const issued: IssuedTokens = {
      accessToken: `access-${n}`,
      refreshToken,
      scope: accessScope,
      expiresIn: 3600,
      subject: presented.userId,
      clientId: presented.clientId,
      authTime: new Date(1_700_000_000_000),
      nonce: null,
      sessionId: null,
    };
    state.tokens.set(hashToken(refreshToken), {
      ...presented,
      usedAt: null,
      revoked: false,
      expiresAt: Math.min(clock.now + 24 * HOUR, presented.absoluteExpiresAt),
      successor: undefined,
    });
    state.access.set(issued.accessToken, { grantId: presented.grantId, scope: accessScope });
    presented.usedAt = clock.now;
    presented.successor = { hash: hashToken(refreshToken), issued };
    return issued;
  };
  const store: RefreshTokenStore = {
    async rotateIfCurrent(tokenHash, clientId) {
      calls.rotateIfCurrent += 1;
      const token = state.tokens.get(tokenHash);
      if (!token || !Object.values(checksOf(token, clientId)).every(Boolean)) return undefined;
      return rotate(tokenHash, token.scope);
    },
    async withLockedToken(tokenHash, clientId, work) {
      const before = structuredClone(state);
      const row = state.tokens.get(tokenHash);
      const token: LockedRefreshToken | undefined = row && {
        grantId: row.grantId,
        clientId: row.clientId,
        userId: row.userId,
        scope: row.scope,
        usedAt: row.usedAt === null ? null : new Date(row.usedAt),
        absoluteExpiresAt: new Date(row.absoluteExpiresAt),
        authTime: new Date(1_700_000_000_000),
        amr: ['pwd'],
        resources: [],
        checks: checksOf(row, clientId),
      };
      const tx: RefreshTransaction = {
        async liveSuccessor() {
          const used = state.tokens.get(tokenHash)!;
          if (!options.grace || clock.now - used.usedAt! > options.grace || !used.successor) return undefined;
          const successor = state.tokens.get(used.successor.hash)!;
          if (successor.usedAt !== null || successor.revoked) return undefined;
          return used.successor.issued;
        },
        async revokeFamily(t) {
          state.grants.get(t.grantId)!.revoked = true;
          state.reuseDetected.push(t.grantId);
        },
        async plan(_t, scope, audience) {
          return { audience, scope, ttl: 3600, format: 'opaque' as const };
        },
        async rotate(_t, { plan }) {
          calls.lockedRotations += 1;
          return rotate(tokenHash, plan.scope.join(' '));
        },
      };
      try {
        return await work(token, tx);
      } catch (e) {
        state = before; // rolled back
        throw e;
      }
    },
    async prepare() {
      throw new Error('no JWT access tokens here');
    },
  };
  /** A new family member of grant-1, issued to `clientId`, usable now. */
  const mint = (value: string, extra: Partial<FakeToken> = {}) => {
    state.tokens.set(hashToken(value), {
      grantId: 'grant-1',
      clientId: 'client-a',
      userId: 'user-1',
      scope: 'openid profile email offline_access',
      usedAt: null,
      revoked: false,
      expiresAt: clock.now + 24 * HOUR,
      absoluteExpiresAt: clock.now + 90 * 24 * HOUR,
      ...extra,
    });
  };
  const grantRevoked = () => state.grants.get('grant-1')!.revoked;
  const token = (value: string) => state.tokens.get(hashToken(value));
  return {
    store,
    calls,
    clock,
    mint,
    grantRevoked,
    token,
    get state() {
      return state;
    },
  };
}

const client: GrantClient = { clientId: 'client-a', enabled: true };
const params = (refreshToken: string | undefined, extra: Record<string, string | undefined> = {}): TokenParams => ({
  grant_type: 'refresh_token',
  client_id: 'client-a',
  refresh_token: refreshToken,
  ...extra,
});
const refresh = (
  fake: ReturnType<typeof fakeStore>,
  token: string | undefined,
  extra: Record<string, string | undefined> = {},
  as: GrantClient = client,
) => refreshTokenGrant.handle(params(token, extra), as, fake.store);

t.test('rotation: a current token gets a new pair in one step; the grant scope is kept', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  t.equal(refreshTokenGrant.grantType, 'refresh_token');
  t.same(refreshTokenGrant.parameters, ['refresh_token']);
  const first = await refresh(fake, 'rt-0');
  t.match(first, {
    accessToken: 'access-1',
    refreshToken: 'refresh-1',
    scope: 'openid profile email offline_access',
    subject: 'user-1',
    clientId: 'client-a',
    sessionId: null,
  });
  t.equal(fake.calls.rotateIfCurrent, 1, 'the one-step rotation');
  t.equal(fake.calls.lockedRotations, 0, 'no locked path');
  t.ok(fake.token('rt-0')!.usedAt, 'the presented token is used');
  const second = await refresh(fake, first.refreshToken);
  t.equal(second.refreshToken, 'refresh-2', 'the successor rotates in turn');
  t.notOk(fake.grantRevoked());
});

t.test('scope narrowing (RFC 6749 §6): the access token narrows, the refresh token keeps the grant', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  const narrowed = await refresh(fake, 'rt-0', { scope: 'email openid' });
  t.equal(narrowed.scope, 'openid email', "the grant's order, only what was asked");
  t.equal(fake.calls.rotateIfCurrent, 0, 'a scope goes through the locked path');
  t.equal(fake.calls.lockedRotations, 1);
  t.equal(fake.token(narrowed.refreshToken!)!.scope, 'openid profile email offline_access', 'the refresh keeps it');
  const full = await refresh(fake, narrowed.refreshToken);
  t.equal(full.scope, 'openid profile email offline_access', 'the next refresh without scope: the whole grant');
  const same = await refresh(fake, full.refreshToken, { scope: 'openid profile email offline_access' });
  t.equal(same.scope, 'openid profile email offline_access', 'asking for all of it');
  const repeated = await refresh(fake, same.refreshToken, { scope: '  openid   openid ' });
  t.equal(repeated.scope, 'openid', 'spaces and repeats');
});

t.test('a wider or empty scope is invalid_scope, and the token stays current', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  const wider = await refresh(fake, 'rt-0', { scope: 'openid admin' }).catch((e: unknown) => e);
  t.ok(wider instanceof OAuthError);
  t.equal((wider as OAuthError).error, 'invalid_scope');
  t.equal((wider as OAuthError).error_description, 'scope exceeds the original grant', 'a fixed description');
  t.equal((wider as OAuthError).detail, 'scope admin', 'the private detail names what exceeds the grant, only that');
  await refused(t, refresh(fake, 'rt-0', { scope: '' }), 'invalid_scope', said.emptyScope, 'empty');
  await refused(t, refresh(fake, 'rt-0', { scope: '   ' }), 'invalid_scope', said.emptyScope, 'blank');
  t.equal(fake.token('rt-0')!.usedAt, null, 'not rotated');
  t.equal(fake.calls.lockedRotations, 0);
  t.ok(await refresh(fake, 'rt-0'), 'still refreshes');
});

t.test('refresh_token is required; an oversized one is invalid_grant without reaching the store', async (t) => {
  const fake = fakeStore();
  await refused(t, refresh(fake, undefined), 'invalid_request', 'refresh_token is required', 'missing');
  await refused(t, refresh(fake, ''), 'invalid_request', 'refresh_token is required', 'empty');
  await refused(t, refresh(fake, 'r'.repeat(257)), 'invalid_grant', said.invalid, '257 characters');
  t.same(fake.calls, { rotateIfCurrent: 0, lockedRotations: 0 }, 'the store was not asked');
  await refused(t, refresh(fake, 'r'.repeat(256)), 'invalid_grant', said.invalid, '256 characters: unknown');
  t.equal(fake.calls.rotateIfCurrent, 1, '256 characters reach the store');
});

t.test('an unknown token is invalid_grant', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  await refused(t, refresh(fake, 'rt-x'), 'invalid_grant', said.invalid, 'unknown');
  await refused(t, refresh(fake, 'rt-x', { scope: 'openid' }), 'invalid_grant', said.invalid, 'unknown, with scope');
  t.notOk(fake.grantRevoked());
});

t.test("another client's token is invalid_grant, revokes nothing, and stays its client's", async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  const other = { clientId: 'client-b', enabled: true };
  await refused(t, refresh(fake, 'rt-0', {}, other), 'invalid_grant', said.invalid, 'current, other client');
  t.equal(fake.token('rt-0')!.usedAt, null, 'not rotated');
  const issued = await refresh(fake, 'rt-0');
  // A used token presented by another client: not a reuse of this family by its client, so nothing revoked.
  await refused(t, refresh(fake, 'rt-0', {}, other), 'invalid_grant', said.invalid, 'used, other client');
  t.notOk(fake.grantRevoked(), 'no family revocation');
  t.ok(await refresh(fake, issued.refreshToken), 'the family lives on');
});

t.test('a revoked token, or a token of a revoked grant, is invalid_grant', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0', { revoked: true });
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.invalid, 'token revoked');
  fake.mint('rt-1', { revoked: true, usedAt: fake.clock.now - 1000 });
  await refused(t, refresh(fake, 'rt-1'), 'invalid_grant', said.invalid, 'revoked and used: no reuse');
  t.same(fake.state.reuseDetected, []);
  fake.mint('rt-2');
  fake.state.grants.get('grant-1')!.revoked = true;
  await refused(t, refresh(fake, 'rt-2'), 'invalid_grant', said.invalid, 'grant revoked');
  t.equal(fake.calls.lockedRotations, 0);
});

t.test('reuse (RFC 9700 §4.14.2): the family is revoked, and that stays though the request fails', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  const first = await refresh(fake, 'rt-0');
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.reused, 'reuse');
  t.ok(fake.grantRevoked(), 'the grant is revoked (committed: the error is thrown after the transaction)');
  t.same(fake.state.reuseDetected, ['grant-1'], 'recorded once');
  await refused(t, refresh(fake, first.refreshToken), 'invalid_grant', said.invalid, 'the successor is dead');
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.invalid, 'and the reused one');
});

t.test('reuse of a used token with a scope, of an expired used token: reuse all the same', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0', { usedAt: fake.clock.now - 1000 });
  await refused(t, refresh(fake, 'rt-0', { scope: 'openid' }), 'invalid_grant', said.reused, 'with scope');
  const expired = fakeStore();
  expired.mint('rt-0', { usedAt: expired.clock.now - 2 * HOUR, expiresAt: expired.clock.now - HOUR });
  await refused(t, refresh(expired, 'rt-0'), 'invalid_grant', said.reused, 'expired and used');
  t.ok(expired.grantRevoked());
});

t.test('grace window: a retry gets the same successor, never a sibling; past it, reuse', async (t) => {
  const fake = fakeStore({ grace: 10_000 });
  fake.mint('rt-0');
  const first = await refresh(fake, 'rt-0');
  fake.clock.now += 5_000;
  const retry = await refresh(fake, 'rt-0');
  t.same(retry, first, 'the same pair');
  const retryScoped = await refresh(fake, 'rt-0', { scope: 'openid' });
  t.same(retryScoped, first, 'the same pair even when the retry asks for a scope');
  t.notOk(fake.grantRevoked());
  fake.clock.now += 5_001;
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.reused, 'past the window');
  t.ok(fake.grantRevoked());
});

t.test('grace window: once the successor was used, a retry is reuse', async (t) => {
  const fake = fakeStore({ grace: 10_000 });
  fake.mint('rt-0');
  const first = await refresh(fake, 'rt-0');
  await refresh(fake, first.refreshToken);
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.reused, 'successor used');
  t.ok(fake.grantRevoked());
});

t.test('grace window: a retry answers tokens, so it is refused for a disabled application or user', async (t) => {
  const fake = fakeStore({ grace: 10_000 });
  fake.mint('rt-0');
  await refresh(fake, 'rt-0');
  await refused(
    t,
    refresh(fake, 'rt-0', {}, { ...client, enabled: false }),
    'invalid_grant',
    said.disabledClient,
    'app',
  );
  fake.state.users.get('user-1')!.disabled = true;
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.user, 'user');
  t.notOk(fake.grantRevoked(), 'neither is a reuse');
});

t.test('an expired token: sliding lifetime or absolute lifetime', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0', { expiresAt: fake.clock.now - 1 });
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.expired, 'sliding');
  fake.mint('rt-1', { absoluteExpiresAt: fake.clock.now });
  await refused(t, refresh(fake, 'rt-1'), 'invalid_grant', said.expired, 'absolute');
  t.equal(fake.calls.lockedRotations, 0);
  t.notOk(fake.grantRevoked());
});

t.test('a disabled application: refused before the one-step rotation is tried', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  const disabled = { ...client, enabled: false };
  await refused(t, refresh(fake, 'rt-0', {}, disabled), 'invalid_grant', said.disabledClient, 'disabled');
  t.equal(fake.calls.rotateIfCurrent, 0, 'rotateIfCurrent does not know the application: never asked');
  t.equal(fake.token('rt-0')!.usedAt, null, 'not rotated');
  await refused(t, refresh(fake, 'rt-0', { scope: 'openid' }, disabled), 'invalid_grant', said.disabledClient, 'scope');
});

t.test('a disabled user', async (t) => {
  const fake = fakeStore();
  fake.mint('rt-0');
  fake.state.users.get('user-1')!.disabled = true;
  await refused(t, refresh(fake, 'rt-0'), 'invalid_grant', said.user, 'disabled user');
  await refused(t, refresh(fake, 'rt-0', { scope: 'openid' }), 'invalid_grant', said.user, 'with scope');
  t.equal(fake.token('rt-0')!.usedAt, null, 'not rotated');
});

t.test('several failures at once: the handler answers in its order (all 64 combinations)', async (t) => {
  const conditions = ['otherClient', 'revoked', 'used', 'expired', 'clientDisabled', 'userDisabled'] as const;
  for (let mask = 0; mask < 1 << conditions.length; mask++) {
    const on = new Set(conditions.filter((_, i) => mask & (1 << i)));
    const fake = fakeStore();
    fake.mint('rt-0', {
      clientId: on.has('otherClient') ? 'client-b' : 'client-a',
      revoked: on.has('revoked'),
      usedAt: on.has('used') ? fake.clock.now - 1000 : null,
      expiresAt: fake.clock.now + (on.has('expired') ? -1 : HOUR),
    });
    fake.state.users.get('user-1')!.disabled = on.has('userDisabled');
    const as = { clientId: 'client-a', enabled: !on.has('clientDisabled') };
    const expected =
      on.has('otherClient') || on.has('revoked')
        ? said.invalid
        : on.has('used')
          ? said.reused
          : on.has('expired')
            ? said.expired
            : on.has('clientDisabled')
              ? said.disabledClient
              : on.has('userDisabled')
                ? said.user
                : undefined;
    const name = [...on].join('+') || 'none';
    const answer = await refresh(fake, 'rt-0', {}, as).catch((e: unknown) => e);
    if (expected === undefined) {
      t.notOk(answer instanceof Error, `${name}: tokens`);
      continue;
    }
    const e = answer as OAuthError;
    if (e.error !== 'invalid_grant' || e.error_description !== expected)
      t.fail(`${name}: ${e.error} ${e.error_description}, expected ${expected}`);
    if (fake.grantRevoked() !== (expected === said.reused)) t.fail(`${name}: family revoked only on reuse`);
    if (fake.calls.lockedRotations !== 0) t.fail(`${name}: nothing rotated`);
  }
  t.pass('every combination answered as the order says');
});
