// The rate-limit building blocks on an injected clock: BoundedMemoryLimiter (rate-limiter-flexible over a
// bounded store of its own) keeps fixed windows that start at a key's first hit, with Retry-After values
// and independent keys; each limiter's memory is bounded on its own, so a flood on one rule cannot evict
// another rule's windows; ipKey keys IPv6 by /64; device cookies are signed and name accounts by tag.
import t from 'tap';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { BoundedMemoryLimiter, BoundedMemoryStore, emailKey, ipKey, retryAfterSeconds } from '../../src/rate-limit.js';
import { createDeviceCookies, DEVICE_COOKIE_MAX_ACCOUNTS } from '../../src/device-cookie.js';

function clock(start = 1_700_000_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

const limiter = (c: ReturnType<typeof clock>, points: number, duration: number, maxKeys?: number) =>
  new BoundedMemoryLimiter({ points, duration, now: c.now, sweepIntervalMs: 0, ...(maxKeys && { maxKeys }) });

/** One consume, as the plugin does it: allowed or not, hits left, seconds to wait. */
async function hit(l: BoundedMemoryLimiter, key: string) {
  try {
    const res = await l.consume(key);
    return { allowed: true, remaining: res.remainingPoints, retryAfterSeconds: retryAfterSeconds(res) };
  } catch (error) {
    if (!(error instanceof RateLimiterRes)) throw error;
    return { allowed: false, remaining: error.remainingPoints, retryAfterSeconds: retryAfterSeconds(error) };
  }
}
const allowed = async (l: BoundedMemoryLimiter, key: string) => (await hit(l, key)).allowed;

t.test('counts hits up to the limit, then refuses', async (t) => {
  const c = clock();
  const l = limiter(c, 3, 60);
  const results = [];
  for (let i = 0; i < 5; i++) results.push(await hit(l, 'k'));
  t.same(
    results.map((r) => r.allowed),
    [true, true, true, false, false],
  );
  t.same(
    results.map((r) => r.remaining),
    [2, 1, 0, 0, 0],
  );
  t.equal(l.store.size, 1);
  const one = limiter(c, 1, 10);
  t.same([await allowed(one, 'x'), await allowed(one, 'x')], [true, false], 'a limit of one');
});

t.test('the window is fixed from the first hit and resets when it has passed', async (t) => {
  const c = clock();
  const l = limiter(c, 2, 60);
  t.ok(await allowed(l, 'k'));
  c.advance(30_000);
  t.ok(await allowed(l, 'k'));
  c.advance(29_999);
  t.notOk(await allowed(l, 'k'), 'still the first window 1 ms before its end');
  c.advance(1);
  const fresh = await hit(l, 'k');
  t.ok(fresh.allowed, 'a new window exactly 60 s after the first hit');
  t.equal(fresh.remaining, 1, 'counting from one again');
  t.equal(fresh.retryAfterSeconds, 60, 'the new window starts now');
  t.ok(await allowed(l, 'k'));
  t.notOk(await allowed(l, 'k'), 'and it is limited again after two');
  // Refused hits do not extend the window: it still ends 60 s after its own first hit.
  c.advance(59_000);
  t.notOk(await allowed(l, 'k'));
  c.advance(1_000);
  t.ok(await allowed(l, 'k'), 'hammering while limited does not push the end back');
});

t.test('retryAfterSeconds: whole seconds to the end of the window, at least 1', async (t) => {
  const c = clock();
  const l = limiter(c, 1, 60);
  const seen: number[] = [];
  seen.push((await hit(l, 'k')).retryAfterSeconds); // t = 0
  c.advance(500);
  seen.push((await hit(l, 'k')).retryAfterSeconds); // 59.5 s left → 60
  c.advance(10_000);
  seen.push((await hit(l, 'k')).retryAfterSeconds); // 49.5 s left → 50
  c.advance(39_500);
  seen.push((await hit(l, 'k')).retryAfterSeconds); // 10 s left → 10
  c.advance(9_900);
  seen.push((await hit(l, 'k')).retryAfterSeconds); // 0.1 s left → 1
  t.same(seen, [60, 60, 50, 10, 1]);
  c.advance(100);
  const next = await hit(l, 'k');
  t.ok(next.allowed, 'the window is over');
  t.equal(next.retryAfterSeconds, 60);

  const long = limiter(c, 1, 900);
  await hit(long, 'r');
  c.advance(60_000);
  const refused = await hit(long, 'r');
  t.notOk(refused.allowed);
  t.equal(refused.retryAfterSeconds, 840, 'a 15-minute window');
  for (const r of [refused, next]) t.ok(Number.isInteger(r.retryAfterSeconds));
});

t.test('keys are independent, each with its own window', async (t) => {
  const c = clock();
  const l = limiter(c, 1, 60);
  await hit(l, 'a');
  t.notOk(await allowed(l, 'a'), 'a is limited');
  t.ok(await allowed(l, 'b'), 'b is not');
  t.ok(await allowed(l, 'A'), 'keys are compared exactly');
  c.advance(30_000);
  t.equal((await hit(l, 's')).retryAfterSeconds, 60, 's has a window of its own, from its own first hit');
  c.advance(30_000);
  t.ok(await allowed(l, 'a'), 'a is free again after 60 s');
  t.notOk(await allowed(l, 's'), 'while s is still in its window');
  t.equal(l.store.size, 4);
  l.store.clear();
  t.equal(l.store.size, 0);
  t.ok(await allowed(l, 's'), 'clear forgets every count');
});

t.test(
  'penalty and reward move the count without refusing; customDuration gives a window its own length',
  async (t) => {
    const c = clock();
    const l = limiter(c, 2, 60);
    t.equal((await l.penalty('k')).consumedPoints, 1);
    t.equal((await l.penalty('k')).consumedPoints, 2);
    t.equal((await l.reward('k')).consumedPoints, 1, 'a reward gives a point back');
    t.ok(await allowed(l, 'k'));
    t.notOk(await allowed(l, 'k'));
    const slot = limiter(c, 1, 60);
    t.ok((await slot.consume('d', 1, { customDuration: 4 })).msBeforeNext === 4000, 'a 4 s window');
    c.advance(3_000);
    const busy = await hit(slot, 'd');
    t.notOk(busy.allowed);
    t.equal(busy.retryAfterSeconds, 1);
    c.advance(1_000);
    t.ok(await allowed(slot, 'd'), 'free after its own 4 s');
  },
);

t.test('maxKeys bounds each store: expired windows go first, then the oldest', async (t) => {
  const c = clock();
  const l = limiter(c, 1, 60, 3);
  let largest = 0;
  for (let i = 0; i < 1000; i++) {
    await hit(l, `flood-${i}`);
    largest = Math.max(largest, l.store.size);
  }
  t.equal(largest, 3, 'never more than maxKeys windows');
  t.equal(l.store.size, 3);
  t.notOk(await allowed(l, 'flood-999'), 'the newest keys are kept');
  t.ok(await allowed(l, 'flood-0'), 'the oldest were dropped (their counts forgotten)');

  const d = clock();
  const sweeping = new BoundedMemoryStore({ now: d.now, sweepIntervalMs: 0, maxKeys: 3 });
  sweeping.upsert('short', 1, 1_000);
  sweeping.upsert('live-1', 1, 60_000);
  sweeping.upsert('live-2', 1, 60_000);
  d.advance(2_000);
  sweeping.upsert('new', 1, 60_000);
  t.equal(sweeping.size, 3);
  t.same(
    ['live-1', 'live-2', 'new'].map((k) => sweeping.get(k)?.points),
    [1, 1, 1],
    'the expired window made room; the live ones stayed',
  );
  t.equal(sweeping.get('short'), null);
});

t.test(
  "a flood of junk keys on one rule cannot evict another rule's exhausted window; memory per rule stays bounded",
  async (t) => {
    const c = clock();
    const token = limiter(c, 3, 60, 100);
    const tokenIp = limiter(c, 1_000_000, 60, 100);
    for (let i = 0; i < 3; i++) t.ok(await allowed(token, 'real-client\u0000198.51.100.7'));
    t.notOk(await allowed(token, 'real-client\u0000198.51.100.7'), "the real client's window is exhausted");
    for (let i = 0; i < 5_000; i++) await hit(tokenIp, `junk-${i}`);
    t.equal(tokenIp.store.size, 100, 'the flooded rule keeps at most its own maxKeys windows');
    t.equal(token.store.size, 1, "the other rule's store is untouched");
    t.notOk(await allowed(token, 'real-client\u0000198.51.100.7'), 'and its exhausted window still refuses');
  },
);

t.test('sweep drops expired windows and keeps live ones; a timer sweeps on its own; close() stops it', async (t) => {
  const c = clock();
  const store = new BoundedMemoryStore({ now: c.now, sweepIntervalMs: 0 });
  store.upsert('ten', 1, 10_000);
  store.upsert('sixty', 1, 60_000);
  c.advance(9_999);
  store.sweep();
  t.equal(store.size, 2, 'nothing has expired yet');
  c.advance(1);
  store.sweep();
  t.equal(store.size, 1, 'the 10 s window is gone');

  const timed = new BoundedMemoryStore({ now: c.now, sweepIntervalMs: 10 });
  t.teardown(() => timed.close());
  timed.upsert('a', 1, 1_000);
  c.advance(1_000);
  for (let i = 0; i < 150 && timed.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(timed.size, 0, 'expired windows were swept by the timer');
  timed.close();
  timed.upsert('b', 1, 1_000);
  c.advance(1_000);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(timed.size, 1, 'no sweep after close');
});

t.test('emailKey: one key for every spelling that finds the same account', async (t) => {
  t.equal(emailKey(' Alice@Example.COM '), 'alice@example.com');
  t.equal(emailKey('alice@example.com'), emailKey('ALICE@EXAMPLE.COM'));
  t.not(emailKey('alice@example.com'), emailKey('alice2@example.com'));
});

t.test('ipKey: IPv4 as it is, IPv6 by its /64 in every spelling', async (t) => {
  t.equal(ipKey('198.51.100.7'), '198.51.100.7');
  t.equal(ipKey('::ffff:198.51.100.7'), '198.51.100.7', 'IPv4-mapped IPv6 is the IPv4 address');
  t.equal(ipKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd'), ipKey('2001:db8:1:2::1'), 'two addresses in one /64 share a key');
  t.equal(ipKey('2001:db8:1:2::1'), '2001:db8:1:2::/64');
  t.equal(ipKey('2001:0DB8:0001:0002:0:0:0:1'), '2001:db8:1:2::/64', 'leading zeros and case do not matter');
  t.equal(ipKey('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(ipKey('fe80::1%eth0'), 'fe80:0:0:0::/64', 'a zone id is ignored');
  t.equal(ipKey('::1'), '0:0:0:0::/64');
  t.equal(ipKey('::'), '0:0:0:0::/64');
  t.equal(ipKey('2001:db8:1:2:3:4:198.51.100.7'), '2001:db8:1:2::/64', 'an embedded IPv4 tail');
  t.not(ipKey('2001:db8:1:2::1'), ipKey('2001:db8:1:3::1'), 'the next /64 is another key');
  t.equal(ipKey('not an address'), 'not an address', 'anything else is left as it is');
});

t.test('device cookies: signed, naming accounts by tag, a few accounts per browser', async (t) => {
  const devices = createDeviceCookies('k'.repeat(40));
  const alice = devices.tag(emailKey('Alice@example.com'));
  t.equal(alice, devices.tag('alice@example.com'));
  t.not(alice, devices.tag('bob@example.com'));
  t.notMatch(alice, /alice/i, 'the address is not in the cookie');
  t.not(alice, createDeviceCookies('x'.repeat(40)).tag('alice@example.com'), 'the tag depends on the secret key');

  const first = devices.write(undefined, alice);
  const read = devices.read(first);
  t.ok(read);
  t.same(read?.tags, [alice]);
  const second = devices.read(devices.write(read, devices.tag('bob@example.com')));
  t.equal(second?.nonce, read?.nonce, 'the same browser keeps its nonce');
  t.same(second?.tags, [devices.tag('bob@example.com'), alice], 'most recent account first');
  let many = second;
  for (let i = 0; i < 10; i++) many = devices.read(devices.write(many, devices.tag(`user-${i}@example.com`)));
  t.equal(many?.tags.length, DEVICE_COOKIE_MAX_ACCOUNTS);

  t.equal(devices.read(undefined), undefined);
  t.equal(devices.read('garbage'), undefined);
  const [nonce, tags, mac] = first.split('.') as [string, string, string];
  const bob = devices.tag('bob@example.com');
  t.equal(devices.read(`${nonce}.${bob}.${mac}`), undefined, 'another account cannot be swapped in');
  t.equal(
    devices.read(`${nonce}.${tags}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`),
    undefined,
    'a changed signature is refused',
  );
  t.equal(createDeviceCookies('x'.repeat(40)).read(first), undefined, 'a cookie under another key is refused');
});
