// Opening the configured database for the server and the CLI: PostgreSQL when DATABASE_URL is set,
// otherwise the embedded PGlite in DATA_DIR, which only one process may hold (a lock file).
import { createDatabase, type DatabaseHandle, type Db } from '../db/create-db.js';
import { acquireDataDirLock } from '../db/data-dir-lock.js';
import { migrateToLatest } from '../db/migrate.js';
import type { Config } from './config.js';

export type { DatabaseHandle, Db };
export { migrateToLatest };

export async function openConfiguredDatabase(config: Config, purpose: string): Promise<DatabaseHandle> {
  if (config.databaseUrl) {
    return createDatabase({ databaseUrl: config.databaseUrl, poolSize: config.databasePoolSize });
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
