// private_key_jwt (RFC 7523 §2.2 and §3, OpenID Connect Core §9): the pure rules of a client assertion. The
// service (src/services/client-assertions.ts) finds the keys, verifies the signature and remembers the jti.
// As node-oidc-provider's lib/shared/jwt_client_auth.js: the audience may be the issuer, the token endpoint or the
// endpoint receiving the assertion; exp and jti are required; a jti is refused while its assertion lives.
import { isLoopbackHost } from './redirect-uri.js';

/**
 * Asymmetric signatures only: never `none`, never HS* (a shared secret is not a private key). Ed25519 is the
 * fully-specified name of EdDSA over Ed25519 (RFC 9864), which oauth4webapi and openid-client sign with.
 */
export const CLIENT_ASSERTION_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Clock skew allowed on exp, nbf and iat (node-oidc-provider's clockTolerance default is 15 s). */
export const ASSERTION_CLOCK_TOLERANCE_SECONDS = 15;
/**
 * An assertion may live at most this long from now: a client makes one per request (RFC 7523 §3 "the JWT MUST
 * contain an exp"), and the jti table keeps each one only this long.
 */
export const ASSERTION_MAX_LIFETIME_SECONDS = 300;
/** A jti is an identifier, not a document: bounded, as every value the service stores. */
export const MAX_JTI_LENGTH = 256;

/** The client endpoints that accept a client assertion, as discovery names their URLs. */
export type ClientEndpoint = 'token' | 'revocation' | 'introspection';

export function clientEndpointUrls(issuer: string): Record<ClientEndpoint, string> {
  return {
    token: `${issuer}/oauth2/token`,
    revocation: `${issuer}/oauth2/revoke`,
    introspection: `${issuer}/oauth2/introspect`,
  };
}

/**
 * RFC 7523 §3 (aud "identifies the authorization server as an intended audience"), OIDC Core §9 ("the aud SHOULD
 * be the URL of the Authorization Server's Token Endpoint"): the issuer, the token endpoint, and the endpoint that
 * receives it.
 */
export function assertionAudiences(issuer: string, endpoint: ClientEndpoint): string[] {
  const urls = clientEndpointUrls(issuer);
  return [...new Set([issuer, urls.token, urls[endpoint]])];
}

/**
 * What jose's checks leave (it has verified the signature, iss, sub, aud, exp and nbf): exp not too far ahead, iat
 * not in the future, a usable jti. undefined when the claims are acceptable, else why not (for the log).
 */
export function assertionClaimsProblem(payload: Record<string, unknown>, nowSeconds: number): string | undefined {
  const { exp, iat, jti } = payload;
  if (typeof exp !== 'number') return 'no exp';
  if (exp > nowSeconds + ASSERTION_MAX_LIFETIME_SECONDS + ASSERTION_CLOCK_TOLERANCE_SECONDS) {
    return `exp is ${exp - nowSeconds} s ahead; at most ${ASSERTION_MAX_LIFETIME_SECONDS} s`;
  }
  if (iat !== undefined && (typeof iat !== 'number' || iat > nowSeconds + ASSERTION_CLOCK_TOLERANCE_SECONDS)) {
    return 'iat is in the future';
  }
  if (typeof jti !== 'string' || jti.length === 0) return 'no jti';
  if (jti.length > MAX_JTI_LENGTH) return `jti longer than ${MAX_JTI_LENGTH} characters`;
  return undefined;
}

/**
 * Where the service may fetch a client's keys from (SSRF): https only; http only on a loopback host, and only when
 * the provider itself runs on http (development and tests). undefined when allowed, else why not.
 */
export function jwksUriFetchProblem(uri: string, providerOnHttp: boolean): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'jwks_uri is not a URL';
  }
  if (url.username || url.password) return 'jwks_uri has credentials';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && providerOnHttp && isLoopbackHost(url.hostname)) return undefined;
  return `jwks_uri ${url.protocol}//${url.host} is not https`;
}
