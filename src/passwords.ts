// argon2id with OWASP's minimum parameters (m=19456 KiB, t=2, p=1).
import { createRequire } from 'node:module';
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

export type PasswordProblem = {
  code: 'PASSWORD_TOO_SHORT' | 'PASSWORD_TOO_LONG' | 'PASSWORD_TOO_COMMON';
  message: string;
};

/** The length rule of every new password, counted in characters (code points), not UTF-16 units. */
export function passwordLengthProblem(password: string): PasswordProblem | undefined {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH)
    return { code: 'PASSWORD_TOO_SHORT', message: `Use at least ${PASSWORD_MIN_LENGTH} characters` };
  if (length > PASSWORD_MAX_LENGTH)
    return { code: 'PASSWORD_TOO_LONG', message: `Use at most ${PASSWORD_MAX_LENGTH} characters` };
  return undefined;
}

export const PASSWORD_TOO_COMMON_MESSAGE =
  'This password is one of the most common ones, which attackers try first; choose another';

let commonPasswords: ReadonlySet<string> | undefined;

/**
 * The most common passwords of a leak corpus (OWASP ASVS 6.2.4, 6.2.12): the "passwords-common" dictionary
 * of @zxcvbn-ts/language-common (49,233 entries, lower case, from Xato's ten-million-password corpus),
 * shipped in node_modules, so no network call. Loaded on the first new password, not at start-up: a process
 * that never sets one never pays for it (~13 MiB of RSS, 0.05-0.25 s once). require() keeps the rules
 * synchronous.
 */
function commonPasswordSet(): ReadonlySet<string> {
  if (!commonPasswords) {
    const require = createRequire(import.meta.url);
    const { dictionary } = require('@zxcvbn-ts/language-common') as typeof import('@zxcvbn-ts/language-common');
    commonPasswords = new Set(dictionary['passwords-common']);
  }
  return commonPasswords;
}

/** True when the password, trimmed and in lower case, is on the list (the list's own convention). */
export function isCommonPassword(password: string): boolean {
  return commonPasswordSet().has(password.trim().toLowerCase());
}

/**
 * Every rule of a new password, wherever one is set (sign-up, reset, change, first admin, admin API, CLI,
 * seed): the length first, then the common-password list.
 */
export function newPasswordProblem(password: string): PasswordProblem | undefined {
  const length = passwordLengthProblem(password);
  if (length) return length;
  if (isCommonPassword(password)) return { code: 'PASSWORD_TOO_COMMON', message: PASSWORD_TOO_COMMON_MESSAGE };
  return undefined;
}
