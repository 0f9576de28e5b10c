// Errors that mean "the database cannot be reached right now" (PostgreSQL stopped, restarting, failing
// over, unreachable, or too slow to answer within the statement timeout), as opposed to a bug. Every
// error handler answers them with 503 and a Retry-After in its own namespace's shape
// (plugins/infra/error-handlers.ts), never with a 500; the pool reconnects by itself once the server
// answers again.

/** What a 503 for an unavailable database tells clients to wait before trying again, in seconds. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

// Node socket errors on the way to the server.
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// SQLSTATE: admin_shutdown, crash_shutdown, cannot_connect_now (starting up or shutting down),
// query_canceled (the statement timeout), too_many_connections. Class 08 (connection exceptions) below.
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '53300']);
// pg's own messages for a connection that died or never came (they carry no code).
const MESSAGES = new RegExp(
  [
    'Connection terminated',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Client has encountered a connection error',
    'Connection is closed',
  ].join('|'),
  'i',
);

/** True for a database connectivity failure, looked for through `cause` and AggregateError. */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; statusCode?: unknown };
  // Fastify's own client errors (an aborted upload is ECONNRESET too) keep their 4xx.
  if (typeof e.statusCode === 'number' && e.statusCode < 500) return false;
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || SQLSTATES.has(e.code) || /^08/.test(e.code))) {
    return true;
  }
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}

/** What the log may say about it: the code and the message (no query, no parameters, no URL). */
export function describeUnavailable(error: unknown): { code?: string; message: string } {
  const e = error as { code?: unknown; message?: unknown };
  return {
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    message: typeof e.message === 'string' ? e.message.slice(0, 200) : String(error).slice(0, 200),
  };
}
