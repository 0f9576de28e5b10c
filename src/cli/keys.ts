import { resolveSecretKey } from '../secret-key.js';
import { checkSubcommand, noArguments, one, parse } from './args.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { UsageError } from './errors.js';
import { printList, type Io } from './io.js';

export const KEYS_HELP = `Usage: idp keys <list|rotate|retire> [options]

  list                 published keys: next (published, not signing), current (signing), retired
  rotate [--force]     next becomes current, current becomes retired, a new next is published.
                       Refused while the next key is younger than the JWKS cache lifetime plus the
                       refresh interval (360 s), unless --force. Running servers pick it up within 60 s.
  retire <kid> --yes   stop publishing a next or retired key now (e.g. a compromised key)

Needs SECRET_KEY (in development, the one generated in DATA_DIR).`;

export async function keysCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, sub === 'rotate' ? { force: { type: 'boolean' } } : {});
  if (values.help || !sub) return io.out(KEYS_HELP);
  checkSubcommand('keys', sub, ['list', 'rotate', 'retire']);
  if (sub !== 'retire') noArguments(positionals);
  if (sub === 'retire') {
    const kid = one(positionals, 'key id');
    if (!values.yes) {
      throw new UsageError(
        `retiring ${kid} removes it from the JWKS now, and tokens it signed stop verifying: add --yes to confirm`,
      );
    }
  }
  const config = resolveSecretKey(loadCliConfig(io), { warn: () => {} });
  await withServices(config, `idp keys ${sub}`, io, async ({ signingKeys: service }) => {
    let keys: Awaited<ReturnType<typeof service.list>>;
    if (sub === 'list') {
      keys = await service.list();
    } else if (sub === 'rotate') {
      keys = await service.rotate(actor(), { force: Boolean(values.force) });
      if (!values.json) io.err('Rotated. Running servers sign with the new current key within 60 s.');
    } else {
      keys = await service.retire(positionals[0]!, actor());
    }
    printList(
      io,
      Boolean(values.json),
      { items: keys },
      {
        empty: 'No keys yet: the server generates them at its first start.',
        header: ['KID', 'ALG', 'STATE', 'CREATED', 'ACTIVATED', 'RETIRED'],
        row: (k) => [k.kid, k.alg, k.state, k.createdAt, k.activatedAt ?? '-', k.retiredAt ?? '-'],
      },
    );
  });
}
