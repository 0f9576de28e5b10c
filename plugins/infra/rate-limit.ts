// Rate limits of the abuse-prone endpoints (decisions.md, Limits): await app.rateLimit(reply, rule, key)
// counts one hit and, over the limit, answers 429 with Retry-After through the route's own error
// format (AppError JSON, the OAuth body, or an HTML page). RATE_LIMITS=off turns every rule off.
// Each rule has a limiter of its own; the counts live in Redis (REDIS_URL), PostgreSQL (DATABASE_URL)
// or memory (the embedded database), shared by every instance in the first two (src/rate-limit.ts).
// IP rules are keyed by ipKey(request.ip) (IPv6 by /64); the mail-sending and sign-in ones also count an
// IPv6 client's /48 under a rule of their own (IPV6_AGGREGATES, issue 31 7c). request.ip honours only
// what TRUST_PROXY vouches for (app/app.ts trustProxyOption).
//
// Sign-in (app.signInLimits.attempt) is special (issue 12, item 5; OWASP ASVS 5.0 V6.3, the OWASP
// authentication cheat sheet): nobody may lock a chosen account out.
// - Per IP: every attempt counts (SIGN_IN_IP), as before.
// - Per account: only FAILED sign-ins count (SIGN_IN_EMAIL). An attempt reserves a failure up front
//   and gets it back when it succeeds (so parallel guesses cannot slip past the count). The first
//   failures are free; from then on each failure opens a delay (SIGN_IN_DELAY_FIRST, doubling up to
//   SIGN_IN_DELAY_MAX) during which further attempts get 429 + Retry-After without a password check.
//   Refused attempts do not count, so the delays never grow into a long block.
// - A browser with a device cookie for the account (set on a successful sign-in, it outlives sign-out)
//   is judged only by its own budget (SIGN_IN_DEVICE); the account's delays do not apply to it, and its
//   failures do not add to them. Past its budget it is an unknown browser again. The cookie names the
//   account's id under its current password (src/device-cookie.ts): after any password change it gives
//   no trust (issue 31 item 7b).
// Everything is keyed by the e-mail key, never by a lookup: nothing tells whether an account exists.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import '@fastify/cookie';
import { RateLimiterRes } from 'rate-limiter-flexible';
import type { Config, RateLimitRule } from '../../src/config.js';
import { RATE_LIMIT_RULES } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import {
  chunkFor,
  createRateLimitStore,
  emailKey,
  ip48Key,
  ipKey,
  type Limiter,
  type RateLimitStore,
  retryAfterSeconds,
} from '../../src/rate-limit.js';
import { deviceCookie } from './browser-session.js';

export class RateLimitError extends AppError {
  constructor(
    readonly retryAfterSeconds: number,
    message = `Too many requests; try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`,
  ) {
    super(429, 'TOO_MANY_REQUESTS', message);
    this.name = 'RateLimitError';
  }
}

export interface SignInLimits {
  /**
   * Runs a sign-in (`run` throws INVALID_CREDENTIALS on a wrong e-mail or password) under the sign-in
   * limits; throws RateLimitError (429, Retry-After set) when the attempt may not be made now. On
   * success it sets the device cookie for this account on the route's own path.
   */
  attempt<T extends { deviceAccount?: string | undefined }>(
    request: FastifyRequest,
    reply: FastifyReply,
    email: string,
    run: () => Promise<T>,
  ): Promise<T>;
  /**
   * Tells the limits how to find what a device cookie must name for an address (the accounts service's
   * deviceAccount: id and password); until then no device cookie is trusted.
   */
  useDeviceAccounts(lookup: (email: string) => Promise<string | undefined>): void;
  /**
   * A password confirmed by a signed-in user (issue 17: e-mail change, password change, deletion),
   * under the same per-account limits: a wrong password (`run` throws INVALID_PASSWORD or
   * INVALID_CREDENTIALS) counts as a failed sign-in of the account and opens the same delays, for every
   * browser (no device cookie applies), so a stolen session cookie makes guessing no cheaper than the
   * sign-in form. Throws RateLimitError (its retryAfterSeconds set) while a delay is open.
   */
  confirmPassword<T>(email: string, run: () => Promise<T>): Promise<T>;
  /** Forgets the account's failure count and open delay (a deleted account: no row keyed by it stays). */
  forgetAccount(email: string): Promise<void>;
  /** The device cookie's name. */
  readonly cookieName: string;
}

/**
 * The per-IP rules of the mail-sending and sign-in endpoints, each with its IPv6 /48 aggregate (issue 31,
 * 7c): rateLimit() counts an IPv6 key under both, so a /64 or /48 of addresses gets no fresh budget per
 * address or per /64. Call sites keep keying by ipKey(request.ip); IPv4 keys count under the first only.
 */
export const IPV6_AGGREGATES: Partial<Record<RateLimitRule, RateLimitRule>> = {
  SIGN_IN_IP: 'SIGN_IN_IP48',
  SIGN_UP_IP: 'SIGN_UP_IP48',
  RESEND_IP: 'RESEND_IP48',
  RESET_REQUEST_IP: 'RESET_REQUEST_IP48',
};

/**
 * The errors that mean "wrong password" and so count as a failure of the account; a wrong second factor
 * (INVALID_SECOND_FACTOR, issue 34) counts the same, so a stolen password buys no more guesses at a code.
 */
const WRONG_PASSWORD = new Set(['INVALID_CREDENTIALS', 'INVALID_PASSWORD', 'INVALID_SECOND_FACTOR']);

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Counts a hit for this rule and key; throws RateLimitError (429, Retry-After set) over the limit.
     * Key IP rules by ipKey(request.ip). `message` words the refusal (it gets the seconds to wait).
     * Without a reply (a service counting on its own), the error's retryAfterSeconds carries the wait.
     */
    rateLimit(
      reply: FastifyReply | null,
      rule: RateLimitRule,
      key: string,
      message?: (seconds: number) => string,
    ): Promise<void>;
    /** One limiter per rule. */
    rateLimiters: Record<RateLimitRule, Limiter>;
    /** Where the limiters count. */
    rateLimitStore: RateLimitStore;
    signInLimits: SignInLimits;
    /**
     * The per-recipient mail cap (MAIL_RECIPIENT): counts one mail to this address (normalised by emailKey)
     * and answers whether it may be sent. Never throws a refusal; always true with RATE_LIMITS=off.
     * The services' mailer calls it for every account mail (withRecipientCap in src/mail/mailer.ts).
     */
    mailRecipientCap(address: string): Promise<boolean>;
  }
}

export default fp(
  async function rateLimitPlugin(app: FastifyInstance, { config }: { config: Config }) {
    const { enabled, rules, redisUrl, signInDelay } = config.rateLimits;
    if (!enabled) {
      app.log.warn(
        'RATE LIMITS ARE OFF (RATE_LIMITS=off): sign-in, password reset and token endpoints are open to brute force. ' +
          'Use this only for load tests and conformance runs.',
      );
    }
    // A failing store is reported at most once a minute; the limiters answer from memory meanwhile.
    let lastReport = 0;
    const store = createRateLimitStore({
      redisUrl: enabled ? redisUrl : undefined,
      database: enabled ? app.database : undefined,
      onError(error) {
        if (Date.now() - lastReport < 60_000) return;
        lastReport = Date.now();
        app.log.error(
          { err: error, rateLimitStore: store.location },
          'rate-limit store failed; each instance counts in its own memory until it answers again',
        );
      },
    });
    // Rules whose points are given back (sign-in) must not be blocked in memory.
    const givesBack = new Set<RateLimitRule>(['SIGN_IN_EMAIL', 'SIGN_IN_DEVICE']);
    const limiters = Object.fromEntries(
      (Object.keys(RATE_LIMIT_RULES) as RateLimitRule[]).map((rule) => [
        rule,
        store.limiter(rule, rules[rule].limit, rules[rule].windowSeconds, {
          blockInMemory: !givesBack.has(rule),
          // Busy rules (BEARER, TOKEN_IP) take their points from a shared store several at a time.
          chunk: givesBack.has(rule) ? 1 : chunkFor(rules[rule].limit),
        }),
      ]),
    ) as Record<RateLimitRule, Limiter>;
    // The open delay of each account: one slot, taken for the length of the delay it opens.
    const delays = store.limiter('SIGN_IN_DELAY', 1, signInDelay.maxSeconds);
    app.decorate('rateLimiters', limiters);
    app.decorate('rateLimitStore', store);
    if (enabled) {
      if (!(await store.ready()))
        app.log.warn({ rateLimitStore: store.location }, 'rate-limit store not reachable yet');
      app.log.info({ rateLimitStore: store.location }, 'rate limits counted in %s', store.backend);
    }
    app.addHook('onClose', () => store.close());

    function refuse(
      reply: FastifyReply | null,
      rule: string,
      seconds: number,
      message?: (seconds: number) => string,
    ): never {
      reply?.header('retry-after', String(seconds));
      (reply?.request.log ?? app.log).warn({ rateLimit: rule }, 'rate limit exceeded');
      throw new RateLimitError(seconds, message?.(seconds));
    }

    /** consume() that answers a refusal with the RateLimiterRes (never throws it). */
    async function consume(
      limiter: Limiter,
      key: string,
      options?: { customDuration: number },
    ): Promise<RateLimiterRes | undefined> {
      try {
        await limiter.consume(key, 1, options);
        return undefined;
      } catch (error) {
        if (error instanceof RateLimiterRes) return error;
        throw error;
      }
    }

    async function rateLimit(
      reply: FastifyReply | null,
      rule: RateLimitRule,
      key: string,
      message?: (seconds: number) => string,
    ) {
      if (!enabled) return;
      const refused = await consume(limiters[rule], key);
      if (refused) refuse(reply, rule, retryAfterSeconds(refused), message);
      // An IPv6 client's /48 as well, for the rules that have an aggregate (a /64 already refused is not
      // counted there: its own rule holds it).
      const aggregate = IPV6_AGGREGATES[rule];
      const block = aggregate && ip48Key(key);
      if (aggregate && block) {
        const blocked = await consume(limiters[aggregate], block);
        if (blocked) refuse(reply, aggregate, retryAfterSeconds(blocked), message);
      }
    }
    app.decorate('rateLimit', rateLimit);
    app.decorate('mailRecipientCap', async (address: string) => {
      if (!enabled) return true;
      const refused = await consume(limiters.MAIL_RECIPIENT, emailKey(address));
      if (refused) app.log.warn({ rateLimit: 'MAIL_RECIPIENT' }, 'rate limit exceeded');
      return !refused;
    });

    const devices = deviceCookie(config);

    /**
     * Reserves a failure of the account up front (given back on success), or refuses while the delay
     * that its past failures opened is running.
     */
    async function reserveAccountFailure(account: string, reply: FastifyReply | null) {
      const failures = await limiters.SIGN_IN_EMAIL.penalty(account);
      const free = rules.SIGN_IN_EMAIL.limit;
      if (failures.consumedPoints >= free) {
        const steps = Math.min(failures.consumedPoints - free, 30);
        const delay = Math.min(signInDelay.maxSeconds, signInDelay.firstSeconds * 2 ** steps);
        const busy = await consume(delays, account, { customDuration: delay });
        if (busy) {
          await limiters.SIGN_IN_EMAIL.reward(account);
          refuse(reply, 'SIGN_IN_EMAIL', retryAfterSeconds(busy));
        }
      }
      return { limiter: limiters.SIGN_IN_EMAIL, key: account };
    }

    async function confirmPassword<T>(email: string, run: () => Promise<T>): Promise<T> {
      if (!enabled) return run();
      const account = emailKey(email);
      await reserveAccountFailure(account, null);
      try {
        const result = await run();
        await limiters.SIGN_IN_EMAIL.reward(account);
        return result;
      } catch (error) {
        if (!(error instanceof AppError && WRONG_PASSWORD.has(error.code)))
          await limiters.SIGN_IN_EMAIL.reward(account);
        throw error;
      }
    }

    let deviceAccountOf: (email: string) => Promise<string | undefined> = async () => undefined;

    async function attempt<T extends { deviceAccount?: string | undefined }>(
      request: FastifyRequest,
      reply: FastifyReply,
      email: string,
      run: () => Promise<T>,
    ): Promise<T> {
      if (!enabled) return run();
      await rateLimit(reply, 'SIGN_IN_IP', ipKey(request.ip));
      const account = emailKey(email);
      const device = devices.read(request);

      // Whose budget this attempt spends: the trusted browser's, or the account's. Only a browser with a
      // valid cookie costs a look-up of the account (what its cookie must name now).
      let counted: { limiter: Limiter; key: string } | undefined;
      const named = device && (await deviceAccountOf(email));
      const tag = named ? devices.tag(named) : undefined;
      if (device && tag && device.tags.includes(tag)) {
        const key = `${device.nonce}:${tag}`;
        if (!(await consume(limiters.SIGN_IN_DEVICE, key))) counted = { limiter: limiters.SIGN_IN_DEVICE, key };
      }
      counted ??= await reserveAccountFailure(account, reply);

      let result: T;
      try {
        result = await run();
      } catch (error) {
        // Only a wrong e-mail or password is a failure; anything else gives the reservation back.
        if (!(error instanceof AppError && WRONG_PASSWORD.has(error.code))) await counted.limiter.reward(counted.key);
        throw error;
      }
      await counted.limiter.reward(counted.key);
      if (!result.deviceAccount) return result;
      devices.write(request, reply, device, devices.tag(result.deviceAccount));
      return result;
    }
    async function forgetAccount(email: string) {
      const account = emailKey(email);
      await Promise.all([limiters.SIGN_IN_EMAIL.delete(account), delays.delete(account)]);
    }
    const useDeviceAccounts = (lookup: (email: string) => Promise<string | undefined>) => {
      deviceAccountOf = lookup;
    };
    app.decorate('signInLimits', {
      attempt,
      confirmPassword,
      forgetAccount,
      useDeviceAccounts,
      cookieName: devices.name,
    });
  },
  { name: 'rate-limit' },
);
