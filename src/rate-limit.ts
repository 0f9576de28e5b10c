// Rate limiting on rate-limiter-flexible (decisions.md, Limits; issue 12 items 5-7).
//
// Why the library, and why not its RateLimiterMemory: every rule speaks rate-limiter-flexible's
// public API (consume, penalty, reward, get, delete), so moving the rules to its PostgreSQL or Redis
// stores later is a constructor change. Its RateLimiterMemory cannot bound its memory, though: one
// Map entry and one timer per key, no key limit, so a flood of distinct keys inside one window grows
// without end. The library's documented extension point for stores is RateLimiterStoreAbstract
// (_upsert/_get/_delete/_getRateLimiterRes, as RateLimiterRedis and RateLimiterPostgres implement
// it, and its README asks of every store); BoundedMemoryStore below is such a store with a hard key
// limit. Each rule gets a limiter with a store of its own, so a flood on one rule can only evict that
// rule's windows, never another's.
//
// Semantics are the library's: a key's window starts at its first hit and lasts `duration` seconds
// (a fixed window); over `points` a consume is refused and the caller learns how long remains.
// Counts are per process: with N instances behind a balancer the effective limit is up to N times higher.
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { RateLimiterRes } from 'rate-limiter-flexible';

// The package declares RateLimiterStoreAbstract in its types (and its README names it as the class
// every store extends) but does not export it from its index: load it from its file.
const RateLimiterStoreAbstract = createRequire(import.meta.url)(
  'rate-limiter-flexible/lib/RateLimiterStoreAbstract.js',
) as typeof import('rate-limiter-flexible').RateLimiterStoreAbstract;

interface Entry {
  points: number;
  /** Epoch ms; 0 = never. */
  expiresAt: number;
}

export interface StoreResult extends Entry {
  isFirst: boolean;
}

/**
 * A Map of windows with a hard bound. Expired windows are dropped when read and by a periodic sweep;
 * past maxKeys the oldest window goes (Maps iterate in insertion order, and a window is re-inserted
 * whenever it restarts, so the first entry is the oldest). Eviction is O(1), so a flood costs no
 * more CPU per request than normal traffic; it can only make this rule forget its oldest counts.
 */
export class BoundedMemoryStore {
  private readonly entries = new Map<string, Entry>();
  private readonly timer: NodeJS.Timeout | undefined;
  readonly maxKeys: number;
  readonly now: () => number;

  constructor(options: { maxKeys?: number; now?: () => number; sweepIntervalMs?: number } = {}) {
    this.maxKeys = options.maxKeys ?? 100_000;
    this.now = options.now ?? Date.now;
    if (options.sweepIntervalMs !== 0) {
      this.timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
      this.timer.unref();
    }
  }

  get size(): number {
    return this.entries.size;
  }

  private live(key: string, now: number): Entry | undefined {
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt !== 0 && entry.expiresAt <= now) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Adds points to a live window, or starts a new one (forceExpire: always a new one). */
  upsert(key: string, points: number, msDuration: number, forceExpire = false): StoreResult {
    const now = this.now();
    const existing = forceExpire ? undefined : this.live(key, now);
    if (existing) {
      existing.points += points;
      return { ...existing, isFirst: false };
    }
    const entry = { points, expiresAt: msDuration > 0 ? now + msDuration : 0 };
    this.entries.delete(key);
    this.entries.set(key, entry);
    while (this.entries.size > this.maxKeys) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    return { ...entry, isFirst: true };
  }

  get(key: string): Entry | null {
    const entry = this.live(key, this.now());
    return entry ? { ...entry } : null;
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries)
      if (entry.expiresAt !== 0 && entry.expiresAt <= now) this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** A rate-limiter-flexible limiter over a BoundedMemoryStore of its own. */
export class BoundedMemoryLimiter extends RateLimiterStoreAbstract {
  readonly store: BoundedMemoryStore;

  constructor(options: {
    points: number;
    duration: number;
    maxKeys?: number;
    now?: () => number;
    sweepIntervalMs?: number;
  }) {
    const store = new BoundedMemoryStore(options);
    super({ points: options.points, duration: options.duration, keyPrefix: '', storeClient: store });
    this.store = store;
  }

  // The store contract of RateLimiterStoreAbstract (called by consume, penalty, reward, get, set, block, delete).
  _upsert(rlKey: string, points: number, msDuration: number, forceExpire = false): Promise<StoreResult> {
    return Promise.resolve(this.store.upsert(rlKey, points, msDuration, forceExpire));
  }

  _get(rlKey: string): Promise<StoreResult | null> {
    const entry = this.store.get(rlKey);
    return Promise.resolve(entry ? { ...entry, isFirst: false } : null);
  }

  _delete(rlKey: string): Promise<boolean> {
    return Promise.resolve(this.store.delete(rlKey));
  }

  _getRateLimiterRes(_rlKey: string, _changedPoints: number, result: StoreResult): RateLimiterRes {
    const msBeforeNext = result.expiresAt === 0 ? -1 : Math.max(0, result.expiresAt - this.store.now());
    return new RateLimiterRes(Math.max(this.points - result.points, 0), msBeforeNext, result.points, result.isFirst);
  }

  close(): void {
    this.store.close();
  }
}

/** Whole seconds until a refused key may try again (for Retry-After), at least 1. */
export const retryAfterSeconds = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

/** The rate-limit key of an e-mail address: the same for every spelling a lookup would match. */
export const emailKey = (email: string) => email.trim().toLowerCase();

/**
 * The rate-limit key of a client address. IPv4 addresses (and IPv4-mapped IPv6 ones) are keyed as
 * they are; IPv6 addresses by their /64, the smallest block a single subscriber usually holds
 * (RFC 6177), so rotating through one's own /64 does not give a fresh budget per address.
 */
export function ipKey(ip: string): string {
  const address = ip.split('%')[0]!;
  if (isIP(address) !== 6) return address;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  const [head, tail] = address.split('::') as [string, string | undefined];
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  const left = parts(head);
  let right = parts(tail);
  // An embedded dotted IPv4 tail counts as two groups; it never reaches the first four.
  if (right.length && right[right.length - 1]!.includes('.')) right = [...right.slice(0, -1), '0', '0'];
  let groups = left;
  if (left.length && left[left.length - 1]!.includes('.')) groups = [...left.slice(0, -1), '0', '0'];
  const full =
    tail === undefined ? groups : [...groups, ...Array(8 - groups.length - right.length).fill('0'), ...right];
  return `${full
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}
