// No answer of this service has a body shape that no spec or RFC names: the errors Fastify and Node
// would write themselves ({ error: "Bad Request", code: "FST_...", message, statusCode }) are answered
// in the first-party shape { error: "CODE", message }, the OAuth shape, or by the route itself.
import t from 'tap';
import { connect } from 'node:net';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { startTestServer } from '../helpers/server.js';

const { app } = await buildTestApp(t);
const FASTIFY_SHAPE = new RegExp(
  '"statusCode"|"code":"FST_|FST_ERR|"error":"(Bad Request|Not Found|Payload Too Large|Unsupported Media Type|' +
    'Service Unavailable|Request Header Fields Too Large|URI Too Long|Internal Server Error)"',
);

/** The raw HTTP answer to `request` written as is on a new connection. */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', (error) =>
      (error as NodeJS.ErrnoException).code === 'ECONNRESET' ? resolve(answer) : reject(error),
    );
    socket.on('close', () => resolve(answer));
    socket.write(request);
  });
}

t.test('path parameters of any length and bad escapes reach the route; unknown paths are NOT_FOUND', async (t) => {
  const requests: Array<[string, string, number, Record<string, string>?]> = [
    ['GET', `/api/public/applications/${'a'.repeat(600)}`, 400],
    ['GET', '/api/public/applications/%ZZ', 400],
    ['GET', `/api/auth/reset-password/${'a'.repeat(600)}`, 302],
    ['GET', '/api/auth/reset-password/%ZZ', 302],
    ['GET', `/api/auth/authorization-requests/${'a'.repeat(600)}`, 400],
    ['GET', '/api/auth/authorization-requests/%ZZ', 404],
    ['GET', `/api/admin/users/${'a'.repeat(600)}`, 400, adminHeaders],
    ['GET', '/api/admin/users/%ZZ', 404, adminHeaders],
    ['GET', `/api/admin/applications/${'a'.repeat(600)}`, 400, adminHeaders],
    ['GET', `/admin/applications/${'a'.repeat(600)}`, 400],
    ['GET', '/admin/users/%ZZ', 303],
    ['GET', '/api/%ZZ/nothing', 404],
    ['GET', `/nothing/${'a'.repeat(20_000)}`, 404],
    ['PUT', '/api/auth/jwks', 404],
    ['GET', '/api/external/nothing', 404],
  ];
  for (const [method, url, status, headers = {}] of requests) {
    const res = await app.inject({ method: method as 'GET', url, headers });
    const label = `${method} ${url.slice(0, 50)}`;
    t.equal(res.statusCode, status, label);
    t.notMatch(res.body, FASTIFY_SHAPE, `${label}: no Fastify body`);
    if (/json/.test(String(res.headers['content-type']))) t.type(res.json().error, 'string', `${label}: { error }`);
  }
});

t.test(
  "bodies Fastify refuses (too large, unknown type, malformed JSON) get the endpoint family's own error shape",
  async (t) => {
    const big = `x=${'a'.repeat(20_000)}`;
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    const cases: Array<[string, Record<string, string>, string, number, RegExp]> = [
      // UserInfo: RFC 6749 §5.2 bodies with the right status, never 500.
      [
        '/api/auth/oauth2/userinfo',
        { ...form, authorization: 'Bearer abc' },
        big,
        413,
        /^\{"error":"invalid_request","error_description":"[^"]+"\}$/,
      ],
      [
        '/api/auth/oauth2/userinfo',
        { 'content-type': 'application/xml', authorization: 'Bearer abc' },
        '<x/>',
        415,
        /^\{"error":"invalid_request","error_description":"[^"]+"\}$/,
      ],
      [
        '/api/auth/oauth2/userinfo',
        { 'content-type': 'application/json', authorization: 'Bearer abc' },
        '{bad',
        400,
        /^\{"error":"invalid_request","error_description":"[^"]+"\}$/,
      ],
      ['/api/auth/oauth2/token', form, big, 400, /^\{"error":"invalid_request","error_description":"[^"]+"\}$/],
      ['/api/auth/oauth2/token', { 'content-type': 'text/plain' }, 'x', 400, /^\{"error":"invalid_request"/],
      // First-party JSON: { error, message }.
      [
        '/api/auth/request-password-reset',
        { 'content-type': 'application/json' },
        JSON.stringify({ x: 'a'.repeat(20_000) }),
        413,
        /^\{"error":"PAYLOAD_TOO_LARGE","message":"[^"]+"\}$/,
      ],
      [
        '/api/auth/request-password-reset',
        { 'content-type': 'application/json' },
        '{bad',
        400,
        /^\{"error":"INVALID_JSON","message":/,
      ],
      [
        '/api/admin/users',
        { ...adminHeaders, 'content-type': 'text/plain' },
        'x',
        400,
        /^\{"error":"VALIDATION_ERROR"/,
      ],
      // Hosted pages: an HTML page with the refused body's own status, never a 500.
      ['/login/sign-in', form, big, 413, /<!doctype html>/i],
      ['/login/sign-up', form, big, 413, /<!doctype html>/i],
      ['/admin/applications', form, big, 413, /<!doctype html>/i],
    ];
    for (const [url, headers, payload, status, body] of cases) {
      const res = await app.inject({ method: 'POST', url, headers, payload });
      t.equal(res.statusCode, status, `${url} (${headers['content-type']}, ${payload.length} bytes)`);
      t.match(res.body, body, url);
      t.notMatch(res.body, FASTIFY_SHAPE, `${url}: no Fastify body`);
    }
  },
);

t.test('requests Node refuses before routing (headers too large, malformed) get first-party bodies', async (t) => {
  const server = await buildTestApp(t);
  await server.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (server.app.server.address() as { port: number }).port;

  const tooLong = await raw(port, `GET /api/public/applications/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
  t.match(tooLong, /^HTTP\/1\.1 431 /, 'a request line over the header limit: 431');
  t.match(tooLong, /\r\n\r\n\{"error":"REQUEST_HEADER_FIELDS_TOO_LARGE","message":"[^"]+"\}$/);
  t.notMatch(tooLong, FASTIFY_SHAPE);

  const malformed = await raw(port, 'GET / HTTP/1.1\r\nHost: x\r\nthis is not a header\r\n\r\n');
  t.match(malformed, /^HTTP\/1\.1 400 /, 'a malformed request: 400');
  t.match(malformed, /\r\n\r\n\{"error":"BAD_REQUEST","message":"[^"]+"\}$/);
  t.notMatch(malformed, FASTIFY_SHAPE);

  // Just under the limit, a long parameter is the route's business.
  const long = await raw(
    port,
    `GET /api/public/applications/${'a'.repeat(12_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  );
  t.match(long, /^HTTP\/1\.1 400 /);
  t.match(long, /\r\n\r\n\{"error":"INVALID_CLIENT_ID"\}$/);
});

t.test('a request arriving while the server drains is 503 in the first-party shape', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let entered!: () => void;
  const inside = new Promise<void>((resolve) => (entered = resolve));
  const ctx = await startTestServer(
    t,
    {},
    {
      configure: (app) => {
        app.get('/test/slow', async () => {
          entered();
          await gate;
          return { ok: true };
        });
      },
    },
  );
  const port = Number(new URL(ctx.server.url).port);
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
  const closed = new Promise((resolve) => socket.on('close', resolve));
  socket.on('error', () => {});
  socket.write('GET /test/slow HTTP/1.1\r\nHost: x\r\n\r\n');
  await inside;
  const shutdown = ctx.server.shutdown('test');
  await new Promise((r) => setTimeout(r, 100));
  // The same (busy, so still open) connection carries one more request while the server drains.
  socket.write('GET /api/public/oidc/scopes HTTP/1.1\r\nHost: x\r\n\r\n');
  await new Promise((r) => setTimeout(r, 100));
  release();
  await Promise.race([closed, new Promise((r) => setTimeout(r, 5000))]);
  await shutdown;
  t.match(answer, /^HTTP\/1\.1 200 /, 'the in-flight request finishes');
  t.match(answer, /\{"ok":true\}HTTP\/1\.1 503 /, 'the late one is 503');
  t.match(answer, /\r\nconnection: close\r\n/i);
  t.match(answer, /\{"error":"SERVICE_UNAVAILABLE","message":"[^"]+"\}$/, 'with a first-party body');
  t.notMatch(answer, FASTIFY_SHAPE);
});
