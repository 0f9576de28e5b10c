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

export async function startServer(config: Config, options: BuildOptions = {}): Promise<RunningServer> {
  const started = performance.now();
  const app = await buildApp(config, options);
  // No admin yet: a one-time link to create the first one (or: idp users create --admin).
  const setupLink = await app.adminSetup.issueLink().catch((error: unknown) => {
    app.log.error({ err: error }, 'could not issue the admin setup link');
    return undefined;
  });
  if (setupLink) {
    app.log.warn(
      { adminSetupLink: setupLink },
      `No admin user exists yet. Create the first one within ${Math.round(config.ttl.adminSetup / 60)} minutes at ${setupLink} (single use), or run: idp users create --admin --email EMAIL --password-stdin`,
    );
  }
  let address: string;
  try {
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
