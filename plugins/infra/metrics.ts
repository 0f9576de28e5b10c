// GET /metrics (METRICS=on): Prometheus's text format of src/metrics.ts, behind
// `Authorization: Bearer <METRICS_TOKEN>` when that is set (compared in constant time). With METRICS=off
// there is no route (/metrics is a 404 like any unknown path), no hook, and the services report to
// no-ops: nothing is counted. Like /healthz it is not an /api route, so not in the OpenAPI document, and
// no rate limit applies to it; it logs at warn only, so a scrape every few seconds adds no log lines.
import cluster from 'node:cluster';
import { createHash, timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { clusterMetricsWorker } from '../../src/cluster-metrics.js';
import type { Config } from '../../src/config.js';
import { createMetrics, type MetricEvents, NO_METRIC_EVENTS, UNMATCHED_ROUTE } from '../../src/metrics.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** What the services report to the metrics (no-ops with METRICS=off). */
    metricEvents: MetricEvents;
  }
}

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
const BEARER = /^Bearer[ ]+([^\s]+)\s*$/i;

export default fp(
  async function metricsPlugin(app: FastifyInstance, { config }: { config: Config }) {
    if (!config.metrics.enabled) {
      app.decorate('metricEvents', NO_METRIC_EVENTS);
      return;
    }
    const metrics = createMetrics({
      // The mailer joins app.services later (services.ts); the figures are read at scrape time.
      mail: () => app.services?.mailer?.stats(),
      database: () => app.database.stats?.(),
    });
    app.decorate('metricEvents', metrics);

    // Every answered request, 404s under one fixed route label. A callback hook: no promise per request.
    app.addHook('onResponse', (request, reply, done) => {
      metrics.requestDone(
        request.method,
        request.routeOptions.url ?? UNMATCHED_ROUTE,
        reply.statusCode,
        reply.elapsedTime / 1000,
      );
      done();
    });

    // WORKERS > 1: whichever worker a scrape reaches answers with every worker's figures added up.
    const siblings = config.workers > 1 && cluster.isWorker ? clusterMetricsWorker(metrics.registry) : undefined;
    if (siblings) app.addHook('onClose', async () => siblings.stop());

    const expected = config.metrics.token === undefined ? undefined : digest(config.metrics.token);
    app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
      reply.header('cache-control', 'no-store');
      if (expected) {
        const header = request.headers.authorization;
        const match = typeof header === 'string' ? BEARER.exec(header) : null;
        // Hashing both sides gives equal-length buffers, so timingSafeEqual never leaks the length.
        if (!match || !timingSafeEqual(digest(match[1]!), expected)) {
          return reply
            .code(401)
            .header(
              'www-authenticate',
              header ? 'Bearer realm="metrics", error="invalid_token"' : 'Bearer realm="metrics"',
            )
            .send({
              error: 'UNAUTHORIZED',
              message: header ? 'The metrics token is not valid' : 'Send Authorization: Bearer <METRICS_TOKEN>',
            });
        }
      }
      const text = siblings ? await siblings.text() : await metrics.registry.metrics();
      return reply.header('content-type', metrics.registry.contentType).send(text);
    });
  },
  { name: 'metrics', dependencies: ['db'] },
);
