// `idp` help, usage errors and configuration errors: none of these may touch a database. In-process
// (run(argv, io)), except two real processes: the installed launcher, and an exit code a shell sees.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { BIN, cleanEnv, concurrency, exits, runCli, runInProcess, type RunOptions } from './fixtures/run-cli.js';
import { PRODUCTION_PASSWORD_HASH_ENV } from '../helpers/password-cost.js';

// Two tests spawn a CLI process (~3 s each just to load, more on a busy machine): more than tap's default.
t.setTimeout(240_000);

// A DATA_DIR of the file's own, so a command that wrongly opened the database could not touch ./data.
const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-usage-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const env = cleanEnv({ DATA_DIR: dataDir });

// These invocations share nothing, so they all start now, three at a time, and each test awaits its own.
const limit = concurrency(3);
const run = (args: string[], options: RunOptions = {}) => limit(() => runInProcess(args, { env, ...options }));
const spawned = (args: string[], options: RunOptions = {}) => limit(() => runCli(args, { env, ...options }));

const secrets = {
  SECRET_KEY: 'short-Secret-Value-1',
  ADMIN_API_TOKEN: 'tiny-admin-Token-2',
  DATABASE_URL: 'mysql://admin:hunter2-Db-Password@db.example.com/idp',
};

const runs = {
  help: run(['--help']),
  appsHelp: run(['apps', '--help']),
  usersHelp: run(['users', '--help']),
  migrateHelp: run(['migrate', '--help']),
  bin: spawned(['--help'], { entry: BIN }),
  none: run([]),
  unknownCommand: spawned(['frobnicate']),
  unknownOption: run(['apps', 'list', '--bogus']),
  badConfig: run(['migrate'], {
    env: {
      ...env,
      ...PRODUCTION_PASSWORD_HASH_ENV,
      PORT: 'abc',
      LOG_LEVEL: 'loud',
      NODE_ENV: 'production',
      ...secrets,
    },
  }),
  env: run(['env'], { env: { ...env, ...secrets, SECRET_KEY: 'a-real-looking-secret-key-0123456789abcdef' } }),
  optionFirst: run(['apps', '--json', 'list']),
};

const opts = { timeout: 150_000 };

t.test('idp --help prints the usage and exits 0', opts, async (t) => {
  const r = await runs.help;
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp <command> \[options\]$/m);
  for (const command of ['serve', 'migrate', 'apps', 'users', 'env'])
    t.match(r.stdout, new RegExp(`^  ${command}\\b`, 'm'));
  t.match(r.stdout, /Exit codes: 0 success, 1 the operation failed, 2 usage error/);
  t.equal(r.stderr, '');
});

t.test('idp apps --help prints the apps usage and exits 0', opts, async (t) => {
  const r = await runs.appsHelp;
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp apps <create\|list\|show\|update\|enable\|disable\|delete\|secret>/m);
  t.match(r.stdout, /--redirect-uri URI/);
  t.match(r.stdout, /delete\s+<clientId> --yes/);
  t.equal(r.stderr, '');
});

t.test('idp users --help prints the users usage and exits 0', opts, async (t) => {
  const r = await runs.usersHelp;
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp users <create\|list\|show\|update\|enable\|disable\|delete>/m);
  t.match(r.stdout, /--password-stdin/);
  t.match(r.stdout, /--permission P/);
  t.equal(r.stderr, '');
});

t.test('idp migrate --help prints the migrate usage and exits 0', opts, async (t) => {
  const r = await runs.migrateHelp;
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp migrate \[--status\] \[--json\]/m);
  t.match(r.stdout, /--status/);
  t.equal(r.stderr, '');
});

// bin/idp.js runs dist/app/cli.js when built (CI builds first), else app/cli.ts through tsx: both must work.
t.test('bin/idp.js (the installed launcher) runs the CLI', opts, async (t) => {
  const r = await runs.bin;
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp <command> \[options\]$/m);
});

t.test('no command: usage, exit 2', opts, async (t) => {
  const r = await runs.none;
  exits(t, r, 2);
  // The usage text is shown (the CLI prints it on stdout; stderr would be the more usual stream).
  t.match(`${r.stdout}${r.stderr}`, /Usage: idp <command>/);
});

t.test('an option before the subcommand is not silently taken for --help', opts, async (t) => {
  // `idp apps --json list` must list (as `idp apps list --json` does) or be a usage error (exit 2); printing
  // the help and exiting 0 tells a script that the listing succeeded.
  const r = await runs.optionFirst;
  exits(t, r, 2);
  t.match(r.stderr, /^idp: put the subcommand first: idp apps list --json/m);
  t.notMatch(r.stdout, /^Usage: idp apps/m, 'not the help text');
});

t.test('an unknown command: exit 2 (the process exit code) and a message on stderr', opts, async (t) => {
  const r = await runs.unknownCommand;
  exits(t, r, 2);
  t.match(r.stderr, /unknown command "frobnicate"/);
  t.match(r.stderr, /idp --help/);
  t.equal(r.stdout, '');
});

t.test('an unknown option: exit 2 and a message on stderr, before any database is opened', opts, async (t) => {
  const r = await runs.unknownOption;
  exits(t, r, 2);
  t.match(r.stderr, /unknown option '--bogus'/i);
  t.notMatch(r.stderr, /TypeError|ERR_PARSE_ARGS|\n\s+at /, 'no stack trace or error class');
  t.equal(r.stdout, '');
});

t.test('configuration errors: exit 1, every problem listed by variable name, no secret echoed', opts, async (t) => {
  const r = await runs.badConfig;
  exits(t, r, 1);
  t.equal(r.stdout, '');
  t.match(r.stderr, /Invalid configuration \(6 problems\)/);
  t.match(r.stderr, /^ {2}- PORT: expected a port number 0-65535; got "abc"$/m);
  t.match(r.stderr, /^ {2}- LOG_LEVEL: expected .*; got "loud"$/m);
  t.match(r.stderr, /^ {2}- SECRET_KEY: expected at least 32 characters.*; got "<20 characters, hidden>"$/m);
  t.match(r.stderr, /^ {2}- ADMIN_API_TOKEN: expected at least 32 characters.*hidden>"$/m);
  t.match(r.stderr, /^ {2}- DATABASE_URL: expected a postgres:\/\/ connection URL.*hidden>"$/m);
  t.match(r.stderr, /^ {2}- BASE_URL: expected a value when NODE_ENV=production/m);
  const output = r.stdout + r.stderr;
  for (const [name, value] of Object.entries(secrets)) t.notOk(output.includes(value), `${name} is not echoed`);
  t.notOk(output.includes('hunter2'), 'no part of the database password is echoed');
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
});

t.test('idp env lists every variable with its default, never a configured value', opts, async (t) => {
  const r = await runs.env;
  exits(t, r, 0);
  for (const name of ['PORT', 'DATABASE_URL', 'DATA_DIR', 'SECRET_KEY', 'ADMIN_API_TOKEN', 'LOG_LEVEL']) {
    t.match(r.stdout, new RegExp(`^${name}\\s`, 'm'), `lists ${name}`);
  }
  t.match(r.stdout, /^PORT\s+3000\s/m, 'with its default');
  t.notOk(r.stdout.includes('a-real-looking-secret-key'), 'SECRET_KEY from the environment is not shown');
  t.notOk(r.stdout.includes('hunter2'), 'DATABASE_URL from the environment is not shown');
  t.equal(r.stderr, '');
});
