// Resource servers (issue 36): the APIs a client may ask an access token for, by RFC 8707 resource indicator.
// The operator registers them (admin API, admin web, CLI, SEED_FILE); the rules below hold whoever declares one.
// `/api/external` is the built-in one (builtInResource): it is not stored, its scopes are the built-in scopes of
// src/oauth/scopes.ts, every application may ask for it, and its tokens are opaque, as they always were.
//
// Scope names of resource servers are unique across all of them and distinct from the built-in scopes, so a
// grant's scope string says without ambiguity which API each scope belongs to (as Keycloak's client scopes).
import Type, { type Static } from 'typebox';
import type { FieldProblem } from '../errors.js';
import {
  ACCESS_TOKEN_FORMATS,
  type AccessTokenFormat,
  clientMayUse,
  resourceIdentifierProblem,
} from '../oauth/resource-indicators.js';
import { SCOPE_NAMES, SCOPES } from '../oauth/scopes.js';
import { CLIENT_ID_PATTERN } from './application.js';
import { Nullable, Text } from './fields.js';

// The protocol's rules over identifiers, clients and token formats live with the protocol
// (src/oauth/resource-indicators.ts).
export { ACCESS_TOKEN_FORMATS, type AccessTokenFormat, clientMayUse, resourceIdentifierProblem };

export interface ResourceScope {
  /** RFC 6749 §3.3 scope-token, narrowed: letters, digits and `:._-/`, 1-64. */
  name: string;
  /** Shown on the consent page, like the built-in scopes' labels. */
  label: string;
  consentDescription: string;
}

export interface ResourceServer {
  /** An absolute URI (https, http or urn), no fragment: the `resource` parameter's value and the token's `aud`. */
  identifier: string;
  name: string;
  description: string | null;
  scopes: ResourceScope[];
  accessTokenFormat: AccessTokenFormat;
  /** Seconds; null: ACCESS_TOKEN_TTL. */
  accessTokenTtl: number | null;
  /** The client ids that may ask for a token for it. */
  allowedClients: string[];
  /** Whether self-registered clients (dynamic registration, metadata documents) may ask for it too. */
  allowSelfRegistered: boolean;
  /** Confidential applications (the API's own credentials) that may introspect the tokens whose audience it is. */
  introspectionClients: string[];
  enabled: boolean;
  /** true only for `/api/external`, which cannot be changed or removed. */
  builtIn: boolean;
  createdAt: string | null;
  updatedAt: string | null;
}

export const SCOPE_NAME_PATTERN = '^[A-Za-z0-9:._/-]{1,64}$';
export const MAX_RESOURCE_SCOPES = 50;
export const MAX_RESOURCE_CLIENTS = 200;
export const ACCESS_TOKEN_TTL_MIN = 60;
export const ACCESS_TOKEN_TTL_MAX = 86_400;

/** The path of the built-in resource below BASE_URL. */
export const BUILT_IN_RESOURCE_PATH = '/api/external';
export const builtInResourceIdentifier = (baseUrl: string) => `${baseUrl.replace(/\/+$/, '')}${BUILT_IN_RESOURCE_PATH}`;

/** `/api/external`: every application may ask for it; its scopes are the built-in ones. */
export function builtInResource(baseUrl: string, accessTokenTtl: number): ResourceServer {
  return {
    identifier: builtInResourceIdentifier(baseUrl),
    name: 'External API',
    description: "This provider's own API (/api/external/*): the signed-in user's claims.",
    scopes: SCOPES.map((s) => ({ name: s.name, label: s.label, consentDescription: s.consentDescription })),
    accessTokenFormat: 'opaque',
    accessTokenTtl: accessTokenTtl,
    allowedClients: [],
    allowSelfRegistered: true,
    introspectionClients: [],
    enabled: true,
    builtIn: true,
    createdAt: null,
    updatedAt: null,
  };
}

const ScopeSchema = Type.Object(
  {
    name: Type.String({ pattern: SCOPE_NAME_PATTERN }),
    label: Text(64),
    consentDescription: Text(200),
  },
  { additionalProperties: false },
);
const ClientIds = Type.Array(Type.String({ pattern: CLIENT_ID_PATTERN }), { maxItems: MAX_RESOURCE_CLIENTS });

/** What an operator sends to create one (admin API body, CLI flags, seed file entry). */
export const ResourceServerCreateSchema = Type.Object(
  {
    identifier: Type.String({ minLength: 1, maxLength: 255 }),
    name: Text(100),
    description: Type.Optional(Nullable(Text(500))),
    scopes: Type.Optional(Type.Array(ScopeSchema, { maxItems: MAX_RESOURCE_SCOPES })),
    accessTokenFormat: Type.Optional(Type.Enum([...ACCESS_TOKEN_FORMATS])),
    accessTokenTtl: Type.Optional(
      Type.Union([Type.Integer({ minimum: ACCESS_TOKEN_TTL_MIN, maximum: ACCESS_TOKEN_TTL_MAX }), Type.Null()]),
    ),
    allowedClients: Type.Optional(ClientIds),
    allowSelfRegistered: Type.Optional(Type.Boolean()),
    introspectionClients: Type.Optional(ClientIds),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ResourceServerCreate = Static<typeof ResourceServerCreateSchema>;

/** Every field but the identifier, each optional (PATCH). */
export const ResourceServerUpdateSchema = Type.Partial(Type.Omit(ResourceServerCreateSchema, ['identifier']), {
  additionalProperties: false,
});
export type ResourceServerUpdate = Static<typeof ResourceServerUpdateSchema>;

/** The rules over a resource server as it will be (after a create or an update), field by field. */
export function resourceServerProblems(
  server: Pick<ResourceServer, 'identifier' | 'scopes' | 'allowedClients' | 'introspectionClients'>,
  builtInIdentifier: string,
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const identifier = resourceIdentifierProblem(server.identifier);
  if (identifier) problems.push({ field: 'identifier', message: identifier });
  else if (server.identifier === builtInIdentifier)
    problems.push({ field: 'identifier', message: 'is the built-in resource (/api/external)' });
  const seen = new Set<string>();
  server.scopes.forEach((scope, i) => {
    if ((SCOPE_NAMES as readonly string[]).includes(scope.name))
      problems.push({ field: `scopes.${i}.name`, message: `"${scope.name}" is a built-in scope` });
    if (seen.has(scope.name)) problems.push({ field: `scopes.${i}.name`, message: `"${scope.name}" is repeated` });
    seen.add(scope.name);
  });
  if (new Set(server.allowedClients).size !== server.allowedClients.length)
    problems.push({ field: 'allowedClients', message: 'has repeated client ids' });
  if (new Set(server.introspectionClients).size !== server.introspectionClients.length)
    problems.push({ field: 'introspectionClients', message: 'has repeated client ids' });
  return problems;
}
