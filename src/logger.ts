// pino options: secrets never reach the log. Headers are not logged by Fastify's request serializer;
// what could still carry a secret (URLs with codes or tokens, objects we log) is redacted here.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
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

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
const noop = () => {};

/**
 * Fastify's childLoggerFactory: the request's logger is made only when something is logged at an
 * enabled level. pino serializes (and redacts) a child's bindings when the child is made, which on a
 * route that logs nothing (every request at LOG_LEVEL=warn) was a tenth of the request's CPU.
 */
export function lazyChildLogger(
  logger: FastifyBaseLogger,
  bindings: Record<string, unknown>,
  options: { level?: string },
): FastifyBaseLogger {
  let child: FastifyBaseLogger | undefined;
  const real = () => (child ??= logger.child(bindings, options));
  const values = (logger as unknown as { levels: { values: Record<string, number> } }).levels.values;
  const threshold = values[options.level ?? logger.level] ?? 0;
  const lazy: Record<string, unknown> = {
    child: (b: Record<string, unknown>, o?: object) => real().child(b, o),
    silent: noop,
  };
  for (const level of LEVELS) {
    lazy[level] =
      (values[level] ?? 0) >= threshold
        ? (...args: unknown[]) => (real()[level] as (...a: unknown[]) => void)(...args)
        : noop;
  }
  Object.defineProperty(lazy, 'level', {
    get: () => child?.level ?? options.level ?? logger.level,
    set: (value: string) => {
      const made = real();
      made.level = value;
      // From now on every call goes to the child, which applies its new level itself.
      for (const level of LEVELS)
        lazy[level] = (...args: unknown[]) => (made[level] as (...a: unknown[]) => void)(...args);
    },
  });
  return lazy as unknown as FastifyBaseLogger;
}
