// Rate limits of the abuse-prone endpoints (decisions.md, Limits): app.rateLimit(reply, rule, key)
// counts one hit and, over the limit, answers 429 with Retry-After through the route's own error
// format (AppError JSON, the OAuth body, or an HTML page). RATE_LIMITS=off turns every rule off.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Config, RateLimitRule } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { RateLimiter } from '../../src/rate-limit.js';

export class RateLimitError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'TOO_MANY_REQUESTS', `Too many requests; try again in ${retryAfterSeconds} second${retryAfterSeconds === 1 ? '' : 's'}`);
    this.name = 'RateLimitError';
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts a hit for this rule and key; throws RateLimitError (429, Retry-After set) over the limit. */
    rateLimit(reply: FastifyReply, rule: RateLimitRule, key: string): void;
    rateLimiter: RateLimiter;
  }
}

export default fp(
  async function rateLimitPlugin(app: FastifyInstance, { config }: { config: Config }) {
    const limiter = new RateLimiter();
    const { enabled, rules } = config.rateLimits;
    if (!enabled) {
      app.log.warn('RATE LIMITS ARE OFF (RATE_LIMITS=off): sign-in, password reset and token endpoints are open to brute force. Use this only for load tests and conformance runs.');
    }
    app.decorate('rateLimiter', limiter);
    app.decorate('rateLimit', (reply: FastifyReply, rule: RateLimitRule, key: string) => {
      if (!enabled) return;
      const { limit, windowSeconds } = rules[rule];
      const result = limiter.hit(`${rule}\u0000${key}`, limit, windowSeconds);
      if (result.allowed) return;
      reply.header('retry-after', String(result.retryAfterSeconds));
      reply.request.log.warn({ rateLimit: rule }, 'rate limit exceeded');
      throw new RateLimitError(result.retryAfterSeconds);
    });
    app.addHook('onClose', async () => limiter.close());
  },
  { name: 'rate-limit' },
);
