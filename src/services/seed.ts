// Applies a checked seed file (src/seed.ts) in one transaction: a bad entry leaves the database as it was.
// Idempotent: an entry that exists and matches the file changes nothing (no write, no audit event); one
// that exists and differs in a field the file gives is updated to the file (the outcome names the
// fields); fields the file leaves out keep whatever the database has (their defaults apply at creation
// only). A user's password is set when the user is created, or when the user has none: a password the
// user (or an admin) changed later is kept. The writes go through the application and user services,
// so they validate, audit and revoke exactly as the admin API does.
//
// The seed takes over no row it did not create (issue 31): the rows it creates are marked (created_by =
// 'seed', 0015-created-by), and an entry whose user (by e-mail address) or application (by client id)
// exists unmarked (signed up, made by an operator) stops the whole seed with an error naming it, before
// anything is written. Unless the entry says "replace": true: then the row becomes what the seed would
// have created (the file's fields, creation defaults for the others, the file's password or none), every
// session, token, code, consent and mailed link of the account is revoked (the operator's password-change
// path, services/revocation.ts), the row is marked as the seed's and 'user.replaced_by_seed' (or
// 'application.replaced_by_seed') is audited, in the seed's transaction. Once marked, later runs treat it
// as any seeded row: idempotent and quiet.
import { sql } from 'kysely';
import type { Db, Tx } from '../../db/create-db.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { deleteConsents } from '../../db/repositories/consents.js';
import { deleteUserEmailVerificationTokens } from '../../db/repositories/email-verification.js';
import { findLiveClientSecret } from '../../db/repositories/client-secrets.js';
import { findUserByEmail, updateUserRow } from '../../db/repositories/users.js';
import { hashToken } from '../oauth/tokens.js';
import { DEFAULT_ALLOWED_SCOPES } from '../oauth/scopes.js';
import { DEFAULT_GRANT_TYPES, type Application, type ApplicationCreate } from '../domain/application.js';
import type { User, UserCreate } from '../domain/user.js';
import {
  settingsOfCreate,
  type UpstreamProviderCreate,
  type UpstreamProviderUpdate,
} from '../domain/upstream-config.js';
import type { UpstreamProvider } from '../domain/upstream.js';
import type { PasswordHasher } from '../passwords.js';
import type { ResourceServer, ResourceServerCreate, ResourceServerUpdate } from '../domain/resource-server.js';
import { AppError, validationError } from '../errors.js';
import { SeedError, type SeedPlan, type SeedProblem } from '../seed.js';
import { createApplicationService, type ActorContext, type StaticApplications } from './applications.js';
import { createResourceServerService } from './resource-servers.js';
import { revokeUserAccess } from './revocation.js';
import { toUser } from './rows.js';
import { createUserService } from './users.js';

export interface SeedOutcome {
  type: 'application' | 'user' | 'upstream' | 'resource';
  /** The client id, the e-mail address, the upstream provider's id, or the resource server's identifier. */
  key: string;
  /** The user's id. */
  id?: string;
  action: 'created' | 'updated' | 'replaced' | 'unchanged';
  /** For updated and replaced: the fields set to the file's values. */
  fields: string[];
}

/** What the seed needs of the upstream provider store (src/services/upstreams/providers.ts). */
export interface SeedUpstreamStore {
  get(id: string): Promise<UpstreamProvider | undefined>;
  credentials(id: string): Promise<{ clientSecret: string | null } | undefined>;
  create(input: UpstreamProviderCreate, context: ActorContext): Promise<unknown>;
  update(id: string, input: UpstreamProviderUpdate, context: ActorContext): Promise<unknown>;
}

/** What the seed needs of the resource-server registry (src/services/resource-servers.ts), over its transaction. */
export interface SeedResourceStore {
  find(identifier: string): Promise<ResourceServer | undefined>;
  create(input: ResourceServerCreate, context: ActorContext): Promise<unknown>;
  update(identifier: string, input: ResourceServerUpdate, context: ActorContext): Promise<unknown>;
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

/** JSON with every object's keys sorted: a JWK Set read back from jsonb has its keys in another order. */
const canonical = (value: unknown): string =>
  JSON.stringify(value ?? null, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);

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
  'requireMfa',
  'tokenEndpointAuthMethod',
  'pkce',
  'grantTypes',
  'jwks',
  'jwksUri',
] as const satisfies Array<keyof ApplicationCreate & keyof Application>;

/** What an application the seed creates has in the fields its entry leaves out. */
const APP_DEFAULTS = {
  clientDescription: null,
  clientLogoUrl: null,
  allowedWebOrigins: [],
  postLogoutRedirectUris: [],
  postVerificationRedirectPath: null,
  allowedScopes: [...DEFAULT_ALLOWED_SCOPES],
  enabled: true,
  requireMfa: false,
  tokenEndpointAuthMethod: 'none',
  pkce: 'required',
  grantTypes: [...DEFAULT_GRANT_TYPES],
  jwks: null,
  jwksUri: null,
} satisfies Partial<ApplicationCreate>;

/** What a user the seed creates has in the fields its entry leaves out (emailVerified: the parser's true). */
const USER_DEFAULTS = {
  name: null,
  givenName: null,
  familyName: null,
  picture: null,
  permissions: [],
  disabled: false,
  role: 'user',
} satisfies Partial<UserCreate>;

const takeoverMessage = (what: string, origin: string, then: string, key: string) =>
  `${what} exists and was not created by the seed (${origin}): the seed does not take it over. To make it ` +
  `this entry (${then}), add "replace": true to the entry; otherwise remove the entry or change its ${key}.`;

export async function applySeed(
  deps: {
    db: Db;
    staticApplications: StaticApplications;
    passwords: Pick<PasswordHasher, 'hash'>;
    /**
     * The upstream provider store over the seed's transaction (createUpstreamProviderStore, which seals with
     * SECRET_KEY): needed when the file has upstreams. Handed in: services/upstreams sits above this module.
     */
    upstreams?: ((db: Db) => SeedUpstreamStore) | undefined;
    /**
     * The resource-server registry over the seed's transaction (resourceStoreFor): needed when the file has
     * resourceServers. Handed in, so the server's own registry can drop its cached list after the seed.
     */
    resourceServers?: ((db: Db) => SeedResourceStore) | undefined;
  },
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
    const users = createUserService({ db, passwords: deps.passwords });

    // Rows the seed did not create, before anything is written: every one named, nothing changed.
    const foreign: SeedProblem[] = [];
    const appOwners = new Map<string, string | null | undefined>();
    for (const { entry, input, replace } of plan.applications) {
      const owner = await apps.createdBy(input.clientId);
      appOwners.set(input.clientId, owner);
      if (owner !== undefined && owner !== 'seed' && !replace) {
        foreign.push({
          entry,
          field: '',
          message: takeoverMessage(
            `the application ${input.clientId}`,
            'an operator made it',
            "the file's fields",
            'client id',
          ),
        });
      }
    }
    for (const { entry, input, replace } of plan.users) {
      const row = await findUserByEmail(trx, input.email);
      if (row && row.created_by !== 'seed' && !replace) {
        foreign.push({
          entry,
          field: '',
          message: takeoverMessage(
            `an account with the address ${row.email}`,
            'it signed up, or an operator made it',
            "the file's fields and password; every session and token of it revoked",
            'address',
          ),
        });
      }
    }
    if (foreign.length) throw new SeedError(plan.file, foreign);

    /**
     * The secret in the environment becomes the application's current one unless it is already (then nothing
     * changes): the previous secrets end at once. Whether it changed: "clientSecret" among the outcome's fields.
     */
    const secretChanged = async (clientId: string, secret: string | undefined): Promise<boolean> => {
      if (secret === undefined) return false;
      const current = await findLiveClientSecret(trx, clientId, hashToken(secret));
      if (current && current.expires_at === null) return false;
      if (!options.dryRun) await apps.rotateSecret(clientId, { overlapSeconds: 0, secret }, context);
      return true;
    };

    for (const { input, clientSecret } of plan.applications) {
      const found = await apps.find(input.clientId);
      if (!found) {
        if (!options.dryRun) await apps.create(input, context, { createdBy: 'seed', clientSecret });
        outcomes.push({ type: 'application', key: input.clientId, action: 'created', fields: [] });
        continue;
      }
      if (appOwners.get(input.clientId) !== 'seed') {
        // "replace": true (checked above): what creating it from the file would have given, and marked.
        const wanted = { ...APP_DEFAULTS, ...input };
        const fields = APP_FIELDS.filter((k) => !same(found[k], wanted[k]));
        if (!options.dryRun) {
          const { clientId: _id, ...update } = wanted;
          await apps.update(input.clientId, update, context, { createdBy: 'seed' });
          await appendAuditEvent(trx, {
            type: 'application.replaced_by_seed',
            actor: context.actor,
            ip: context.ip,
            clientId: input.clientId,
            detail: { fields },
          });
        }
        const secret = (await secretChanged(input.clientId, clientSecret)) ? ['clientSecret'] : [];
        outcomes.push({ type: 'application', key: input.clientId, action: 'replaced', fields: [...fields, ...secret] });
        continue;
      }
      const given = APP_FIELDS.filter((k) => input[k] !== undefined);
      const fields: string[] = given.filter((k) => !same(found[k], input[k]));
      if (fields.length && !options.dryRun) {
        await apps.update(
          input.clientId,
          Object.fromEntries(fields.map((k) => [k, input[k as keyof typeof input]])),
          context,
        );
      }
      if (await secretChanged(input.clientId, clientSecret)) fields.push('clientSecret');
      const action = fields.length ? 'updated' : 'unchanged';
      outcomes.push({ type: 'application', key: input.clientId, action, fields });
    }

    for (const { input, given } of plan.users) {
      const row = await findUserByEmail(trx, input.email);
      if (!row) {
        const created = options.dryRun ? undefined : await users.create(input, context, { createdBy: 'seed' });
        outcomes.push({ type: 'user', key: input.email, id: created?.id, action: 'created', fields: [] });
        continue;
      }
      const current: User = toUser(row);
      if (row.created_by !== 'seed') {
        // "replace": true (checked above).
        const wanted: UserCreate = { ...USER_DEFAULTS, ...input };
        const compared = [...Object.keys(USER_DEFAULTS), 'emailVerified', ...given].filter(
          (k) => k !== 'password',
        ) as Array<keyof UserCreate>;
        const fields: string[] = [
          ...new Set(changedFields<UserCreate>(current as unknown as UserCreate, wanted, compared)),
        ];
        if (input.password !== undefined || current.hasPassword) fields.push('password');
        if (!options.dryRun) await replaceUser(trx, users, current, wanted, fields, context);
        outcomes.push({ type: 'user', key: current.email, id: current.id, action: 'replaced', fields });
        continue;
      }
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

    await seedUpstreams(db, plan, deps, context, options, outcomes);
    await seedResourceServers(db, plan, deps, context, options, outcomes);
  };
  await deps.db.transaction().execute(run);
  return outcomes;
}

/**
 * The file's upstream providers (issue 35), by id: a missing one is created (a private_key_jwt one gets its key);
 * an existing one is updated in the fields the file gives (or its preset fills) that differ, and its secret when
 * the variable's differs from the stored one. The seed owns the ids it lists: a provider an operator made with
 * such an id becomes the file's. Validated, sealed and audited by the provider store, as the admin API does.
 */
async function seedUpstreams(
  db: Db,
  plan: SeedPlan,
  deps: { upstreams?: ((db: Db) => SeedUpstreamStore) | undefined },
  context: ActorContext,
  options: SeedOptions,
  outcomes: SeedOutcome[],
): Promise<void> {
  const list = plan.upstreams ?? [];
  if (list.length === 0) return;
  if (!deps.upstreams) throw new Error('applySeed: the file has upstreams, and no upstream store was given');
  const providers = deps.upstreams(db);
  for (const { input, given } of list) {
    const { settings } = settingsOfCreate(input);
    const current = await providers.get(input.id);
    if (!current) {
      if (!options.dryRun) await providers.create(input, context);
      outcomes.push({ type: 'upstream', key: input.id, action: 'created', fields: [] });
      continue;
    }
    const fields = given.filter(
      (k) => k !== 'clientSecret' && !same(current[k as keyof typeof current], settings[k as keyof typeof settings]),
    );
    const secretChanged =
      typeof input.clientSecret === 'string' &&
      settings.clientAuth !== 'private_key_jwt' &&
      (await providers.credentials(input.id))?.clientSecret !== input.clientSecret;
    if ((fields.length || secretChanged) && !options.dryRun) {
      const update = Object.fromEntries(fields.map((k) => [k, settings[k as keyof typeof settings]]));
      await providers.update(
        input.id,
        { ...update, ...(secretChanged && { clientSecret: input.clientSecret as string }) },
        context,
      );
    }
    const all = secretChanged ? [...fields, 'clientSecret'] : fields;
    outcomes.push({ type: 'upstream', key: input.id, action: all.length ? 'updated' : 'unchanged', fields: all });
  }
}

/**
 * The file's resource servers (issue 36), by identifier: a missing one is created; an existing one is updated in the
 * fields the file gives that differ. The seed owns the identifiers it lists (no "created by" mark), as for upstream
 * providers. The registry's rules that need the database (the built-in identifier, a scope name another server
 * holds) come back as the seed's problems, naming the entry.
 */
async function seedResourceServers(
  db: Db,
  plan: SeedPlan,
  deps: { resourceServers?: ((db: Db) => SeedResourceStore) | undefined },
  context: ActorContext,
  options: SeedOptions,
  outcomes: SeedOutcome[],
): Promise<void> {
  const list = plan.resourceServers ?? [];
  if (list.length === 0) return;
  if (!deps.resourceServers) throw new Error('applySeed: the file has resourceServers, and no registry was given');
  const registry = deps.resourceServers(db);
  for (const { entry, input, given } of list) {
    try {
      const current = await registry.find(input.identifier);
      if (current?.builtIn)
        throw validationError([
          { field: 'identifier', message: 'is the built-in resource (/api/external), not declared' },
        ]);
      if (!current) {
        if (!options.dryRun) await registry.create(input, context);
        outcomes.push({ type: 'resource', key: input.identifier, action: 'created', fields: [] });
        continue;
      }
      const fields = given.filter((k) => !same(current[k], input[k]));
      if (fields.length && !options.dryRun) {
        await registry.update(input.identifier, Object.fromEntries(fields.map((k) => [k, input[k]])), context);
      }
      const action = fields.length ? 'updated' : 'unchanged';
      outcomes.push({ type: 'resource', key: input.identifier, action, fields });
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode !== 400) throw error;
      const details = error.details ?? [{ field: '', message: error.message }];
      throw new SeedError(
        plan.file,
        details.map((d) => ({ entry, field: d.field.replace(/\.(\d+)(?=\.|$)/g, '[$1]'), message: d.message })),
      );
    }
  }
}

/** The registry the seed writes through (its transaction as `db`); `onChange`: after each change. */
export function resourceStoreFor(
  config: { baseUrl: string; ttl: { accessToken: number } },
  onChange?: () => void,
): (db: Db) => SeedResourceStore {
  return (db) =>
    createResourceServerService({ db, baseUrl: config.baseUrl, accessTokenTtl: config.ttl.accessToken, onChange });
}

/**
 * Takes an account over for the seed ("replace": true): the file's fields and password (none when the file
 * gives none), and everything the previous holder had is ended, as an operator's password change ends it
 * (revokeUserAccess: sessions, grants with their tokens, unexchanged codes, reset links, e-mail changes),
 * plus the verification links and the consents; marked as the seed's; audited. In the seed's transaction.
 */
async function replaceUser(
  trx: Tx,
  users: ReturnType<typeof createUserService>,
  current: User,
  wanted: UserCreate,
  fields: string[],
  context: ActorContext,
): Promise<void> {
  // The file's address matches the row's, but for case: the file's spelling, as for a seeded row.
  await users.update(current.id, wanted, context, { createdBy: 'seed' });
  if (wanted.password === undefined && current.hasPassword) {
    await updateUserRow(trx, current.id, { password_hash: null });
  }
  // After a new password the operator's path has revoked already; this ends the rest in the other cases.
  await revokeUserAccess(trx, current.id, { reason: 'replaced_by_seed', actor: context.actor, ip: context.ip });
  await deleteUserEmailVerificationTokens(trx, current.id);
  await deleteConsents(trx, current.id);
  await appendAuditEvent(trx, {
    type: 'user.replaced_by_seed',
    actor: context.actor,
    ip: context.ip,
    userId: current.id,
    detail: { fields },
  });
}

/** `created application ci-app`, `updated user ci@example.com (name, permissions)`; dry run: `would create ...`. */
export function describeOutcome(o: SeedOutcome, dryRun = false): string {
  const verb = !dryRun || o.action === 'unchanged' ? o.action : `would ${o.action.replace(/d$/, '')}`;
  return `${verb} ${o.type} ${o.key}${o.fields.length ? ` (${o.fields.join(', ')})` : ''}`;
}
