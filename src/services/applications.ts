// Application management: the one implementation behind the admin API, the CLI and (later) the admin web.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import * as repo from '../../db/repositories/applications.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import * as secrets from '../../db/repositories/client-secrets.js';
import { revokeClientRefreshTokens } from '../../db/repositories/grants.js';
import {
  ApplicationCreateSchema,
  ApplicationUpdateSchema,
  applicationProblems,
  clientAuthProblems,
  clientAuthSettings,
  clientSecretProblem,
  DEMO_CLIENT_ID,
  SECRET_METHODS,
  type Application,
  type ApplicationCreate,
  type ApplicationUpdate,
  type ClientAuthSettings,
} from '../domain/application.js';
import { AppError, conflict, notFound, validationError } from '../errors.js';
import { DEFAULT_ALLOWED_SCOPES } from '../oauth/scopes.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { randomString } from '../random.js';
import { assertSchema } from '../validate.js';
import { isUniqueViolation } from './db-errors.js';
import { toApplication } from './rows.js';

/** The PostgreSQL channel on which every instance hears of application changes (see invalidation.ts). */
export const APPLICATIONS_CHANNEL = repo.APPLICATIONS_CHANNEL;

export interface ActorContext {
  /** Who did it, for the audit trail: "admin-api", "cli:alice", a user id... */
  actor: string;
  ip?: string | undefined;
}

/** The built-in writers that mark the rows they create (applications.created_by, 0015-created-by). */
export type CreatedBy = 'seed' | 'demo';

export interface StaticApplications {
  get(clientId: string): Application | undefined;
  all(): Application[];
  source: string | undefined;
}

export interface ApplicationServiceDeps {
  db: Db;
  staticApplications: StaticApplications;
  /** Called after any change commits (drops caches such as the CORS origin list). */
  onChange?: (clientId: string) => void;
  /** How long a looked-up application is kept (default 60 s; 0: no cache). Unknown ids: 5 s at most. */
  cacheSeconds?: number;
}

export const APPLICATION_CACHE_SECONDS = 60;
/** An unknown client id is remembered briefly (a creation elsewhere is announced anyway). */
const UNKNOWN_CACHE_SECONDS = 5;
/** Entries kept at most (unknown ids come from requests): past it the oldest go first. */
const CACHE_MAX_ENTRIES = 10_000;

/** A client secret as the admin surfaces show it: never the secret or its hash. */
export interface ClientSecretInfo {
  id: string;
  createdAt: string;
  /** null: no end date (the current secret); set: the old secret of a rotation, live until then. */
  expiresAt: string | null;
}

/** An application as its creation or an update answers: the new client secret, when one was made, shown once. */
export type ApplicationWithSecret = Application & { clientSecret?: string };

/** How long the old secret stays valid after a rotation, unless the operator says otherwise. */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 24 * 3600;
export const MAX_SECRET_OVERLAP_SECONDS = 30 * 24 * 3600;

/** 256 bits from the CSPRNG (43 base64url characters): what the server generates. */
export const generateClientSecret = (): string => generateToken();

// A secret an operator supplies: the rule is the domain's (the seed file checks it before the database opens).
export { clientSecretProblem };

const toSecretInfo = (row: secrets.ClientSecretRow): ClientSecretInfo => ({
  id: row.id,
  createdAt: new Date(row.created_at).toISOString(),
  expiresAt: row.expires_at ? new Date(row.expires_at).toISOString() : null,
});

export interface Page<T> {
  items: T[];
  nextCursor?: string;
}

/** 192 bits from the CSPRNG, URL-safe: unguessable and within the client-id alphabet. */
export function generateClientId(): string {
  return randomBytes(24).toString('base64url');
}

const encodeCursor = (value: string) => Buffer.from(value, 'utf8').toString('base64url');
function decodeCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined) return undefined;
  const value = Buffer.from(cursor, 'base64url').toString('utf8');
  if (!value) throw validationError([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
  return value;
}

function settingsColumns(settings: ClientAuthSettings) {
  return {
    token_endpoint_auth_method: settings.tokenEndpointAuthMethod,
    pkce: settings.pkce,
    grant_types: JSON.stringify(settings.grantTypes),
    jwks: settings.jwks === null ? null : JSON.stringify(settings.jwks),
    jwks_uri: settings.jwksUri,
  };
}

export function createApplicationService(deps: ApplicationServiceDeps) {
  const { db, staticApplications } = deps;
  const listeners: Array<(clientId: string) => void> = deps.onChange ? [deps.onChange] : [];
  const changed = (clientId: string) => {
    forget(clientId);
    for (const listener of listeners) listener(clientId);
  };

  // Database applications by client id, unknown ids included, for the hot paths (authorize, token,
  // end-session, CORS, public metadata). Dropped at once by this service's changes, by forget() (other
  // instances' notices, see invalidation.ts) and after cacheSeconds; a lookup that was under way while
  // something was forgotten is not kept (it may have read the old row).
  const cacheMs = (deps.cacheSeconds ?? APPLICATION_CACHE_SECONDS) * 1000;
  const cache = new Map<string, { until: number; app: Application | undefined }>();
  let generation = 0;
  function forget(clientId?: string) {
    generation++;
    if (clientId === undefined) cache.clear();
    else cache.delete(clientId);
  }
  async function lookup(clientId: string): Promise<Application | undefined> {
    const now = Date.now();
    const hit = cache.get(clientId);
    if (hit && hit.until > now) return hit.app;
    const started = generation;
    const row = await repo.findApplicationRow(db, clientId);
    const app = row ? toApplication(row) : undefined;
    if (cacheMs > 0 && started === generation) {
      if (hit) cache.delete(clientId);
      else if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      const ms = app ? cacheMs : Math.min(cacheMs, UNKNOWN_CACHE_SECONDS * 1000);
      cache.set(clientId, { until: Date.now() + ms, app });
    }
    return app;
  }

  function readOnly(clientId: string): AppError {
    return new AppError(
      409,
      'STATIC_APPLICATION',
      `Application ${clientId} is declared in ${staticApplications.source ?? 'the static applications file'} ` +
        'and is read-only here; change it in that file.',
    );
  }

  async function get(clientId: string): Promise<Application> {
    const found = staticApplications.get(clientId) ?? (await lookup(clientId));
    if (!found) throw notFound('NOT_FOUND', `No application with client id ${clientId}`);
    return found;
  }

  /** Static first (they shadow database rows), undefined when neither has it. Enabled or not. */
  async function find(clientId: string): Promise<Application | undefined> {
    return staticApplications.get(clientId) ?? lookup(clientId);
  }

  async function list(
    options: { q?: string | undefined; limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<Page<Application>> {
    const limit = options.limit ?? 50;
    const after = decodeCursor(options.cursor);
    const q = options.q?.toLowerCase();
    // One ordering (client_id) across both sources: the static ones are merged into the database page.
    const rows = await repo.listApplicationRows(db, { q: options.q, after, limit: limit + 1 });
    const statics = staticApplications
      .all()
      .filter((a) => after === undefined || a.clientId > after)
      .filter((a) => !q || a.clientId.toLowerCase().includes(q) || a.clientName.toLowerCase().includes(q));
    const merged = [...statics, ...rows.filter((r) => !staticApplications.get(r.client_id)).map(toApplication)].sort(
      (a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0),
    );
    const items = merged.slice(0, limit);
    return merged.length > limit ? { items, nextCursor: encodeCursor(items[items.length - 1]!.clientId) } : { items };
  }

  /**
   * `createdBy`: the built-in writer creating it (the seed, the demo), recorded on the row; only the demo
   * may use the reserved client id "demo".
   */
  async function create(
    input: ApplicationCreate,
    context: ActorContext,
    options: { createdBy?: CreatedBy; clientSecret?: string | undefined } = {},
  ): Promise<ApplicationWithSecret> {
    assertSchema(ApplicationCreateSchema, input);
    const settings = clientAuthSettings(input);
    const problems = [
      ...applicationProblems(input, '', {
        ...(options.createdBy === 'demo' && { reservedClientId: DEMO_CLIENT_ID }),
      }),
      ...clientAuthProblems(settings),
    ];
    const hasSecret = SECRET_METHODS.includes(settings.tokenEndpointAuthMethod);
    if (options.clientSecret !== undefined) {
      const problem = hasSecret
        ? clientSecretProblem(options.clientSecret)
        : 'only client_secret_basic and client_secret_post applications have a client secret';
      if (problem) problems.push({ field: 'clientSecret', message: problem });
    }
    if (problems.length) throw validationError(problems);
    const clientSecret = hasSecret ? (options.clientSecret ?? generateClientSecret()) : undefined;
    const clientId = input.clientId ?? generateClientId();
    if (staticApplications.get(clientId)) {
      throw conflict('CLIENT_ID_TAKEN', `Client id ${clientId} is used by a static application`);
    }
    try {
      const app = await db.transaction().execute(async (trx) => {
        const row = await repo.insertApplication(trx, {
          client_id: clientId,
          name: input.clientName,
          description: input.clientDescription ?? null,
          logo_url: input.clientLogoUrl ?? null,
          redirect_uris: JSON.stringify(input.redirectUris),
          allowed_web_origins: JSON.stringify(input.allowedWebOrigins ?? []),
          post_logout_redirect_uris: JSON.stringify(input.postLogoutRedirectUris ?? []),
          post_verification_redirect_path: input.postVerificationRedirectPath ?? null,
          allowed_scopes: JSON.stringify(input.allowedScopes ?? DEFAULT_ALLOWED_SCOPES),
          enabled: input.enabled ?? true,
          require_mfa: input.requireMfa ?? false,
          created_by: options.createdBy ?? null,
          ...settingsColumns(settings),
        });
        await repo.notifyApplicationsChanged(trx, clientId);
        await appendAuditEvent(trx, {
          type: 'application.created',
          actor: context.actor,
          ip: context.ip,
          clientId,
          detail: { clientName: input.clientName, tokenEndpointAuthMethod: settings.tokenEndpointAuthMethod },
        });
        if (clientSecret !== undefined) await addSecret(trx, clientId, clientSecret, context, 'created');
        return toApplication(row);
      });
      changed(clientId);
      return clientSecret === undefined ? app : { ...app, clientSecret };
    } catch (error) {
      if (isUniqueViolation(error)) throw conflict('CLIENT_ID_TAKEN', `Client id ${clientId} is already taken`);
      throw error;
    }
  }

  /** `createdBy`: the row becomes that writer's (the seed taking an application over, "replace": true). */
  async function update(
    clientId: string,
    input: ApplicationUpdate,
    context: ActorContext,
    options: { createdBy?: CreatedBy } = {},
  ): Promise<ApplicationWithSecret> {
    assertSchema(ApplicationUpdateSchema, input);
    if (staticApplications.get(clientId)) throw readOnly(clientId);
    const problems = applicationProblems(input);
    if (problems.length) throw validationError(problems);
    let clientSecret: string | undefined;
    const app = await db.transaction().execute(async (trx) => {
      // The client-authentication rules hold over the settings as they will be: read (and lock) the current ones.
      const current = await repo.findApplicationRowForUpdate(trx, clientId);
      if (!current) throw notFound('NOT_FOUND', `No application with client id ${clientId}`);
      const before = toApplication(current);
      const settings = clientAuthSettings(input, before);
      const authProblems = clientAuthProblems(settings);
      if (authProblems.length) throw validationError(authProblems);
      const hadSecret = SECRET_METHODS.includes(before.tokenEndpointAuthMethod);
      const hasSecret = SECRET_METHODS.includes(settings.tokenEndpointAuthMethod);
      const wasConfidential = before.tokenEndpointAuthMethod !== 'none';
      if (wasConfidential && settings.tokenEndpointAuthMethod === 'none') {
        // Turned public: refresh tokens it obtained while authenticating would now work with its client_id alone.
        const revoked = await revokeClientRefreshTokens(trx, clientId);
        if (revoked > 0) {
          await appendAuditEvent(trx, {
            type: 'token.revoked',
            actor: context.actor,
            ip: context.ip,
            clientId,
            detail: { reason: 'client_became_public', refreshTokensRevoked: revoked },
          });
        }
      }
      if (hadSecret && !hasSecret) {
        // No longer a secret client: its secrets die with the method.
        if ((await secrets.deleteClientSecrets(trx, clientId)) > 0) {
          await appendAuditEvent(trx, {
            type: 'application.secret_revoked',
            actor: context.actor,
            ip: context.ip,
            clientId,
            detail: { reason: `tokenEndpointAuthMethod changed to ${settings.tokenEndpointAuthMethod}` },
          });
        }
      } else if (!hadSecret && hasSecret) {
        clientSecret = generateClientSecret();
        await addSecret(trx, clientId, clientSecret, context, 'created');
      }
      const row = await repo.updateApplicationRow(trx, clientId, {
        ...settingsColumns(settings),
        ...(input.clientName !== undefined && { name: input.clientName }),
        ...(input.clientDescription !== undefined && { description: input.clientDescription }),
        ...(input.clientLogoUrl !== undefined && { logo_url: input.clientLogoUrl }),
        ...(input.redirectUris !== undefined && { redirect_uris: JSON.stringify(input.redirectUris) }),
        ...(input.allowedWebOrigins !== undefined && { allowed_web_origins: JSON.stringify(input.allowedWebOrigins) }),
        ...(input.postLogoutRedirectUris !== undefined && {
          post_logout_redirect_uris: JSON.stringify(input.postLogoutRedirectUris),
        }),
        ...(input.postVerificationRedirectPath !== undefined && {
          post_verification_redirect_path: input.postVerificationRedirectPath,
        }),
        ...(input.allowedScopes !== undefined && { allowed_scopes: JSON.stringify(input.allowedScopes) }),
        ...(input.enabled !== undefined && { enabled: input.enabled }),
        ...(input.requireMfa !== undefined && { require_mfa: input.requireMfa }),
        ...(options.createdBy !== undefined && { created_by: options.createdBy }),
      });
      if (!row) throw notFound('NOT_FOUND', `No application with client id ${clientId}`);
      await repo.notifyApplicationsChanged(trx, clientId);
      await appendAuditEvent(trx, {
        type: 'application.updated',
        actor: context.actor,
        ip: context.ip,
        clientId,
        detail: { fields: Object.keys(input) },
      });
      return toApplication(row);
    });
    changed(clientId);
    return clientSecret === undefined ? app : { ...app, clientSecret };
  }

  /** Records a new secret (its hash) in the transaction, with its audit event. */
  async function addSecret(
    trx: Db,
    clientId: string,
    secret: string,
    context: ActorContext,
    how: 'created' | 'rotated',
    extra: Record<string, unknown> = {},
  ): Promise<ClientSecretInfo> {
    const row = await secrets.insertClientSecret(trx, {
      id: `cs_${randomString(12, 'base64url')}`,
      client_id: clientId,
      secret_hash: hashToken(secret),
    });
    await appendAuditEvent(trx, {
      type: `application.secret_${how}`,
      actor: context.actor,
      ip: context.ip,
      clientId,
      detail: { secretId: row.id, ...extra },
    });
    return toSecretInfo(row);
  }

  /** A secret client's application (locked for the transaction), or the error that says why not. */
  async function lockSecretClient(trx: Db, clientId: string): Promise<Application> {
    if (staticApplications.get(clientId)) throw readOnly(clientId);
    const row = await repo.findApplicationRowForUpdate(trx, clientId);
    if (!row) throw notFound('NOT_FOUND', `No application with client id ${clientId}`);
    const app = toApplication(row);
    if (!SECRET_METHODS.includes(app.tokenEndpointAuthMethod)) {
      throw conflict(
        'NO_CLIENT_SECRET',
        `Application ${clientId} authenticates with ${app.tokenEndpointAuthMethod}: it has no client secret`,
      );
    }
    return app;
  }

  /**
   * A new secret; the current one stays valid for `overlapSeconds` (default 24 h, 0: ends now), and a secret that
   * was already ending goes now: at most two are live. `secret`: supplied by a trusted caller (the seed, from the
   * environment); otherwise generated. The new secret is returned once and stored only as a hash.
   */
  async function rotateSecret(
    clientId: string,
    options: { overlapSeconds?: number | undefined; secret?: string | undefined },
    context: ActorContext,
  ): Promise<{ clientSecret: string; secret: ClientSecretInfo }> {
    const overlap = options.overlapSeconds ?? DEFAULT_SECRET_OVERLAP_SECONDS;
    if (!Number.isInteger(overlap) || overlap < 0 || overlap > MAX_SECRET_OVERLAP_SECONDS) {
      throw validationError([
        { field: 'overlapSeconds', message: `must be an integer from 0 to ${MAX_SECRET_OVERLAP_SECONDS}` },
      ]);
    }
    if (options.secret !== undefined) {
      const problem = clientSecretProblem(options.secret);
      if (problem) throw validationError([{ field: 'clientSecret', message: problem }]);
    }
    const clientSecret = options.secret ?? generateClientSecret();
    const secret = await db.transaction().execute(async (trx) => {
      await lockSecretClient(trx, clientId);
      const endsAt = await secrets.retireClientSecrets(trx, clientId, overlap);
      return addSecret(trx, clientId, clientSecret, context, 'rotated', {
        previousEndsAt: endsAt?.toISOString() ?? null,
      });
    });
    return { clientSecret, secret };
  }

  /** Ends one secret at once (a leaked one). */
  async function revokeSecret(clientId: string, secretId: string, context: ActorContext): Promise<void> {
    await db.transaction().execute(async (trx) => {
      await lockSecretClient(trx, clientId);
      if (!(await secrets.deleteClientSecret(trx, clientId, secretId))) {
        throw notFound('NOT_FOUND', `Application ${clientId} has no secret ${secretId}`);
      }
      await appendAuditEvent(trx, {
        type: 'application.secret_revoked',
        actor: context.actor,
        ip: context.ip,
        clientId,
        detail: { secretId },
      });
    });
  }

  /** The live secrets (ids and dates only). */
  async function listSecrets(clientId: string): Promise<ClientSecretInfo[]> {
    await get(clientId);
    return (await secrets.listLiveClientSecrets(db, clientId)).map(toSecretInfo);
  }

  /** Whether `secret` is a live secret of this application (a hash lookup: the secret has 256 bits). */
  async function verifySecret(clientId: string, secret: string): Promise<boolean> {
    if (secret.length > 256) return false;
    return (await secrets.findLiveClientSecret(db, clientId, hashToken(secret))) !== undefined;
  }

  async function remove(clientId: string, context: ActorContext): Promise<void> {
    if (staticApplications.get(clientId)) throw readOnly(clientId);
    await db.transaction().execute(async (trx) => {
      const deleted = await repo.deleteApplicationRow(trx, clientId);
      if (!deleted) throw notFound('NOT_FOUND', `No application with client id ${clientId}`);
      await repo.notifyApplicationsChanged(trx, clientId);
      await appendAuditEvent(trx, {
        type: 'application.deleted',
        actor: context.actor,
        ip: context.ip,
        clientId,
        detail: {},
      });
    });
    changed(clientId);
  }

  /** Which built-in writer created the database application (null: someone else), undefined when none. */
  async function createdBy(clientId: string): Promise<string | null | undefined> {
    return (await repo.findApplicationRow(db, clientId))?.created_by;
  }

  /** The union of allowedWebOrigins of every enabled application, static ones included. */
  async function webOrigins(): Promise<Set<string>> {
    const origins = new Set(await repo.listEnabledWebOrigins(db));
    for (const a of staticApplications.all()) if (a.enabled) for (const o of a.allowedWebOrigins) origins.add(o);
    return origins;
  }

  return {
    /** Called after any change commits (caches such as the CORS origin list subscribe). */
    onChange(listener: (clientId: string) => void) {
      listeners.push(listener);
    },
    /** Drops the cached application (all of them when no id is given): it changed elsewhere. */
    forget,
    get,
    find,
    createdBy,
    webOrigins,
    list,
    create,
    update,
    setEnabled: (clientId: string, enabled: boolean, context: ActorContext) => update(clientId, { enabled }, context),
    remove,
    rotateSecret,
    revokeSecret,
    listSecrets,
    verifySecret,
  };
}

export type ApplicationService = ReturnType<typeof createApplicationService>;
