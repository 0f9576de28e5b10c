import { AppError } from '../errors.js';
import { checkSubcommand, noArguments, parse } from './args.js';
import { loadCliConfig, withServices } from './context.js';
import type { Io } from './io.js';

export const ADMIN_HELP = `Usage: idp admin setup-link [--json]

  setup-link   while no admin user exists, print a one-time link (ADMIN_URL/setup?token=...) that
               creates the first admin; it works once, for ADMIN_SETUP_TTL seconds. The link is printed
               here only, never logged. In development the server prints one at start as well.
               Alternative: idp users create --admin --email EMAIL --password-stdin`;

export async function adminCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help || !sub) return io.out(ADMIN_HELP);
  checkSubcommand('admin', sub, ['setup-link']);
  noArguments(positionals);
  const config = loadCliConfig(io);
  await withServices(config, 'idp admin setup-link', io, async ({ adminSetup }) => {
    const link = await adminSetup.issueLink();
    if (!link) {
      throw new AppError(
        409,
        'ADMIN_EXISTS',
        `an admin exists already: sign in at ${config.adminUrl}, ` +
          'or make a user an admin with idp users update <e-mail> --admin',
      );
    }
    const expiresAt = new Date(Date.now() + config.ttl.adminSetup * 1000).toISOString();
    if (values.json) return io.out(JSON.stringify({ link, expiresAt }));
    io.err(`Open this link to create the first admin. It works once, until ${expiresAt}:`);
    io.out(link);
  });
}
