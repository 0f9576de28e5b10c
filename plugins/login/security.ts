// Headers of every hosted page: no caching, no framing, a CSP without inline scripts.
import type { FastifyReply } from 'fastify';

export const PAGE_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' https: data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

export function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('content-security-policy', PAGE_CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}
