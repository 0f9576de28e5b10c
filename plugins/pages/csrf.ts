// Double-submit CSRF tokens for the hosted forms: a random cookie, echoed in a hidden field, compared in
// constant time; a foreign Origin is refused outright.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import '@fastify/cookie';
import type { Config } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';

export function createCsrf(config: Config) {
  const cookieName = config.cookieSecure ? '__Host-idp.csrf' : 'idp.csrf';
  const cookie = { path: '/', httpOnly: true, secure: config.cookieSecure, sameSite: config.cookieSameSite } as const;
  const trustedOrigins = new Set(
    [originOf(config.loginUrl), originOf(config.baseUrl), originOf(config.adminUrl)].filter(Boolean) as string[],
  );
  return {
    trustedOrigins,
    token(request: FastifyRequest, reply: FastifyReply): string {
      const existing = request.cookies[cookieName];
      if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
      const token = randomBytes(32).toString('base64url');
      reply.setCookie(cookieName, token, cookie);
      return token;
    },
    check(request: FastifyRequest, field: string | undefined) {
      const origin = request.headers.origin;
      if (origin !== undefined && origin !== 'null' && !trustedOrigins.has(origin)) {
        throw new AppError(403, 'CSRF', 'This form was sent from another site');
      }
      const value = request.cookies[cookieName];
      if (
        !value ||
        !field ||
        value.length !== field.length ||
        !timingSafeEqual(Buffer.from(value), Buffer.from(field))
      ) {
        throw new AppError(403, 'CSRF', 'This form has expired; go back, reload the page and try again');
      }
    },
  };
}
