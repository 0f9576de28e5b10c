// Random values drawn from the pooled CSPRNG block (src/random.ts): the right size and alphabet, never the
// same bytes twice, across the block's refills.
import t from 'tap';
import { randomBuffer, randomString } from '../../src/random.js';
import { generateToken } from '../../src/oauth/tokens.js';

t.test('tokens: 32 bytes in base64url, all distinct over several refills of the block', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) seen.add(generateToken()); // 64,000 bytes: 15 refills of 4 KiB
  t.equal(seen.size, 2000);
  for (const token of [...seen].slice(0, 50)) t.match(token, /^[A-Za-z0-9_-]{43}$/);
});

t.test('a draw that does not fit in what is left of the block comes whole from a fresh block', async (t) => {
  const a = randomBuffer(4000);
  const b = randomBuffer(200);
  const c = randomBuffer(4096);
  t.equal(a.length, 4000);
  t.equal(b.length, 200);
  t.equal(c.length, 4096);
  // Random 200 bytes are all zero with probability 2^-1600: a wiped or unfilled block would show here.
  t.ok(
    b.some((x) => x !== 0),
    'the bytes are random, not the wiped block',
  );
  t.ok(c.some((x) => x !== 0));
  t.notOk(c.subarray(0, 200).equals(b), 'no bytes handed out twice');
  t.throws(() => randomBuffer(4097), RangeError);
});

t.test('a buffer is a copy: changing it changes no later draw', async (t) => {
  const first = randomBuffer(16);
  first.fill(7);
  const hexes = Array.from({ length: 300 }, () => randomString(16, 'hex'));
  t.ok(hexes.every((h) => /^[0-9a-f]{32}$/.test(h) && h !== '07'.repeat(16)));
  t.equal(new Set(hexes).size, 300);
});
