// A fresh, migrated database for each test file: PGlite restored from a migrated snapshot (fast; in its
// worker thread like the server's, so every test file runs the production path: measured over 14 files,
// ~1.5 s more CPU and ~+150 MB peak memory a file than PGlite on the test's own thread), or,
// when DATABASE_URL is set, a schema of its own in the test file's own database on that PostgreSQL server
// (postgresFileDatabaseUrl; the schema dropped at the end, the database when the file ends).
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import t from 'tap';
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

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

let fileDatabase: Promise<string> | undefined;

/**
 * On PostgreSQL, this test file's own database on the DATABASE_URL server: test_<pid>_<random>, created on
 * first use, dropped (with force) when the file ends; .ci/run drops those an interrupted run left. Each test
 * makes its schema in it. Test files running at once (tap's jobs) then never see each other's schemas come
 * and go: Kysely's and information_schema's lookups span every schema of a database, and a schema another
 * file dropped meanwhile once failed a migration ("schema test_<pid>_<hex> does not exist").
 */
export function postgresFileDatabaseUrl(): Promise<string> {
  const server = process.env.DATABASE_URL;
  if (!server) return Promise.reject(new Error('postgresFileDatabaseUrl needs DATABASE_URL'));
  fileDatabase ??= (async () => {
    const name = `test_${process.pid}_${randomBytes(4).toString('hex')}`;
    await adminQuery(server, `create database "${name}"`);
    t.teardown(() => adminQuery(server, `drop database if exists "${name}" with (force)`));
    const url = new URL(server);
    url.pathname = `/${name}`;
    return url.toString();
  })();
  return fileDatabase;
}

export interface TestDatabase extends DatabaseHandle {
  /** Drops the test schema too (PostgreSQL). Idempotent. */
  dispose(): Promise<void>;
}

/** `migrated: false`: no migration applied (the upgrade test migrates step by step itself). */
export async function createTestDatabase({ migrated = true }: { migrated?: boolean } = {}): Promise<TestDatabase> {
  if (usingPostgres) {
    const url = await postgresFileDatabaseUrl();
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
