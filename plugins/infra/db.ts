// The database handle, decorated as app.database and app.db. Opens (and migrates) one from config unless a
// handle is given (tests, CLI). Closed when the app closes.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import { createDatabase, type DatabaseHandle, type Db } from '../../db/create-db.js';
import { acquireDataDirLock } from '../../db/data-dir-lock.js';
import { migrateToLatest } from '../../db/migrate.js';

declare module 'fastify' {
  interface FastifyInstance {
    database: DatabaseHandle;
    db: Db;
  }
}

export interface DbPluginOptions {
  config: Config;
  database?: DatabaseHandle | undefined;
}

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

export default fp(
  async function dbPlugin(app: FastifyInstance, options: DbPluginOptions) {
    let database = options.database;
    if (!database) {
      database = await openConfiguredDatabase(options.config, 'server');
      try {
        const applied = await migrateToLatest(database.db);
        for (const m of applied) app.log.info({ migration: m.migrationName }, 'applied migration');
      } catch (error) {
        await database.close();
        throw error;
      }
      const owned = database;
      app.addHook('onClose', async () => owned.close());
    }
    app.log.info({ database: database.location }, 'database ready');
    app.decorate('database', database);
    app.decorate('db', database.db);
  },
  { name: 'db' },
);
