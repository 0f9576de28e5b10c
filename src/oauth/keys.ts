// Signing keys: generation, RFC 7638 thumbprint kids, and encryption of private parts at rest
// (AES-256-GCM under a key derived from SECRET_KEY with HKDF).
import * as jose from 'jose';
import { seal, unseal } from './seal.js';

export type SigningAlg = 'RS256' | 'ES256' | 'EdDSA';
export const SUPPORTED_SIGNING_ALGS: readonly SigningAlg[] = ['RS256', 'ES256', 'EdDSA'];

export interface GeneratedKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: jose.JWK;
  privateJwk: jose.JWK;
}

export async function generateSigningKey(alg: SigningAlg): Promise<GeneratedKey> {
  const options =
    alg === 'RS256'
      ? { modulusLength: 2048, extractable: true }
      : alg === 'EdDSA'
        ? { crv: 'Ed25519', extractable: true }
        : { extractable: true };
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, options);
  const publicJwk = await jose.exportJWK(publicKey);
  const privateJwk = await jose.exportJWK(privateKey);
  const kid = await jose.calculateJwkThumbprint(publicJwk, 'sha256');
  return {
    kid,
    alg,
    publicJwk: { ...publicJwk, kid, alg, use: 'sig' },
    privateJwk: { ...privateJwk, kid, alg },
  };
}

const SEAL = 'signing-key encryption';

/** The private JWK sealed under SECRET_KEY; the kid is authenticated as associated data. */
export function encryptPrivateJwk(jwk: jose.JWK, kid: string, secretKey: string): string {
  return seal(JSON.stringify(jwk), { secretKey, purpose: SEAL, aad: kid });
}

export class KeyDecryptionError extends Error {
  constructor(kid: string) {
    super(`Cannot decrypt signing key ${kid}: SECRET_KEY differs from the one that encrypted it`);
    this.name = 'KeyDecryptionError';
  }
}

export function decryptPrivateJwk(sealed: string, kid: string, secretKey: string): jose.JWK {
  const plain = unseal(sealed, { secretKey, purpose: SEAL, aad: kid });
  if (plain === undefined) throw new KeyDecryptionError(kid);
  return JSON.parse(plain) as jose.JWK;
}

/** Only the public members, whatever the stored JWK holds (defence in depth for JWKS). */
export function publicMembers(jwk: jose.JWK): jose.JWK {
  const { kty, crv, x, y, n, e, kid, alg, use } = jwk;
  return Object.fromEntries(
    Object.entries({ kty, crv, x, y, n, e, kid, alg, use }).filter(([, v]) => v !== undefined),
  ) as jose.JWK;
}
