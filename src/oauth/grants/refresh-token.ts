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
import { type GrantHandler, type IssuedTokens, requireParameters, type TokenAnswer } from './grant.js';

/** The presented refresh token's row, locked until the transaction ends. */
export interface LockedRefreshToken {
  grantId: string;
  clientId: string;
  userId: string;
  /** The grant's scope, which the refresh token keeps. */
  scope: string;
  usedAt: Date | null;
  /** The token or its grant was revoked. */
  revoked: boolean;
  expiresAt: Date;
  absoluteExpiresAt: Date;
  authTime: Date | null;
}

/** What the refresh handler may do inside its one transaction. */
export interface RefreshTransaction {
  /** The live successor a used token was rotated to, if the grace window still allows a retry. */
  liveSuccessor(token: LockedRefreshToken): Promise<IssuedTokens | undefined>;
  /** Revokes the token's family (its grant) and records refresh_token.reuse_detected. */
  revokeFamily(token: LockedRefreshToken): Promise<void>;
  isUserActive(userId: string): Promise<boolean>;
  /** Records the successor pair (refresh token keeps the grant's scope) and marks the token used. */
  rotate(token: LockedRefreshToken, accessScope: string): Promise<IssuedTokens>;
}

export interface RefreshTokenStore extends TokenAnswer {
  /**
   * The common case in one atomic step: rotates the token when it is unused, unrevoked, of this client,
   * within its lifetimes, of a live grant and an enabled user, keeping the grant's scope. Undefined, with
   * nothing changed, otherwise: the locked path below then finds out why.
   */
  rotateIfCurrent(tokenHash: string, clientId: string): Promise<IssuedTokens | undefined>;
  /** Runs `work` in one transaction with the presented token's row locked (undefined: no such token). */
  withLockedToken<T>(
    tokenHash: string,
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
      if (issued) return store.respond(issued);
    }

    const outcome = await store.withLockedToken(tokenHash, async (token, tx): Promise<Outcome> => {
      if (!token || token.clientId !== client.clientId || token.revoked) {
        return { error: invalid('the refresh token is invalid, expired or revoked') };
      }
      if (token.usedAt) {
        const successor = await tx.liveSuccessor(token);
        if (successor) {
          // A retry returns tokens too: the same checks as a rotation (application, user).
          if (!client.enabled) return { error: invalid('the application is disabled') };
          if (!(await tx.isUserActive(token.userId))) return { error: invalid('the user is not available') };
          return { issued: successor };
        }
        await tx.revokeFamily(token);
        return { error: invalid('the refresh token was already used; the whole grant is revoked') };
      }
      const now = Date.now();
      if (token.expiresAt.getTime() <= now || token.absoluteExpiresAt.getTime() <= now) {
        return { error: invalid('the refresh token has expired') };
      }
      if (!client.enabled) return { error: invalid('the application is disabled') };
      if (!(await tx.isUserActive(token.userId))) return { error: invalid('the user is not available') };

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
    return store.respond(outcome.issued);
  },
};
