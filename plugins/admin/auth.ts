// Admin API authentication: `Authorization: Bearer <ADMIN_API_TOKEN>`, compared in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

export function createAdminAuthHook(adminApiToken: string) {
  const expected = digest(adminApiToken);
  return async function adminAuth(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer[ ]+([^\s]+)\s*$/i.exec(header) : null;
    // Hashing both sides gives equal-length buffers, so timingSafeEqual never leaks the length.
    const ok = match !== null && timingSafeEqual(digest(match[1]!), expected);
    if (ok) return;
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
