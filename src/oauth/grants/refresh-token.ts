// grant_type=refresh_token (RFC 6749 §6) with rotation on every use and reuse detection (RFC 9700
// §4.14): one transaction locks the presented token's row; a token presented after it was used
// revokes its whole family (the grant) and every access token issued from it. An optional grace
// window lets a client that lost the response retry once and get the same successor, never a sibling.
// A current token with no scope asked is rotated by one atomic step first (rotateIfCurrent); anything
// else, or a token that step refused, goes through the locked transaction, which says why.
// The scope may only narrow (RFC 6749 §6); the refresh token keeps the grant's scope.
// Resource indicators (RFC 8707 §2.2): `resource` names one of the grant's resources (several granted: it must),
// and the access token is for it (src/oauth/resource-indicators.ts): so a client holding a grant for several APIs
// gets one token per API by refreshing with `resource`. A grant with resources always takes the locked path; a JWT
// access token (RFC 9068) is signed outside the transaction: the locked path answers with the token to sign,
// and runs once more with it.
import { OAuthError, type OAuthErrorDescription } from '../errors.js';
import { type AccessTokenPlan, chooseResource } from '../resource-indicators.js';
import { formatScope, splitScope } from '../scope.js';
import { hashToken } from '../tokens.js';
import { type GrantHandler, type IssuedTokens, requireParameters, selfRegistered } from './grant.js';

/**
 * Each rule a current refresh token meets, true where it holds: read from the locked row by the same rules
 * (db/repositories/refresh-rules.ts) whose SQL the one-step rotation (rotateIfCurrent) runs.
 */
export interface RefreshChecks {
  /** Issued to the requesting client. */
  sameClient: boolean;
  /** Neither the token nor its grant was revoked. */
  unrevoked: boolean;
  /** Not presented before. */
  unused: boolean;
  /** Within its sliding and absolute lifetimes. */
  unexpired: boolean;
  /** Its user is enabled. */
  userActive: boolean;
}

/** The presented refresh token's row, locked until the transaction ends. */
export interface LockedRefreshToken {
  grantId: string;
  clientId: string;
  userId: string;
  /** The grant's scope, which the refresh token keeps. */
  scope: string;
  usedAt: Date | null;
  absoluteExpiresAt: Date;
  authTime: Date | null;
  /** The grant's amr; null for a grant older than second factors. */
  amr: string[] | null;
  /** The grant's resources (RFC 8707); [] for none. */
  resources: string[];
  checks: RefreshChecks;
}

/** An access token made outside the transaction for a plan (a signed JWT), to be recorded by rotate. */
export interface PreparedAccessToken {
  token: string;
  expiresAt: Date;
  plan: AccessTokenPlan;
}

/** What the refresh handler may do inside its one transaction. */
export interface RefreshTransaction {
  /** The live successor a used token was rotated to, if the grace window still allows a retry. */
  liveSuccessor(token: LockedRefreshToken): Promise<IssuedTokens | undefined>;
  /** Revokes the token's family (its grant) and records refresh_token.reuse_detected. */
  revokeFamily(token: LockedRefreshToken): Promise<void>;
  /**
   * The access token for `audience` out of `scopes` (src/oauth/resource-indicators.ts accessTokenPlan): invalid_target
   * when the resource server is gone, disabled or no longer allows the client.
   */
  plan(
    token: LockedRefreshToken,
    scopes: string[],
    audience: string | null,
    selfRegistered: boolean,
  ): Promise<AccessTokenPlan>;
  /**
   * Records the successor pair (refresh token keeps the grant's scope) and marks the token used; the access token
   * is `prepared` when it was made outside (a JWT), else an opaque one of `plan`. `scopes`: the scopes asked (the
   * grant's, or fewer), which say whether an ID token is issued; the plan's are the access token's.
   */
  rotate(
    token: LockedRefreshToken,
    access: { scopes: string[]; plan: AccessTokenPlan; prepared?: PreparedAccessToken | undefined },
  ): Promise<IssuedTokens>;
}

export interface RefreshTokenStore {
  /**
   * The common case in one atomic step: rotates the token when it is unused, unrevoked, of this client,
   * within its lifetimes, of a live grant and an enabled user, keeping the grant's scope. Undefined, with
   * nothing changed, otherwise: the locked path below then finds out why.
   */
  rotateIfCurrent(tokenHash: string, clientId: string): Promise<IssuedTokens | undefined>;
  /**
   * Runs `work` in one transaction with the presented token's row locked (undefined: no such token), its
   * checks read for the requesting client.
   */
  withLockedToken<T>(
    tokenHash: string,
    clientId: string,
    work: (token: LockedRefreshToken | undefined, tx: RefreshTransaction) => Promise<T>,
  ): Promise<T>;
  /** Makes the access token of a plan that needs signing (a JWT), with no transaction open. */
  prepare(token: LockedRefreshToken, plan: AccessTokenPlan): Promise<PreparedAccessToken>;
}

const samePlan = (a: AccessTokenPlan, b: AccessTokenPlan) =>
  a.audience === b.audience &&
  a.ttl === b.ttl &&
  a.format === b.format &&
  formatScope(a.scope) === formatScope(b.scope);

const invalid = (why: OAuthErrorDescription<'invalid_grant'>) => new OAuthError('invalid_grant', why);

/**
 * An error decided inside the transaction is thrown after it commits (a reuse revocation must stay); `sign`: nothing
 * was written, the access token must be signed first.
 */
type Outcome =
  | { issued: IssuedTokens }
  | { error: OAuthError }
  | { sign: { token: LockedRefreshToken; plan: AccessTokenPlan } };

/** chooseResource's answer, or its invalid_target. */
function audienceOf(resources: string[], resource: string | undefined): { audience: string | null } | OAuthError {
  try {
    return { audience: chooseResource(resources, resource) };
  } catch (error) {
    if (error instanceof OAuthError) return error;
    throw error;
  }
}

export const refreshTokenGrant: GrantHandler<RefreshTokenStore> = {
  grantType: 'refresh_token',
  parameters: ['refresh_token'],

  async handle(params, client, store) {
    const [presented] = requireParameters(this, params) as [string];
    if (presented.length > 256) throw invalid('the refresh token is invalid, expired or revoked');
    const requestedScope = params.scope;
    const resource = params.resource;
    const tokenHash = hashToken(presented);
    if (client.enabled && requestedScope === undefined && resource === undefined) {
      const issued = await store.rotateIfCurrent(tokenHash, client.clientId);
      if (issued) return issued;
    }

    let prepared: PreparedAccessToken | undefined;
    const attempt = async (token: LockedRefreshToken | undefined, tx: RefreshTransaction): Promise<Outcome> => {
      if (!token?.checks.sameClient || !token.checks.unrevoked) {
        return { error: invalid('the refresh token is invalid, expired or revoked') };
      }
      if (!token.checks.unused) {
        const successor = await tx.liveSuccessor(token);
        const target = audienceOf(token.resources, resource);
        // A retry of the same request (the same audience) gets the same successor; anything else is a reuse.
        if (successor && !(target instanceof OAuthError) && (successor.audience ?? null) === target.audience) {
          // A retry returns tokens too: the same checks as a rotation (application, user).
          if (!client.enabled) return { error: invalid('the application is disabled') };
          if (!token.checks.userActive) return { error: invalid('the user is not available') };
          return { issued: successor };
        }
        await tx.revokeFamily(token);
        return { error: invalid('the refresh token was already used; the whole grant is revoked') };
      }
      if (!token.checks.unexpired) {
        return { error: invalid('the refresh token has expired') };
      }
      if (!client.enabled) return { error: invalid('the application is disabled') };
      if (!token.checks.userActive) return { error: invalid('the user is not available') };

      const grantScopes = splitScope(token.scope);
      let scopes = grantScopes;
      if (requestedScope !== undefined) {
        const requested = splitScope(requestedScope);
        const wider = requested.filter((s) => !grantScopes.includes(s));
        if (wider.length)
          return {
            error: new OAuthError('invalid_scope', 'scope exceeds the original grant', {
              detail: `scope ${wider.join(' ')}`,
            }),
          };
        if (requested.length === 0) return { error: new OAuthError('invalid_scope', 'scope must not be empty') };
        scopes = grantScopes.filter((s) => requested.includes(s));
      }
      const target = audienceOf(token.resources, resource);
      if (target instanceof OAuthError) return { error: target };
      let plan: AccessTokenPlan;
      try {
        plan = await tx.plan(token, scopes, target.audience, selfRegistered(client));
      } catch (error) {
        if (error instanceof OAuthError) return { error };
        throw error;
      }
      if (plan.format === 'jwt' && plan.audience !== null) {
        // Signed with no lock held: the transaction ends writing nothing, and runs again with the token.
        if (!prepared || !samePlan(prepared.plan, plan)) return { sign: { token, plan } };
        return { issued: await tx.rotate(token, { scopes, plan, prepared }) };
      }
      return { issued: await tx.rotate(token, { scopes, plan }) };
    };

    let outcome = await store.withLockedToken(tokenHash, client.clientId, attempt);
    if ('sign' in outcome) {
      prepared = await store.prepare(outcome.sign.token, outcome.sign.plan);
      outcome = await store.withLockedToken(tokenHash, client.clientId, attempt);
      // The registry changed between the two runs: the plan signed for is not the plan now.
      if ('sign' in outcome)
        throw new OAuthError('temporarily_unavailable', 'The service is temporarily unavailable; try again shortly');
    }
    if ('error' in outcome) throw outcome.error;
    return outcome.issued;
  },
};
