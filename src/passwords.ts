// argon2id with OWASP's minimum parameters (m=19456 KiB, t=2, p=1).
import { hash, verify } from '@node-rs/argon2';

// 2 = Argon2id in @node-rs/argon2's Algorithm enum (a const enum, which verbatimModuleSyntax cannot import).
export const PASSWORD_HASH_OPTIONS = { algorithm: 2, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, PASSWORD_HASH_OPTIONS);
}

export async function verifyPassword(hashed: string, password: string): Promise<boolean> {
  try {
    return await verify(hashed, password);
  } catch {
    return false;
  }
}
