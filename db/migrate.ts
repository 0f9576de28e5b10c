import { Migrator, sql, type MigrationResult } from 'kysely';
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

// Kysely looks for its migration tables in every schema unless told which one: with several schemas in one
// database (one per tenant or per test file) it would find another schema's lock table. Pin it to ours.
async function createMigrator(db: Db): Promise<Migrator> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return new Migrator({ db, provider: migrationProvider, migrationTableSchema: rows[0]?.schema ?? 'public' });
}

/** Applies every pending migration (Kysely takes a lock, so concurrent starts are safe). */
export async function migrateToLatest(db: Db): Promise<MigrationResult[]> {
  const migrator = await createMigrator(db);
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
  return (await createMigrator(db)).getMigrations();
}
