import { resolveSecretKey } from '../secret-key.js';
import { noArguments, parse } from './args.js';
import { loadCliConfig } from './context.js';
import type { Io } from './io.js';

export const SERVE_HELP = `Usage: idp serve

Starts the HTTP server on HOST:PORT. Applies pending migrations, generates a development SECRET_KEY
in DATA_DIR if none is set (refused when NODE_ENV=production), and shuts down gracefully on SIGTERM
or SIGINT (bounded by SHUTDOWN_TIMEOUT seconds).`;

export async function serveCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help) return io.out(SERVE_HELP);
  noArguments(positionals);
  let config = loadCliConfig(io);
  config = resolveSecretKey(config, { warn: (m) => io.err(`WARNING: ${m}`) });
  // Loaded here only: the other commands start without the HTTP server's modules.
  const { handleSignals, startServer } = await import('../server.js');
  const server = await startServer(config, { console: io.out });
  handleSignals(server);
}
