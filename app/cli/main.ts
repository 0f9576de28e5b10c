// The dispatcher: the first word picks the command group, each in a module of its own; a group with
// subcommands gets the word after it (see splitSubcommand). Exit codes: 0 success, 1 the operation
// failed, 2 usage error (errors.ts maps each failure).
import { adminCommand } from '../../src/cli/admin.js';
import { appsCommand } from '../../src/cli/apps.js';
import { conformanceCommand } from '../../src/cli/conformance.js';
import { splitSubcommand } from '../../src/cli/args.js';
import { envCommand } from '../../src/cli/env.js';
import { reportError, UsageError } from '../../src/cli/errors.js';
import type { Io } from '../../src/cli/io.js';
import { keysCommand } from '../../src/cli/keys.js';
import { migrateCommand } from '../../src/cli/migrate.js';
import { resourcesCommand } from '../../src/cli/resources.js';
import { registrationTokensCommand } from '../../src/cli/registration-tokens.js';
import { seedCommand } from '../../src/cli/seed.js';
import { serveCommand } from './serve.js';
import { upstreamsCommand } from '../../src/cli/upstreams.js';
import { usersCommand } from '../../src/cli/users.js';

export type { Io } from '../../src/cli/io.js';

const HELP = `idp: self-hostable OpenID Connect provider

Usage: idp <command> [options]

Commands:
  serve                  start the provider (applies pending migrations first)
  migrate                apply pending database migrations (--status to list them)
  apps <subcommand>      manage applications: create, list, show, update, enable, disable, delete, secret
  users <subcommand>     manage users: create, list, show, update, enable, disable, delete
  upstreams <subcommand> sign in with another provider: list, add, show, update, remove, rotate-key
  registration-tokens <subcommand>  initial access tokens for REGISTRATION=token: list, create, revoke
  resources <subcommand> your APIs (resource servers): list, add, show, update, remove
  seed FILE              create the applications, users, upstreams and APIs a seed file declares (idempotent)
  keys <subcommand>      signing keys: list, rotate, retire
  admin setup-link       print a one-time link to create the first admin (only while there is none)
  env                    list every environment variable with its default
  conformance-config     the OpenID conformance suite's plan configuration (or seed file) for this deployment

Global options:
  --json                 machine-readable output (one JSON document on stdout)
  -h, --help             help for any command, e.g. idp apps create --help

Configuration comes from environment variables (see idp env). Without DATABASE_URL the embedded
database in DATA_DIR (./data) is used; only one process can open it, so while the server runs,
manage it through the admin API (/api/admin/*, enabled by ADMIN_API_TOKEN).

Exit codes: 0 success, 1 the operation failed, 2 usage error.`;

type Command = (rest: string[], io: Io) => Promise<void> | void;
type Group = (sub: string | undefined, rest: string[], io: Io) => Promise<void>;

const withSubcommand =
  (name: string, group: Group): Command =>
  (rest, io) =>
    group(...splitSubcommand(name, rest), io);

const COMMANDS = new Map<string, Command>([
  ['serve', serveCommand],
  ['migrate', migrateCommand],
  ['apps', withSubcommand('apps', appsCommand)],
  ['users', withSubcommand('users', usersCommand)],
  ['upstreams', withSubcommand('upstreams', upstreamsCommand)],
  ['resources', withSubcommand('resources', resourcesCommand)],
  ['registration-tokens', withSubcommand('registration-tokens', registrationTokensCommand)],
  ['keys', withSubcommand('keys', keysCommand)],
  ['admin', withSubcommand('admin', adminCommand)],
  ['seed', seedCommand],
  ['env', (_rest, io) => envCommand(io)],
  ['conformance-config', conformanceCommand],
]);

export async function run(argv: string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
      io.out(HELP);
      return command === undefined ? 2 : 0;
    }
    const handler = COMMANDS.get(command);
    if (!handler) throw new UsageError(`unknown command "${command}" (see idp --help)`);
    await handler(rest, io);
    return 0;
  } catch (error) {
    return reportError(error, io);
  }
}
