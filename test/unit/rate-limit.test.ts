// The rate-limit building blocks: createRateLimitStore picks where the counts live (Redis with
// REDIS_URL, PostgreSQL with a pool, else memory) and every limiter keeps fixed windows through
// rate-limiter-flexible; a failing shared store falls back to an in-memory count per process (never
// open, never closed); rules that never give points back block a spent key in memory, so a flood
// costs the store one round trip per window; ipKey keys IPv6 by /64; device cookies are signed.
// The PostgreSQL store is exercised here over a small in-memory stand-in for the pool (the real one in
// test/integration/multi-instance.test.ts).
import t from 'tap';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import type pg from 'pg';
import {
  boundedMemoryLimiter,
  createRateLimitStore,
  emailKey,
  MEMORY_WINDOWS_PER_RULE,
  ip48Key,
  ipKey,
  type Limiter,
  retryAfterSeconds,
  storeKey,
} from '../../src/rate-limit.js';
import { createDeviceCookies, DEVICE_COOKIE_MAX_ACCOUNTS } from '../../src/device-cookie.js';

/** One consume, as the plugin does it: allowed or not, hits left, seconds to wait. */
async function hit(l: Limiter, key: string) {
  try {
    const res = await l.consume(key);
    return { allowed: true, remaining: res.remainingPoints, retryAfterSeconds: retryAfterSeconds(res) };
  } catch (error) {
    if (!(error instanceof RateLimiterRes)) throw error;
    return { allowed: false, remaining: error.remainingPoints, retryAfterSeconds: retryAfterSeconds(error) };
  }
}

/**
 * A stand-in for pg.Pool answering RateLimiterPostgres's upsert like PostgreSQL would (the window's
 * points and expiry), counting the queries; `down` makes every query fail like a lost server.
 */
function fakePool() {
  const rows = new Map<string, { points: number; expire: number | null }>();
  const state = { queries: 0, down: false };
  const pool = {
    async query(q: { text: string; values?: unknown[] }) {
      state.queries++;
      if (state.down) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      const [key, points, expire, now] = q.values as [string, number, number | null, number];
      // PostgreSQL's text cannot hold NUL.
      if (key.includes('\u0000')) throw new Error('invalid byte sequence for encoding "UTF8": 0x00');
      if (/^\s*delete/i.test(q.text)) return { rowCount: rows.delete(key) ? 1 : 0, rows: [] };
      if (!/insert into/i.test(q.text)) {
        const row = rows.get(key);
        return { rows: row && (row.expire === null || row.expire > (points as unknown as number)) ? [row] : [] };
      }
      const row = rows.get(key);
      const next =
        !row || (row.expire !== null && row.expire <= now)
          ? { points, expire }
          : { points: row.points + points, expire: row.expire };
      rows.set(key, next);
      return { rows: [next] };
    },
  };
  return { pool: pool as unknown as pg.Pool, state, rows };
}

t.test('the store: Redis with REDIS_URL, else PostgreSQL with a pool, else memory', async (t) => {
  const memory = createRateLimitStore({});
  t.equal(memory.backend, 'memory');
  t.ok(memory.limiter('A', 1, 60) instanceof RateLimiterMemory);

  const { pool } = fakePool();
  const postgres = createRateLimitStore({ database: { pool } });
  t.equal(postgres.backend, 'postgres');
  t.ok(postgres.limiter('A', 1, 60) instanceof RateLimiterPostgres);

  // Port 1 is closed: the client keeps trying in the background; closing it stops that.
  const redis = createRateLimitStore({ redisUrl: 'redis://user:secret@127.0.0.1:1/3', database: { pool } });
  t.equal(redis.backend, 'redis', 'REDIS_URL wins over the database');
  t.ok(redis.limiter('A', 1, 60) instanceof RateLimiterRedis);
  t.equal(redis.location, 'redis://127.0.0.1:1/3', 'no credentials in the location');
  t.equal(await redis.ready(200), false, 'not ready when nothing listens');
  await redis.close();
});

t.test('counts hits up to the limit, then refuses with the time left; keys and rules are independent', async (t) => {
  for (const store of [createRateLimitStore({}), createRateLimitStore({ database: fakePool() })]) {
    const l = store.limiter('RULE', 3, 60);
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await hit(l, 'k'));
    t.same(
      results.map((r) => [r.allowed, r.remaining]),
      [
        [true, 2],
        [true, 1],
        [true, 0],
        [false, 0],
        [false, 0],
      ],
      store.backend,
    );
    t.ok(
      results.every((r) => r.retryAfterSeconds >= 59 && r.retryAfterSeconds <= 60),
      'Retry-After: the window left',
    );
    t.ok((await hit(l, 'other')).allowed, 'another key has its own window');
    t.ok((await hit(store.limiter('OTHER', 3, 60), 'k')).allowed, 'another rule has its own windows');
  }
});

t.test('a failing shared store: every rule still counts, in this process, and the failure is reported', async (t) => {
  const { pool, state } = fakePool();
  const errors: unknown[] = [];
  const store = createRateLimitStore({ database: { pool }, onError: (e) => errors.push(e) });
  const l = store.limiter('SIGN_IN_IP', 2, 60, { blockInMemory: true });
  const rewarding = store.limiter('SIGN_IN_EMAIL', 2, 60);
  state.down = true;
  const seen = [await hit(l, 'ip'), await hit(l, 'ip'), await hit(l, 'ip')].map((r) => r.allowed);
  t.same(seen, [true, true, false], 'not open: the limit holds from memory');
  await rewarding.penalty('a@example.com');
  await rewarding.reward('a@example.com');
  t.ok((await hit(rewarding, 'a@example.com')).allowed, 'not closed: nobody is locked out by the outage');
  t.ok(errors.length >= 3, 'each failed query is reported');
  state.down = false;
  t.ok((await hit(l, 'fresh')).allowed, 'the store answers again');
});

t.test('blockInMemory: a spent key costs the store nothing more until its window ends', async (t) => {
  const { pool, state } = fakePool();
  const store = createRateLimitStore({ database: { pool } });
  const blocking = store.limiter('A', 3, 60, { blockInMemory: true });
  for (let i = 0; i < 10; i++) await hit(blocking, 'k');
  t.equal(state.queries, 3, 'three counted, seven refused from memory');
  const counting = store.limiter('B', 3, 60);
  state.queries = 0;
  for (let i = 0; i < 10; i++) await hit(counting, 'k');
  t.equal(state.queries, 10, 'without it every hit asks the store');
  await blocking.delete('k');
  t.ok((await hit(blocking, 'k')).allowed, 'delete() lifts the block too');
});

t.test('chunk: points taken from the store a chunk at a time, never more than the limit in all', async (t) => {
  const { pool, state } = fakePool();
  // Two instances on one store.
  const [a, b] = [0, 1].map(() =>
    createRateLimitStore({ database: { pool } }).limiter('BEARER', 100, 60, { chunk: 4, blockInMemory: true }),
  );
  const allowed = [0, 0];
  for (let i = 0; i < 130; i++) if ((await hit(i % 3 ? a! : b!, 'token')).allowed) allowed[i % 3 ? 0 : 1]!++;
  t.equal(allowed[0]! + allowed[1]!, 100, 'exactly the limit over both instances (no chunk left unused here)');
  t.ok(state.queries <= 28, `${state.queries} round trips for 130 hits (25 chunks, then blocked in memory)`);

  // Chunks that do not divide the limit: the last points are still handed out, never one more.
  const { pool: pool2 } = fakePool();
  const c = createRateLimitStore({ database: { pool: pool2 } }).limiter('X', 10, 60, { chunk: 4, blockInMemory: true });
  const seen = [];
  for (let i = 0; i < 14; i++) seen.push((await hit(c, 'k')).allowed);
  t.equal(seen.filter(Boolean).length, 10, 'ten of fourteen allowed');
  t.same(seen.slice(10), [false, false, false, false], 'then refused');

  // Concurrent hits on one key wait for the reservation under way instead of each making one.
  const { pool: pool4, state: state4 } = fakePool();
  const f = createRateLimitStore({ database: { pool: pool4 } }).limiter('Z', 1000, 60, { chunk: 10 });
  const burst = await Promise.all(Array.from({ length: 50 }, () => hit(f, 'k')));
  t.ok(
    burst.every((r) => r.allowed),
    'fifty at once, all allowed',
  );
  t.equal(state4.queries, 5, 'five reservations of ten for fifty concurrent hits');

  // An instance that reserved and stopped: the other may be refused early, never late.
  const { pool: pool3 } = fakePool();
  const [d, e] = [0, 1].map(() =>
    createRateLimitStore({ database: { pool: pool3 } }).limiter('Y', 8, 60, { chunk: 4 }),
  );
  t.ok((await hit(d!, 'k')).allowed, 'd takes a chunk of 4 and spends 1');
  let byE = 0;
  for (let i = 0; i < 8; i++) if ((await hit(e!, 'k')).allowed) byE++;
  t.equal(byE, 4, 'e gets the other chunk only: 5 of 8 used, 3 held by d');
});

t.test('memory windows are bounded per rule: past the bound the oldest window is forgotten first', async (t) => {
  const l = boundedMemoryLimiter({ points: 2, duration: 60 }, 3);
  await hit(l, 'victim');
  await hit(l, 'victim');
  t.notOk((await hit(l, 'victim')).allowed, 'the victim key has spent its budget');
  await hit(l, 'a');
  await hit(l, 'b');
  t.notOk((await hit(l, 'victim')).allowed, 'three windows within the bound of three: nothing forgotten');
  await hit(l, 'c');
  t.ok((await hit(l, 'victim')).allowed, "a fourth key: the oldest window (the victim's) is forgotten");
  // The victim's new window is now the newest; the next key pushes out 'a', the oldest.
  await hit(l, 'd');
  t.ok((await hit(l, 'victim')).allowed, "the victim's new window is kept (its second point)");
  t.notOk((await hit(l, 'victim')).allowed, 'and counted');
  t.ok((await hit(l, 'a')).allowed && (await hit(l, 'a')).allowed, "'a' was forgotten: two fresh points");

  // The embedded database's store, at its real bound: a flood of distinct keys cannot grow it past
  // MEMORY_WINDOWS_PER_RULE windows; the one key that spent its budget is forgotten only past the bound.
  const store = createRateLimitStore({});
  const memory = store.limiter('RESET_REQUEST_EMAIL_DAY', 1, 86_400);
  const otherRule = store.limiter('SIGN_UP_EMAIL', 1, 3600);
  t.ok((await hit(memory, 'victim@example.com')).allowed);
  t.ok((await hit(otherRule, 'victim@example.com')).allowed);
  for (let i = 0; i < MEMORY_WINDOWS_PER_RULE - 1; i++) await memory.consume(`flood-${i}@example.com`);
  t.notOk((await hit(memory, 'victim@example.com')).allowed, 'within the bound the count holds');
  await memory.consume('one-more@example.com');
  t.ok((await hit(memory, 'victim@example.com')).allowed, 'past it the oldest window goes, not the process');
  t.notOk((await hit(otherRule, 'victim@example.com')).allowed, "another rule's windows are not touched");
});

t.test('storeKey: shared stores keep short printable keys as they are, others hashed', async (t) => {
  t.equal(storeKey('203.0.113.7'), '203.0.113.7');
  const token = storeKey('client-1\u0000203.0.113.7');
  t.match(token, /^#[A-Za-z0-9_-]{43}$/, 'the TOKEN rule key (NUL-separated) is hashed');
  t.not(token, storeKey('client-1\u0000203.0.113.8'));
  t.match(storeKey(`${'a'.repeat(250)}@example.com`), /^#/, 'a long key is hashed');

  const { pool, rows } = fakePool();
  const errors: unknown[] = [];
  const l = createRateLimitStore({ database: { pool }, onError: (e) => errors.push(e) }).limiter('TOKEN', 1, 60);
  t.ok((await hit(l, 'client-1\u0000203.0.113.7')).allowed);
  t.notOk((await hit(l, 'client-1\u0000203.0.113.7')).allowed, 'counted in the store');
  t.same(errors, [], 'the store took the key');
  t.same([...rows.keys()], [`TOKEN:${token}`]);
});

t.test('retryAfterSeconds: whole seconds, at least 1', async (t) => {
  t.equal(retryAfterSeconds(new RateLimiterRes(0, 59_500)), 60);
  t.equal(retryAfterSeconds(new RateLimiterRes(0, 100)), 1);
  t.equal(retryAfterSeconds(new RateLimiterRes(0, 0)), 1);
  t.equal(retryAfterSeconds(new RateLimiterRes(0, 840_000)), 840);
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

t.test('ip48Key: the /48 of an IPv6 key, nothing for IPv4 (issue 31, 7c)', async (t) => {
  t.equal(ip48Key(ipKey('2001:db8:1:2::1')), '2001:db8:1::/48');
  t.equal(ip48Key(ipKey('2001:0DB8:0001:ffff:1:2:3:4')), '2001:db8:1::/48', 'every /64 of the /48, any spelling');
  t.not(ip48Key(ipKey('2001:db8:1:2::1')), ip48Key(ipKey('2001:db8:2:2::1')), 'the next /48 is another key');
  t.equal(ip48Key(ipKey('::1')), '0:0:0::/48');
  t.equal(ip48Key(ipKey('fe80::1%eth0')), 'fe80:0:0::/48');
  t.equal(ip48Key(ipKey('198.51.100.7')), undefined, 'IPv4: no aggregate');
  t.equal(ip48Key(ipKey('::ffff:198.51.100.7')), undefined, 'IPv4-mapped IPv6 is IPv4');
  t.equal(ip48Key('not an address'), undefined);
  t.equal(ip48Key('client\u00002001:db8:1:2::/64'), undefined, 'only a bare /64 key');
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
