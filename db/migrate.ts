import { Migrator, type MigrationResult } from 'kysely';
import { migrationProvider } from './migrations/index.js';
import type { Db } from './create-db.js';

export class MigrationError extends Error {
  constructor(
    message: string,
    readonly results: MigrationResult[],
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'MigrationError';
  }
}

/** Applies every pending migration (Kysely takes a lock, so concurrent starts are safe). */
export async function migrateToLatest(db: Db): Promise<MigrationResult[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results = [] } = await migrator.migrateToLatest();
  if (error) {
    const failed = results.find((r) => r.status === 'Error');
    const reason = error instanceof Error ? error.message : String(error);
    throw new MigrationError(
      `Migration ${failed ? `"${failed.migrationName}" ` : ''}failed: ${reason}`,
      results,
      error,
    );
  }
  return results;
}

export async function listMigrations(db: Db) {
  const migrator = new Migrator({ db, provider: migrationProvider });
  return migrator.getMigrations();
}
