// Prometheus metrics at /metrics (METRICS=on, METRICS_TOKEN) and W3C trace ids (issue 16, part 6): off is
// a 404; on, the counters move with real events (a code flow and a refresh, a refresh and a code presented
// twice, failed sign-ins, a rate-limit refusal, mail sent, retried and given up); the token is asked for
// and compared; a valid traceparent is honoured and its trace id is in every log line of the request, an
// invalid one is ignored.
import { createServer } from 'node:net';
import t from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp, testConfig } from '../helpers/app.js';
import { PRODUCTION_PASSWORD_HASH_ENV } from '../helpers/password-cost.js';
import { obtainCode, signInWithInject, tokenRequest } from '../helpers/flow.js';
import { NO_METRIC_EVENTS } from '../../src/metrics.js';

const METRICS_TOKEN = 'metrics-token-0123456789abcdefghijklmnop';

/** The samples of a scrape: `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

async function scrape(app: FastifyInstance, headers: Record<string, string> = {}) {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers });
  if (res.statusCode !== 200) throw new Error(`scrape: ${res.statusCode} ${res.body}`);
  return { res, samples: samples(res.body) };
}

const json = (app: FastifyInstance, url: string, body: unknown, remoteAddress = '127.0.0.1') =>
  app.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });

t.test('METRICS=off: /metrics is an unknown route, the services report to no-ops', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(res.statusCode, 404);
  t.same(res.json(), { error: 'NOT_FOUND', message: 'No route GET /metrics' });
  t.equal(app.metricEvents, NO_METRIC_EVENTS);
  const spec = await app.inject({ method: 'GET', url: '/api/openapi.json' });
  t.notOk(Object.keys(spec.json().paths).some((p) => p.includes('metrics')));
});

t.test('METRICS=on: counters move with the events they count', async (t) => {
  const { app, database } = await buildTestApp(t, {
    env: { METRICS: 'on', RATE_LIMITS: 'on', RATE_LIMIT_SIGN_IN_IP: '3/60' },
  });
  const redirectUri = 'https://rp.example.com/cb';
  const client = await app.services.applications.create(
    { clientName: 'Metrics RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'offline_access'] },
    { actor: 'test' },
  );
  const email = 'mia@example.com';
  const password = 'mia-password-1';
  await app.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });
  const flow = { clientId: client.clientId, redirectUri, email, password };

  const before = (await scrape(app)).samples;
  t.equal(before.get('idp_sign_in_failures_total'), 0, 'counters start at zero');
  t.equal(before.get('idp_mail_sent_total'), 0);
  t.ok(before.has('nodejs_eventloop_lag_seconds'), 'event-loop lag');
  t.ok(before.has('nodejs_eventloop_lag_p99_seconds'));
  t.ok(before.has('process_cpu_seconds_total'), 'the default process metrics');
  if (database.engine === 'postgres') {
    t.equal(before.get('idp_db_pool_connections{state="max"}'), 5, 'the pool size of the test database');
    t.ok(before.get('idp_db_pool_connections{state="total"}')! >= 1, 'open connections');
    t.ok(before.has('idp_db_pool_connections{state="idle"}'));
    t.equal(before.get('idp_db_pool_waiting'), 0);
    t.notOk(before.has('idp_db_pending_statements'));
  } else {
    t.equal(before.get('idp_db_pending_statements'), 0, 'PGlite: its statement queue');
    t.notOk(before.has('idp_db_pool_waiting'), 'PGlite has no pool');
  }

  // A code flow, a refresh, then both presented again.
  const { code, verifier } = await obtainCode(app, flow);
  const exchange = {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.clientId,
    redirect_uri: redirectUri,
  };
  const first = await tokenRequest(app, exchange);
  t.equal(first.statusCode, 200);
  const refreshToken = first.json().refresh_token as string;
  const refresh = { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.clientId };
  t.equal((await tokenRequest(app, refresh)).statusCode, 200);
  let m = (await scrape(app)).samples;
  t.equal(m.get('idp_tokens_issued_total{grant_type="authorization_code"}'), 1, 'one code exchange');
  t.equal(m.get('idp_tokens_issued_total{grant_type="refresh_token"}'), 1, 'one refresh');
  t.notOk(m.has('idp_token_reuse_detected_total{grant_type="refresh_token"}'), 'no reuse yet');

  t.equal((await tokenRequest(app, refresh)).statusCode, 400, 'the used refresh token again');
  t.equal((await tokenRequest(app, exchange)).statusCode, 400, 'the used code again');
  t.equal((await tokenRequest(app, { ...refresh, refresh_token: 'never-issued' })).statusCode, 400);
  m = (await scrape(app)).samples;
  t.equal(m.get('idp_token_reuse_detected_total{grant_type="refresh_token"}'), 1, 'refresh reuse detected');
  t.equal(m.get('idp_token_reuse_detected_total{grant_type="authorization_code"}'), 1, 'code replay detected');
  t.equal(m.get('idp_tokens_issued_total{grant_type="refresh_token"}'), 1, 'refusals issue nothing');

  // Failed sign-ins on the JSON endpoint and the hosted page; the fourth from one address is refused.
  const ip = '10.1.2.3';
  for (let i = 0; i < 2; i++) {
    t.equal((await json(app, '/api/auth/sign-in', { email, password: 'wrong-password' }, ip)).statusCode, 401);
  }
  const page = await signInWithInject(app, email, 'wrong-password');
  t.equal(page.res.statusCode, 401, 'the hosted page says no');
  const unknown = await json(app, '/api/auth/sign-in', { email: 'nobody@example.com', password: 'x-password' }, ip);
  t.equal(unknown.statusCode, 401, 'an unknown address fails the same way');
  const refused = await json(app, '/api/auth/sign-in', { email, password }, ip);
  t.equal(refused.statusCode, 429);
  m = (await scrape(app)).samples;
  t.equal(m.get('idp_sign_in_failures_total'), 4, 'four wrong credentials; the refusal checked no password');
  t.equal(m.get('idp_rate_limit_rejections_total{route="/api/auth/sign-in"}'), 1, 'one rate-limit refusal');

  // A sign-up sends its verification mail (to the outbox: no SMTP_URL).
  const signUp = await json(app, '/api/auth/sign-up', { email: 'new@example.com', password: 'new-password-1' });
  t.equal(signUp.statusCode, 201, signUp.body);
  await app.services.mailer.drain();
  m = (await scrape(app)).samples;
  t.equal(m.get('idp_mail_sent_total'), 1, 'the verification mail');
  t.equal(m.get('idp_mail_retries_total'), 0);
  t.equal(m.get('idp_mail_queue_pending'), 0);

  // Requests by route pattern, never by URL; unknown paths under one label.
  await app.inject({ method: 'GET', url: '/healthz' });
  await app.inject({ method: 'GET', url: '/api/auth/authorization-requests/secret-looking-id' });
  await app.inject({ method: 'GET', url: '/no/such/page-1' });
  await app.inject({ method: 'GET', url: '/no/such/page-2' });
  const last = await scrape(app);
  m = last.samples;
  t.equal(last.res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  t.equal(last.res.headers['cache-control'], 'no-store');
  t.equal(m.get('idp_http_request_duration_seconds_count{method="GET",route="/healthz",status_code="200"}'), 1);
  t.ok(
    m.get('idp_http_request_duration_seconds_sum{method="GET",route="/healthz",status_code="200"}')! > 0,
    'a latency was observed',
  );
  t.equal(
    m.get(
      'idp_http_request_duration_seconds_bucket{le="+Inf",method="POST",' +
        'route="/api/auth/oauth2/token",status_code="200"}',
    ),
    2,
    'the token endpoint answered twice with 200',
  );
  t.equal(m.get('idp_http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}'), 2);
  t.ok(
    [...m.keys()].some((k) => k.includes('route="/api/auth/authorization-requests/:id"')),
    'the pattern of a route with a parameter',
  );
  for (const secret of ['secret-looking-id', 'page-1', email, 'new@example.com', client.clientId, refreshToken]) {
    t.notOk(last.res.body.includes(secret), `nothing of the request in the metrics: ${secret.slice(0, 12)}`);
  }
});

t.test('mail retries, give-ups and the queue', async (t) => {
  // A port nothing listens on: every attempt is refused at once.
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
  const { app } = await buildTestApp(t, {
    env: { METRICS: 'on', SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_RETRY_DELAYS: '0.5' },
  });
  const signUp = await json(app, '/api/auth/sign-up', { email: 'queued@example.com', password: 'queued-password-1' });
  t.equal(signUp.statusCode, 201);
  let m = (await scrape(app)).samples;
  t.equal(m.get('idp_mail_queue_pending'), 1, 'waiting for its retry');
  await app.services.mailer.drain();
  m = (await scrape(app)).samples;
  t.equal(m.get('idp_mail_queue_pending'), 0);
  t.equal(m.get('idp_mail_retries_total'), 1, 'one retry');
  t.equal(m.get('idp_mail_failed_total'), 1, 'then given up');
  t.equal(m.get('idp_mail_sent_total'), 0);
});

t.test('METRICS_TOKEN: asked for, compared, accepted', async (t) => {
  const { app } = await buildTestApp(t, { env: { METRICS: 'on', METRICS_TOKEN } });
  const missing = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(missing.statusCode, 401);
  t.equal(missing.headers['www-authenticate'], 'Bearer realm="metrics"');
  t.equal(missing.json().error, 'UNAUTHORIZED');
  for (const authorization of [`Bearer ${METRICS_TOKEN}x`, 'Bearer short', `Basic ${METRICS_TOKEN}`, 'Bearer']) {
    const wrong = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization } });
    t.equal(wrong.statusCode, 401, authorization.slice(0, 12));
    t.equal(wrong.headers['www-authenticate'], 'Bearer realm="metrics", error="invalid_token"');
    t.notOk(wrong.body.includes(METRICS_TOKEN));
  }
  const { res } = await scrape(app, { authorization: `Bearer ${METRICS_TOKEN}` });
  t.match(res.body, /# TYPE idp_http_request_duration_seconds histogram/);
  t.match(res.body, /idp_http_request_duration_seconds_count\{method="GET",route="\/metrics",status_code="401"\} 5/);
});

t.test('METRICS_TOKEN is a secret of at least 32 characters and never echoed', async (t) => {
  t.throws(() => testConfig({ METRICS_TOKEN: 'too-short-token' }), /METRICS_TOKEN: expected at least 32 characters/);
  try {
    testConfig({ METRICS_TOKEN: 'too-short-token' });
  } catch (error) {
    t.notOk(String(error).includes('too-short-token'));
  }
  t.equal(testConfig({ METRICS: 'true' }).metrics.enabled, true);
  t.equal(testConfig({ METRICS: 'off' }).metrics.enabled, false);
  t.equal(testConfig().metrics.enabled, false, 'off by default');
});

t.test('in production, METRICS=on needs METRICS_TOKEN: no open counters there (issue 31, item 6)', async (t) => {
  const production = {
    NODE_ENV: 'production',
    BASE_URL: 'https://id.example.com',
    METRICS: 'on',
    ...PRODUCTION_PASSWORD_HASH_ENV,
  };
  t.throws(
    () => testConfig({ ...production, METRICS_TOKEN: undefined }),
    /METRICS_TOKEN: expected a value when METRICS=on and NODE_ENV=production/,
    'refused at start-up',
  );
  const { app } = await buildTestApp(t, { env: { ...production, METRICS_TOKEN } });
  const anonymous = await app.inject({ method: 'GET', url: '/metrics' });
  t.equal(anonymous.statusCode, 401, 'with the token set, an anonymous scrape is refused');
  t.notMatch(anonymous.body, /idp_mail_sent_total/);
  const { samples: m } = await scrape(app, { authorization: `Bearer ${METRICS_TOKEN}` });
  t.equal(m.get('idp_mail_sent_total'), 0, 'and the scraper with the token gets the counters');
});

/** The log lines of one response, found by its request id. */
function linesOf(logs: { lines: string[] }, res: LightMyRequestResponse) {
  return logs.lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === res.headers['x-request-id']);
}

t.test('traceparent: a valid one is honoured, in the answer and every log line of the request', async (t) => {
  const { app, logs } = await buildTestApp(t);
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const given = `00-${traceId}-00f067aa0ba902b7-01`;
  // An unknown route logs its completion at info; a failed sign-in logs more than one line.
  for (const request of [
    { method: 'GET' as const, url: '/nope' },
    {
      method: 'POST' as const,
      url: '/api/auth/sign-in',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email: 'x@example.com', password: 'wrong-password' }),
    },
  ]) {
    const res = await app.inject({ ...request, headers: { ...request.headers, traceparent: given } });
    const answer = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(res.headers.traceparent));
    t.ok(answer, `the answer's traceparent: ${res.headers.traceparent}`);
    t.equal(answer?.[1], traceId, 'the same trace');
    t.not(answer?.[2], '00f067aa0ba902b7', "this server's own span");
    const lines = linesOf(logs, res);
    t.ok(lines.length >= 1, `${request.url}: ${lines.length} log lines`);
    for (const line of lines) t.equal(line.traceId, traceId, `${line.msg}: traceId`);
  }
});

t.test('traceparent: missing or invalid means a new trace, never an error', async (t) => {
  const { app, logs } = await buildTestApp(t, { env: { METRICS: 'on' } });
  const plain = await app.inject({ method: 'GET', url: '/nope' });
  const seen = new Set<string>();
  const invalid = [
    undefined,
    '',
    'garbage',
    `00-${'0'.repeat(32)}-00f067aa0ba902b7-01`, // all-zero trace id
    '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', // all-zero parent id
    'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // version ff
    '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', // another version
    '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', // upper case
    '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01', // short trace id
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
    '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g',
    `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\n{"evil":1}`,
  ];
  for (const traceparent of invalid) {
    const res = await app.inject({
      method: 'GET',
      url: '/nope',
      ...(traceparent !== undefined && { headers: { traceparent } }),
    });
    t.equal(res.statusCode, plain.statusCode, `${JSON.stringify(traceparent)}: answered as without it`);
    const answer = /^00-([0-9a-f]{32})-([0-9a-f]{16})-00$/.exec(String(res.headers.traceparent));
    t.ok(answer, `a new trace: ${res.headers.traceparent}`);
    t.not(answer?.[1], '4bf92f3577b34da6a3ce929d0e0e4736');
    t.not(answer?.[1], '0'.repeat(32));
    seen.add(answer![1]!);
    for (const line of linesOf(logs, res)) t.equal(line.traceId, answer?.[1]);
  }
  t.equal(seen.size, invalid.length, 'each request a trace of its own');
  t.notOk(logs.text().includes('evil'), 'nothing of the header logged');
  const { samples: m } = await scrape(app);
  t.equal(m.get('idp_http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}'), 13);
});
