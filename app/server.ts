// startServer: build, listen, and shut down gracefully on SIGTERM/SIGINT within SHUTDOWN_TIMEOUT.
import type { FastifyInstance } from 'fastify';
import type { Config } from '../src/config.js';
import { buildApp, type BuildOptions } from './app.js';
import { isInMemory } from '../src/config.js';
import { prettyDestination, usePrettyLogs } from '../src/logger.js';

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
  /** Whether stdout is a terminal (pretty logs with LOG_FORMAT=auto, colours); process.stdout.isTTY by default. */
  tty?: boolean;
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
    tty = process.stdout.isTTY === true,
    ...buildOptions
  } = options;
  // Pretty lines go through pino's redaction first: pino-pretty only reformats what pino wrote.
  if (!buildOptions.logStream && usePrettyLogs(config.logFormat, config.env, tty)) {
    buildOptions.logStream = await prettyDestination(process.stdout, tty);
  }
  const app = await buildApp(config, buildOptions);
  let address: string;
  let setupLink: string | undefined;
  try {
    // Before listening: once the server answers (and logs "listening"), the caller installs its signal
    // handlers at once, with no database round trip in between.
    if (announce)
      setupLink = await announceFirstAdmin(app, config).catch((error: unknown) => {
        app.log.error({ err: error }, 'could not check for an admin user');
        return undefined;
      });
    address = await app.listen({ port: config.port, host: config.host });
  } catch (error) {
    await app.close();
    throw error;
  }
  // The banner is for a developer's console only, never a log record (it may carry the setup link).
  if (announce && config.env !== 'production') print(banner(app, config, { address, setupLink, color: tty }));
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
 * record: in development (and test) it is returned for the console banner; in production no link is
 * issued at all, and the log says how to create the first admin.
 */
async function announceFirstAdmin(app: FastifyInstance, config: Config): Promise<string | undefined> {
  if (await app.services.adminSetup.adminExists()) return undefined;
  if (config.env === 'production') {
    app.log.warn(`No admin user exists yet: ${FIRST_ADMIN_HELP}.`);
    return undefined;
  }
  const link = await app.services.adminSetup.issueLink();
  if (link)
    app.log.warn('No admin user exists yet: a one-time setup link is printed on the console (it is never logged).');
  return link;
}

/** A URL's scheme, host, port and path, without credentials (DATABASE_URL, SMTP_URL). */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(unparsable URL)';
  }
}

/**
 * The development start-up banner: the URLs that matter, the database, where mail goes and, when no admin
 * exists, the one-time setup link. The link's row has no side borders: a triple click copies the link alone.
 */
export function banner(
  app: Pick<FastifyInstance, 'hasRoute'>,
  config: Config,
  { address, setupLink, color = false }: { address: string; setupLink?: string | undefined; color?: boolean },
): string {
  const paint = (code: number) => (text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const [dim, bold, cyan, yellow] = [paint(2), paint(1), paint(36), paint(33)];
  const has = (url: string) => app.hasRoute({ method: 'GET', url });
  const rows: Array<[string, string]> = [
    ['Listening', address],
    ['Issuer', config.issuer],
    ['Discovery', `${config.issuer}/.well-known/openid-configuration`],
    ['Sign-in', `${config.loginUrl}/sign-in`],
    ['Admin', config.adminUrl],
  ];
  if (config.adminApiToken) rows.push(['Admin API', `${config.baseUrl}/api/admin (ADMIN_API_TOKEN)`]);
  if (has('/')) rows.push(['Welcome', `${config.baseUrl}/`]);
  if (has('/demo') || has('/demo/')) rows.push(['Demo', `${config.baseUrl}/demo`]);
  rows.push([
    'Database',
    config.databaseUrl
      ? `PostgreSQL ${withoutCredentials(config.databaseUrl)}`
      : isInMemory(config)
        ? 'embedded PGlite in memory (DATA_DIR=:memory:, lost at exit)'
        : `embedded PGlite in ${config.dataDir}`,
  ]);
  rows.push([
    'Mail',
    config.smtpUrl
      ? `SMTP ${withoutCredentials(config.smtpUrl)}`
      : isInMemory(config)
        ? 'not sent (no SMTP_URL): in the log'
        : `not sent (no SMTP_URL): in the log and ${config.dataDir}/outbox.jsonl`,
  ]);
  const lines: Array<string | { link: string }> = [
    `idp ${config.env} server`,
    '',
    ...rows.map(([name, value]) => `${name.padEnd(10)} ${value}`),
  ];
  if (setupLink) {
    const minutes = Math.round(config.ttl.adminSetup / 60);
    lines.push(
      '',
      'No admin user exists yet. Create the first one at this link',
      `(it works once, for ${minutes} minutes):`,
      { link: setupLink },
      'or run: idp users create --admin --email EMAIL --password-stdin',
    );
  }
  const width = Math.max(...lines.map((l) => (typeof l === 'string' ? l.length : l.link.length)));
  const out = [dim(`  ╭${'─'.repeat(width + 2)}╮`)];
  for (const [i, line] of lines.entries()) {
    if (typeof line !== 'string') out.push('', `    ${line.link}`, '');
    else {
      const text = i === 0 ? bold(line.padEnd(width)) : line.startsWith('No admin') ? yellow(line.padEnd(width)) : line;
      const padded = i === 0 || line.startsWith('No admin') ? text : cyanValue(line.padEnd(width), cyan);
      out.push(`  ${dim('│')} ${padded} ${dim('│')}`);
    }
  }
  out.push(dim(`  ╰${'─'.repeat(width + 2)}╯`));
  return ['', ...out, ''].join('\n');
}

/** A row's value (after the 10-character name) in cyan. */
function cyanValue(line: string, cyan: (text: string) => string): string {
  return line.length > 11 && line[10] === ' ' && line.slice(0, 10).trim()
    ? `${line.slice(0, 11)}${cyan(line.slice(11))}`
    : line;
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
