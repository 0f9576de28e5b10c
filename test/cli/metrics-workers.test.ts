// METRICS=on with WORKERS=2 (issue 16, part 6): a scrape reaches one worker, yet every answer shows both
// workers' figures added up (src/cluster-metrics.ts), so Prometheus sees one server, not whichever process
// the primary's round robin picked.
import t from 'tap';
import { cliContext, startServe, usingPostgres } from './fixtures/run-cli.js';

t.setTimeout(300_000);
const SECRET_KEY = 'cli-test-secret-key-0123456789abcdefghij';

function listeningPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    try {
      const entry = JSON.parse(line) as { msg?: string; pid?: number };
      if (entry.msg?.includes('identity provider listening') && entry.pid) pids.add(entry.pid);
    } catch {
      // not a log line
    }
  }
  return pids;
}

const sample = (text: string, series: string) =>
  Number(
    text
      .split('\n')
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1),
  );

t.test(
  'WORKERS=2: every scrape answers with both workers added up',
  { timeout: 200_000, skip: usingPostgres ? false : 'needs PostgreSQL (DATABASE_URL); CI runs it there' },
  async (t) => {
    const cli = await cliContext(t);
    const server = await startServe(t, {
      ...cli.env,
      WORKERS: '2',
      METRICS: 'on',
      DATABASE_POOL_SIZE: '3',
      LOG_LEVEL: 'info',
      PORT: '0',
      SECRET_KEY,
    });
    const end = Date.now() + 60_000;
    while (listeningPids(server.output()).size < 2) {
      if (Date.now() > end) throw new Error(`the workers did not start:\n${server.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // New connections each time, so that the round robin spreads them over both workers.
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${server.url}/healthz`, { headers: { connection: 'close' } });
      t.equal(res.status, 200);
    }
    const healthz = 'idp_http_request_duration_seconds_count{method="GET",route="/healthz",status_code="200"}';
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${server.url}/metrics`, { headers: { connection: 'close' } });
      t.equal(res.status, 200);
      const text = await res.text();
      t.equal(sample(text, healthz), 20, `scrape ${i + 1}: all 20 requests, whichever worker answered`);
      t.equal(sample(text, 'idp_db_pool_connections{state="max"}'), 6, 'both pools of 3');
      t.ok(sample(text, 'nodejs_eventloop_lag_seconds') >= 0, 'the default metrics, aggregated');
    }
    server.child.kill('SIGTERM');
    t.same(await server.exited, { code: 0, signal: null }, 'shuts down cleanly', { output: server.output() });
  },
);
