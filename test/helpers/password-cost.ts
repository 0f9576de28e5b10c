// The argon2id cost of the tests: the cheapest argon2 accepts (8 KiB, one iteration, one lane), so that
// the hundreds of sign-ups, sign-ins and resets of the suite cost microseconds, not ~10 ms of CPU each.
// Hashing, verification and rehashing stay real argon2id. The production cost (the defaults of
// PASSWORD_HASH_*) is what test/unit/password-cost.test.ts proves equal to the README's.
export const CHEAP_PASSWORD_HASH_ENV = {
  PASSWORD_HASH_MEMORY_KIB: '8',
  PASSWORD_HASH_ITERATIONS: '1',
  PASSWORD_HASH_PARALLELISM: '1',
} as const;

/**
 * For a test that runs with NODE_ENV=production, which refuses the cheap cost: empty values count as unset,
 * so the production defaults apply.
 */
export const PRODUCTION_PASSWORD_HASH_ENV = {
  PASSWORD_HASH_MEMORY_KIB: '',
  PASSWORD_HASH_ITERATIONS: '',
  PASSWORD_HASH_PARALLELISM: '',
} as const;
