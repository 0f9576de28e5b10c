import { resolve } from 'node:path';
import { refuseInMemory } from '../database.js';
import { createPasswordHasher } from '../passwords.js';
import { loadSeedFile } from '../seed.js';
import { resolveSecretKey } from '../secret-key.js';
import { upstreamStoreFor } from '../services/upstreams/providers.js';
import { applySeed, describeOutcome, resourceStoreFor, type SeedOutcome } from '../services/seed.js';
import { loadStaticApplications } from '../static-applications.js';
import { one, parse } from './args.js';
import { actor, loadCliConfig, withDatabase } from './context.js';
import type { Io } from './io.js';

export const SEED_HELP = `Usage: idp seed FILE [--dry-run] [--json]

Creates the applications, users, upstream providers and resource servers (APIs) a JSON seed file
declares, in one transaction (a bad entry changes nothing). Idempotent: an entry that exists and
matches is left alone; one that differs in a field the file gives is updated to the file. A user's
password comes from the environment variable its "passwordEnv" names, and is set only when the user
is created or has none. The seed takes over
no user or application it did not create: such an entry stops the seed with an error naming it,
unless the entry says "replace": true (then the file's fields and password are set and every
session and token of the account is revoked; once, after which the row is the seed's).
A client_secret_basic/post application's secret comes from the variable its "clientSecretEnv" names
(never from the file); a re-seed replaces the stored secret only when the variable's differs. So does an
upstream provider's ("upstreams": the admin API's fields, "preset": "github", "clientSecretEnv").
"resourceServers" take the admin API's fields (identifier, name, scopes...); found by identifier.
  --dry-run   check the file and print what would change, without writing anything
The server applies the same file at every start with SEED_FILE=FILE (see the README, "Seed file").`;

export function summarize(outcomes: SeedOutcome[]): string {
  const count = (action: SeedOutcome['action']) => outcomes.filter((o) => o.action === action).length;
  const replaced = count('replaced');
  return (
    `${count('created')} created, ${count('updated')} updated, ${count('unchanged')} unchanged` +
    (replaced ? `, ${replaced} replaced` : '')
  );
}

export async function seedCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, { 'dry-run': { type: 'boolean' } });
  if (values.help) return io.out(SEED_HELP);
  const path = one(positionals, 'seed file');
  let config = loadCliConfig(io);
  refuseInMemory(config, 'idp seed');
  // Checked before the database is opened (and locked, and migrated).
  const plan = loadSeedFile(resolve(path), io.env);
  // Upstream secrets and keys are sealed with SECRET_KEY (in development, the key generated into DATA_DIR).
  if (plan.upstreams?.length) config = resolveSecretKey(config, { warn: () => {} });
  const staticApplications = loadStaticApplications(config.staticApplicationsFile);
  const dryRun = Boolean(values['dry-run']);
  const outcomes = await withDatabase(
    config,
    'idp seed',
    ({ db }) =>
      applySeed(
        {
          db,
          staticApplications,
          passwords: createPasswordHasher(config.passwordHash),
          upstreams: upstreamStoreFor(config),
          resourceServers: resourceStoreFor(config),
        },
        plan,
        actor(),
        { dryRun },
      ),
    io,
  );
  if (values.json) {
    return io.out(JSON.stringify({ file: plan.file, dryRun, results: outcomes }, null, 2));
  }
  for (const o of outcomes) io.out(describeOutcome(o, dryRun));
  io.err(`${plan.file}: ${summarize(outcomes)}${dryRun ? ' (dry run: nothing written)' : ''}`);
}
