// Password hashing: argon2id at the cost the configuration gives (PASSWORD_HASH_*; by default m=19456 KiB,
// t=2, p=1, OWASP's second minimum), and the rules of a new password.
import { createRequire } from 'node:module';
import { hash, verify } from '@node-rs/argon2';

/** The argon2id cost: memory in KiB (m), iterations (t) and lanes (p), as the PHC string writes them. */
export interface PasswordHashCost {
  memoryKib: number;
  iterations: number;
  parallelism: number;
}

/**
 * OWASP Password Storage Cheat Sheet, argon2id: each pair is a minimum, all with p=1 (they trade memory for
 * iterations at equal cost). A cost meets OWASP's minimum when its memory and iterations reach one pair.
 */
export const OWASP_ARGON2ID_MINIMUMS: ReadonlyArray<{ memoryKib: number; iterations: number }> = [
  { memoryKib: 47104, iterations: 1 },
  { memoryKib: 19456, iterations: 2 },
  { memoryKib: 12288, iterations: 3 },
  { memoryKib: 9216, iterations: 4 },
  { memoryKib: 7168, iterations: 5 },
];

/** The least memory OWASP accepts with this many iterations (its pairs, read as steps). */
export function owaspMinimumMemoryKib(iterations: number): number {
  return Math.min(...OWASP_ARGON2ID_MINIMUMS.filter((p) => p.iterations <= iterations).map((p) => p.memoryKib));
}

/** argon2's own floor: 8 KiB per lane (@node-rs/argon2 refuses less: "Memory cost is too small"). */
export const ARGON2_MIN_MEMORY_KIB_PER_LANE = 8;

export interface PasswordHasher {
  readonly cost: Readonly<PasswordHashCost>;
  hash(password: string): Promise<string>;
  /** False for a wrong password and for a stored value that is not an argon2 hash. */
  verify(hashed: string, password: string): Promise<boolean>;
  /** True when a stored hash was made with another cost than the configured one (rehash it on sign-in). */
  needsRehash(hashed: string): boolean;
  /** Unknown e-mails pay the same hash cost as known ones (no account enumeration by timing). */
  verifyAgainstDummy(password: string): Promise<false>;
}

/** One per configuration (createServices): every service that hashes or verifies receives it. */
export function createPasswordHasher(cost: PasswordHashCost): PasswordHasher {
  const frozen = Object.freeze({ ...cost });
  // 2 = Argon2id in @node-rs/argon2's Algorithm enum (a const enum, which verbatimModuleSyntax cannot import).
  const options = {
    algorithm: 2,
    memoryCost: frozen.memoryKib,
    timeCost: frozen.iterations,
    parallelism: frozen.parallelism,
  } as const;
  const hashPassword = (password: string) => hash(password, options);
  async function verifyPassword(hashed: string, password: string): Promise<boolean> {
    try {
      return await verify(hashed, password);
    } catch {
      return false;
    }
  }
  // Made at this cost on first use, so a dummy verification costs what a real one does.
  let dummyHash: Promise<string> | undefined;
  return {
    cost: frozen,
    hash: hashPassword,
    verify: verifyPassword,
    needsRehash(hashed) {
      const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(hashed);
      if (!m) return true;
      const [, memory, time, parallelism] = m.map(Number);
      return memory !== frozen.memoryKib || time !== frozen.iterations || parallelism !== frozen.parallelism;
    },
    async verifyAgainstDummy(password) {
      dummyHash ??= hashPassword('dummy password that never matches');
      await verifyPassword(await dummyHash, password);
      return false;
    },
  };
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
