// The embedded database is one process's: PGlite has no locking of its own, and two processes writing
// one data directory corrupt it. A lock file with the owner's pid makes the second one fail clearly.
import { mkdirSync, openSync, readFileSync, rmSync, writeSync, closeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export class DataDirBusyError extends Error {
  constructor(
    readonly dataDir: string,
    readonly owner: { pid: number; purpose: string; since: string },
  ) {
    super(
      `The embedded database in ${dataDir} is in use by another process ` +
        `(pid ${owner.pid}, ${owner.purpose}, since ${owner.since}). ` +
        'Only one process can open it at a time. Stop that process first, or, while the server runs, ' +
        'manage it over the admin API (/api/admin/*, enabled by ADMIN_API_TOKEN). ' +
        'To share a database between processes, use PostgreSQL (DATABASE_URL).',
    );
    this.name = 'DataDirBusyError';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function acquireDataDirLock(dataDir: string, purpose: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const file = join(dataDir, 'idp.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      const owner = { pid: process.pid, purpose, since: new Date().toISOString(), host: hostname() };
      writeSync(fd, JSON.stringify(owner));
      closeSync(fd);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        rmSync(file, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      let owner: { pid: number; purpose: string; since: string; host?: string } | undefined;
      try {
        owner = JSON.parse(readFileSync(file, 'utf8'));
      } catch {
        owner = undefined; // half-written or unreadable: treat as stale
      }
      const sameHost = !owner?.host || owner.host === hostname();
      if (owner && typeof owner.pid === 'number' && (!sameHost || alive(owner.pid))) {
        throw new DataDirBusyError(dataDir, owner);
      }
      rmSync(file, { force: true }); // stale lock of a process that died
    }
  }
  throw new Error(`Could not take the lock ${file}`);
}
