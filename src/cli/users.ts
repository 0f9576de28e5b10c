import type { User } from '../domain/user.js';
import type { ActorContext } from '../services/applications.js';
import { clearable, compact, flagPair, LIST_OPTIONS, noArguments, one, parse } from './args.js';
import type { Options, Values } from './args.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { UsageError } from './errors.js';
import { printList, type Io } from './io.js';
import { checkRecordRequest, checkRecordSubcommand, runRecordSubcommand, type RecordKind } from './records.js';

export const USERS_HELP = `Usage: idp users <create|list|show|update|enable|disable|delete> [options]

  create   --email EMAIL [--password-stdin | --password PASSWORD] [options]
  list     [--search TEXT] [--limit N] [--cursor C]
  show     <id or e-mail>
  update   <id or e-mail> [options]
  enable   <id or e-mail>
  disable  <id or e-mail>
  delete   <id or e-mail> --yes
  sessions <id or e-mail> [--revoke [--session ID]]   list, or revoke all (or one) sessions and their tokens
  grants   <id or e-mail> [--revoke [--grant ID]]     list, or revoke all (or one) grants, their tokens and consents
  factors  <id or e-mail> [--remove ID --yes]         list the second factors (passkeys, authenticator app,
                                                      recovery codes), or remove one (a passkey id, totp or
                                                      recovery-codes)
  reset-factors <id or e-mail> --yes                  remove every second factor of a user who lost them
  identities <id or e-mail> [--unlink ID]             list the identities linked at upstream providers, or
                                                      unlink one (never the last way to sign in)
  (removing factors ends every session of the user, mails the user and is audited)

Options for create and update:
  --email EMAIL                   update only changes it when given
  --password-stdin                read the password from standard input (preferred)
  --password PASSWORD             visible to other local users in the process list; avoid
  --name NAME  --given-name NAME  --family-name NAME  --picture URL   ("" clears on update)
  --verified / --unverified       e-mail verification state
  --permission P                  repeat for several; replaces the list on update (--no-permissions clears)
  --disabled / --enabled
  --admin / --no-admin            the admin role: may sign in to the admin web (ADMIN_URL)`;

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

const SUBCOMMAND_OPTIONS = new Map<string | undefined, Options>([
  ['list', LIST_OPTIONS],
  ['create', USER_OPTIONS],
  ['update', USER_OPTIONS],
  ['sessions', { revoke: { type: 'boolean' }, session: { type: 'string' } }],
  ['grants', { revoke: { type: 'boolean' }, grant: { type: 'string' } }],
  ['factors', { remove: { type: 'string' } }],
  ['identities', { unlink: { type: 'string' } }],
]);

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

function passwordOf(values: Values, io: Io): string | undefined {
  if (values.password !== undefined && values['password-stdin']) {
    throw new UsageError('give --password or --password-stdin, not both');
  }
  if (values['password-stdin']) return io.stdin().replace(/\r?\n$/, '');
  return values.password as string | undefined;
}

/** What create and update send to the service: absent options stay absent. */
function userInput(sub: string, values: Values, password: string | undefined): Record<string, unknown> {
  const flags = sub === 'create' || sub === 'update';
  const role = (admin: boolean | undefined) => (admin === undefined ? undefined : admin ? 'admin' : 'user');
  // In this order: with several contradictions, the first one is reported.
  return compact({
    email: values.email as string | undefined,
    password,
    name: clearable(values.name),
    givenName: clearable(values['given-name']),
    familyName: clearable(values['family-name']),
    picture: clearable(values.picture),
    emailVerified: flags ? flagPair(values, 'verified', 'unverified') : undefined,
    permissions: values['no-permissions'] ? [] : (values.permission as string[] | undefined),
    disabled: flags ? flagPair(values, 'disabled', 'enabled') : undefined,
    role: flags ? role(flagPair(values, 'admin', 'no-admin')) : undefined,
  }) as Record<string, unknown>;
}

const USERS: RecordKind<User> = {
  command: 'users',
  noun: 'user',
  what: 'user id or e-mail',
  alternative: 'disable the user instead',
  id: (u) => u.id,
  describe: describeUser,
  list: {
    empty: 'No users.',
    header: ['ID', 'E-MAIL', 'VERIFIED', 'DISABLED', 'NAME'],
    row: (u) => [u.id, u.email, u.emailVerified ? 'yes' : 'no', u.disabled ? 'yes' : 'no', u.name ?? ''],
    command: 'idp users list',
  },
};

export async function usersCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, SUBCOMMAND_OPTIONS.get(sub) ?? {});
  if (values.help || !sub) return io.out(USERS_HELP);
  if (sub === 'sessions' || sub === 'grants') return userAccessCommand(sub, values, positionals, io);
  if (sub === 'factors' || sub === 'reset-factors') return userFactorsCommand(sub, values, positionals, io);
  if (sub === 'identities') return userIdentitiesCommand(values, positionals, io);
  checkRecordSubcommand(USERS, sub);

  const password = passwordOf(values, io);
  if (values.permission && values['no-permissions']) {
    throw new UsageError('--permission and --no-permissions contradict each other');
  }
  if (sub === 'create') {
    noArguments(positionals);
    if (!values.email) throw new UsageError('--email is required');
  }
  const request = { sub, values, positionals, input: userInput(sub, values, password) };
  checkRecordRequest(USERS, request);

  const config = loadCliConfig(io);
  // A password set by update is announced by mail like a completed reset (SMTP_URL, else DATA_DIR/outbox.jsonl):
  // the services send it, and the mail goes before the command ends.
  await withServices(config, `idp users ${sub}`, io, async ({ users }) => {
    const setEnabled = (ref: string, enabled: boolean, context: ActorContext) =>
      users.setDisabled(ref, !enabled, context);
    await runRecordSubcommand(io, USERS, request, users, setEnabled);
  });
}

/** `idp users sessions|grants <user> [--revoke [--session ID | --grant ID]]`. */
async function userAccessCommand(
  sub: 'sessions' | 'grants',
  values: Values,
  positionals: string[],
  io: Io,
): Promise<void> {
  const ref = one(positionals, 'user id or e-mail');
  const single = (values.session ?? values.grant) as string | undefined;
  if (single && !values.revoke) {
    throw new UsageError(`--${sub === 'sessions' ? 'session' : 'grant'} goes with --revoke`);
  }
  const json = Boolean(values.json);
  const config = loadCliConfig(io);
  await withServices(config, `idp users ${sub}`, io, async ({ access }) => {
    if (values.revoke) {
      const result =
        sub === 'sessions'
          ? await access.revokeSessions(ref, actor(), single)
          : await access.revokeGrants(ref, actor(), single);
      const sessions = 'sessions' in result ? `${result.sessions} session(s) and ` : '';
      return io.out(json ? JSON.stringify(result) : `Revoked ${sessions}${result.grants} grant(s) with their tokens`);
    }
    if (sub === 'sessions') {
      return printList(
        io,
        json,
        { items: await access.listSessions(ref) },
        {
          empty: 'No sessions.',
          header: ['SESSION', 'ACTIVE', 'SIGNED IN', 'LAST SEEN', 'IP'],
          row: (s) => [s.id, s.active ? 'yes' : 'no', s.authTime, s.lastSeenAt, s.ip ?? '-'],
        },
      );
    }
    printList(
      io,
      json,
      { items: await access.listGrants(ref) },
      {
        empty: 'No grants.',
        header: ['GRANT', 'CLIENT ID', 'SCOPE', 'CREATED', 'REVOKED'],
        row: (g) => [g.id, g.clientId, g.scope, g.createdAt, g.revokedAt ?? '-'],
      },
    );
  });
}

/** `idp users factors <user> [--remove ID --yes]` and `idp users reset-factors <user> --yes` (issue 34). */
async function userFactorsCommand(
  sub: 'factors' | 'reset-factors',
  values: Values,
  positionals: string[],
  io: Io,
): Promise<void> {
  const ref = one(positionals, 'user id or e-mail');
  const remove = values.remove as string | undefined;
  if (remove === '') throw new UsageError('--remove needs a factor id (a passkey id, totp or recovery-codes)');
  if ((sub === 'reset-factors' || remove) && !values.yes) {
    const what = remove ? `removing the second factor ${remove}` : 'removing every second factor';
    throw new UsageError(`${what} of ${ref} ends every session of the user and cannot be undone: add --yes to confirm`);
  }
  const json = Boolean(values.json);
  const config = loadCliConfig(io);
  await withServices(config, `idp users ${sub}`, io, async ({ users, factors }) => {
    const user = await users.get(ref);
    if (sub === 'reset-factors') {
      const gone = await factors.resetAll(user.id, actor());
      return io.out(
        json
          ? JSON.stringify(gone)
          : `Removed ${gone.passkeys} passkey(s), ${gone.totp} authenticator app(s) and ${gone.recoveryCodes} ` +
              `recovery code(s) of ${user.email}; every session ended, the user was told by mail`,
      );
    }
    if (remove) {
      const removed = await factors.removeOne(user.id, remove, actor());
      return io.out(
        json
          ? JSON.stringify(removed)
          : `Removed the second factor ${remove} of ${user.email}; every session ended, the user was told by mail`,
      );
    }
    printList(
      io,
      json,
      { items: await factors.list(user.id) },
      {
        empty: 'No second factors.',
        header: ['ID', 'TYPE', 'NAME', 'CREATED', 'LAST USED', 'DETAILS'],
        row: (f) => [
          f.id,
          f.kind,
          f.name,
          f.createdAt,
          f.lastUsedAt ?? '-',
          f.kind === 'recovery_code'
            ? `${f.remaining ?? 0} unused`
            : f.kind === 'passkey'
              ? f.backedUp
                ? 'synced'
                : 'device-bound'
              : '-',
        ],
      },
    );
  });
}

/**
 * `idp users identities <user> [--unlink ID]` (issue 35): the identities linked at upstream providers. Unlinking keeps
 * the last-method rule (a user with no password, passkey or other link keeps it: set a password first).
 */
async function userIdentitiesCommand(values: Values, positionals: string[], io: Io): Promise<void> {
  const ref = one(positionals, 'user id or e-mail');
  const unlink = values.unlink as string | undefined;
  if (unlink === '') throw new UsageError('--unlink needs an identity id (see idp users identities <user>)');
  const json = Boolean(values.json);
  const config = loadCliConfig(io);
  await withServices(config, 'idp users identities', io, async ({ users, upstreams }) => {
    const user = await users.get(ref);
    if (unlink) {
      await upstreams.identities.unlink(user.id, unlink, { ip: null, actor: actor().actor });
      return io.out(json ? JSON.stringify({ unlinked: unlink }) : `Unlinked identity ${unlink} of ${user.email}`);
    }
    printList(
      io,
      json,
      { items: await upstreams.identities.listForUser(user.id) },
      {
        empty: 'No linked identities.',
        header: ['ID', 'PROVIDER', 'SUBJECT', 'E-MAIL', 'LINKED', 'LAST USED'],
        row: (i) => [i.id, i.providerId, i.subject, i.email ?? '-', i.createdAt, i.lastUsedAt ?? '-'],
      },
    );
  });
}
