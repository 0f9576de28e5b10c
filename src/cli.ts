#!/usr/bin/env node
// `idp`: the entry point. It and nothing else reads process.env. Exit codes: 0 success, 1 the operation
// failed (bad configuration, not found, conflict, invalid value, database busy), 2 usage error.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { ConfigError, describeEnv, loadConfig, type Config } from './config.js';
import { AppError } from './errors.js';
import { resolveSecretKey } from './secret-key.js';
import { StaticApplicationsError, loadStaticApplications } from './static-applications.js';
import { createApplicationService, type ActorContext } from './services/applications.js';
import { createUserService } from './services/users.js';
import { passwordChangedNotice } from './services/recovery.js';
import { createMailer, type Mailer } from './mail/mailer.js';
import type { FastifyBaseLogger } from 'fastify';
import { createSigningKeyService, JWKS_MAX_AGE_SECONDS, KEYS_REFRESH_SECONDS } from './services/signing-keys.js';
import { createUserAccessService } from './services/user-access.js';
import { createAdminSetupService } from './services/admin-setup.js';
import { createSessionService } from './services/sessions.js';
import { openConfiguredDatabase } from '../plugins/infra/db.js';
import { DataDirBusyError } from '../db/data-dir-lock.js';
import { listMigrations, migrateToLatest, MigrationError } from '../db/migrate.js';
import type { DatabaseHandle } from '../db/create-db.js';
import type { Application, User } from '../schemas/admin.js';

class UsageError extends Error {}

interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: Record<string, string | undefined>;
  stdin: () => string;
}

const HELP: Record<string, string> = {
  main: `idp: self-hostable OpenID Connect provider

Usage: idp <command> [options]

Commands:
  serve                  start the provider (applies pending migrations first)
  migrate                apply pending database migrations (--status to list them)
  apps <subcommand>      manage applications: create, list, show, update, enable, disable, delete
  users <subcommand>     manage users: create, list, show, update, enable, disable, delete
  keys <subcommand>      signing keys: list, rotate, retire
  admin setup-link       print a one-time link to create the first admin (only while there is none)
  env                    list every environment variable with its default

Global options:
  --json                 machine-readable output (one JSON document on stdout)
  -h, --help             help for any command, e.g. idp apps create --help

Configuration comes from environment variables (see idp env). Without DATABASE_URL the embedded
database in DATA_DIR (./data) is used; only one process can open it, so while the server runs,
manage it through the admin API (/api/admin/*, enabled by ADMIN_API_TOKEN).

Exit codes: 0 success, 1 the operation failed, 2 usage error.`,
  serve: `Usage: idp serve

Starts the HTTP server on HOST:PORT. Applies pending migrations, generates a development SECRET_KEY
in DATA_DIR if none is set (refused when NODE_ENV=production), and shuts down gracefully on SIGTERM
or SIGINT (bounded by SHUTDOWN_TIMEOUT seconds).`,
  migrate: `Usage: idp migrate [--status] [--json]

Applies every pending migration to the configured database (DATABASE_URL, or the embedded one).
  --status   list migrations and whether each is applied, without changing anything`,
  apps: `Usage: idp apps <create|list|show|update|enable|disable|delete> [options]

  create   --name NAME --redirect-uri URI [--redirect-uri URI ...] [options]
  list     [--search TEXT] [--limit N] [--cursor C]
  show     <clientId>
  update   <clientId> [options]           (a list option replaces the whole list)
  enable   <clientId>
  disable  <clientId>
  delete   <clientId> --yes

Options for create and update:
  --client-id ID                  create only; generated (URL-safe, 192 bits) when absent
  --name NAME                     display name
  --description TEXT              ("" clears it on update)
  --logo-url URL                  https URL ("" clears it on update)
  --redirect-uri URI              exact redirect URI; repeat for several
  --origin ORIGIN                 allowed web origin for browser CORS; repeat for several
  --post-logout-redirect-uri URI  where RP-initiated logout may return; repeat for several
  --post-verification-path PATH   path on the app's origin after e-mail verification
  --scope SCOPE                   allowed scope; repeat (default: openid profile email offline_access)
  --disabled / --enabled          create disabled, or enable/disable on update`,
  admin: `Usage: idp admin setup-link [--json]

  setup-link   while no admin user exists, print a one-time link (ADMIN_URL/setup?token=...) that
               creates the first admin; it works once, for ADMIN_SETUP_TTL seconds. The link is printed
               here only, never logged. In development the server prints one at start as well.
               Alternative: idp users create --admin --email EMAIL --password-stdin`,
  keys: `Usage: idp keys <list|rotate|retire> [options]

  list                 published keys: next (published, not signing), current (signing), retired
  rotate [--force]     next becomes current, current becomes retired, a new next is published.
                       Refused while the next key is younger than the JWKS cache lifetime plus the
                       refresh interval (360 s), unless --force. Running servers pick it up within 60 s.
  retire <kid> --yes   stop publishing a next or retired key now (e.g. a compromised key)

Needs SECRET_KEY (in development, the one generated in DATA_DIR).`,
  users: `Usage: idp users <create|list|show|update|enable|disable|delete> [options]

  create   --email EMAIL [--password-stdin | --password PASSWORD] [options]
  list     [--search TEXT] [--limit N] [--cursor C]
  show     <id or email>
  update   <id or email> [options]
  enable   <id or email>
  disable  <id or email>
  delete   <id or email> --yes
  sessions <id or email> [--revoke [--session ID]]   list, or revoke all (or one) sessions and their tokens
  grants   <id or email> [--revoke [--grant ID]]     list, or revoke all (or one) grants, their tokens and consents

Options for create and update:
  --email EMAIL                   update only changes it when given
  --password-stdin                read the password from standard input (preferred)
  --password PASSWORD             visible to other local users in the process list; avoid
  --name NAME  --given-name NAME  --family-name NAME  --picture URL   ("" clears on update)
  --verified / --unverified       e-mail verification state
  --permission P                  repeat for several; replaces the list on update (--no-permissions clears)
  --disabled / --enabled
  --admin / --no-admin            the admin role: may sign in to the admin web (ADMIN_URL)`,
};

const APP_OPTIONS = {
  'client-id': { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  'logo-url': { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  origin: { type: 'string', multiple: true },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  'post-verification-path': { type: 'string' },
  scope: { type: 'string', multiple: true },
  disabled: { type: 'boolean' },
  enabled: { type: 'boolean' },
} as const;

const USER_OPTIONS = {
  admin: { type: 'boolean' },
  'no-admin': { type: 'boolean' },
  email: { type: 'string' },
  password: { type: 'string' },
  'password-stdin': { type: 'boolean' },
  name: { type: 'string' },
  'given-name': { type: 'string' },
  'family-name': { type: 'string' },
  picture: { type: 'string' },
  verified: { type: 'boolean' },
  unverified: { type: 'boolean' },
  permission: { type: 'string', multiple: true },
  'no-permissions': { type: 'boolean' },
  disabled: { type: 'boolean' },
  enabled: { type: 'boolean' },
} as const;

const LIST_OPTIONS = {
  search: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

const COMMON = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  yes: { type: 'boolean' },
} as const;

type Values = Record<string, string | boolean | string[] | undefined>;

function parse(args: string[], options: ParseArgsConfig['options']): { values: Values; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args, options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
    return { values: values as Values, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

/** "" on update means "clear this field" (null); absent means "leave it". */
const clearable = (v: unknown) => (v === undefined ? undefined : v === '' ? null : (v as string));

function flagPair(values: Values, on: string, off: string): boolean | undefined {
  if (values[on] && values[off]) throw new UsageError(`--${on} and --${off} contradict each other`);
  return values[on] ? true : values[off] ? false : undefined;
}

function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

function describeApp(a: Application): string {
  const lines: Array<[string, string]> = [
    ['Client ID', a.clientId],
    ['Name', a.clientName],
    ['Enabled', a.enabled ? 'yes' : 'no'],
    ['Source', a.source],
    ['Redirect URIs', a.redirectUris.join('\n') || '-'],
    ['Web origins', a.allowedWebOrigins.join('\n') || '-'],
    ['Post-logout URIs', a.postLogoutRedirectUris.join('\n') || '-'],
    ['Allowed scopes', a.allowedScopes.join(' ')],
    ['Description', a.clientDescription ?? '-'],
    ['Logo URL', a.clientLogoUrl ?? '-'],
    ['Post-verification path', a.postVerificationRedirectPath ?? '-'],
  ];
  if (a.createdAt) lines.push(['Created', a.createdAt], ['Updated', a.updatedAt ?? '-']);
  return lines.map(([k, v]) => `${`${k}:`.padEnd(25)}${v.split('\n').join(`\n${' '.repeat(25)}`)}`).join('\n');
}

function describeUser(u: User): string {
  const lines: Array<[string, string]> = [
    ['ID', u.id],
    ['E-mail', `${u.email}${u.emailVerified ? ' (verified)' : ' (not verified)'}`],
    ['Name', u.name ?? '-'],
    ['Given name', u.givenName ?? '-'],
    ['Family name', u.familyName ?? '-'],
    ['Picture', u.picture ?? '-'],
    ['Permissions', u.permissions.join(' ') || '-'],
    ['Disabled', u.disabled ? 'yes' : 'no'],
    ['Role', u.role],
    ['Password set', u.hasPassword ? 'yes' : 'no'],
    ['Created', u.createdAt],
    ['Updated', u.updatedAt],
  ];
  return lines.map(([k, v]) => `${`${k}:`.padEnd(15)}${v}`).join('\n');
}

function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  const n = Number(values.limit);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw new UsageError('--limit must be a whole number from 1 to 200');
  return n;
}

function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`);
  return positionals[0]!;
}

/** Usage mistakes are reported before the database is opened (and locked, and migrated). */
function checkBeforeOpening(sub: string, positionals: string[], values: Values, input: Record<string, unknown>, what: string, alternative: string) {
  if (sub === 'list') {
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    limitOf(values);
    return;
  }
  if (sub === 'create') return;
  const ref = one(positionals, what);
  if (sub === 'update' && Object.keys(input).length === 0) throw new UsageError('nothing to update: give at least one option (see --help)');
  if (sub === 'delete' && !values.yes) throw new UsageError(`deleting ${ref} cannot be undone: add --yes to confirm (or ${alternative})`);
}

function loadCliConfig(io: Io): Config {
  return loadConfig(io.env);
}

async function withDatabase<T>(config: Config, purpose: string, run: (db: DatabaseHandle) => Promise<T>): Promise<T> {
  const database = await openConfiguredDatabase(config, purpose);
  try {
    await migrateToLatest(database.db);
    return await run(database);
  } finally {
    await database.close();
  }
}

function actor(): ActorContext {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (some containers)
  }
  return { actor: `cli:${name}` };
}

async function appsCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const options = sub === 'list' ? LIST_OPTIONS : sub === 'create' || sub === 'update' ? APP_OPTIONS : {};
  const { values, positionals } = parse(rest, options);
  if (values.help || !sub) return io.out(HELP.apps!);
  if (!['create', 'list', 'show', 'update', 'enable', 'disable', 'delete'].includes(sub)) {
    throw new UsageError(`unknown subcommand "apps ${sub}" (see idp apps --help)`);
  }
  const json = Boolean(values.json);
  const config = loadCliConfig(io);
  const staticApplications = loadStaticApplications(config.staticApplicationsFile);
  const print = (a: Application) => io.out(json ? JSON.stringify(a, null, 2) : describeApp(a));

  if (sub === 'create') {
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    if (!values.name) throw new UsageError('--name is required');
    if (!values['redirect-uri']) throw new UsageError('at least one --redirect-uri is required');
  }
  const input = compact({
    clientName: values.name as string | undefined,
    clientDescription: clearable(values.description),
    clientLogoUrl: clearable(values['logo-url']),
    redirectUris: values['redirect-uri'] as string[] | undefined,
    allowedWebOrigins: values.origin as string[] | undefined,
    postLogoutRedirectUris: values['post-logout-redirect-uri'] as string[] | undefined,
    postVerificationRedirectPath: clearable(values['post-verification-path']),
    allowedScopes: values.scope as string[] | undefined,
    enabled: sub === 'create' || sub === 'update' ? flagPair(values, 'enabled', 'disabled') : undefined,
  }) as Record<string, unknown>;

  checkBeforeOpening(sub, positionals, values, input, 'client id', 'disable it instead');
  await withDatabase(config, `idp apps ${sub}`, async ({ db }) => {
    const apps = createApplicationService({ db, staticApplications });
    switch (sub) {
      case 'create': {
        const created = await apps.create(
          { ...input, ...(values['client-id'] ? { clientId: values['client-id'] as string } : {}) } as never,
          actor(),
        );
        if (!json) io.err(`Created application ${created.clientId}`);
        return print(created);
      }
      case 'list': {
        const page = await apps.list({ q: values.search as string | undefined, limit: limitOf(values), cursor: values.cursor as string | undefined });
        if (json) return io.out(JSON.stringify(page, null, 2));
        if (page.items.length === 0) return io.out('No applications.');
        io.out(
          table([
            ['CLIENT ID', 'NAME', 'ENABLED', 'SOURCE', 'REDIRECT URIS'],
            ...page.items.map((a) => [a.clientId, a.clientName, a.enabled ? 'yes' : 'no', a.source, String(a.redirectUris.length)]),
          ]),
        );
        if (page.nextCursor) io.out(`\nMore: idp apps list --cursor ${page.nextCursor}`);
        return;
      }
      case 'show':
        return print(await apps.get(one(positionals, 'client id')));
      case 'update': {
        const clientId = one(positionals, 'client id');
        if (Object.keys(input).length === 0) throw new UsageError('nothing to update: give at least one option (see idp apps --help)');
        return print(await apps.update(clientId, input as never, actor()));
      }
      case 'enable':
      case 'disable':
        return print(await apps.setEnabled(one(positionals, 'client id'), sub === 'enable', actor()));
      case 'delete': {
        const clientId = one(positionals, 'client id');
        if (!values.yes) throw new UsageError(`deleting ${clientId} cannot be undone: add --yes to confirm (or disable it instead)`);
        await apps.remove(clientId, actor());
        return io.out(json ? JSON.stringify({ deleted: clientId }) : `Deleted application ${clientId}`);
      }
    }
  });
}

async function usersCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const options: ParseArgsConfig['options'] =
    sub === 'list' ? LIST_OPTIONS
    : sub === 'create' || sub === 'update' ? USER_OPTIONS
    : sub === 'sessions' ? ({ revoke: { type: 'boolean' }, session: { type: 'string' } } as const)
    : sub === 'grants' ? ({ revoke: { type: 'boolean' }, grant: { type: 'string' } } as const)
    : {};
  const { values, positionals } = parse(rest, options);
  if (values.help || !sub) return io.out(HELP.users!);
  if (sub === 'sessions' || sub === 'grants') return userAccessCommand(sub, values, positionals, io);
  if (!['create', 'list', 'show', 'update', 'enable', 'disable', 'delete'].includes(sub)) {
    throw new UsageError(`unknown subcommand "users ${sub}" (see idp users --help)`);
  }
  const json = Boolean(values.json);
  const print = (u: User) => io.out(json ? JSON.stringify(u, null, 2) : describeUser(u));

  let password: string | undefined;
  if (values.password !== undefined && values['password-stdin']) throw new UsageError('give --password or --password-stdin, not both');
  if (values['password-stdin']) password = io.stdin().replace(/\r?\n$/, '');
  else if (values.password !== undefined) password = values.password as string;
  if (values.permission && values['no-permissions']) throw new UsageError('--permission and --no-permissions contradict each other');
  if (sub === 'create') {
    if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
    if (!values.email) throw new UsageError('--email is required');
  }
  const input = compact({
    email: values.email as string | undefined,
    password,
    name: clearable(values.name),
    givenName: clearable(values['given-name']),
    familyName: clearable(values['family-name']),
    picture: clearable(values.picture),
    emailVerified: sub === 'create' || sub === 'update' ? flagPair(values, 'verified', 'unverified') : undefined,
    permissions: values['no-permissions'] ? [] : (values.permission as string[] | undefined),
    disabled: sub === 'create' || sub === 'update' ? flagPair(values, 'disabled', 'enabled') : undefined,
    role: sub === 'create' || sub === 'update' ? ({ true: 'admin', false: 'user' } as const)[String(flagPair(values, 'admin', 'no-admin')) as 'true' | 'false'] : undefined,
  }) as Record<string, unknown>;

  checkBeforeOpening(sub, positionals, values, input, 'user id or e-mail', 'disable the user instead');
  const config = loadCliConfig(io);
  await withDatabase(config, `idp users ${sub}`, async ({ db }) => {
    const users = createUserService({ db });
    switch (sub) {
      case 'create': {
        const created = await users.create(input as never, actor());
        if (!json) io.err(`Created user ${created.id}`);
        return print(created);
      }
      case 'list': {
        const page = await users.list({ q: values.search as string | undefined, limit: limitOf(values), cursor: values.cursor as string | undefined });
        if (json) return io.out(JSON.stringify(page, null, 2));
        if (page.items.length === 0) return io.out('No users.');
        io.out(
          table([
            ['ID', 'E-MAIL', 'VERIFIED', 'DISABLED', 'NAME'],
            ...page.items.map((u) => [u.id, u.email, u.emailVerified ? 'yes' : 'no', u.disabled ? 'yes' : 'no', u.name ?? '']),
          ]),
        );
        if (page.nextCursor) io.out(`\nMore: idp users list --cursor ${page.nextCursor}`);
        return;
      }
      case 'show':
        return print(await users.get(one(positionals, 'user id or e-mail')));
      case 'update': {
        const ref = one(positionals, 'user id or e-mail');
        if (Object.keys(input).length === 0) throw new UsageError('nothing to update: give at least one option (see idp users --help)');
        // A password set here is announced by mail like a completed reset (SMTP_URL, else DATA_DIR/outbox.jsonl).
        const mailer = password !== undefined ? cliMailer(config, io) : undefined;
        if (mailer) users.onPasswordChanged((email) => mailer.sendInBackground(passwordChangedNotice(config, email)));
        try {
          return print(await users.update(ref, input as never, actor()));
        } finally {
          await mailer?.close();
        }
      }
      case 'enable':
      case 'disable':
        return print(await users.setDisabled(one(positionals, 'user id or e-mail'), sub === 'disable', actor()));
      case 'delete': {
        const ref = one(positionals, 'user id or e-mail');
        if (!values.yes) throw new UsageError(`deleting ${ref} cannot be undone: add --yes to confirm (or disable the user instead)`);
        await users.remove(ref, actor());
        return io.out(json ? JSON.stringify({ deleted: ref }) : `Deleted user ${ref}`);
      }
    }
  });
}

/** Mail from a CLI command: one attempt (no retries), problems reported on stderr. */
function cliMailer(config: Config, io: Io): Mailer {
  const say = (first: unknown, message?: string) => {
    const detail = first as { reason?: string };
    io.err(typeof first === 'string' ? first : `${message ?? ''}${detail?.reason ? ` (${detail.reason})` : ''}`);
  };
  const log = { info: () => {}, debug: () => {}, trace: () => {}, warn: say, error: say, fatal: say, child: () => log, level: 'info', silent: () => {} };
  return createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, log: log as unknown as FastifyBaseLogger, retryDelaysMs: [], logLinks: false });
}

async function userAccessCommand(sub: 'sessions' | 'grants', values: Values, positionals: string[], io: Io): Promise<void> {
  const ref = one(positionals, 'user id or e-mail');
  const single = (values.session ?? values.grant) as string | undefined;
  if (single && !values.revoke) throw new UsageError(`--${sub === 'sessions' ? 'session' : 'grant'} goes with --revoke`);
  const config = loadCliConfig(io);
  await withDatabase(config, `idp users ${sub}`, async ({ db }) => {
    const access = createUserAccessService({ db, users: createUserService({ db }) });
    if (values.revoke) {
      const result = sub === 'sessions' ? await access.revokeSessions(ref, actor(), single) : await access.revokeGrants(ref, actor(), single);
      return io.out(values.json ? JSON.stringify(result) : `Revoked ${'sessions' in result ? `${result.sessions} session(s) and ` : ''}${result.grants} grant(s) with their tokens`);
    }
    if (sub === 'sessions') {
      const items = await access.listSessions(ref);
      if (values.json) return io.out(JSON.stringify({ items }, null, 2));
      if (!items.length) return io.out('No sessions.');
      return io.out(table([['SESSION', 'ACTIVE', 'SIGNED IN', 'LAST SEEN', 'IP'], ...items.map((s) => [s.id, s.active ? 'yes' : 'no', s.authTime, s.lastSeenAt, s.ip ?? '-'])]));
    }
    const items = await access.listGrants(ref);
    if (values.json) return io.out(JSON.stringify({ items }, null, 2));
    if (!items.length) return io.out('No grants.');
    io.out(table([['GRANT', 'CLIENT ID', 'SCOPE', 'CREATED', 'REVOKED'], ...items.map((g) => [g.id, g.clientId, g.scope, g.createdAt, g.revokedAt ?? '-'])]));
  });
}

async function keysCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, sub === 'rotate' ? { force: { type: 'boolean' } } : {});
  if (values.help || !sub) return io.out(HELP.keys!);
  if (!['list', 'rotate', 'retire'].includes(sub)) throw new UsageError(`unknown subcommand "keys ${sub}" (see idp keys --help)`);
  if (sub !== 'retire' && positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  if (sub === 'retire') {
    const kid = one(positionals, 'key id');
    if (!values.yes) throw new UsageError(`retiring ${kid} removes it from the JWKS now, and tokens it signed stop verifying: add --yes to confirm`);
  }
  const config = resolveSecretKey(loadCliConfig(io), { warn: () => {} });
  await withDatabase(config, `idp keys ${sub}`, async ({ db }) => {
    const service = createSigningKeyService({ db, secretKey: config.secretKey!, jwksMaxAgeSeconds: JWKS_MAX_AGE_SECONDS, refreshSeconds: KEYS_REFRESH_SECONDS });
    let keys;
    if (sub === 'list') {
      keys = await service.list();
    } else if (sub === 'rotate') {
      keys = await service.rotate(actor(), { force: Boolean(values.force) });
      if (!values.json) io.err('Rotated. Running servers sign with the new current key within 60 s.');
    } else {
      keys = await service.retire(positionals[0]!, actor());
    }
    if (values.json) return io.out(JSON.stringify({ items: keys }, null, 2));
    if (keys.length === 0) return io.out('No keys yet: the server generates them at its first start.');
    io.out(table([['KID', 'ALG', 'STATE', 'CREATED', 'ACTIVATED', 'RETIRED'], ...keys.map((k) => [k.kid, k.alg, k.state, k.createdAt, k.activatedAt ?? '-', k.retiredAt ?? '-'])]));
  });
}

async function adminCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help || !sub) return io.out(HELP.admin!);
  if (sub !== 'setup-link') throw new UsageError(`unknown subcommand "admin ${sub}" (see idp admin --help)`);
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const config = loadCliConfig(io);
  await withDatabase(config, 'idp admin setup-link', async ({ db }) => {
    const sessions = createSessionService({ db, ttlSeconds: config.ttl.session, idleSeconds: config.ttl.sessionIdle });
    const link = await createAdminSetupService({ db, config, sessions }).issueLink();
    if (!link) {
      throw new AppError(409, 'ADMIN_EXISTS', `an admin exists already: sign in at ${config.adminUrl}, or make a user an admin with idp users update <email> --admin`);
    }
    const expiresAt = new Date(Date.now() + config.ttl.adminSetup * 1000).toISOString();
    if (values.json) return io.out(JSON.stringify({ link, expiresAt }));
    io.err(`Open this link to create the first admin. It works once, until ${expiresAt}:`);
    io.out(link);
  });
}

async function migrateCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, { status: { type: 'boolean' } });
  if (values.help) return io.out(HELP.migrate!);
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const config = loadCliConfig(io);
  const database = await openConfiguredDatabase(config, 'idp migrate');
  try {
    if (values.status) {
      const list = await listMigrations(database.db);
      const rows = list.map((m) => ({ name: m.name, applied: m.executedAt !== undefined, executedAt: m.executedAt?.toISOString() ?? null }));
      if (values.json) return io.out(JSON.stringify({ database: database.location, migrations: rows }, null, 2));
      io.out(`Database: ${database.location}`);
      io.out(table([['MIGRATION', 'STATE'], ...rows.map((r) => [r.name, r.applied ? `applied ${r.executedAt}` : 'pending'])]));
      return;
    }
    if (!values.json) io.err(`Migrating ${database.location} ...`);
    const results = await migrateToLatest(database.db);
    if (values.json) return io.out(JSON.stringify({ database: database.location, applied: results.map((r) => r.migrationName) }));
    io.out(results.length ? results.map((r) => `applied ${r.migrationName}`).join('\n') : 'Already up to date: no pending migrations.');
  } finally {
    await database.close();
  }
}

async function serveCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help) return io.out(HELP.serve!);
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
  let config = loadCliConfig(io);
  config = resolveSecretKey(config, { warn: (m) => io.err(`WARNING: ${m}`) });
  // Loaded here only: the other commands start without the HTTP server's modules.
  const { handleSignals, startServer } = await import('./server.js');
  const server = await startServer(config, { console: io.out });
  handleSignals(server);
}

/** The subcommand is the first word after the command; an option there is --help or a mistake. */
function splitSubcommand(command: string, rest: string[]): [string | undefined, string[]] {
  const first = rest[0];
  if (first === undefined || first === '--help' || first === '-h') return [undefined, rest];
  if (first.startsWith('-')) {
    const word = rest.find((a) => !a.startsWith('-'));
    const example = word ? `idp ${command} ${word} ${rest.filter((a) => a !== word).join(' ')}` : `idp ${command} <subcommand> ${rest.join(' ')}`;
    throw new UsageError(`put the subcommand first: ${example} (see idp ${command} --help)`);
  }
  return [first, rest.slice(1)];
}

export async function run(argv: string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        io.out(HELP.main!);
        return command === undefined ? 2 : 0;
      case 'serve':
        await serveCommand(rest, io);
        return 0;
      case 'migrate':
        await migrateCommand(rest, io);
        return 0;
      case 'apps':
        await appsCommand(...splitSubcommand(command, rest), io);
        return 0;
      case 'users':
        await usersCommand(...splitSubcommand(command, rest), io);
        return 0;
      case 'keys':
        await keysCommand(...splitSubcommand(command, rest), io);
        return 0;
      case 'admin':
        await adminCommand(...splitSubcommand(command, rest), io);
        return 0;
      case 'env':
        for (const v of describeEnv()) io.out(`${v.name.padEnd(28)}${String(v.default ?? '(unset)').padEnd(24)}${v.description}`);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}" (see idp --help)`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`idp: ${error.message}`);
      return 2;
    }
    if (error instanceof AppError) {
      io.err(`idp: ${error.message}`);
      // One problem is already the message; several are listed.
      if ((error.details?.length ?? 0) > 1) for (const d of error.details!) io.err(`  - ${d.field}: ${d.message}`);
      return 1;
    }
    if (
      error instanceof ConfigError ||
      error instanceof DataDirBusyError ||
      error instanceof StaticApplicationsError ||
      error instanceof MigrationError
    ) {
      io.err(`idp: ${error.message}`);
      return 1;
    }
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      io.err(`idp: ${(error as Error).message}: another process listens there; set PORT or HOST`);
      return 1;
    }
    // Network failures, and PostgreSQL's connection classes 08 (connection), 28 (authorization:
    // wrong password, no pg_hba entry, unknown role), 3D000 (no such database), 57P03 (not accepting).
    if (
      ['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH', '3D000', '57P03'].includes(code ?? '') ||
      /^(08|28)/.test(code ?? '') ||
      /timeout exceeded when trying to connect|Connection terminated/i.test((error as Error).message ?? '')
    ) {
      io.err(`idp: cannot reach the database: ${(error as Error).message}`);
      return 1;
    }
    if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EACCES') {
      io.err(`idp: cannot use the data directory: ${(error as Error).message} (DATA_DIR must be a writable directory)`);
      return 1;
    }
    io.err(`idp: unexpected error: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

const isMain = process.argv[1] && /(?:^|[\\/])(?:cli\.(?:ts|js)|idp(?:\.js)?)$/.test(process.argv[1]);
if (isMain) {
  const io: Io = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    stdin: () => readFileSync(0, 'utf8'),
  };
  run(process.argv.slice(2), io).then((code) => {
    // serve keeps running; everything else ends here.
    if (process.argv[2] !== 'serve' || code !== 0) process.exitCode = code;
  });
}
