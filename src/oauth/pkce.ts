// RFC 7636 PKCE, S256 only (RFC 9700 §2.1.1: plain is not allowed).
import { hash, timingSafeEqual } from 'node:crypto';

/** code_verifier = 43*128unreserved (RFC 7636 §4.1). */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
/** BASE64URL(SHA256(verifier)) is always 43 characters without padding. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

export function isValidCodeVerifier(verifier: string): boolean {
  return VERIFIER.test(verifier);
}

export function isValidCodeChallenge(challenge: string): boolean {
  return CHALLENGE.test(challenge);
}

export function s256Challenge(verifier: string): string {
  // A verifier is checked against VERIFIER (unreserved ASCII) before it is hashed: UTF-8 bytes = ASCII bytes.
  return hash('sha256', verifier, 'base64url');
}

/** Constant-time comparison of the derived and the stored challenge. */
export function verifyPkce(verifier: string, challenge: string): boolean {
  if (!isValidCodeVerifier(verifier) || !isValidCodeChallenge(challenge)) return false;
  return timingSafeEqual(Buffer.from(s256Challenge(verifier)), Buffer.from(challenge));
}
