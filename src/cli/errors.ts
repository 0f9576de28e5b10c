// How a failure ends the process. Exit codes: 0 success, 1 the operation failed (bad configuration, not
// found, conflict, invalid value, database busy), 2 usage error.
import { ConfigError } from '../config.js';
import { AppError } from '../errors.js';
import { StaticApplicationsError } from '../static-applications.js';
import { DataDirBusyError } from '../../db/data-dir-lock.js';
import { MigrationError } from '../../db/migrate.js';
import type { Io } from './io.js';

/** A mistake in the command line: reported before anything is opened, exit code 2. */
export class UsageError extends Error {}

// Network failures, and PostgreSQL's connection classes 08 (connection), 28 (authorization:
// wrong password, no pg_hba entry, unknown role), 3D000 (no such database), 57P03 (not accepting).
const UNREACHABLE_CODES = [
  ...['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH'],
  ...['3D000', '57P03'],
];

function unreachable(code: string | undefined, message: string): boolean {
  return (
    UNREACHABLE_CODES.includes(code ?? '') ||
    /^(08|28)/.test(code ?? '') ||
    /timeout exceeded when trying to connect|Connection terminated/i.test(message)
  );
}

/** Explains the failure on stderr and returns the exit code. */
export function reportError(error: unknown, io: Io): number {
  if (error instanceof UsageError) {
    io.err(`idp: ${error.message}`);
    return 2;
  }
  if (error instanceof AppError) {
    io.err(`idp: ${error.message}`);
    // One problem is already the message; several are listed.
    if ((error.details?.length ?? 0) > 1) for (const d of error.details!) io.err(`  - ${d.field}: ${d.message}`);
    return 1;
  }
  if (
    error instanceof ConfigError ||
    error instanceof DataDirBusyError ||
    error instanceof StaticApplicationsError ||
    error instanceof MigrationError
  ) {
    io.err(`idp: ${error.message}`);
    return 1;
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    io.err(`idp: ${(error as Error).message}: another process listens there; set PORT or HOST`);
    return 1;
  }
  if (unreachable(code, (error as Error).message ?? '')) {
    io.err(`idp: cannot reach the database: ${(error as Error).message}`);
    return 1;
  }
  if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EACCES') {
    io.err(`idp: cannot use the data directory: ${(error as Error).message} (DATA_DIR must be a writable directory)`);
    return 1;
  }
  io.err(`idp: unexpected error: ${(error as Error).stack ?? String(error)}`);
  return 1;
}
