// Admin API bodies for resource servers (issue 36: the operator's APIs, named by RFC 8707 resource indicators).
// The input schemas and their rules are the domain's (src/domain/resource-server.ts), shared with the admin web, the
// CLI and SEED_FILE; the response schema describes the domain type exactly (checked at compile time below).
import Type, { type Static } from 'typebox';
import {
  ACCESS_TOKEN_FORMATS,
  type ResourceServer,
  ResourceServerCreateSchema,
  ResourceServerUpdateSchema,
} from '../src/domain/resource-server.js';

export { ResourceServerCreateSchema, ResourceServerUpdateSchema };

const Nullable = Type.Union([Type.String(), Type.Null()]);

/**
 * `/api/admin/resource-servers/{identifier}`: the identifier percent-encoded as one path segment
 * (encodeURIComponent: `https%3A%2F%2Fapi.example.com%2Forders`); the router decodes it.
 */
export const ResourceServerParamsSchema = Type.Object({
  identifier: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'the identifier (an absolute URI), percent-encoded as one path segment',
  }),
});

export const ResourceServerSchema = Type.Object({
  identifier: Type.String({ description: 'the `resource` value clients send and the `aud` of its access tokens' }),
  name: Type.String(),
  description: Nullable,
  scopes: Type.Array(Type.Object({ name: Type.String(), label: Type.String(), consentDescription: Type.String() })),
  accessTokenFormat: Type.Enum([...ACCESS_TOKEN_FORMATS]),
  accessTokenTtl: Type.Union([Type.Integer(), Type.Null()], { description: 'seconds; null: ACCESS_TOKEN_TTL' }),
  allowedClients: Type.Array(Type.String()),
  allowSelfRegistered: Type.Boolean(),
  introspectionClients: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  builtIn: Type.Boolean({ description: 'true for /api/external, which is read-only' }),
  createdAt: Nullable,
  updatedAt: Nullable,
});

export const ResourceServerListSchema = Type.Object({ items: Type.Array(ResourceServerSchema) });

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const describesServer: Same<Static<typeof ResourceServerSchema>, ResourceServer> = true;
void describesServer;
