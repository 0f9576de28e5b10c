// JWT access tokens (RFC 9068) for the resource servers that ask for them (accessTokenFormat 'jwt'): header typ
// `at+jwt` with the alg and kid of the current signing key (the ID token's, published in the JWKS); claims iss, exp,
// aud (the resource's identifier), sub (the user; the client itself for client_credentials, §2.2), client_id, iat,
// jti, scope (when not empty), auth_time, and acr/amr when the grant recorded how the user authenticated. The token
// is stored like an opaque one (SHA-256 of the JWT), so revocation, introspection and the refresh grace window
// treat both alike; a resource server checks it as RFC 9068 §4 says (docs/integration.md).
import { randomUUID } from 'node:crypto';
import * as jose from 'jose';
import { acrOf } from './acr.js';

export interface AccessTokenJwtInput {
  issuer: string;
  audience: string;
  subject: string;
  clientId: string;
  /** Space-delimited; left out when empty. */
  scope: string;
  /** Absent for client_credentials (no user signed in). */
  authTime?: Date | null | undefined;
  amr?: readonly string[] | null | undefined;
  expiresAt: Date;
  now?: Date;
}

export async function signAccessTokenJwt(
  input: AccessTokenJwtInput,
  key: { kid: string; alg: string; key: jose.CryptoKey },
): Promise<string> {
  const iat = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const claims: jose.JWTPayload = { client_id: input.clientId };
  if (input.scope) claims.scope = input.scope;
  if (input.authTime) claims.auth_time = Math.floor(input.authTime.getTime() / 1000);
  if (input.amr && input.amr.length > 0) {
    claims.acr = acrOf(input.amr);
    claims.amr = [...input.amr];
  }
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.audience)
    .setIssuedAt(iat)
    .setExpirationTime(Math.floor(input.expiresAt.getTime() / 1000))
    .setJti(randomUUID())
    .sign(key.key);
}
