// Resource servers (issue 36): the registry the authorize and token endpoints, the consent page, introspection and
// the operator's tools read. The registered ones live in resource_servers (migration 0020); `/api/external` is
// built in (src/domain/resource-server.ts, builtInResource). The list is small and read on every request that
// names a resource: it is cached in this process, dropped at once after a change here and, by the trigger of
// migration 0020 (RESOURCES_PAYLOAD), on every other instance; a TTL bounds a listener that is down.
import type { Db } from '../../db/create-db.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import {
  deleteResourceServer,
  findResourceServer,
  insertResourceServer,
  listResourceServers,
  type ResourceServerRow,
  updateResourceServer,
} from '../../db/repositories/resource-servers.js';
import {
  type AccessTokenFormat,
  builtInResource,
  type ResourceServer,
  type ResourceServerCreate,
  ResourceServerCreateSchema,
  type ResourceServerUpdate,
  ResourceServerUpdateSchema,
  resourceServerProblems,
} from '../domain/resource-server.js';
import { AppError, conflict, type FieldProblem, notFound, validationError } from '../errors.js';
import { assertSchema } from '../validate.js';
import type { ActorContext } from './applications.js';

const CACHE_MS = 30_000;
const SYSTEM: ActorContext = { actor: 'system' };

const view = (row: ResourceServerRow): ResourceServer => ({
  identifier: row.identifier,
  name: row.name,
  description: row.description,
  scopes: row.scopes,
  accessTokenFormat: row.access_token_format as AccessTokenFormat,
  accessTokenTtl: row.access_token_ttl,
  allowedClients: row.allowed_clients,
  allowSelfRegistered: row.allow_self_registered,
  introspectionClients: row.introspection_clients,
  enabled: row.enabled,
  builtIn: false,
  createdAt: new Date(row.created_at).toISOString(),
  updatedAt: new Date(row.updated_at).toISOString(),
});

const columnsOf = (server: Omit<ResourceServer, 'identifier' | 'builtIn' | 'createdAt' | 'updatedAt'>) => ({
  name: server.name,
  description: server.description,
  scopes: JSON.stringify(server.scopes),
  access_token_format: server.accessTokenFormat,
  access_token_ttl: server.accessTokenTtl,
  allowed_clients: JSON.stringify(server.allowedClients),
  allow_self_registered: server.allowSelfRegistered,
  introspection_clients: JSON.stringify(server.introspectionClients),
  enabled: server.enabled,
});

export function createResourceServerService(deps: {
  db: Db;
  /** BASE_URL: the built-in resource is `${baseUrl}/api/external`. */
  baseUrl: string;
  /** ACCESS_TOKEN_TTL, the built-in resource's token lifetime and every other's default. */
  accessTokenTtl: number;
  /** Told after a committed change (the bus that drops every instance's cache). */
  onChange?: () => void;
}) {
  const { db } = deps;
  const builtIn = builtInResource(deps.baseUrl, deps.accessTokenTtl);
  let cached: { until: number; servers: ResourceServer[] } | undefined;
  // Bumped by forget(): a load under way across a drop may have read the old rows; it is not kept.
  let generation = 0;

  async function registered(): Promise<ResourceServer[]> {
    if (cached && cached.until > Date.now()) return cached.servers;
    const started = generation;
    const servers = (await listResourceServers(db)).map(view);
    if (started === generation) cached = { until: Date.now() + CACHE_MS, servers };
    return servers;
  }

  const changed = () => {
    generation++;
    cached = undefined;
    deps.onChange?.();
  };

  /** Scope names another registered server holds (scope names are unique across resource servers). */
  async function scopeClashes(identifier: string, scopes: ResourceServer['scopes']): Promise<FieldProblem[]> {
    const others = (await listResourceServers(db)).filter((row) => row.identifier !== identifier);
    const problems: FieldProblem[] = [];
    scopes.forEach((scope, i) => {
      const owner = others.find((row) => row.scopes.some((s) => s.name === scope.name));
      if (owner)
        problems.push({ field: `scopes.${i}.name`, message: `"${scope.name}" belongs to ${owner.identifier}` });
    });
    return problems;
  }

  async function getOr404(identifier: string): Promise<ResourceServerRow> {
    const row = await findResourceServer(db, identifier);
    if (!row) throw notFound('NOT_FOUND', `no resource server "${identifier}"`);
    return row;
  }

  const refuseBuiltIn = (identifier: string) => {
    if (identifier === builtIn.identifier)
      throw new AppError(400, 'BUILT_IN_RESOURCE', 'the built-in resource (/api/external) cannot be changed');
  };

  return {
    /** `/api/external`. */
    builtIn,
    /** Every resource server: the built-in one first, then the registered ones by creation. */
    async list(): Promise<ResourceServer[]> {
      return [builtIn, ...(await registered())];
    },
    /** The resource server with this identifier (the built-in one included), enabled or not. */
    async find(identifier: string): Promise<ResourceServer | undefined> {
      if (identifier === builtIn.identifier) return builtIn;
      return (await registered()).find((s) => s.identifier === identifier);
    },
    /** The registered resource server that owns this scope name (built-in scopes have none), if any. */
    async ownerOfScope(scope: string): Promise<ResourceServer | undefined> {
      return (await registered()).find((s) => s.scopes.some((x) => x.name === scope));
    },
    /** Drops the cached list (a notice from another instance, or notices missed). */
    forget(): void {
      generation++;
      cached = undefined;
    },

    /**
     * Registers one: every rule of resourceServerProblems plus unique scope names across servers (400
     * VALIDATION_ERROR, field by field); 409 RESOURCE_SERVER_EXISTS. Audited as resource_server.created.
     */
    async create(input: ResourceServerCreate, context = SYSTEM): Promise<ResourceServer> {
      const body = assertSchema(ResourceServerCreateSchema, input);
      const server = {
        identifier: body.identifier,
        name: body.name,
        description: body.description ?? null,
        scopes: body.scopes ?? [],
        accessTokenFormat: body.accessTokenFormat ?? 'opaque',
        accessTokenTtl: body.accessTokenTtl ?? null,
        allowedClients: body.allowedClients ?? [],
        allowSelfRegistered: body.allowSelfRegistered ?? false,
        introspectionClients: body.introspectionClients ?? [],
        enabled: body.enabled ?? true,
      };
      const problems = resourceServerProblems(server, builtIn.identifier);
      if (!problems.length) problems.push(...(await scopeClashes(server.identifier, server.scopes)));
      if (problems.length) throw validationError(problems);
      const exists = () =>
        conflict('RESOURCE_SERVER_EXISTS', `a resource server "${server.identifier}" is registered already`);
      if (await findResourceServer(db, server.identifier)) throw exists();
      try {
        await db.transaction().execute(async (trx) => {
          await insertResourceServer(trx, { identifier: server.identifier, ...columnsOf(server) });
          await appendAuditEvent(trx, {
            type: 'resource_server.created',
            actor: context.actor,
            ip: context.ip ?? null,
            detail: { resource: server.identifier, format: server.accessTokenFormat },
          });
        });
      } catch (error) {
        if ((error as { code?: unknown } | null)?.code === '23505') throw exists();
        throw error;
      }
      changed();
      return view(await getOr404(server.identifier));
    },

    /** Changes any field but the identifier; the rules hold over the result. Audited with the fields' names. */
    async update(identifier: string, input: ResourceServerUpdate, context = SYSTEM): Promise<ResourceServer> {
      refuseBuiltIn(identifier);
      const body = assertSchema(ResourceServerUpdateSchema, input);
      const current = view(await getOr404(identifier));
      const next = { ...current, ...Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) };
      const problems = resourceServerProblems(next, builtIn.identifier);
      if (!problems.length && body.scopes) problems.push(...(await scopeClashes(identifier, next.scopes)));
      if (problems.length) throw validationError(problems);
      await db.transaction().execute(async (trx) => {
        if (!(await updateResourceServer(trx, identifier, columnsOf(next)))) throw notFound('NOT_FOUND', 'gone');
        await appendAuditEvent(trx, {
          type: 'resource_server.updated',
          actor: context.actor,
          ip: context.ip ?? null,
          detail: {
            resource: identifier,
            fields: Object.keys(body).filter((k) => body[k as keyof typeof body] !== undefined),
          },
        });
      });
      changed();
      return view(await getOr404(identifier));
    },

    /**
     * Removes one. Tokens already issued for it keep their audience and expire as they would; new requests naming
     * it get invalid_target. Audited as resource_server.deleted.
     */
    async remove(identifier: string, context = SYSTEM): Promise<void> {
      refuseBuiltIn(identifier);
      await db.transaction().execute(async (trx) => {
        if (!(await deleteResourceServer(trx, identifier)))
          throw notFound('NOT_FOUND', `no resource server "${identifier}"`);
        await appendAuditEvent(trx, {
          type: 'resource_server.deleted',
          actor: context.actor,
          ip: context.ip ?? null,
          detail: { resource: identifier },
        });
      });
      changed();
    },
  };
}

export type ResourceServerService = ReturnType<typeof createResourceServerService>;
