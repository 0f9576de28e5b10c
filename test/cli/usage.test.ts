// `idp` help, usage errors and configuration errors: none of these may touch a database.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { BIN, cleanEnv, exits, runCli } from './fixtures/run-cli.js';

// Every test spawns CLI processes (~3 s each just to load, more on a busy machine): more than tap's default.
t.setTimeout(240_000);

// A DATA_DIR of the file's own, so a command that wrongly opened the database could not touch ./data.
const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-usage-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const env = cleanEnv({ DATA_DIR: dataDir });
const run = (args: string[]) => runCli(args, { env });

const opts = { timeout: 150_000 };

t.test('idp --help prints the usage and exits 0', opts, async (t) => {
  const r = await run(['--help']);
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp <command> \[options\]$/m);
  for (const command of ['serve', 'migrate', 'apps', 'users', 'env']) t.match(r.stdout, new RegExp(`^  ${command}\\b`, 'm'));
  t.match(r.stdout, /Exit codes: 0 success, 1 the operation failed, 2 usage error/);
  t.equal(r.stderr, '');
});

t.test('idp apps --help prints the apps usage and exits 0', opts, async (t) => {
  const r = await run(['apps', '--help']);
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp apps <create\|list\|show\|update\|enable\|disable\|delete>/m);
  t.match(r.stdout, /--redirect-uri URI/);
  t.match(r.stdout, /delete\s+<clientId> --yes/);
  t.equal(r.stderr, '');
});

t.test('idp users --help prints the users usage and exits 0', opts, async (t) => {
  const r = await run(['users', '--help']);
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp users <create\|list\|show\|update\|enable\|disable\|delete>/m);
  t.match(r.stdout, /--password-stdin/);
  t.match(r.stdout, /--permission P/);
  t.equal(r.stderr, '');
});

t.test('idp migrate --help prints the migrate usage and exits 0', opts, async (t) => {
  const r = await run(['migrate', '--help']);
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp migrate \[--status\] \[--json\]/m);
  t.match(r.stdout, /--status/);
  t.equal(r.stderr, '');
});

t.test('bin/idp.js (the installed launcher) runs the CLI', opts, async (t) => {
  const r = await runCli(['--help'], { env, entry: BIN });
  exits(t, r, 0);
  t.match(r.stdout, /^Usage: idp <command> \[options\]$/m);
});

t.test('no command: usage, exit 2', opts, async (t) => {
  const r = await run([]);
  exits(t, r, 2);
  // The usage text is shown (the CLI prints it on stdout; stderr would be the more usual stream).
  t.match(`${r.stdout}${r.stderr}`, /Usage: idp <command>/);
});

t.test('an unknown command: exit 2 and a message on stderr', opts, async (t) => {
  const r = await run(['frobnicate']);
  exits(t, r, 2);
  t.match(r.stderr, /unknown command "frobnicate"/);
  t.match(r.stderr, /idp --help/);
  t.equal(r.stdout, '');
});

t.test('an unknown option: exit 2 and a message on stderr, before any database is opened', opts, async (t) => {
  const r = await run(['apps', 'list', '--bogus']);
  exits(t, r, 2);
  t.match(r.stderr, /unknown option '--bogus'/i);
  t.notMatch(r.stderr, /TypeError|ERR_PARSE_ARGS|\n\s+at /, 'no stack trace or error class');
  t.equal(r.stdout, '');
});

t.test('configuration errors: exit 1, every problem listed by variable name, no secret echoed', opts, async (t) => {
  const secrets = {
    SECRET_KEY: 'short-Secret-Value-1',
    ADMIN_API_TOKEN: 'tiny-admin-Token-2',
    DATABASE_URL: 'mysql://admin:hunter2-Db-Password@db.example.com/idp',
  };
  const r = await runCli(['migrate'], {
    env: { ...env, PORT: 'abc', LOG_LEVEL: 'loud', NODE_ENV: 'production', ...secrets },
  });
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
