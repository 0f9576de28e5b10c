// In-memory fixed-window rate limiting (decisions.md, Limits). Each key gets a window that starts at
// its first hit; over the limit, the caller learns how many seconds remain (for Retry-After).
// The table is bounded: expired windows are swept, and past maxKeys the oldest windows are dropped
// (a flood of distinct keys can then only forget counts, never exhaust memory).
// Counts are per process: with N instances behind a balancer the effective limit is up to N times higher.

export interface RateLimitResult {
  allowed: boolean;
  /** Hits left in the current window after this one. */
  remaining: number;
  /** Whole seconds until the window ends (at least 1). */
  retryAfterSeconds: number;
}

interface Window {
  start: number;
  count: number;
  windowMs: number;
}

export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly options: { now?: () => number; maxKeys?: number; sweepIntervalMs?: number } = {},
  ) {
    if (options.sweepIntervalMs !== 0) {
      this.timer = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
      this.timer.unref();
    }
  }

  private now(): number {
    return this.options.now ? this.options.now() : Date.now();
  }

  get size(): number {
    return this.windows.size;
  }

  hit(key: string, limit: number, windowSeconds: number): RateLimitResult {
    const now = this.now();
    const windowMs = windowSeconds * 1000;
    let w = this.windows.get(key);
    if (!w || now - w.start >= w.windowMs) {
      if (w) this.windows.delete(key);
      w = { start: now, count: 0, windowMs };
      this.windows.set(key, w);
      if (this.windows.size > (this.options.maxKeys ?? 100_000)) this.evict();
    }
    w.count += 1;
    const retryAfterSeconds = Math.max(1, Math.ceil((w.start + w.windowMs - now) / 1000));
    return { allowed: w.count <= limit, remaining: Math.max(0, limit - w.count), retryAfterSeconds };
  }

  /** Forgets every window (tests, and a configuration reload). */
  reset(): void {
    this.windows.clear();
  }

  sweep(): void {
    const now = this.now();
    for (const [key, w] of this.windows) if (now - w.start >= w.windowMs) this.windows.delete(key);
  }

  private evict(): void {
    this.sweep();
    const max = this.options.maxKeys ?? 100_000;
    // Maps iterate in insertion order: the first entries are the oldest windows.
    for (const key of this.windows.keys()) {
      if (this.windows.size <= max) break;
      this.windows.delete(key);
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
  }
}

/** The rate-limit key of an e-mail address: the same for every spelling a lookup would match. */
export const emailKey = (email: string) => email.trim().toLowerCase();
