// pino options: secrets never reach the log. Headers are not logged by Fastify's request serializer;
// what could still carry a secret (URLs with codes or tokens, objects we log) is redacted here.
import type { FastifyRequest } from 'fastify';
import type { LoggerOptions } from 'pino';

const SECRET_FIELDS = [
  'password',
  'newPassword',
  'password_hash',
  'token',
  'code',
  'code_verifier',
  'access_token',
  'refresh_token',
  'id_token',
  'id_token_hint',
  'client_secret',
  'secretKey',
  'authorization',
  'cookie',
];

export const REDACT_PATHS = [
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((f) => `*.${f}`),
  ...SECRET_FIELDS.map((f) => `*.*.${f}`),
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.headers["set-cookie"]',
];

const SECRET_QUERY = new Set(SECRET_FIELDS.map((f) => f.toLowerCase()));

/** Masks secret query values and the token segment of reset links. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  let path = q === -1 ? url : url.slice(0, q);
  path = path.replace(/(\/reset-password\/)[^/?#]+/, '$1[REDACTED]');
  if (q === -1) return path;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = decodeURIComponentSafe(eq === -1 ? pair : pair.slice(0, eq)).toLowerCase();
      return eq !== -1 && SECRET_QUERY.has(name) ? `${pair.slice(0, eq)}=[REDACTED]` : pair;
    });
  return `${path}?${params.join('&')}`;
}

function decodeURIComponentSafe(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
    serializers: {
      // Never the headers: they carry Authorization and cookies.
      req(request: FastifyRequest) {
        return {
          method: request.method,
          url: typeof request.url === 'string' ? redactUrl(request.url) : undefined,
          host: request.host,
          remoteAddress: request.ip,
          userAgent: request.headers?.['user-agent'],
        };
      },
    },
  };
}
