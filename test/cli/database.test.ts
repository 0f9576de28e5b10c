// `idp migrate`, and the lock that keeps a second process out of the embedded database. The commands run
// in-process (run(argv, io)), except the first migrate, the ones the lock keeps out and the one that must
// release the lock it took as a process does at its end: real processes.
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { describeDatabaseUrl } from '../../db/create-db.js';
import {
  ROOT,
  cleanEnv,
  cliContext,
  concurrency,
  createPostgresSchema,
  exits,
  parseJson,
  runInProcess,
  startServe,
  usingPostgres,
} from './fixtures/run-cli.js';

// Some tests spawn CLI processes (~3 s each just to load, more on a busy machine): more than tap's default.
t.setTimeout(300_000);

const opts = { timeout: 150_000 };

interface MigrateStatus {
  database: string;
  migrations: Array<{ name: string; applied: boolean; executedAt: string | null }>;
}

const migrationNames = readdirSync(join(ROOT, 'db', 'migrations'))
  .filter((f) => /^\d{4}-.+\.ts$/.test(f))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();

t.test('migrate applies 0001-initial once; --status --json reports it applied', opts, async (t) => {
  const cli = await cliContext(t, {}, { fresh: true });
  t.ok(migrationNames.includes('0001-initial'));

  const first = await cli.spawn(['migrate']);
  exits(t, first, 0);
  t.match(first.stdout, /^applied 0001-initial$/m);
  for (const name of migrationNames) t.match(first.stdout, new RegExp(`^applied ${name}$`, 'm'));
  t.match(first.stderr, /^Migrating .+ \.\.\.$/m);

  const second = await cli.run(['migrate']);
  exits(t, second, 0);
  t.match(second.stdout, /Already up to date/);
  t.notMatch(second.stdout, /applied/);

  const status = await cli.run(['migrate', '--status', '--json']);
  exits(t, status, 0);
  const report = parseJson<MigrateStatus>(status);
  t.same(
    report.migrations.map((m) => m.name),
    migrationNames,
    'every migration file is listed',
  );
  const initial = report.migrations.find((m) => m.name === '0001-initial');
  t.equal(initial?.applied, true);
  t.ok(initial?.executedAt && !Number.isNaN(Date.parse(initial.executedAt)), 'with the time it was applied');
  t.ok(
    report.migrations.every((m) => m.applied),
    'nothing pending',
  );
  if (usingPostgres) {
    t.equal(report.database, describeDatabaseUrl(cli.databaseUrl!), 'the database, without credentials or options');
  } else {
    t.equal(report.database, `embedded PGlite in ${cli.dataDir}/pglite`);
  }
});

t.test(
  'the embedded database lock: a running server keeps the CLI out at once, clearly',
  { ...opts, skip: usingPostgres ? 'the lock applies to the embedded database only (DATABASE_URL is set)' : false },
  async (t) => {
    const cli = await cliContext(t);
    const lockFile = join(cli.dataDir, 'idp.lock');
    const server = await startServe(t, {
      ...cli.env,
      LOG_LEVEL: 'info',
      PORT: '0',
      HOST: '127.0.0.1',
      SECRET_KEY: 'cli-test-secret-key-0123456789abcdefghij',
    });
    t.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/, 'it reports its address');
    const lock = JSON.parse(readFileSync(lockFile, 'utf8')) as { pid: number; purpose: string; host: string };
    t.equal(lock.pid, server.child.pid, 'the lock names the server process');
    t.equal(lock.purpose, 'server');

    const busy = await cli.spawn(['apps', 'list']);
    exits(t, busy, 1);
    // It does not wait for the lock (db/data-dir-lock.ts takes it or fails at once); no timing is asserted here:
    // under CI load a spawn alone took 12 s once.
    t.match(busy.stderr, /is in use by another process/);
    t.match(busy.stderr, new RegExp(`pid ${server.child.pid}, server`));
    t.match(busy.stderr, /admin API/);
    t.equal(busy.stdout, '');

    const health = await fetch(`${server.url}/healthz`);
    t.equal(health.status, 200, 'the server is unaffected');

    server.child.kill('SIGTERM');
    const exit = await server.exited;
    t.same(exit, { code: 0, signal: null }, 'SIGTERM shuts the server down cleanly', { output: server.output() });
    t.notOk(existsSync(lockFile), 'the server released the lock');

    const free = await cli.spawn(['apps', 'list']);
    exits(t, free, 0);
    t.equal(free.stdout.trim(), 'No applications.');
  },
);

t.test(
  'a stale lock file of a dead process does not block the CLI',
  { ...opts, skip: usingPostgres ? 'embedded database only' : false },
  async (t) => {
    const cli = await cliContext(t);
    let deadPid = 999_999;
    for (;;) {
      try {
        process.kill(deadPid, 0);
        deadPid++; // alive (unlikely): try the next one
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') break;
        deadPid++;
      }
    }
    const lockFile = join(cli.dataDir, 'idp.lock');
    writeFileSync(lockFile, JSON.stringify({ pid: deadPid, purpose: 'server', since: 'x', host: hostname() }));

    // A process: an in-process run leaves its context's database open (and locked) for the next run.
    const r = await cli.spawn(['apps', 'list', '--json']);
    exits(t, r, 0);
    t.same(parseJson(r), { items: [] });
    t.notOk(existsSync(lockFile), 'the stale lock is gone and the CLI released its own');
  },
);

// Two schemas of one database, each reached through `options=-c search_path=<schema>` in DATABASE_URL
// (as every test here does on PostgreSQL): migrating the second must not trip over the first one's
// kysely_migration tables (Kysely looks in every schema unless db/migrate.ts pins it to the current one).
t.test(
  'migrate works in a schema of its own while another schema already holds migrated tables',
  { ...opts, skip: usingPostgres ? false : 'PostgreSQL only (DATABASE_URL is not set)' },
  async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-'));
    t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
    const env = cleanEnv({ DATA_DIR: dataDir });
    for (const which of ['first', 'second']) {
      const databaseUrl = await createPostgresSchema(t);
      const r = await runInProcess(['migrate', '--json'], { env: { ...env, DATABASE_URL: databaseUrl } });
      exits(t, r, 0, `${which} schema: exits 0`);
      if (r.code === 0)
        t.same(parseJson<{ applied: string[] }>(r).applied, migrationNames, `${which} schema: every migration applied`);
    }
  },
);

t.test('database connection problems: exit 1 with a one-line reason, no stack trace', opts, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = cleanEnv({ DATA_DIR: dataDir });
  const cases: Array<{ what: string; url: string; reason: RegExp }> = [
    { what: 'nothing listens on the port', url: 'postgres://postgres@127.0.0.1:1/test', reason: /ECONNREFUSED/ },
  ];
  if (process.env.DATABASE_URL) {
    // The same server, asked for what it does not have (no password is sent).
    const on = (user: string, database: string) => {
      const u = new URL(process.env.DATABASE_URL!);
      u.username = user;
      u.password = '';
      u.pathname = `/${database}`;
      u.search = '';
      return u.toString();
    };
    const server = new URL(process.env.DATABASE_URL);
    cases.push(
      {
        what: 'the database does not exist',
        url: on(server.username || 'postgres', 'idp_no_such_database'),
        reason: /idp_no_such_database/,
      },
      // "role ... does not exist" (SQLSTATE 28000), or "password authentication failed" (28P01) when the
      // server asks for a password: either way the role is named.
      {
        what: 'the role does not exist',
        url: on('idp_no_such_role', server.pathname.slice(1)),
        reason: /idp_no_such_role/,
      },
    );
  }
  const limit = concurrency(3);
  const results = await Promise.all(
    cases.map(({ url }) => limit(() => runInProcess(['apps', 'list'], { env: { ...env, DATABASE_URL: url } }))),
  );
  cases.forEach(({ what, reason }, i) => {
    const r = results[i]!;
    exits(t, r, 1, `${what}: exits 1`);
    t.match(r.stderr, /^idp: /, `${what}: an idp message`);
    t.match(r.stderr, reason, `${what}: the reason`);
    t.notMatch(r.stderr, /unexpected error/, `${what}: a known failure, not an "unexpected error"`);
    t.notMatch(r.stderr, /\n\s+at /, `${what}: no stack trace`);
    t.equal(r.stdout, '', `${what}: nothing on stdout`);
  });
});
