import { isClusterPrimary, runPrimary, SHUTDOWN_MESSAGE, workerNumber } from '../cluster.js';
import { resolveSecretKey } from '../secret-key.js';
import { noArguments, parse } from './args.js';
import { loadCliConfig } from './context.js';
import type { Io } from './io.js';

export const SERVE_HELP = `Usage: idp serve

Starts the HTTP server on HOST:PORT. Applies pending migrations, generates a development SECRET_KEY
in DATA_DIR if none is set (refused when NODE_ENV=production), and shuts down gracefully on SIGTERM
or SIGINT (bounded by SHUTDOWN_TIMEOUT seconds). WORKERS=N (PostgreSQL only) runs N processes on the
one port, restarting any that dies.`;

export async function serveCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help) return io.out(SERVE_HELP);
  noArguments(positionals);
  let config = loadCliConfig(io);
  // With WORKERS > 1 the primary resolves (and in development generates) the key before forking: one
  // key file, the same key in every worker.
  config = resolveSecretKey(config, { warn: (m) => (workerNumber() ?? 1) === 1 && io.err(`WARNING: ${m}`) });
  if (isClusterPrimary(config)) return runPrimary(config, io);
  // Loaded here only: the other commands start without the HTTP server's modules.
  const { handleSignals, startServer } = await import('../server.js');
  const worker = workerNumber();
  const server = await startServer(config, { console: io.out, announceFirstAdmin: (worker ?? 1) === 1 });
  handleSignals(server);
  if (worker !== undefined) {
    process.on('message', (message) => {
      if (message === SHUTDOWN_MESSAGE) server.shutdown('asked by the primary process').then(() => process.exit(0));
    });
  }
}
