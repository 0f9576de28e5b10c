// A fresh, migrated database for each test file: PGlite restored from a migrated snapshot (fast; in its
// worker thread like the server's, so every test file runs the production path: measured over 14 files,
// ~1.5 s more CPU and ~+150 MB peak memory a file than PGlite on the test's own thread), or,
// when DATABASE_URL is set, a schema of its own on that PostgreSQL server (dropped at the end).
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PGlite } from '@electric-sql/pglite';
import { Kysely } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { createDatabase, type DatabaseHandle } from '../../db/create-db.js';
import type { Database } from '../../db/tables.js';
import { migrateToLatest } from '../../db/migrate.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const PGLITE_VERSION = (
  JSON.parse(readFileSync(join(root, 'node_modules', '@electric-sql', 'pglite', 'package.json'), 'utf8')) as {
    version: string;
  }
).version;

/** The snapshot's name carries a hash of the migrations, so a changed migration makes a new one. */
function migrationsHash(): string {
  const dir = join(root, 'db', 'migrations');
  const hash = createHash('sha256');
  for (const file of readdirSync(dir).sort()) hash.update(file).update(readFileSync(join(dir, file)));
  return hash.digest('hex').slice(0, 16);
}

function snapshotPath(): string {
  return join(root, '.tap', `pglite-${migrationsHash()}.tar`);
}

/**
 * A migrated embedded database as the CLI leaves it in DATA_DIR/pglite (a PGlite data directory, closed
 * cleanly), made once per migration set and PGlite version under .tap/. The CLI tests copy it into their
 * DATA_DIR (test/cli/fixtures/run-cli.ts) instead of having their first command run initdb (~5 to 20 s).
 */
export async function pgliteDataDirTemplate(): Promise<string> {
  const dir = join(root, '.tap', `pglite-dir-${PGLITE_VERSION}-${migrationsHash()}`);
  if (existsSync(dir)) return dir;
  mkdirSync(dirname(dir), { recursive: true });
  const tmp = `${dir}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    const handle = await createDatabase({ dataDir: tmp });
    try {
      await migrateToLatest(handle.db);
    } finally {
      await handle.close();
    }
    renameSync(tmp, dir); // atomic: parallel test files never copy half a directory
  } catch (error) {
    if (!existsSync(dir)) throw error; // else another file made it first
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return dir;
}

/**
 * A migrated PGlite data directory (dumpDataDir), made once per migration set and kept under .tap/; with
 * `migrated: false`, a fresh one with no migration applied (skips PGlite's initdb, ~3 s, for each database the
 * upgrade test migrates step by step).
 */
export async function pgliteSnapshot({ migrated = true }: { migrated?: boolean } = {}): Promise<Blob> {
  const file = migrated ? snapshotPath() : join(root, '.tap', `pglite-empty-${PGLITE_VERSION}.tar`);
  if (!existsSync(file)) {
    const pglite = new PGlite();
    const db = new Kysely<Database>({ dialect: new PGliteDialect(pglite) });
    if (migrated) await migrateToLatest(db);
    const dump = await pglite.dumpDataDir('none');
    await db.destroy();
    mkdirSync(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(tmp, Buffer.from(await dump.arrayBuffer()));
    renameSync(tmp, file); // atomic: parallel test files never read half a snapshot
  }
  return new Blob([readFileSync(file)]);
}

export const usingPostgres = Boolean(process.env.DATABASE_URL);

export interface TestDatabase extends DatabaseHandle {
  /** Drops the test schema too (PostgreSQL). Idempotent. */
  dispose(): Promise<void>;
}

/** `migrated: false`: no migration applied (the upgrade test migrates step by step itself). */
export async function createTestDatabase({ migrated = true }: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const url = process.env.DATABASE_URL;
  if (url) {
    const schema = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`create schema "${schema}"`);
    await admin.end();
    const handle = await createDatabase({ databaseUrl: url, searchPath: schema, poolSize: 5 });
    if (migrated) await migrateToLatest(handle.db);
    let disposed = false;
    return {
      ...handle,
      async dispose() {
        if (disposed) return;
        disposed = true;
        await handle.close();
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        await c.query(`drop schema if exists "${schema}" cascade`);
        await c.end();
      },
    };
  }
  const handle = await createDatabase({ loadDataDir: await pgliteSnapshot({ migrated }) });
  return { ...handle, dispose: () => handle.close() };
}
