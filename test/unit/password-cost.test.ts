// The production cost of password hashing is what the README says. Every other test hashes at argon2's
// cheapest cost (test/helpers/password-cost.ts); this one proves the cost a real deployment gets: the
// README's m, t and p (the "Password hashing" paragraph and the PASSWORD_HASH_* rows of its configuration
// table) are loadConfig's defaults, in development and in production, and a hash made with the default
// configuration carries them in its PHC string.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { describeEnv, loadConfig } from '../../src/config.js';
import { createPasswordHasher } from '../../src/passwords.js';

const ROOT = join(import.meta.dirname, '..', '..');
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const security = readFileSync(join(ROOT, 'SECURITY.md'), 'utf8');

/** The default a row of the README's configuration table gives: | `NAME` | `value` | ... | */
function tableDefault(name: string): number | undefined {
  const row = new RegExp(`^\\| \`${name}\` \\| \`(\\d+)\` \\|`, 'm').exec(readme);
  return row ? Number(row[1]) : undefined;
}

t.test('the production argon2id cost is the one the README states', async (t) => {
  const sentence = /argon2id hashes, by default at m=(\d+) KiB, t=(\d+), p=(\d+)/.exec(readme);
  if (!t.ok(sentence, 'the README states the default cost in its "Password hashing" paragraph') || !sentence) return;
  const stated = { memoryKib: Number(sentence[1]), iterations: Number(sentence[2]), parallelism: Number(sentence[3]) };
  t.same(
    {
      memoryKib: tableDefault('PASSWORD_HASH_MEMORY_KIB'),
      iterations: tableDefault('PASSWORD_HASH_ITERATIONS'),
      parallelism: tableDefault('PASSWORD_HASH_PARALLELISM'),
    },
    stated,
    'the configuration table gives the same defaults',
  );
  const securityCost = /argon2id password hash \(m=(\d+) KiB, t=(\d+), p=(\d+)/.exec(security);
  t.same(
    securityCost && { memoryKib: +securityCost[1]!, iterations: +securityCost[2]!, parallelism: +securityCost[3]! },
    stated,
    'and so does SECURITY.md',
  );

  const development = loadConfig({});
  const production = loadConfig({
    NODE_ENV: 'production',
    SECRET_KEY: 'x'.repeat(32),
    BASE_URL: 'https://id.example.com',
  });
  t.same(development.passwordHash, stated, 'loadConfig without PASSWORD_HASH_* gives the stated cost');
  t.same(production.passwordHash, stated, 'in production too, where it is accepted');
  const listed = Object.fromEntries(describeEnv().map((v) => [v.name, v.default]));
  t.same(
    [listed.PASSWORD_HASH_MEMORY_KIB, listed.PASSWORD_HASH_ITERATIONS, listed.PASSWORD_HASH_PARALLELISM],
    [stated.memoryKib, stated.iterations, stated.parallelism],
    '`idp env` lists the same defaults',
  );

  const hasher = createPasswordHasher(production.passwordHash);
  const hashed = await hasher.hash('correct horse battery staple');
  t.match(
    hashed,
    new RegExp(`^\\$argon2id\\$v=19\\$m=${stated.memoryKib},t=${stated.iterations},p=${stated.parallelism}\\$`),
    'a hash made with the default configuration carries that cost',
  );
  t.equal(hashed.slice(0, 30), '$argon2id$v=19$m=19456,t=2,p=1', 'which is m=19456 KiB, t=2, p=1 (OWASP)');
  t.ok(await hasher.verify(hashed, 'correct horse battery staple'), 'and verifies');
  t.notOk(hasher.needsRehash(hashed), 'and is not rehashed at the next sign-in');
});
