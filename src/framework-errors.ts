// The answers Fastify would otherwise write itself, in a shape no spec names ({ error: "Bad Request",
// code: "FST_...", message, statusCode }): a malformed percent-escape in the path (FST_ERR_BAD_URL), a
// path parameter over the router's maxParamLength (FST_ERR_MAX_PARAM_LENGTH), requests that arrive
// while the server drains (return503OnClosing), and requests Node's HTTP parser refuses (clientError:
// a request line and headers over the header size limit, a malformed request, a timeout). Every one
// gets a first-party JSON error here, or, better, goes back to the route so that the route's own
// validation answers.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/**
 * The router's limit for one path parameter. A request line cannot be longer than Node's header limit
 * (--max-http-header-size, 16 KiB by default: 431 before any routing), so at this size the router never
 * refuses a parameter by length on a real connection: each route's schema and handler decide (a long
 * reset link is an invalid token, a long client id is INVALID_CLIENT_ID, a long user id is not found).
 */
export const MAX_PARAM_LENGTH = 16 * 1024;

/**
 * The path with every segment that does not percent-decode (`%ZZ`, a truncated UTF-8 sequence) made
 * literal (`%` → `%25`); the query string is left as it is. Undefined when there is nothing to repair.
 */
export function literalBadEscapes(url: string): string | undefined {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.startsWith('/')) return undefined;
  let changed = false;
  const repaired = path
    .split('/')
    .map((segment) => {
      try {
        decodeURIComponent(segment);
        return segment;
      } catch {
        changed = true;
        return segment.replaceAll('%', '%25');
      }
    })
    .join('/');
  return changed ? repaired + (q === -1 ? '' : url.slice(q)) : undefined;
}

/**
 * Fastify's frameworkErrors option. `isOAuthPath` names the paths whose errors have the RFC 6749 shape (the
 * registration management endpoint, RFC 7592, is the one OAuth route with a path parameter).
 */
export const frameworkErrorsFor =
  (isOAuthPath: (path: string) => boolean) =>
  (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    const url = request.raw.url ?? '';
    const path = url.split('?', 1)[0]!;
    if (error.code === 'FST_ERR_MAX_PARAM_LENGTH' && isOAuthPath(path)) {
      void reply
        .code(414)
        .header('cache-control', 'no-store')
        .send({ error: 'invalid_request', error_description: 'a parameter is too long' });
      return;
    }
    frameworkErrors(error, request, reply);
  };

/** Fastify's frameworkErrors option for first-party paths. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (error.code === 'FST_ERR_BAD_URL') {
    const repaired = literalBadEscapes(request.raw.url ?? '');
    // Routed again with the bad escapes taken literally: the route finds the parameter invalid itself.
    if (repaired) {
      request.raw.url = repaired;
      request.server.routing(request.raw, reply.raw);
      return;
    }
    void reply
      .code(400)
      .header('cache-control', 'no-store')
      .send({ error: 'BAD_REQUEST', message: 'The request URL is malformed' });
    return;
  }
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    // Unreachable over HTTP at MAX_PARAM_LENGTH (see above); kept so no Fastify body is ever sent.
    void reply
      .code(414)
      .header('cache-control', 'no-store')
      .send({ error: 'URI_TOO_LONG', message: 'The request URL is too long' });
    return;
  }
  request.log.error({ err: error }, 'unexpected routing error');
  void reply
    .code(500)
    .header('cache-control', 'no-store')
    .send({ error: 'INTERNAL_ERROR', message: 'An unexpected error occurred' });
}

/**
 * Instead of Fastify's return503OnClosing body: once close() has begun, a request that still arrives on
 * an open keep-alive connection gets 503 in the first-party shape and `Connection: close`, before any
 * route runs (the database may be closing). Requests already past this point finish normally.
 */
export function serviceUnavailableWhileClosing(app: FastifyInstance): (reply: FastifyReply) => boolean {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  /** True when it answered (the caller's onRequest hook then stops). */
  return (reply) => {
    if (!closing) return false;
    void reply
      .code(503)
      .header('connection', 'close')
      .header('retry-after', '1')
      .header('cache-control', 'no-store')
      .send({ error: 'SERVICE_UNAVAILABLE', message: 'The server is shutting down; try again' });
    return true;
  };
}

/**
 * Fastify's clientErrorHandler option: Node's parser refused the request before it became one (no route,
 * no hooks). Same status codes as Fastify's default, first-party bodies, and the connection is closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'REQUEST_TIMEOUT', 'The request took too long to arrive']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'REQUEST_HEADER_FIELDS_TOO_LARGE', 'The request line and headers are too large']
        : [400, 'BAD_REQUEST', 'The request is malformed'];
  const body = JSON.stringify({ error: code, message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Cache-Control: no-store\r\nConnection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}
