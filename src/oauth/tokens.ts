// Opaque tokens: 256 bits from the CSPRNG. Only their SHA-256 is stored.
import { createHash, randomBytes } from 'node:crypto';

export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('base64url');
}

/**
 * OIDC Core §3.1.3.6: the left half of the hash of the access token, base64url, with the hash of the
 * ID token's alg: SHA-256 for RS256/ES256, SHA-512 for EdDSA with Ed25519.
 */
export function atHash(accessToken: string, alg = 'RS256'): string {
  const hash =
    alg === 'EdDSA'
      ? 'sha512'
      : /(\d{3})$/.exec(alg)?.[1] === '384'
        ? 'sha384'
        : /(\d{3})$/.exec(alg)?.[1] === '512'
          ? 'sha512'
          : 'sha256';
  const digest = createHash(hash).update(accessToken, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}
