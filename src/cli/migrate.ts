import { listMigrations, migrateToLatest } from '../../db/migrate.js';
import { noArguments, parse } from './args.js';
import { loadCliConfig, openDatabase } from './context.js';
import { table, type Io } from './io.js';

export const MIGRATE_HELP = `Usage: idp migrate [--status] [--json]

Applies every pending migration to the configured database (DATABASE_URL, or the embedded one).
  --status   list migrations and whether each is applied, without changing anything`;

export async function migrateCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, { status: { type: 'boolean' } });
  if (values.help) return io.out(MIGRATE_HELP);
  noArguments(positionals);
  const config = loadCliConfig(io);
  // Opened without withDatabase: that one migrates first.
  const database = await openDatabase(config, 'idp migrate', io);
  try {
    if (values.status) {
      const list = await listMigrations(database.db);
      const rows = list.map((m) => ({
        name: m.name,
        applied: m.executedAt !== undefined,
        executedAt: m.executedAt?.toISOString() ?? null,
      }));
      if (values.json) return io.out(JSON.stringify({ database: database.location, migrations: rows }, null, 2));
      io.out(`Database: ${database.location}`);
      const state = (r: (typeof rows)[number]) => (r.applied ? `applied ${r.executedAt}` : 'pending');
      io.out(table([['MIGRATION', 'STATE'], ...rows.map((r) => [r.name, state(r)])]));
      return;
    }
    if (!values.json) io.err(`Migrating ${database.location} ...`);
    const results = await migrateToLatest(database.db);
    if (values.json) {
      return io.out(JSON.stringify({ database: database.location, applied: results.map((r) => r.migrationName) }));
    }
    io.out(
      results.length
        ? results.map((r) => `applied ${r.migrationName}`).join('\n')
        : 'Already up to date: no pending migrations.',
    );
  } finally {
    await database.close();
  }
}
