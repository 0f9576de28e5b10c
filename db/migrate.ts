import { Migrator, sql, type MigrationResult, type MigrationResultSet } from 'kysely';
import { migrationProvider, migrations } from './migrations/index.js';
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
async function createMigrator(db: Db, known = migrations): Promise<Migrator & { schema: string }> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  const schema = rows[0]?.schema ?? 'public';
  const provider = known === migrations ? migrationProvider : { getMigrations: async () => known };
  return Object.assign(new Migrator({ db, provider, migrationTableSchema: schema }), { schema });
}

async function hasTable(db: Db, schema: string): Promise<boolean> {
  const { rows } = await sql`select 1 from information_schema.tables
    where table_schema = ${schema} and table_name = 'kysely_migration'`.execute(db);
  return rows.length > 0;
}

async function appliedNames(db: Db, schema: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from ${sql.table(`${schema}.kysely_migration`)}`.execute(db);
  return rows.map((r) => r.name);
}

/**
 * Applies every pending migration (Kysely takes a lock, so concurrent starts are safe). An instance of an
 * older release that starts while a rollout is under way finds the database already upgraded by a newer
 * one: migrations are additive, so it runs on it unchanged (Kysely alone would refuse to start).
 * `known` is the release's migration set (the upgrade test passes an older release's).
 */
export async function migrateToLatest(db: Db, known = migrations): Promise<MigrationResult[]> {
  const migrator = await createMigrator(db, known);
  if (await hasTable(db, migrator.schema)) {
    const applied = await appliedNames(db, migrator.schema);
    // Every start and every CLI command lands here: when exactly this release's migrations are applied
    // there is nothing to do, and Kysely's own path (its lock and table checks, ~10 statements) is skipped.
    const knownNames = Object.keys(known);
    if (applied.length === knownNames.length && knownNames.every((name) => applied.includes(name))) return [];
    const newer = applied.filter((name) => !(name in known));
    if (newer.length) {
      const pending = (await migrator.getMigrations()).filter((m) => !m.executedAt).map((m) => m.name);
      if (pending.length === 0 && newer.every((name) => Object.keys(known).every((k) => k < name))) return [];
      throw new MigrationError(
        `The database has migrations this release does not know (${newer.join(', ')})` +
          (pending.length ? ` and lacks some it needs (${pending.join(', ')})` : ''),
        [],
      );
    }
  }
  return checked(await retryingSchemaRace(() => migrator.migrateToLatest()));
}

/**
 * Kysely's check for its migration tables lists the tables of EVERY schema (its introspector calls
 * has_schema_privilege on each): when another schema of the same database is dropped meanwhile (another test
 * file's, a tenant's), the check fails with 3F000 "schema ... does not exist" before anything ran. Tried again,
 * up to 5 times; any other error, or a 3F000 after a migration ran, is the answer.
 */
async function retryingSchemaRace(run: () => Promise<MigrationResultSet>): Promise<MigrationResultSet> {
  for (let attempt = 1; ; attempt++) {
    const result = await run();
    const code = (result.error as { code?: unknown } | undefined)?.code;
    const nothingRan = (result.results ?? []).every((r) => r.status === 'NotExecuted');
    if (code !== '3F000' || !nothingRan || attempt >= 5) return result;
    await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
  }
}

/** Applies the pending migrations up to and including `name` (the upgrade test stops at each one). */
export async function migrateUpTo(db: Db, name: string): Promise<MigrationResult[]> {
  const migrator = await createMigrator(db);
  return checked(await retryingSchemaRace(() => migrator.migrateTo(name)));
}

function checked({ error, results = [] }: MigrationResultSet): MigrationResult[] {
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
