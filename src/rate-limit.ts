// Rate limiting on rate-limiter-flexible (decisions.md, Limits; issue 12 items 5-7; issue 16 part 4).
//
// Where the counts live decides whether N instances behind a load balancer share them:
// - REDIS_URL set: Redis or Valkey (RateLimiterRedis over ioredis), shared by every instance;
// - else DATABASE_URL: PostgreSQL (RateLimiterPostgres over the server's pg pool, in the rate_limits
//   table of migration 0009), shared by every instance;
// - else (the embedded database, one process): the process's memory (RateLimiterMemory).
// Every rule is a limiter of its own under its own key prefix; semantics are the library's: a key's
// window starts at its first hit and lasts `duration` seconds; over `points` a consume is refused and
// the caller learns how long remains.
//
// When the shared store fails (Redis down, a PostgreSQL error or a full pool), every rule falls back
// to the library's insuranceLimiter: an in-memory limiter with the same limit in this process. That is
// deliberate, rule by rule, thinking like an attacker:
// - failing open would make a store outage a free pass for password guessing (SIGN_IN_*,
//   RESET_PASSWORD_IP) and for mail bombing a victim's inbox (SIGN_UP_EMAIL, RESET_REQUEST_*, RESEND_*);
// - failing closed would let whoever can disturb the store lock every user out of signing in and stop
//   every application's token and bearer calls (TOKEN*, AUTHORIZE, BEARER), a denial of service that
//   the limits exist to prevent.
// So every rule stays enforced, per instance, during an outage: the budget is at most N times the
// configured one with N instances, never unlimited, and no request fails because of the store.
//
// Cost: a shared store is one round trip per counted request. Rules that only count (not the sign-in
// rules, which give points back) therefore (1) block a key in this process's memory once it has used
// its budget (inMemoryBlockOnConsumed), so a flood against one key costs the store one round trip per
// instance and window, not one per request; and (2) when their limit is 100 or more (BEARER, TOKEN_IP
// by default), take a key's points from the store several at a time (chunkFor) and spend them in this
// process (chunked below): every allowed hit is still backed by a point in the
// store, so the instances together never allow more than the limit, and a busy bearer token costs one
// round trip per 12 requests instead of one per request.
import {
  RateLimiterMemory,
  RateLimiterPostgres,
  RateLimiterRedis,
  type IRateLimiterOptions,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';
import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { Redis } from 'ioredis';
import type { DatabaseHandle } from './database.js';

/** What the rules use of a rate-limiter-flexible limiter. */
export type Limiter = Pick<RateLimiterAbstract, 'consume' | 'penalty' | 'reward' | 'get' | 'delete' | 'points'>;
export type RateLimitBackend = 'memory' | 'postgres' | 'redis';

export interface LimiterOptions {
  /** Block a key in this process once its budget is used (only for rules that never give points back). */
  blockInMemory?: boolean;
  /**
   * Shared stores only: take points from the store this many at a time and spend them in this process
   * (one round trip per `chunk` hits of a key instead of one per hit); only for rules that only count.
   */
  chunk?: number;
}

export interface RateLimitStore {
  backend: RateLimitBackend;
  /** Where the counts live, without credentials, for the log. */
  location: string;
  limiter(name: string, points: number, duration: number, options?: LimiterOptions): Limiter;
  /** Resolves once the store answers (Redis: connected), or after timeoutMs (the insurance serves meanwhile). */
  ready(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * How many points a counting-only rule takes from a shared store at a time: a 50th of its limit, at
 * most 20 (BEARER 600/60: 12; TOKEN_IP 300/60: 6; limits under 100: 1, every hit asks the store).
 */
export function chunkFor(limit: number): number {
  return Math.max(1, Math.min(20, Math.floor(limit / 50)));
}

/** The table of migration 0009. */
export const RATE_LIMIT_TABLE = 'rate_limits';

/**
 * The key a shared store keeps for a rule's key: as it is when short and printable, else a hash
 * (PostgreSQL text cannot hold NUL, which separates the TOKEN rule's client id and IP, and a long
 * e-mail address need not be stored in full).
 */
export function storeKey(key: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it looks for
  if (key.length <= 200 && !/[\u0000-\u001f\u007f]/.test(key)) return key;
  return `#${createHash('sha256').update(key).digest('base64url')}`;
}

/** Makes a shared-store limiter keep storeKey(key) for every key it is given. */
function withStoreKeys(limiter: RateLimiterAbstract): RateLimiterAbstract {
  const own = limiter as unknown as { getKey(key: string): string };
  const getKey = own.getKey.bind(limiter);
  own.getKey = (key: string) => getKey(storeKey(String(key)));
  return limiter;
}

/**
 * How many windows one rule keeps in this process's memory: the embedded database's store, every shared
 * store's fallback during an outage, and the points an instance holds for busy keys. rate-limiter-flexible's
 * memory store has no bound of its own (a Map entry and a timer per key until its window ends), so a flood of
 * distinct keys, one new e-mail address per request under RESET_REQUEST_EMAIL_DAY's day-long windows say, would
 * grow the process until it died. At the bound the oldest window is forgotten first (for a rule's fixed-length
 * windows, the one closest to its end). About 0.6 KB of heap per window (measured with 100,000), so at most
 * ~30 MB per rule.
 */
export const MEMORY_WINDOWS_PER_RULE = 50_000;

type MemoryStorage = {
  _storage: Map<string, { timeoutId?: ReturnType<typeof setTimeout> }>;
  set(key: string, value: number, durationSec: number): RateLimiterRes;
};

/** A RateLimiterMemory keeping at most `maxWindows` keys' windows, forgetting the oldest first. */
export function boundedMemoryLimiter(
  options: IRateLimiterOptions,
  maxWindows = MEMORY_WINDOWS_PER_RULE,
): RateLimiterMemory {
  const limiter = new RateLimiterMemory(options);
  // Every window the library opens (a new key, an expired one counted anew, a block) goes through its
  // storage's set(). Checked here so that a release that changes this fails at start, not silently.
  const storage = (limiter as unknown as { _memoryStorage?: MemoryStorage })._memoryStorage;
  if (!(storage?._storage instanceof Map) || typeof storage.set !== 'function') {
    throw new Error('rate-limiter-flexible: its memory store changed; the bound on its keys needs updating');
  }
  const map = storage._storage;
  const set = storage.set.bind(storage);
  storage.set = (key, value, durationSec) => {
    const res = set(key, value, durationSec);
    // The newest window goes last (Map.set keeps an existing key's place), so the first is the oldest.
    const record = map.get(key);
    if (record) {
      map.delete(key);
      map.set(key, record);
    }
    while (map.size > maxWindows) {
      const oldest = map.entries().next().value;
      if (!oldest) break;
      if (oldest[1].timeoutId) clearTimeout(oldest[1].timeoutId);
      map.delete(oldest[0]);
    }
    return res;
  };
  return limiter;
}

/**
 * A shared limiter that reserves `chunk` points of a key at a time and spends them here, so a busy key
 * costs the store one round trip per `chunk` hits in this instance. Every hit allowed is backed by a
 * point taken from the store, so all instances together never allow more than the limit; an instance
 * may refuse up to chunk - 1 hits early (points it reserved and did not use before the window ended).
 */
function chunked(shared: Limiter, chunk: number, duration: number): Limiter {
  // The points this instance holds for a key: consumed = chunk - left, expiring with the store's window.
  const held = boundedMemoryLimiter({ points: chunk, duration });
  const seconds = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  // Reservations under way, by key (at most one per key; gone when settled).
  const reserving = new Map<string | number, Promise<RateLimiterRes>>();
  async function reserve(key: string | number): Promise<RateLimiterRes> {
    try {
      const res = await shared.consume(key, chunk);
      await held.set(key, 1, seconds(res));
      return res;
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      // Refused as a chunk: the points that were still left before it may yet be spent, here.
      // (A key blocked in memory is refused with consumedPoints 0: nothing is left then.)
      if (error.consumedPoints <= shared.points) throw error;
      const left = shared.points - (error.consumedPoints - chunk);
      if (left <= 0) throw error;
      await held.set(key, chunk - left + 1, seconds(error));
      return error;
    }
  }
  return {
    points: shared.points,
    get: (key, options) => shared.get(key, options),
    penalty: (key, points, options) => shared.penalty(key, points, options),
    reward: (key, points, options) => shared.reward(key, points, options),
    async delete(key, options) {
      await held.delete(key);
      return shared.delete(key, options);
    },
    async consume(key, points = 1, options) {
      if (points !== 1 || options) return shared.consume(key, points, options);
      // Spend a held point; while another request of this process is reserving for the key, wait for it
      // (one round trip for a busy key, not one per concurrent request).
      for (;;) {
        const mine = await held.get(key);
        if (mine && mine.remainingPoints > 0) {
          try {
            return await held.consume(key);
          } catch (error) {
            if (!(error instanceof RateLimiterRes)) throw error;
            continue; // another request took the last one
          }
        }
        const inFlight = reserving.get(key);
        if (!inFlight) break;
        await inFlight.catch(() => {});
        if (!(await held.get(key))) break; // the reservation was refused: ask for ourselves
      }
      const reservation = reserve(key);
      reserving.set(key, reservation);
      try {
        return await reservation;
      } finally {
        reserving.delete(key);
      }
    },
  };
}

/** A shared store's limiter: hashed keys where needed, and its points taken in chunks when asked. */
function sharedLimiter(limiter: RateLimiterAbstract, duration: number, options: LimiterOptions = {}): Limiter {
  const keyed = withStoreKeys(limiter);
  return options.chunk && options.chunk > 1 ? chunked(keyed, options.chunk, duration) : keyed;
}

function describeRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return 'redis://<unparseable URL>';
  }
}

/**
 * The store for this configuration. onError hears every failure of the shared store (the limiter
 * then answers from its insurance); it is called at most once per failing operation.
 */
export function createRateLimitStore(options: {
  redisUrl?: string | undefined;
  database?: Pick<DatabaseHandle, 'pool'> | undefined;
  onError?: (error: unknown) => void;
}): RateLimitStore {
  const onError = options.onError ?? (() => {});
  const insured = (name: string, points: number, duration: number, blockInMemory = false) => ({
    points,
    duration,
    keyPrefix: name,
    insuranceLimiter: boundedMemoryLimiter({ points, duration, keyPrefix: name }),
    ...(blockInMemory ? { inMemoryBlockOnConsumed: points } : {}),
  });

  if (options.redisUrl) {
    // enableOfflineQueue off: a command while disconnected fails at once (the insurance answers)
    // instead of waiting for a reconnect, as the library's documentation advises.
    const client = new Redis(options.redisUrl, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: 1000,
    });
    client.on('error', onError);
    return {
      backend: 'redis',
      location: describeRedisUrl(options.redisUrl),
      limiter: (name, points, duration, o) =>
        sharedLimiter(
          new RateLimiterRedis({
            ...insured(`idp:rl:${name}`, points, duration, o?.blockInMemory),
            storeClient: client,
            rejectIfRedisNotReady: true,
          }),
          duration,
          o,
        ),
      async ready(timeoutMs = 5000) {
        if (client.status === 'ready') return true;
        return new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), timeoutMs);
          client.once('ready', () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
      },
      async close() {
        client.disconnect();
      },
    };
  }

  const pool = options.database?.pool;
  if (pool) {
    // The pool, behind a client that reports failures (the library swallows them into the insurance).
    const client = {
      query: (query: { name?: string; text: string; values?: unknown[] }) =>
        pool.query(query).catch((error: unknown) => {
          onError(error);
          throw error;
        }),
    };
    return {
      backend: 'postgres',
      location: `PostgreSQL table ${RATE_LIMIT_TABLE}`,
      limiter: (name, points, duration, o) =>
        sharedLimiter(
          new RateLimiterPostgres({
            ...insured(name, points, duration, o?.blockInMemory),
            storeClient: client,
            storeType: 'client',
            tableName: RATE_LIMIT_TABLE,
            tableCreated: true, // by migration 0009
            clearExpiredByTimeout: false, // the clean-up job deletes expired windows
          }),
          duration,
          o,
        ),
      ready: async () => true,
      async close() {},
    };
  }

  return {
    backend: 'memory',
    location: 'this process (embedded database: one instance)',
    limiter: (name, points, duration) => boundedMemoryLimiter({ points, duration, keyPrefix: name }),
    ready: async () => true,
    async close() {},
  };
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

/**
 * The /48 an IPv6 ipKey() lies in (`2001:db8:1:2::/64` → `2001:db8:1::/48`); undefined for an IPv4 key.
 * A /48 is what a site is usually assigned (RFC 6177): whoever holds one has 65,536 /64s, each with a
 * budget of its own under a per-IP rule, so the mail-sending and sign-in rules count the /48 as well,
 * with a larger limit of its own (issue 31, 7c). IPv4 is counted per address only, as before.
 */
export function ip48Key(key: string): string | undefined {
  const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4}):([0-9a-f]{1,4}):[0-9a-f]{1,4}::\/64$/.exec(key);
  return m ? `${m[1]}:${m[2]}:${m[3]}::/48` : undefined;
}
