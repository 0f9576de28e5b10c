// The password hasher (src/passwords.ts): argon2id at the cost it is built with, rehash when the cost
// changes, and the dummy verification of unknown e-mails at that same cost.
import t from 'tap';
import { hash } from '@node-rs/argon2';
import { createPasswordHasher, owaspMinimumMemoryKib } from '../../src/passwords.js';

const cheap = { memoryKib: 8, iterations: 1, parallelism: 1 };

t.test('hashes at the cost it is given, and verifies any argon2id cost', async (t) => {
  const hasher = createPasswordHasher(cheap);
  const hashed = await hasher.hash('pw-one-1');
  t.match(hashed, /^\$argon2id\$v=19\$m=8,t=1,p=1\$/);
  t.ok(await hasher.verify(hashed, 'pw-one-1'));
  t.notOk(await hasher.verify(hashed, 'pw-one-2'), 'a wrong password');
  t.notOk(await hasher.verify('not a hash', 'pw-one-1'), 'a stored value that is no hash: false, no throw');
  const other = await createPasswordHasher({ memoryKib: 64, iterations: 2, parallelism: 2 }).hash('pw-two-2');
  t.match(other, /^\$argon2id\$v=19\$m=64,t=2,p=2\$/);
  t.ok(await hasher.verify(other, 'pw-two-2'), 'a hash of another cost verifies (its parameters are in it)');
  t.same(hasher.cost, cheap);
  t.ok(Object.isFrozen(hasher.cost), 'the cost cannot change after construction');
});

t.test('needsRehash: true for any other cost or algorithm than the configured one', async (t) => {
  const configured = { memoryKib: 64, iterations: 2, parallelism: 1 };
  const hasher = createPasswordHasher(configured);
  t.notOk(hasher.needsRehash(await hasher.hash('pw')), 'the configured cost: kept');
  const made = (o: { memoryCost: number; timeCost: number; parallelism: number; algorithm?: 0 | 1 | 2 }) =>
    hash('pw', { algorithm: 2, ...o });
  t.ok(hasher.needsRehash(await made({ memoryCost: 32, timeCost: 2, parallelism: 1 })), 'less memory');
  t.ok(hasher.needsRehash(await made({ memoryCost: 128, timeCost: 2, parallelism: 1 })), 'more memory');
  t.ok(hasher.needsRehash(await made({ memoryCost: 64, timeCost: 1, parallelism: 1 })), 'other iterations');
  t.ok(hasher.needsRehash(await made({ memoryCost: 64, timeCost: 2, parallelism: 2 })), 'other lanes');
  t.ok(hasher.needsRehash(await made({ memoryCost: 64, timeCost: 2, parallelism: 1, algorithm: 1 })), 'argon2i');
  t.ok(hasher.needsRehash('$2b$10$abcdefghijklmnopqrstuv'), 'another scheme');
  // Raising the configured cost rehashes what the old one made (on the next sign-in).
  const raised = createPasswordHasher({ ...configured, memoryKib: 128 });
  t.ok(raised.needsRehash(await hasher.hash('pw')));
});

t.test('verifyAgainstDummy: false for every password, and as slow as a real verification', async (t) => {
  const hasher = createPasswordHasher(cheap);
  t.equal(await hasher.verifyAgainstDummy('dummy password that never matches'), false, 'even the dummy’s own');
  t.equal(await hasher.verifyAgainstDummy(''), false);

  // At a cost where one verification takes tens of milliseconds, an unknown e-mail's dummy verification
  // takes about as long as a known one's (interleaved medians). A dummy made at a fixed cost would not: at
  // the production default (m=19456, t=2) it is ~1/7 of this one, at the tests' cheap cost ~1/10000.
  const costly = createPasswordHasher({ memoryKib: 65536, iterations: 4, parallelism: 1 });
  const stored = await costly.hash('the real password');
  await costly.verifyAgainstDummy('warm-up'); // the dummy hash is made on first use
  const timed = async (run: () => Promise<unknown>) => {
    const start = performance.now();
    await run();
    return performance.now() - start;
  };
  const known: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 5; i++) {
    known.push(await timed(() => costly.verify(stored, 'a wrong password')));
    unknown.push(await timed(() => costly.verifyAgainstDummy('a wrong password')));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const ratio = median(unknown) / median(known);
  t.ok(ratio > 0.33 && ratio < 3, `dummy/real verification time ${ratio.toFixed(2)} is about 1`, { known, unknown });
});

t.test("OWASP's argon2id minimums, read as steps", async (t) => {
  t.equal(owaspMinimumMemoryKib(1), 47104);
  t.equal(owaspMinimumMemoryKib(2), 19456);
  t.equal(owaspMinimumMemoryKib(3), 12288);
  t.equal(owaspMinimumMemoryKib(4), 9216);
  t.equal(owaspMinimumMemoryKib(5), 7168);
  t.equal(owaspMinimumMemoryKib(64), 7168);
});
