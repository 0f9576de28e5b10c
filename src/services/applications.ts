// Application management: the one implementation behind the admin API, the CLI and (later) the admin web.
import { randomBytes } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import * as repo from '../../db/repositories/applications.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import {
  ApplicationCreateSchema,
  ApplicationUpdateSchema,
  applicationProblems,
  DEMO_CLIENT_ID,
  type Application,
  type ApplicationCreate,
  type ApplicationUpdate,
} from '../domain/application.js';
import { AppError, conflict, notFound, validationError } from '../errors.js';
import { DEFAULT_ALLOWED_SCOPES } from '../oauth/scopes.js';
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
    options: { createdBy?: CreatedBy } = {},
  ): Promise<Application> {
    assertSchema(ApplicationCreateSchema, input);
    const problems = applicationProblems(input, '', {
      ...(options.createdBy === 'demo' && { reservedClientId: DEMO_CLIENT_ID }),
    });
    if (problems.length) throw validationError(problems);
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
          created_by: options.createdBy ?? null,
        });
        await repo.notifyApplicationsChanged(trx, clientId);
        await appendAuditEvent(trx, {
          type: 'application.created',
          actor: context.actor,
          ip: context.ip,
          clientId,
          detail: { clientName: input.clientName },
        });
        return toApplication(row);
      });
      changed(clientId);
      return app;
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
  ): Promise<Application> {
    assertSchema(ApplicationUpdateSchema, input);
    if (staticApplications.get(clientId)) throw readOnly(clientId);
    const problems = applicationProblems(input);
    if (problems.length) throw validationError(problems);
    const app = await db.transaction().execute(async (trx) => {
      const row = await repo.updateApplicationRow(trx, clientId, {
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
    return app;
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
  };
}

export type ApplicationService = ReturnType<typeof createApplicationService>;
