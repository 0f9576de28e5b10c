// Opening the configured database for the server and the CLI: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded PGlite in DATA_DIR, which only one process may hold (a lock file), or, with
// DATA_DIR=:memory:, in the server's memory (no lock: no other process can reach it).
import { createDatabase, type DatabaseHandle, type Db } from '../db/create-db.js';
import { acquireDataDirLock } from '../db/data-dir-lock.js';
import { migrateToLatest } from '../db/migrate.js';
import { isInMemory, type Config } from './config.js';
import { AppError } from './errors.js';

export type { DatabaseHandle, Db };
export { migrateToLatest };

/** DATA_DIR=:memory: serves one server process: a command would open (and lose) an empty database of its own. */
export function refuseInMemory(config: Config, purpose: string): void {
  if (purpose === 'server' || config.databaseUrl || !isInMemory(config)) return;
  throw new AppError(
    400,
    'IN_MEMORY_DATABASE',
    `DATA_DIR=:memory: is for idp serve only: ${purpose} would open an empty database of its own and ` +
      'lose it at exit. Seed a throw-away server with SEED_FILE, manage it over the admin API ' +
      '(ADMIN_API_TOKEN), or point DATA_DIR at a directory.',
  );
}

export async function openConfiguredDatabase(config: Config, purpose: string): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    return createDatabase({
      databaseUrl: config.databaseUrl,
      poolSize: config.databasePoolSize,
      statementTimeoutMs: config.databaseStatementTimeout * 1000,
    });
  }
  if (isInMemory(config)) {
    refuseInMemory(config, purpose);
    const handle = await createDatabase({});
    return { ...handle, location: 'embedded PGlite in memory (DATA_DIR=:memory:, lost at exit)' };
  }
  const release = acquireDataDirLock(config.dataDir, purpose);
  try {
    const handle = await createDatabase({ dataDir: `${config.dataDir}/pglite` });
    const close = handle.close.bind(handle);
    return {
      ...handle,
      async close() {
        try {
          await close();
        } finally {
          release();
        }
      },
    };
  } catch (error) {
    release();
    throw error;
  }
}
