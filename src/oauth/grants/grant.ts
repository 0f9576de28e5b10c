// What every grant handler of the token endpoint is (RFC 6749 §4, §5): the shape of ory/fosite's
// handler/oauth2 and node-oidc-provider's lib/actions/grants. A handler reads its parameters, checks
// them against what its storage says, has its storage record the tokens and returns what was issued;
// the binding (src/services/grants.ts) signs the ID token and answers. Adding a grant is adding a file
// beside this one and a line in src/services/grants.ts.
//
// Pure protocol logic: storage reaches a handler only through the narrow interface it declares.
import { parameterError } from '../errors.js';

/** RFC 6749 §5.1. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  id_token?: string;
  refresh_token?: string;
  /** Absent only from a client_credentials answer that granted no scope (RFC 6749 §5.1: OPTIONAL). */
  scope?: string;
}

/** The form body of a token request after the endpoint's checks (form-encoded, nothing repeated). */
export type TokenParams = Readonly<Record<string, string | undefined>>;

/** The authenticated client a token request speaks for (public clients: client_id alone). */
export interface GrantClient {
  clientId: string;
  enabled: boolean;
  /** Absent: public (src/domain/application.ts derives it from the token endpoint auth method). */
  clientType?: 'public' | 'confidential';
  /** How it was registered: 'operator', or self-registered (src/domain/application.ts isSelfRegistered). */
  registration?: string;
}

/** Self-registered clients (dynamic registration, metadata documents) use a resource only if it allows them. */
export const selfRegistered = (client: GrantClient): boolean =>
  client.registration !== undefined && client.registration !== 'operator';

/** A grant handler's client and what it returns: most grants take GrantClient and return IssuedTokens. */
export interface GrantHandler<Deps, Client extends GrantClient = GrantClient, Issued = IssuedTokens> {
  /** The grant_type value this handler answers. */
  readonly grantType: string;
  /** Parameters the grant requires besides grant_type and client_id, checked in this order. */
  readonly parameters: readonly string[];
  /** What was issued (recorded already); the binding signs the ID token and answers (TokenResponse). */
  handle(params: TokenParams, client: Client, deps: Deps): Promise<Issued>;
}

/**
 * Tokens recorded for one token response, before the ID token is signed: the binding signs after the
 * transaction that recorded them, so no row lock waits on a signature.
 */
export interface IssuedTokens {
  accessToken: string;
  refreshToken?: string | undefined;
  /** The access token's scope (the grant's, narrowed to the token's audience: RFC 8707). */
  scope: string;
  /** The grant's scope, when it differs from the access token's: the ID token is issued when it has openid. */
  grantedScope?: string | undefined;
  /** The resource (RFC 8707) the access token is for; null or absent: none named. */
  audience?: string | null | undefined;
  expiresIn: number;
  /** The ID token's claims that vary per grant. */
  subject: string;
  clientId: string;
  authTime: Date;
  nonce?: string | null | undefined;
  sessionId?: string | null | undefined;
  /** The grant's amr (RFC 8176): the ID token's amr, and its acr; null or absent (an older grant): neither. */
  amr?: readonly string[] | null | undefined;
}

/** The required parameters of a handler, in order: the first one missing is invalid_request. */
export function requireParameters(
  handler: { readonly parameters: readonly string[] },
  params: TokenParams,
  optional: readonly string[] = [],
): (string | undefined)[] {
  return handler.parameters.map((name) => {
    const value = params[name];
    if (!value && !optional.includes(name)) throw parameterError(name, 'is required');
    return value || undefined;
  });
}
