// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6, OIDC Core §3.1.3.2). The code is
// consumed by one atomic statement before anything else is checked, so of two concurrent exchanges
// exactly one gets it; a replayed code revokes every token issued from its grant (RFC 6749 §4.1.2).
import { OAuthError } from '../errors.js';
import { isValidCodeVerifier, verifyPkce } from '../pkce.js';
import { splitScope } from '../scope.js';
import { hashToken } from '../tokens.js';
import { type GrantHandler, type IssuedTokens, requireParameters, type TokenAnswer } from './grant.js';

/** A stored authorization code (what authorize bound it to). */
export interface CodeRecord {
  grantId: string;
  clientId: string;
  userId: string;
  redirectUri: string;
  codeChallenge: string;
  nonce: string | null;
  scope: string;
  authTime: Date;
  sessionId: string | null;
  expiresAt: Date;
}

export type ConsumedCode =
  | { code: CodeRecord; replayed: false; userActive: boolean }
  | { code: CodeRecord; replayed: true };

export interface AuthorizationCodeStore extends TokenAnswer {
  /**
   * Consumes the code; one that existed but was consumed before comes back `replayed`. A consumed one
   * says whether its user still exists and is enabled (read by the same statement).
   */
  consumeCode(codeHash: string): Promise<ConsumedCode | undefined>;
  /** Revokes the grant of a replayed code and records code.reuse_detected, in one transaction. */
  revokeReplayedGrant(code: CodeRecord): Promise<void>;
  /** Records the tokens of this code's grant: access token, refresh token when asked, audit event. */
  issue(code: CodeRecord, options: { refresh: boolean }): Promise<IssuedTokens>;
}

const invalidCode = () => new OAuthError('invalid_grant', 'the authorization code is invalid, expired or already used');

export const authorizationCodeGrant: GrantHandler<AuthorizationCodeStore> = {
  grantType: 'authorization_code',
  parameters: ['code', 'code_verifier', 'redirect_uri'],

  async handle(params, client, store) {
    if (!client.enabled) throw new OAuthError('invalid_client', 'this application is disabled');
    const [code, verifier, redirectUri] = requireParameters(this, params) as [string, string, string];
    if (!isValidCodeVerifier(verifier))
      throw new OAuthError('invalid_request', 'code_verifier must be 43-128 unreserved characters');
    if (code.length > 256) throw invalidCode();

    const consumed = await store.consumeCode(hashToken(code));
    if (!consumed) throw invalidCode();
    const { code: row } = consumed;
    if (consumed.replayed) {
      await store.revokeReplayedGrant(row);
      throw invalidCode();
    }
    if (row.clientId !== client.clientId)
      throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
    if (row.expiresAt.getTime() <= Date.now()) throw invalidCode();
    if (row.redirectUri !== redirectUri)
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    if (!verifyPkce(verifier, row.codeChallenge))
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    if (!consumed.userActive) throw new OAuthError('invalid_grant', 'the user is not available');

    // Refresh tokens only when offline_access was granted (decisions.md, Protocol).
    const issued = await store.issue(row, { refresh: splitScope(row.scope).includes('offline_access') });
    return store.respond(issued);
  },
};
