// RateLimiter on an injected clock: fixed windows that start at a key's first hit, Retry-After values,
// independent keys, the maxKeys bound and the sweep of expired windows.
import t from 'tap';
import { RateLimiter, emailKey } from '../../src/rate-limit.js';

function clock(start = 1_700_000_000_000) {
  let now = start;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

t.test('counts hits up to the limit, then refuses', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  const results = Array.from({ length: 5 }, () => limiter.hit('k', 3, 60));
  t.same(results.map((r) => r.allowed), [true, true, true, false, false]);
  t.same(results.map((r) => r.remaining), [2, 1, 0, 0, 0]);
  t.equal(limiter.size, 1);
  const one = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  t.same([one.hit('x', 1, 10).allowed, one.hit('x', 1, 10).allowed], [true, false], 'a limit of one');
});

t.test('the window is fixed from the first hit and resets when it has passed', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  t.ok(limiter.hit('k', 2, 60).allowed);
  c.advance(30_000);
  t.ok(limiter.hit('k', 2, 60).allowed);
  c.advance(29_999);
  t.notOk(limiter.hit('k', 2, 60).allowed, 'still the first window 1 ms before its end');
  c.advance(1);
  const fresh = limiter.hit('k', 2, 60);
  t.ok(fresh.allowed, 'a new window exactly 60 s after the first hit');
  t.equal(fresh.remaining, 1, 'counting from one again');
  t.equal(fresh.retryAfterSeconds, 60, 'the new window starts now');
  t.ok(limiter.hit('k', 2, 60).allowed);
  t.notOk(limiter.hit('k', 2, 60).allowed, 'and it is limited again after two');
  // Refused hits do not extend the window: it still ends 60 s after its own first hit.
  c.advance(59_000);
  t.notOk(limiter.hit('k', 2, 60).allowed);
  c.advance(1_000);
  t.ok(limiter.hit('k', 2, 60).allowed, 'hammering while limited does not push the end back');
});

t.test('retryAfterSeconds: whole seconds to the end of the window, at least 1', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  const seen: number[] = [];
  seen.push(limiter.hit('k', 1, 60).retryAfterSeconds); // t = 0
  c.advance(500);
  seen.push(limiter.hit('k', 1, 60).retryAfterSeconds); // 59.5 s left → 60
  c.advance(10_000);
  seen.push(limiter.hit('k', 1, 60).retryAfterSeconds); // 49.5 s left → 50
  c.advance(39_500);
  seen.push(limiter.hit('k', 1, 60).retryAfterSeconds); // 10 s left → 10
  c.advance(9_900);
  seen.push(limiter.hit('k', 1, 60).retryAfterSeconds); // 0.1 s left → 1
  t.same(seen, [60, 60, 50, 10, 1]);
  c.advance(100);
  const next = limiter.hit('k', 1, 60);
  t.ok(next.allowed, 'the window is over');
  t.equal(next.retryAfterSeconds, 60);

  const long = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  long.hit('r', 1, 900);
  c.advance(60_000);
  const refused = long.hit('r', 1, 900);
  t.notOk(refused.allowed);
  t.equal(refused.retryAfterSeconds, 840, 'a 15-minute window');
  for (const r of [refused, next]) t.ok(Number.isInteger(r.retryAfterSeconds));
});

t.test('keys are independent, each with its own limit and window', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  limiter.hit('a', 1, 60);
  t.notOk(limiter.hit('a', 1, 60).allowed, 'a is limited');
  t.ok(limiter.hit('b', 1, 60).allowed, 'b is not');
  t.ok(limiter.hit('A', 1, 60).allowed, 'keys are compared exactly');
  c.advance(5_000);
  const short = limiter.hit('s', 1, 10);
  t.equal(short.retryAfterSeconds, 10);
  t.notOk(limiter.hit('s', 1, 10).allowed);
  c.advance(10_000);
  t.ok(limiter.hit('s', 1, 10).allowed, 's has a 10 s window of its own');
  t.notOk(limiter.hit('a', 1, 60).allowed, 'while a is still in its 60 s window');
  t.equal(limiter.size, 4);
  limiter.reset();
  t.equal(limiter.size, 0);
  t.ok(limiter.hit('a', 1, 60).allowed, 'reset forgets every count');
});

t.test('maxKeys bounds the table: expired windows go first, then the oldest', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0, maxKeys: 3 });
  let largest = 0;
  for (let i = 0; i < 1000; i++) {
    limiter.hit(`flood-${i}`, 1, 60);
    largest = Math.max(largest, limiter.size);
  }
  t.equal(largest, 3, 'never more than maxKeys windows');
  t.equal(limiter.size, 3);
  t.notOk(limiter.hit('flood-999', 1, 60).allowed, 'the newest keys are kept');
  t.ok(limiter.hit('flood-0', 1, 60).allowed, 'the oldest were dropped (their counts forgotten)');

  // Expired windows are dropped before live ones.
  const d = clock();
  const sweeping = new RateLimiter({ now: d.now, sweepIntervalMs: 0, maxKeys: 3 });
  sweeping.hit('short', 1, 1);
  sweeping.hit('live-1', 1, 60);
  sweeping.hit('live-2', 1, 60);
  d.advance(2_000);
  sweeping.hit('new', 1, 60);
  t.equal(sweeping.size, 3);
  t.notOk(sweeping.hit('live-1', 1, 60).allowed, 'the oldest live window survived: the expired one made room');
  t.notOk(sweeping.hit('live-2', 1, 60).allowed);
  t.notOk(sweeping.hit('new', 1, 60).allowed);
});

t.test('sweep drops expired windows and keeps live ones', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  limiter.hit('ten', 1, 10);
  limiter.hit('sixty', 1, 60);
  limiter.hit('sixty-2', 1, 60);
  c.advance(9_999);
  limiter.sweep();
  t.equal(limiter.size, 3, 'nothing has expired yet');
  c.advance(1);
  limiter.sweep();
  t.equal(limiter.size, 2, 'the 10 s window is gone');
  t.notOk(limiter.hit('sixty', 1, 60).allowed, 'live counts are kept');
  c.advance(50_000);
  limiter.sweep();
  t.equal(limiter.size, 0);
});

t.test('with a sweep interval the table is swept on its own; close() stops it', async (t) => {
  const c = clock();
  const limiter = new RateLimiter({ now: c.now, sweepIntervalMs: 10 });
  t.teardown(() => limiter.close());
  limiter.hit('a', 1, 1);
  limiter.hit('b', 1, 1);
  c.advance(1_000);
  // Waits for the timer (no assertion on how long it takes; gives up after 1.5 s).
  for (let i = 0; i < 150 && limiter.size > 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(limiter.size, 0, 'expired windows were swept by the timer');
  limiter.close();
  limiter.hit('c', 1, 1);
  c.advance(1_000);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(limiter.size, 1, 'no sweep after close');

  const manual = new RateLimiter({ now: c.now, sweepIntervalMs: 0 });
  manual.hit('m', 1, 1);
  c.advance(1_000);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(manual.size, 1, 'sweepIntervalMs: 0 starts no timer');
});

t.test('emailKey: one key for every spelling that finds the same account', async (t) => {
  t.equal(emailKey(' Alice@Example.COM '), 'alice@example.com');
  t.equal(emailKey('alice@example.com'), emailKey('ALICE@EXAMPLE.COM'));
  t.not(emailKey('alice@example.com'), emailKey('alice2@example.com'));
});
