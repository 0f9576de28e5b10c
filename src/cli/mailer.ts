import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { createMailer, type Mailer } from '../mail/mailer.js';
import type { Io } from './io.js';

/** The services' log in a CLI command: warnings and errors on stderr, nothing else. */
export function cliLog(io: Io): FastifyBaseLogger {
  const say = (first: unknown, message?: string) => {
    const detail = first as { reason?: string };
    io.err(typeof first === 'string' ? first : `${message ?? ''}${detail?.reason ? ` (${detail.reason})` : ''}`);
  };
  const log = {
    info: () => {},
    debug: () => {},
    trace: () => {},
    warn: say,
    error: say,
    fatal: say,
    child: () => log,
    level: 'info',
    silent: () => {},
  };
  return log as unknown as FastifyBaseLogger;
}

/** Mail from a CLI command: one attempt (no retries), problems reported on stderr. */
export function cliMailer(config: Config, io: Io): Mailer {
  return createMailer({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    dataDir: config.dataDir,
    log: cliLog(io),
    retryDelaysMs: [],
    logLinks: false,
  });
}
