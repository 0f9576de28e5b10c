// `idp registration-tokens ...`: the initial access tokens of REGISTRATION=token (RFC 7591 §3), over the same
// service as the admin API. A token is printed once, by create; only its hash is stored.
import { checkSubcommand, noArguments, one, parse } from './args.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { UsageError } from './errors.js';
import { printList, type Io } from './io.js';

export const REGISTRATION_TOKENS_HELP = `Usage: idp registration-tokens <list|create|revoke> [options]

  list                                  the live initial access tokens (never the tokens themselves)
  create [--description TEXT] [--days N] [--uses N]
                                        a new token, printed once: a client registers with
                                        Authorization: Bearer <token> at {issuer}/register (REGISTRATION=token).
                                        --days: lifetime, 1-365 (default 7); --uses: registrations it allows
                                        (default: any number until it expires)
  revoke <id> --yes                     delete it now`;

const intOption = (value: unknown, name: string): number | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,7}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
};

export async function registrationTokensCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const options =
    sub === 'create'
      ? { description: { type: 'string' }, days: { type: 'string' }, uses: { type: 'string' } }
      : ({} as const);
  const { values, positionals } = parse(rest, options as never);
  if (values.help || !sub) return io.out(REGISTRATION_TOKENS_HELP);
  checkSubcommand('registration-tokens', sub, ['list', 'create', 'revoke']);
  if (sub === 'revoke') {
    one(positionals, 'token id');
    if (!values.yes) throw new UsageError('revoking stops every registration with that token: add --yes to confirm');
  } else noArguments(positionals);
  const days = intOption(values.days, 'days');
  const uses = intOption(values.uses, 'uses');
  await withServices(loadCliConfig(io), `idp registration-tokens ${sub}`, io, async ({ selfRegistration }) => {
    if (sub === 'create') {
      const created = await selfRegistration.createInitialToken(
        {
          ...(typeof values.description === 'string' && { description: values.description }),
          ...(days !== undefined && { expiresInDays: days }),
          ...(uses !== undefined && { uses }),
        },
        actor(),
      );
      if (values.json) return io.out(JSON.stringify(created, null, 2));
      io.out(created.token);
      io.err(
        `Initial access token ${created.id}, until ${created.expiresAt}` +
          `${created.usesLeft === null ? '' : `, for ${created.usesLeft} registration(s)`}. It is not shown again.`,
      );
      return;
    }
    if (sub === 'revoke') {
      await selfRegistration.revokeInitialToken(positionals[0]!, actor());
      if (!values.json) io.err(`Revoked ${positionals[0]}.`);
      return;
    }
    printList(
      io,
      Boolean(values.json),
      { items: await selfRegistration.listInitialTokens() },
      {
        empty: 'No live initial access tokens.',
        header: ['ID', 'USES LEFT', 'EXPIRES', 'CREATED BY', 'DESCRIPTION'],
        row: (t) => [
          t.id,
          t.usesLeft === null ? 'any' : String(t.usesLeft),
          t.expiresAt,
          t.createdBy,
          t.description ?? '',
        ],
        command: 'idp registration-tokens list',
      },
    );
  });
}
