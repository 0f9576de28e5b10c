// Authenticated encryption of small secrets at rest: AES-256-GCM under a key derived from SECRET_KEY
// with HKDF, one derived key per purpose, with associated data binding the ciphertext to its row.
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { randomBuffer } from '../random.js';

const keys = new Map<string, Buffer>();

function derive(secretKey: string, purpose: string): Buffer {
  const id = `${purpose}\u0000${secretKey}`;
  let key = keys.get(id);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', Buffer.from(secretKey, 'utf8'), Buffer.alloc(0), `idp ${purpose} v1`, 32));
    keys.set(id, key);
  }
  return key;
}

/** "v1.<iv>.<ciphertext>.<tag>", base64url parts. */
export function seal(plaintext: string, options: { secretKey: string; purpose: string; aad: string }): string {
  const iv = randomBuffer(12);
  const cipher = createCipheriv('aes-256-gcm', derive(options.secretKey, options.purpose), iv);
  cipher.setAAD(Buffer.from(options.aad, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [
    'v1',
    iv.toString('base64url'),
    ciphertext.toString('base64url'),
    cipher.getAuthTag().toString('base64url'),
  ].join('.');
}

/** The plaintext, or undefined when the value was not sealed with this key, purpose and aad. */
export function unseal(
  sealed: string,
  options: { secretKey: string; purpose: string; aad: string },
): string | undefined {
  const [version, iv, ciphertext, tag] = sealed.split('.');
  if (version !== 'v1' || !iv || !ciphertext || !tag) return undefined;
  try {
    // The full 16-byte tag only: GCM would accept a truncated one (a prefix of the right tag) otherwise.
    const decipher = createDecipheriv(
      'aes-256-gcm',
      derive(options.secretKey, options.purpose),
      Buffer.from(iv, 'base64url'),
      { authTagLength: 16 },
    );
    decipher.setAAD(Buffer.from(options.aad, 'utf8'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}
