// Signing keys: generation, RFC 7638 thumbprint kids, and encryption of private parts at rest
// (AES-256-GCM under a key derived from SECRET_KEY with HKDF).
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import * as jose from 'jose';

export type SigningAlg = 'RS256' | 'ES256' | 'EdDSA';
export const SUPPORTED_SIGNING_ALGS: readonly SigningAlg[] = ['RS256', 'ES256', 'EdDSA'];

export interface GeneratedKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: jose.JWK;
  privateJwk: jose.JWK;
}

export async function generateSigningKey(alg: SigningAlg): Promise<GeneratedKey> {
  const options = alg === 'RS256' ? { modulusLength: 2048, extractable: true } : alg === 'EdDSA' ? { crv: 'Ed25519', extractable: true } : { extractable: true };
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

function keyEncryptionKey(secretKey: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secretKey, 'utf8'), Buffer.alloc(0), 'idp signing-key encryption v1', 32));
}

/** "v1.<iv>.<ciphertext>.<tag>", base64url parts; the kid is authenticated as associated data. */
export function encryptPrivateJwk(jwk: jose.JWK, kid: string, secretKey: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyEncryptionKey(secretKey), iv);
  cipher.setAAD(Buffer.from(kid, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(JSON.stringify(jwk), 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), ciphertext.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

export class KeyDecryptionError extends Error {
  constructor(kid: string) {
    super(`Cannot decrypt signing key ${kid}: SECRET_KEY differs from the one that encrypted it`);
    this.name = 'KeyDecryptionError';
  }
}

export function decryptPrivateJwk(sealed: string, kid: string, secretKey: string): jose.JWK {
  const [version, iv, ciphertext, tag] = sealed.split('.');
  if (version !== 'v1' || !iv || !ciphertext || !tag) throw new KeyDecryptionError(kid);
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyEncryptionKey(secretKey), Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(kid, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    const plain = Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as jose.JWK;
  } catch {
    throw new KeyDecryptionError(kid);
  }
}

/** Only the public members, whatever the stored JWK holds (defence in depth for JWKS). */
export function publicMembers(jwk: jose.JWK): jose.JWK {
  const { kty, crv, x, y, n, e, kid, alg, use } = jwk;
  return Object.fromEntries(Object.entries({ kty, crv, x, y, n, e, kid, alg, use }).filter(([, v]) => v !== undefined)) as jose.JWK;
}
