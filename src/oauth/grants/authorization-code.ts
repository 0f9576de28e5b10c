// grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6, OIDC Core §3.1.3.2). The code is
// spent by one atomic step that also checks it against the request and records its tokens only when
// every check passes: of two concurrent exchanges exactly one gets the code, a code that fails a check is
// spent all the same, and a replayed code revokes every token issued from its grant (RFC 6749 §4.1.2).
import { OAuthError } from '../errors.js';
import { isValidCodeVerifier, s256Challenge } from '../pkce.js';
import { type GrantHandler, type IssuedTokens, requireParameters, selfRegistered } from './grant.js';

/** An authorization code's grant (what a replay revokes). */
export interface CodeGrant {
  grantId: string;
  clientId: string;
  userId: string;
}

/** What the token request binds the code to, checked by the step that consumes it. */
export interface CodeExchangeRequest {
  /** The code as presented (sealed: src/oauth/sealed-code.ts). */
  code: string;
  clientId: string;
  redirectUri: string;
  /**
   * BASE64URL(SHA256(code_verifier)): equal to the stored code_challenge (S256, the only method). null: no
   * code_verifier was sent, which only a code issued without a challenge accepts.
   */
  codeChallenge: string | null;
  /** RFC 8707 §2.2: the `resource` parameter (a repeated one joined with REPEATED_RESOURCE_SEPARATOR). */
  resource?: string | undefined;
  /** The client is self-registered (a resource server's allowSelfRegistered then governs). */
  selfRegistered?: boolean;
}

/** Each check of a consumed code, true when it passed; tokens were recorded only if all did. */
export interface CodeChecks {
  /** Issued to this client. */
  sameClient: boolean;
  /** Within its lifetime. */
  unexpired: boolean;
  /** The redirect_uri of its authorization request, exactly. */
  sameRedirectUri: boolean;
  /**
   * The verifier's S256 challenge is the code's; or the code has no challenge and no verifier was sent (a
   * verifier sent for a code without a challenge fails: RFC 9700 §4.8.2, PKCE downgrade).
   */
  pkce: boolean;
  /** Its user still exists and is enabled. */
  userActive: boolean;
  /** The session it was issued in is live, and the user's codes were not revoked since. */
  sessionLive: boolean;
  /** The user's consent it was issued under was not revoked since. */
  consented: boolean;
}

export type CodeExchange =
  | { kind: 'unknown' }
  | { kind: 'replayed'; code: CodeGrant }
  | { kind: 'consumed'; checks: CodeChecks; issued: IssuedTokens | undefined };

export interface AuthorizationCodeStore {
  /**
   * The resource (RFC 8707 §2.2) is checked first, against the grant the code carries: invalid_target (thrown)
   * leaves the code unspent.
   * In one atomic step: spends the code, checks it (CodeChecks) and, only when every check passes,
   * records the tokens of its grant: access token, refresh token when offline_access was granted
   * (decisions.md, Protocol), authorization.granted and token.issued. A code that was spent before comes
   * back `replayed`, with nothing written; one this server did not issue (or whose user is gone), `unknown`.
   */
  consumeAndIssue(request: CodeExchangeRequest): Promise<CodeExchange>;
  /** Revokes the grant of a replayed code and records code.reuse_detected, in one transaction. */
  revokeReplayedGrant(code: CodeGrant): Promise<void>;
}

const invalidCode = () => new OAuthError('invalid_grant', 'the authorization code is invalid, expired or already used');

export const authorizationCodeGrant: GrantHandler<AuthorizationCodeStore> = {
  grantType: 'authorization_code',
  parameters: ['code', 'code_verifier', 'redirect_uri'],

  async handle(params, client, store) {
    if (!client.enabled) throw new OAuthError('invalid_client', 'this application is disabled');
    // A public client always sends PKCE (decisions.md, Protocol); a confidential client whose PKCE is optional
    // may have been issued a code without a challenge, which then takes no verifier.
    const optional = client.clientType === 'confidential' ? ['code_verifier'] : [];
    const [code, verifier, redirectUri] = requireParameters(this, params, optional) as [
      string,
      string | undefined,
      string,
    ];
    if (verifier !== undefined && !isValidCodeVerifier(verifier))
      throw new OAuthError('invalid_request', 'code_verifier must be 43-128 unreserved characters');
    // A sealed code grows with the request's nonce (at most 2,048 characters: about 9,000 of code at worst).
    if (code.length > 12_000) throw invalidCode();

    const exchange = await store.consumeAndIssue({
      code,
      clientId: client.clientId,
      redirectUri,
      codeChallenge: verifier === undefined ? null : s256Challenge(verifier),
      ...(params.resource !== undefined && { resource: params.resource }),
      ...(selfRegistered(client) && { selfRegistered: true }),
    });
    if (exchange.kind === 'unknown') throw invalidCode();
    if (exchange.kind === 'replayed') {
      await store.revokeReplayedGrant(exchange.code);
      throw invalidCode();
    }
    // The code is spent whatever these say; the first check that failed is the answer.
    const { checks } = exchange;
    if (!checks.sameClient)
      throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
    if (!checks.unexpired) throw invalidCode();
    if (!checks.sameRedirectUri)
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    if (!checks.pkce && verifier === undefined)
      throw new OAuthError('invalid_grant', 'the authorization code needs its code_verifier');
    if (!checks.pkce) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    if (!checks.userActive) throw new OAuthError('invalid_grant', 'the user is not available');
    if (!checks.sessionLive)
      throw new OAuthError('invalid_grant', 'the sign-in session of the authorization code has ended');
    if (!checks.consented) throw new OAuthError('invalid_grant', "the user revoked the application's access");
    if (!exchange.issued) throw new Error('a code that passed every check got no tokens');
    return exchange.issued;
  },
};
