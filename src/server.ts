// startServer: build, listen, and shut down gracefully on SIGTERM/SIGINT within SHUTDOWN_TIMEOUT.
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { buildApp, type BuildOptions } from './app.js';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  /** Stop accepting, finish in-flight requests, close the database; resolves when done. */
  shutdown(reason: string): Promise<void>;
}

export interface ServerOptions extends BuildOptions {
  /** The terminal (stdout by default): the development setup link is printed here, never logged. */
  console?: (line: string) => void;
  /** Whether to announce a missing first admin (one worker of several does; default true). */
  announceFirstAdmin?: boolean;
}

/** What an operator runs to create the first admin; no token in it, so it may be logged. */
export const FIRST_ADMIN_HELP =
  'create it with: idp users create --admin --email EMAIL --password-stdin, ' +
  'or print a one-time setup link on your terminal with: idp admin setup-link ' +
  '(with the embedded database, run these while the server is stopped), ' +
  'or create a user with role "admin" through the admin API (ADMIN_API_TOKEN)';

export async function startServer(config: Config, options: ServerOptions = {}): Promise<RunningServer> {
  const started = performance.now();
  const {
    console: print = (line: string) => void process.stdout.write(`${line}\n`),
    announceFirstAdmin: announce = true,
    ...buildOptions
  } = options;
  const app = await buildApp(config, buildOptions);
  let address: string;
  try {
    // Before listening: once the server answers (and logs "listening"), the caller installs its signal
    // handlers at once, with no database round trip in between.
    if (announce)
      await announceFirstAdmin(app, config, print).catch((error: unknown) =>
        app.log.error({ err: error }, 'could not check for an admin user'),
      );
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    throw error;
  }
  app.log.info(
    { address, issuer: config.issuer, startupMs: Math.round(performance.now() - started) },
    `identity provider listening on ${address} (issuer ${config.issuer})`,
  );

  let closing: Promise<void> | undefined;
  function shutdown(reason: string): Promise<void> {
    closing ??= (async () => {
      app.log.info({ reason }, 'shutting down: no new connections; finishing in-flight requests');
      const timer = setTimeout(() => {
        app.log.error({ timeoutSeconds: config.shutdownTimeoutSeconds }, 'shutdown timed out; exiting now');
        process.exit(1);
      }, config.shutdownTimeoutSeconds * 1000);
      timer.unref();
      try {
        await app.close();
        app.log.info('shut down cleanly');
      } finally {
        clearTimeout(timer);
      }
    })();
    return closing;
  }
  return { app, url: address, shutdown };
}

/**
 * No admin yet. Logs never hold tokens (decisions.md), so the one-time setup link is never in a log
 * record: in development (and test) it is printed on the console as plain lines of its own; in
 * production no link is issued at all, and the log says how to create the first admin.
 */
async function announceFirstAdmin(app: FastifyInstance, config: Config, print: (line: string) => void): Promise<void> {
  if (await app.services.adminSetup.adminExists()) return;
  if (config.env === 'production') {
    app.log.warn(`No admin user exists yet: ${FIRST_ADMIN_HELP}.`);
    return;
  }
  const link = await app.services.adminSetup.issueLink();
  if (!link) return;
  app.log.warn('No admin user exists yet: a one-time setup link is printed on the console (it is never logged).');
  const minutes = Math.round(config.ttl.adminSetup / 60);
  print(
    [
      '',
      `  No admin user exists yet. Create the first one at this link (it works once, for ${minutes} minutes):`,
      '',
      `    ${link}`,
      '',
      '  or run: idp users create --admin --email EMAIL --password-stdin',
      '',
    ].join('\n'),
  );
}

/** Wires SIGTERM/SIGINT to a bounded graceful shutdown; a second signal exits at once. */
export function handleSignals(server: RunningServer): void {
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) {
      server.app.log.warn({ signal }, 'second signal: exiting immediately');
      process.exit(1);
    }
    received = true;
    server.shutdown(signal).then(
      () => process.exit(0),
      (error) => {
        server.app.log.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
