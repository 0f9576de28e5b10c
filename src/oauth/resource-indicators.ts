// Resource indicators (RFC 8707) on the issuing side: which resources an authorize request asks for, which scopes
// it may then ask for, and, at the token endpoint, which one resource an access token is for (its audience), with
// what scope, lifetime and format. Pure: the registry (src/services/resource-servers.ts, cached) is passed in.
//
// - Authorize: `resource` may be repeated (the only parameter that may, RFC 8707 §2). Each value must be an absolute
//   URI without a fragment (resourceIdentifierProblem), name an enabled resource server, and the client must be
//   allowed to use it (clientMayUse); otherwise invalid_target.
// - A scope a registered resource server owns is granted only when that resource was requested (invalid_scope,
//   naming it, otherwise); such scopes are not limited by the application's allowedScopes (the resource server's
//   allowedClients govern). Built-in scopes as always.
// - Token endpoint (code, refresh): at most one `resource`. Named: one of the grant's resources. Absent: the grant's
//   only resource, or none when it has none; several granted and none named is invalid_target. Checked before a
//   code is spent.
// - The access token for a registered resource R: scope = granted ∩ R's scopes, lifetime R.accessTokenTtl ??
//   ACCESS_TOKEN_TTL, audience R, format R's. For the built-in resource or none: the granted built-in scopes.
import { OAuthError, resourceScopeError } from './errors.js';
import { isScopeName } from './scopes.js';

export const ACCESS_TOKEN_FORMATS = ['opaque', 'jwt'] as const;
export type AccessTokenFormat = (typeof ACCESS_TOKEN_FORMATS)[number];

/** A resource server as these rules read it (src/domain/resource-server.ts ResourceServer is one). */
export interface ResourceServer {
  identifier: string;
  scopes: ReadonlyArray<{ name: string }>;
  accessTokenFormat: AccessTokenFormat;
  /** Seconds; null: ACCESS_TOKEN_TTL. */
  accessTokenTtl: number | null;
  allowedClients: readonly string[];
  allowSelfRegistered: boolean;
  enabled: boolean;
  builtIn: boolean;
}

/**
 * RFC 8707 §2: an absolute URI without a fragment (a query is allowed by the RFC but SHOULD NOT be used: refused
 * here, as node-oidc-provider's default). https, http (any host: a local API in development) or urn.
 */
export function resourceIdentifierProblem(value: string): string | undefined {
  if (value.length === 0 || value.length > 255) return 'must be an absolute URI of 1-255 characters';
  if (/\s/.test(value)) return 'must not contain white space';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URI (RFC 8707 §2), such as https://api.example.com';
  }
  if (!['https:', 'http:', 'urn:'].includes(url.protocol)) return 'must be an https, http or urn URI';
  if (value.includes('#')) return 'must not contain a fragment (RFC 8707 §2)';
  if (url.search || value.includes('?')) return 'must not contain a query';
  if (url.protocol !== 'urn:' && (url.username || url.password)) return 'must not contain user information';
  return undefined;
}

/** May this client ask for a token for this resource? (The caller checks that the resource is enabled.) */
export function clientMayUse(
  server: Pick<ResourceServer, 'builtIn' | 'allowedClients' | 'allowSelfRegistered'>,
  client: { clientId: string; selfRegistered: boolean },
): boolean {
  if (server.builtIn) return true;
  if (server.allowedClients.includes(client.clientId)) return true;
  return client.selfRegistered && server.allowSelfRegistered;
}

/** The registry as these rules read it: every resource server, the built-in one included. */
export interface ResourceRegistry {
  builtIn: ResourceServer;
  /** The registered ones (enabled or not). */
  registered: readonly ResourceServer[];
}

/** The client asking, as clientMayUse reads it. */
export interface ResourceClient {
  clientId: string;
  selfRegistered: boolean;
}

/** The token endpoint joins a repeated `resource` with this (no identifier holds white space): "several". */
export const REPEATED_RESOURCE_SEPARATOR = ' ';

const malformed = (value: string) =>
  new OAuthError(
    'invalid_target',
    'resource must be an absolute URI without a fragment or query (RFC 8707 section 2)',
    {
      detail: `resource ${value.slice(0, 300)}: ${resourceIdentifierProblem(value) ?? 'malformed'}`,
    },
  );

/** The resource server named by `identifier`, enabled and usable by this client; invalid_target otherwise. */
export function usableResource(registry: ResourceRegistry, identifier: string, client: ResourceClient): ResourceServer {
  if (resourceIdentifierProblem(identifier)) throw malformed(identifier);
  const server =
    identifier === registry.builtIn.identifier
      ? registry.builtIn
      : registry.registered.find((s) => s.identifier === identifier);
  const detail = `resource ${identifier} client ${client.clientId}`;
  if (!server) throw new OAuthError('invalid_target', 'resource names no resource server known here', { detail });
  if (!server.enabled)
    throw new OAuthError('invalid_target', 'resource names a resource server that is disabled', { detail });
  if (!clientMayUse(server, client))
    throw new OAuthError('invalid_target', 'this client may not ask for this resource', { detail });
  return server;
}

/** The authorize request's `resource` values (one or repeated), checked, deduplicated, in order. */
export function authorizeResources(
  raw: string | readonly string[] | undefined,
  registry: ResourceRegistry,
  client: ResourceClient,
): string[] {
  if (raw === undefined) return [];
  // RFC 6749 §3.1: a parameter sent once without a value is omitted; an empty one among several is malformed.
  if (raw === '') return [];
  const values = typeof raw === 'string' ? [raw] : raw;
  const out: string[] = [];
  for (const value of values) {
    usableResource(registry, value, client);
    if (!out.includes(value)) out.push(value);
  }
  return out;
}

/**
 * The scope names of an authorize request that are not built-in: each must be a scope of a requested registered
 * resource server (invalid_scope naming the resource to add when it belongs to one not requested; the unknown
 * ones are left to the scope table's check, which refuses them).
 */
export function checkResourceScopes(
  names: readonly string[],
  resources: readonly string[],
  registry: ResourceRegistry,
) {
  for (const name of names) {
    if (isScopeName(name)) continue;
    const owner = registry.registered.find((s) => s.scopes.some((x) => x.name === name));
    if (owner && !resources.includes(owner.identifier)) throw resourceScopeError(owner.identifier, name);
  }
}

/** The scope names of `names` that requested registered resource servers own. */
export function resourceScopesOf(
  names: readonly string[],
  resources: readonly string[],
  registry: ResourceRegistry,
): string[] {
  const owned = new Set(
    registry.registered.filter((s) => resources.includes(s.identifier)).flatMap((s) => s.scopes.map((x) => x.name)),
  );
  return names.filter((n) => !isScopeName(n) && owned.has(n));
}

/**
 * The token endpoint's `resource` (RFC 8707 §2.2) against the grant's resources: the audience of the access token,
 * or null for none named. Throws invalid_target.
 */
export function chooseResource(grantResources: readonly string[], resource: string | undefined): string | null {
  if (resource === undefined || resource === '') {
    if (grantResources.length === 0) return null;
    if (grantResources.length === 1) return grantResources[0]!;
    throw new OAuthError(
      'invalid_target',
      'several resources were granted: name one of the granted resources with resource',
      { detail: `granted ${grantResources.join(' ')}` },
    );
  }
  if (resource.includes(REPEATED_RESOURCE_SEPARATOR))
    throw new OAuthError('invalid_target', 'name at most one resource at the token endpoint');
  if (resourceIdentifierProblem(resource)) throw malformed(resource);
  if (!grantResources.includes(resource))
    throw new OAuthError('invalid_target', 'resource is not one of the resources of the grant', {
      detail: `resource ${resource} granted ${grantResources.join(' ') || '(none)'}`,
    });
  return resource;
}

/** What an access token is: its audience, scope, lifetime and format. */
export interface AccessTokenPlan {
  /** null: none named (the built-in resource, as before resource indicators). */
  audience: string | null;
  scope: string[];
  ttl: number;
  format: AccessTokenFormat;
}

/**
 * The access token for `audience` out of the granted scopes. The resource server must still be enabled and allow
 * the client (invalid_target otherwise: it may have changed since the grant).
 */
export function accessTokenPlan(
  grantedScopes: readonly string[],
  audience: string | null,
  registry: ResourceRegistry,
  client: ResourceClient,
  defaultTtl: number,
): AccessTokenPlan {
  if (audience === null || audience === registry.builtIn.identifier) {
    if (audience !== null) usableResource(registry, audience, client);
    return { audience, scope: grantedScopes.filter(isScopeName), ttl: defaultTtl, format: 'opaque' };
  }
  const server = usableResource(registry, audience, client);
  const own = new Set(server.scopes.map((s) => s.name));
  return {
    audience,
    scope: grantedScopes.filter((s) => own.has(s)),
    ttl: server.accessTokenTtl ?? defaultTtl,
    format: server.accessTokenFormat,
  };
}
