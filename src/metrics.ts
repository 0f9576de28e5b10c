// Prometheus metrics (METRICS=on; plugins/infra/metrics.ts serves them at /metrics). One prom-client
// Registry per app, never the library's global one: tests build many apps in one process. Counters move
// where their event happens: a finished request (the plugin's onResponse hook), a token response of a
// grant and a detected reuse (src/services/grants.ts, once the revocation committed), a failed sign-in
// (src/services/accounts.ts). The mail and database figures are read when Prometheus scrapes, from the
// mailer's own counts and the database handle. With METRICS=off the services get NO_METRIC_EVENTS.
//
// No label carries user data or a secret: the route is Fastify's pattern (never the URL), the grant
// type one of the token endpoint's, the status a number.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DatabaseStats } from '../db/create-db.js';
import type { MailStats } from './mail/mailer.js';

/** What the services report (a no-op when metrics are off). */
export interface MetricEvents {
  /** A grant answered with tokens (the token endpoint or the first-party cookie token endpoint). */
  tokensIssued(grantType: string): void;
  /** A used refresh token or authorization code came back and its grant was revoked. */
  reuseDetected(grantType: 'refresh_token' | 'authorization_code'): void;
  /** A sign-in with a wrong e-mail address or password. */
  signInFailed(): void;
}

export const NO_METRIC_EVENTS: MetricEvents = {
  tokensIssued() {},
  reuseDetected() {},
  signInFailed() {},
};

/** Where the figures read at scrape time come from. */
export interface MetricSources {
  /** The mailer's counts (undefined until the sign-in services are built). */
  mail(): MailStats | undefined;
  /** The database's pool or queue (undefined when the handle cannot tell). */
  database(): DatabaseStats | undefined;
}

export interface Metrics extends MetricEvents {
  readonly registry: Registry;
  /** One answered request: `route` is the route's pattern (UNMATCHED_ROUTE when no route matched). */
  requestDone(method: string, route: string, statusCode: number, seconds: number): void;
}

/** The route label of requests no route matched (404s), so that made-up URLs never become labels. */
export const UNMATCHED_ROUTE = 'unmatched';

// Seconds: sign-in (a password hash) takes ~0.1 s, most routes a few milliseconds.
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  // Process and Node.js figures, event-loop lag included (nodejs_eventloop_lag_seconds and its percentiles).
  collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const requests = new Histogram({
    name: 'idp_http_request_duration_seconds',
    help: 'Time to answer a request, by method, route pattern and status (its _count is the request count)',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const rateLimited = new Counter({
    name: 'idp_rate_limit_rejections_total',
    help: 'Requests refused by a rate limit (429), by route pattern',
    labelNames: ['route'] as const,
    registers,
  });
  const issued = new Counter({
    name: 'idp_tokens_issued_total',
    help: 'Token responses, by grant type',
    labelNames: ['grant_type'] as const,
    registers,
  });
  const reused = new Counter({
    name: 'idp_token_reuse_detected_total',
    help: 'Used refresh tokens or authorization codes presented again (their grant was revoked), by grant type',
    labelNames: ['grant_type'] as const,
    registers,
  });
  const signInFailures = new Counter({
    name: 'idp_sign_in_failures_total',
    help: 'Sign-ins refused for a wrong e-mail address or password',
    registers,
  });

  // The mailer counts for /readyz already; these report its counts at scrape time.
  const mailCount = (name: string, help: string, pick: (stats: MailStats) => number) =>
    new Counter({
      name,
      help,
      registers,
      collect() {
        const stats = sources.mail();
        if (!stats) return;
        this.reset();
        this.inc(pick(stats));
      },
    });
  mailCount('idp_mail_sent_total', 'Mails sent (or written to the outbox without SMTP)', (s) => s.sent);
  mailCount('idp_mail_retries_total', 'Failed mail attempts that were tried again', (s) => s.retried);
  mailCount('idp_mail_failed_total', 'Mails given up after their last retry', (s) => s.failed);
  new Gauge({
    name: 'idp_mail_queue_pending',
    help: 'Mails handed over and not yet sent or given up (waiting for a retry included)',
    registers,
    collect() {
      this.set(sources.mail()?.pending ?? 0);
    },
  });

  // The pool's figures on PostgreSQL; the embedded database has no pool, only its statement queue.
  const engine = sources.database()?.engine;
  if (engine === 'postgres') {
    const pool = (state: 'total' | 'idle' | 'waiting' | 'max') => {
      const stats = sources.database();
      return stats?.engine === 'postgres' ? stats[state] : 0;
    };
    new Gauge({
      name: 'idp_db_pool_connections',
      help: 'PostgreSQL pool connections: open (total), idle, and the most it opens (max)',
      labelNames: ['state'] as const,
      registers,
      collect() {
        for (const state of ['total', 'idle', 'max'] as const) this.set({ state }, pool(state));
      },
    });
    new Gauge({
      name: 'idp_db_pool_waiting',
      help: 'Queries waiting for a free PostgreSQL pool connection',
      registers,
      collect() {
        this.set(pool('waiting'));
      },
    });
  } else if (engine === 'pglite') {
    new Gauge({
      name: 'idp_db_pending_statements',
      help: 'Embedded database (PGlite, no pool): statements sent to its thread and not answered yet',
      registers,
      collect() {
        const stats = sources.database();
        this.set(stats?.engine === 'pglite' ? stats.pending : 0);
      },
    });
  }

  return {
    registry,
    requestDone(method, route, statusCode, seconds) {
      requests.observe({ method, route, status_code: statusCode }, seconds);
      if (statusCode === 429) rateLimited.inc({ route });
    },
    tokensIssued: (grantType) => issued.inc({ grant_type: grantType }),
    reuseDetected: (grantType) => reused.inc({ grant_type: grantType }),
    signInFailed: () => signInFailures.inc(),
  };
}
