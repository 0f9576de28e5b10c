// Opaque tokens: 256 bits from the CSPRNG. Only their SHA-256 is stored.
import { hash } from 'node:crypto';
import { randomString } from '../random.js';

export function generateToken(): string {
  return randomString(32, 'base64url');
}

/** SHA-256, base64url. crypto.hash (one call, no Hash object) is about 2.5x faster than createHash here. */
export function hashToken(token: string): string {
  return hash('sha256', token, 'base64url');
}

/**
 * OIDC Core §3.1.3.6: the left half of the hash of the access token, base64url, with the hash of the
 * ID token's alg: SHA-256 for RS256/ES256, SHA-512 for EdDSA with Ed25519.
 */
export function atHash(accessToken: string, alg = 'RS256'): string {
  const algorithm =
    alg === 'EdDSA'
      ? 'sha512'
      : /(\d{3})$/.exec(alg)?.[1] === '384'
        ? 'sha384'
        : /(\d{3})$/.exec(alg)?.[1] === '512'
          ? 'sha512'
          : 'sha256';
  // The token is base64url (ASCII): its UTF-8 bytes, which crypto.hash takes, are its ASCII bytes.
  const digest = hash(algorithm, accessToken, 'buffer');
  return digest.subarray(0, digest.length / 2).toString('base64url');
}
