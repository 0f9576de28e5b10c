// ID tokens (OIDC Core §2): iss, sub, aud, exp, iat, auth_time, nonce, azp, at_hash, sid, and amr (RFC 8176) with
// the acr that follows from it (src/domain/mfa.ts: the level achieved, which the relying party checks) when the
// grant recorded how the user authenticated (grants older than second factors did not: neither claim).
// Profile and e-mail claims are served by UserInfo, not put in the ID token.
import * as jose from 'jose';
import { acrOf } from './acr.js';
import { atHash } from './tokens.js';

export interface IdTokenInput {
  issuer: string;
  subject: string;
  clientId: string;
  authTime: Date;
  nonce?: string | null | undefined;
  accessToken: string;
  sessionId?: string | null | undefined;
  /** How the user authenticated (RFC 8176); null or absent: an older grant, no amr and no acr. */
  amr?: readonly string[] | null | undefined;
  lifetimeSeconds: number;
  now?: Date;
}

export async function signIdToken(
  input: IdTokenInput,
  key: { kid: string; alg: string; key: jose.CryptoKey },
): Promise<string> {
  const iat = Math.floor((input.now ?? new Date()).getTime() / 1000);
  const claims: jose.JWTPayload = {
    auth_time: Math.floor(input.authTime.getTime() / 1000),
    azp: input.clientId,
    at_hash: atHash(input.accessToken, key.alg),
  };
  if (input.nonce) claims.nonce = input.nonce;
  if (input.sessionId) claims.sid = input.sessionId;
  if (input.amr && input.amr.length > 0) {
    claims.acr = acrOf(input.amr);
    claims.amr = [...input.amr];
  }
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + input.lifetimeSeconds)
    .sign(key.key);
}
