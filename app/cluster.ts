// WORKERS=N: N server processes on one port (node:cluster, round-robin by the primary), so a machine's
// cores all serve. Only on PostgreSQL: every instance shares the database, and what instances must agree
// on travels through it (LISTEN/NOTIFY for the caches). The embedded database belongs to one process.
//
// The primary runs the migrations once, forks the workers and restarts one that dies (giving up when
// workers keep dying at start), and on SIGTERM/SIGINT asks each worker to shut down gracefully and exits
// when all have. Only worker 1 announces the first-admin setup link.
import cluster, { type Worker } from 'node:cluster';
import { relayClusterMetrics } from '../src/cluster-metrics.js';
import type { Config } from '../src/config.js';
import { type DatabaseHandle, migrateToLatest, openConfiguredDatabase } from '../src/database.js';

export interface ClusterIo {
  out(line: string): void;
  err(line: string): void;
}

/** What the primary sends a worker to make it shut down gracefully. */
export const SHUTDOWN_MESSAGE = 'idp:shutdown';

/** The worker's number (1..N) when this process is a cluster worker, else undefined. */
export function workerNumber(env: Record<string, string | undefined>): number | undefined {
  if (!cluster.isWorker) return undefined;
  const n = Number(env.IDP_WORKER_NUMBER);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

/** True in the primary of a WORKERS > 1 server (the caller then runs runPrimary instead of a server). */
export function isClusterPrimary(config: Config): boolean {
  return config.workers > 1 && cluster.isPrimary;
}

/** beforeFork: runs once on the migrated database before any worker starts (SEED_FILE). */
export async function runPrimary(
  config: Config,
  io: ClusterIo,
  beforeFork?: (db: DatabaseHandle['db']) => Promise<void>,
): Promise<void> {
  if (!config.databaseUrl) {
    throw new Error(
      `WORKERS=${config.workers} needs DATABASE_URL: the embedded database can be opened by one process only. ` +
        'Set DATABASE_URL to a PostgreSQL database, or WORKERS=1.',
    );
  }
  // Once, before any worker starts: N workers migrating at once would only wait on each other's lock.
  const database = await openConfiguredDatabase(config, 'server');
  try {
    await migrateToLatest(database.db);
    await beforeFork?.(database.db);
  } finally {
    await database.close();
  }

  let stopping = false;
  const quickDeaths: number[] = [];
  const numbers = new Map<Worker, number>();
  // METRICS=on: a scrape answered by one worker shows every worker's figures (src/cluster-metrics.ts).
  const relay = config.metrics.enabled ? relayClusterMetrics(() => numbers.keys()) : undefined;
  const fork = (n: number) => {
    const worker = cluster.fork({ IDP_WORKER_NUMBER: String(n) });
    numbers.set(worker, n);
    if (relay) worker.on('message', (message) => relay(worker, message));
    const started = Date.now();
    worker.on('exit', (code, signal) => {
      numbers.delete(worker);
      if (stopping) {
        if (numbers.size === 0) process.exit(process.exitCode ?? 0);
        return;
      }
      io.err(`worker ${n} (pid ${worker.process.pid}) exited (code ${code}, signal ${signal}); starting another`);
      if (Date.now() - started < 10_000) quickDeaths.push(Date.now());
      while (quickDeaths.length && Date.now() - quickDeaths[0]! > 60_000) quickDeaths.shift();
      if (quickDeaths.length >= config.workers + 2) {
        io.err('workers keep dying at start; giving up (see their output above)');
        stopping = true;
        process.exitCode = 1;
        for (const other of numbers.keys()) other.send(SHUTDOWN_MESSAGE);
        if (numbers.size === 0) process.exit(1);
        return;
      }
      setTimeout(() => fork(n), 1000).unref();
    });
  };
  for (let n = 1; n <= config.workers; n++) fork(n);
  io.out(`started ${config.workers} worker processes (WORKERS=${config.workers}) on port ${config.port}`);

  let signals = 0;
  const onSignal = () => {
    signals++;
    if (signals > 1) process.exit(1);
    stopping = true;
    // A message, not a signal: Ctrl-C in a terminal has already sent SIGINT to every worker, and a
    // second signal would make a worker skip its graceful shutdown.
    for (const worker of numbers.keys()) worker.send(SHUTDOWN_MESSAGE);
    if (numbers.size === 0) process.exit(0);
    // Each worker bounds its own shutdown by SHUTDOWN_TIMEOUT; the primary waits a little longer.
    setTimeout(() => process.exit(1), (config.shutdownTimeoutSeconds + 5) * 1000).unref();
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
