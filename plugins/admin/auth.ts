// Admin API authentication: `Authorization: Bearer <ADMIN_API_TOKEN>`, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/** Whether a request carries `Authorization: Bearer <ADMIN_API_TOKEN>` (never, when no token is set). */
export function createAdminTokenCheck(adminApiToken: string | undefined) {
  const expected = adminApiToken === undefined ? undefined : digest(adminApiToken);
  return function carriesAdminToken(request: FastifyRequest): boolean {
    if (!expected) return false;
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer[ ]+([^\s]+)\s*$/i.exec(header) : null;
    // Hashing both sides gives equal-length buffers, so timingSafeEqual never leaks the length.
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}

export function createAdminAuthHook(adminApiToken: string) {
  const carriesAdminToken = createAdminTokenCheck(adminApiToken);
  return async function adminAuth(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers.authorization;
    if (carriesAdminToken(request)) return;
    reply
      .code(401)
      .header('www-authenticate', header ? 'Bearer realm="admin", error="invalid_token"' : 'Bearer realm="admin"')
      .header('cache-control', 'no-store')
      .send({
        error: 'UNAUTHORIZED',
        message: header ? 'The admin API token is not valid' : 'Send Authorization: Bearer <ADMIN_API_TOKEN>',
      });
    return reply;
  };
}
