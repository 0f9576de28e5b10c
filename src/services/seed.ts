// Applies a checked seed file (src/seed.ts) in one transaction: a bad entry leaves the database as it was.
// Idempotent: an entry that exists and matches the file changes nothing (no write, no audit event); one
// that exists and differs in a field the file gives is updated to the file (the outcome names the
// fields); fields the file leaves out keep whatever the database has (their defaults apply at creation
// only). A user's password is set when the user is created, or when the user has none: a password the
// user (or an admin) changed later is kept. The writes go through the application and user services,
// so they validate, audit and revoke exactly as the admin API does.
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/create-db.js';
import { findUserByEmail } from '../../db/repositories/users.js';
import type { Application, ApplicationCreate } from '../domain/application.js';
import type { User, UserCreate } from '../domain/user.js';
import { SeedError, type SeedPlan } from '../seed.js';
import { createApplicationService, type ActorContext, type StaticApplications } from './applications.js';
import { toUser } from './rows.js';
import { createUserService } from './users.js';

export interface SeedOutcome {
  type: 'application' | 'user';
  /** The client id, or the e-mail address. */
  key: string;
  /** The user's id. */
  id?: string;
  action: 'created' | 'updated' | 'unchanged';
  /** For updated: the fields set to the file's values. */
  fields: string[];
}

export interface SeedOptions {
  /** Work out the outcome without writing anything. */
  dryRun?: boolean;
}

/** A transaction that the services can open "transactions" on: they run in it (one commit for the seed). */
function asDb(trx: Tx): Db {
  return new Proxy(trx, {
    get(target, prop) {
      if (prop === 'transaction') return () => ({ execute: (run: (t: Tx) => Promise<unknown>) => run(target) });
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  }) as unknown as Db;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

function changedFields<T extends object>(current: T, wanted: Partial<T>, keys: Array<keyof T>): Array<keyof T> {
  return keys.filter((k) => !same(current[k], wanted[k]));
}

const APP_FIELDS = [
  'clientName',
  'clientDescription',
  'clientLogoUrl',
  'redirectUris',
  'allowedWebOrigins',
  'postLogoutRedirectUris',
  'postVerificationRedirectPath',
  'allowedScopes',
  'enabled',
] as const satisfies Array<keyof ApplicationCreate & keyof Application>;

export async function applySeed(
  deps: { db: Db; staticApplications: StaticApplications },
  plan: SeedPlan,
  context: ActorContext,
  options: SeedOptions = {},
): Promise<SeedOutcome[]> {
  const clash = plan.applications.filter((a) => deps.staticApplications.get(a.input.clientId));
  if (clash.length) {
    throw new SeedError(
      plan.file,
      clash.map((a) => ({
        entry: a.entry,
        field: 'clientId',
        message: `is a static application (${deps.staticApplications.source ?? 'STATIC_APPLICATIONS_FILE'}), read-only`,
      })),
    );
  }
  const outcomes: SeedOutcome[] = [];
  const run = async (trx: Tx) => {
    // Two instances seeding one PostgreSQL database at once: the second waits, then finds it seeded.
    await sql`select pg_advisory_xact_lock(hashtext('idp:seed'))`.execute(trx);
    const db = asDb(trx);
    const apps = createApplicationService({ db, staticApplications: deps.staticApplications, cacheSeconds: 0 });
    const users = createUserService({ db });

    for (const { input } of plan.applications) {
      const found = await apps.find(input.clientId);
      if (!found) {
        if (!options.dryRun) await apps.create(input, context);
        outcomes.push({ type: 'application', key: input.clientId, action: 'created', fields: [] });
        continue;
      }
      const given = APP_FIELDS.filter((k) => input[k] !== undefined);
      const fields = given.filter((k) => !same(found[k], input[k]));
      if (fields.length && !options.dryRun) {
        await apps.update(input.clientId, Object.fromEntries(fields.map((k) => [k, input[k]])), context);
      }
      const action = fields.length ? 'updated' : 'unchanged';
      outcomes.push({ type: 'application', key: input.clientId, action, fields });
    }

    for (const { input, given } of plan.users) {
      const row = await findUserByEmail(trx, input.email);
      if (!row) {
        const created = options.dryRun ? undefined : await users.create(input, context);
        outcomes.push({ type: 'user', key: input.email, id: created?.id, action: 'created', fields: [] });
        continue;
      }
      const current: User = toUser(row);
      const fields: Array<keyof UserCreate> = changedFields<UserCreate>(
        current as unknown as UserCreate,
        input,
        given.filter((k) => k !== 'password'),
      );
      if (input.password !== undefined && !current.hasPassword) fields.push('password');
      if (fields.length && !options.dryRun) {
        await users.update(current.id, Object.fromEntries(fields.map((k) => [k, input[k]])), context);
      }
      const action = fields.length ? 'updated' : 'unchanged';
      outcomes.push({ type: 'user', key: current.email, id: current.id, action, fields });
    }
  };
  await deps.db.transaction().execute(run);
  return outcomes;
}

/** `created application ci-app`, `updated user ci@example.com (name, permissions)`; dry run: `would create ...`. */
export function describeOutcome(o: SeedOutcome, dryRun = false): string {
  const verb = !dryRun || o.action === 'unchanged' ? o.action : `would ${o.action === 'created' ? 'create' : 'update'}`;
  return `${verb} ${o.type} ${o.key}${o.fields.length ? ` (${o.fields.join(', ')})` : ''}`;
}
