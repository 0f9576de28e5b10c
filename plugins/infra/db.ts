// The database handle, decorated as app.database and app.db. Opens (and migrates) one from config unless a
// handle is given (tests, CLI). Closed when the app closes.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import { type DatabaseHandle, type Db, migrateToLatest, openConfiguredDatabase } from '../../src/database.js';

/** The CLI and tests open the database the same way (src/database.ts). */
export { openConfiguredDatabase };

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
