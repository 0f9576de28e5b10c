// Opaque tokens: 256 bits from the CSPRNG. Only their SHA-256 is stored.
import { createHash, randomBytes } from 'node:crypto';

export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/** OIDC Core §3.1.3.6: left half of the SHA-256 of the access token, base64url (for RS256/ES256). */
export function atHash(accessToken: string): string {
  const digest = createHash('sha256').update(accessToken, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}
