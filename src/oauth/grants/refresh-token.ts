// grant_type=refresh_token (RFC 6749 §6) with rotation on every use and reuse detection (RFC 9700
// §4.14): one transaction locks the presented token's row; a token presented after it was used
// revokes its whole family (the grant) and every access token issued from it. An optional grace
// window lets a client that lost the response retry once and get the same successor, never a sibling.
// A current token with no scope asked is rotated by one atomic step first (rotateIfCurrent); anything
// else, or a token that step refused, goes through the locked transaction, which says why.
// The scope may only narrow (RFC 6749 §6); the refresh token keeps the grant's scope.
import { OAuthError, type OAuthErrorDescription } from '../errors.js';
import { formatScope, splitScope } from '../scope.js';
import { hashToken } from '../tokens.js';
import { type GrantHandler, type IssuedTokens, requireParameters } from './grant.js';

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
  checks: RefreshChecks;
}

/** What the refresh handler may do inside its one transaction. */
export interface RefreshTransaction {
  /** The live successor a used token was rotated to, if the grace window still allows a retry. */
  liveSuccessor(token: LockedRefreshToken): Promise<IssuedTokens | undefined>;
  /** Revokes the token's family (its grant) and records refresh_token.reuse_detected. */
  revokeFamily(token: LockedRefreshToken): Promise<void>;
  /** Records the successor pair (refresh token keeps the grant's scope) and marks the token used. */
  rotate(token: LockedRefreshToken, accessScope: string): Promise<IssuedTokens>;
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
}

const invalid = (why: OAuthErrorDescription<'invalid_grant'>) => new OAuthError('invalid_grant', why);

/** An error decided inside the transaction is thrown after it commits (a reuse revocation must stay). */
type Outcome = { issued: IssuedTokens } | { error: OAuthError };

export const refreshTokenGrant: GrantHandler<RefreshTokenStore> = {
  grantType: 'refresh_token',
  parameters: ['refresh_token'],

  async handle(params, client, store) {
    const [presented] = requireParameters(this, params) as [string];
    if (presented.length > 256) throw invalid('the refresh token is invalid, expired or revoked');
    const requestedScope = params.scope;
    const tokenHash = hashToken(presented);
    if (client.enabled && requestedScope === undefined) {
      const issued = await store.rotateIfCurrent(tokenHash, client.clientId);
      if (issued) return issued;
    }

    const outcome = await store.withLockedToken(tokenHash, client.clientId, async (token, tx): Promise<Outcome> => {
      if (!token?.checks.sameClient || !token.checks.unrevoked) {
        return { error: invalid('the refresh token is invalid, expired or revoked') };
      }
      if (!token.checks.unused) {
        const successor = await tx.liveSuccessor(token);
        if (successor) {
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
      return { issued: await tx.rotate(token, formatScope(scopes)) };
    });

    if ('error' in outcome) throw outcome.error;
    return outcome.issued;
  },
};
