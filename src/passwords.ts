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

/** True when a stored hash was made with other parameters than today's (rehash it on sign-in). */
export function needsRehash(hashed: string): boolean {
  const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(hashed);
  if (!m) return true;
  const [, memory, time, parallelism] = m.map(Number);
  return (
    memory !== PASSWORD_HASH_OPTIONS.memoryCost ||
    time !== PASSWORD_HASH_OPTIONS.timeCost ||
    parallelism !== PASSWORD_HASH_OPTIONS.parallelism
  );
}

let dummyHash: Promise<string> | undefined;
/** Unknown e-mails pay the same hash cost as known ones (no account enumeration by timing). */
export async function verifyAgainstDummy(password: string): Promise<false> {
  dummyHash ??= hashPassword('dummy password that never matches');
  await verifyPassword(await dummyHash, password);
  return false;
}

export const PASSWORD_MIN_LENGTH = 8;
export const PASSWORD_MAX_LENGTH = 128;

/** The length rule of every new password, counted in characters (code points), not UTF-16 units. */
export function passwordLengthProblem(
  password: string,
): { code: 'PASSWORD_TOO_SHORT' | 'PASSWORD_TOO_LONG'; message: string } | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH)
    return { code: 'PASSWORD_TOO_SHORT', message: `Use at least ${PASSWORD_MIN_LENGTH} characters` };
  if (length > PASSWORD_MAX_LENGTH)
    return { code: 'PASSWORD_TOO_LONG', message: `Use at most ${PASSWORD_MAX_LENGTH} characters` };
  return undefined;
}
