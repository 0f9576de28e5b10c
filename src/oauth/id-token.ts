// ID tokens (OIDC Core §2): iss, sub, aud, exp, iat, auth_time, nonce, azp, at_hash, sid.
// Profile and e-mail claims are served by UserInfo, not put in the ID token.
import * as jose from 'jose';
import { atHash } from './tokens.js';

export interface IdTokenInput {
  issuer: string;
  subject: string;
  clientId: string;
  authTime: Date;
  nonce?: string | null | undefined;
  accessToken: string;
  sessionId?: string | null | undefined;
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
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
    .setIssuer(input.issuer)
    .setSubject(input.subject)
    .setAudience(input.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + input.lifetimeSeconds)
    .sign(key.key);
}
