// Admin API bodies. Shapes only: the input schemas and the rules behind them are the domain's
// (src/domain), so the CLI, the admin web and the API apply the same ones; the response schemas
// here must describe the domain types exactly (checked at compile time below).
import Type, { type Static } from 'typebox';
import {
  ApplicationCreateSchema,
  ApplicationUpdateSchema,
  CLIENT_ID_PATTERN,
  GRANT_TYPES,
  PKCE_POLICIES,
  TOKEN_ENDPOINT_AUTH_METHODS,
} from '../src/domain/application.js';
import type { Application } from '../src/domain/application.js';
import { MAX_SECRET_OVERLAP_SECONDS } from '../src/services/applications.js';
import type { ClientSecretInfo } from '../src/services/applications.js';
import { RoleSchema, UserCreateSchema, UserUpdateSchema } from '../src/domain/user.js';
import type { User } from '../src/domain/user.js';

// Re-exported for the routes and for modules that still import them from here.
export { ApplicationCreateSchema, ApplicationUpdateSchema, CLIENT_ID_PATTERN, UserCreateSchema, UserUpdateSchema };
export type { Application, ApplicationCreate, ApplicationUpdate } from '../src/domain/application.js';
export type { User, UserCreate, UserUpdate } from '../src/domain/user.js';

export const ClientIdParamsSchema = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 256 }) });

export const ApplicationSchema = Type.Object({
  clientId: Type.String(),
  clientName: Type.String(),
  clientDescription: Type.Union([Type.String(), Type.Null()]),
  clientLogoUrl: Type.Union([Type.String(), Type.Null()]),
  redirectUris: Type.Array(Type.String()),
  allowedWebOrigins: Type.Array(Type.String()),
  postLogoutRedirectUris: Type.Array(Type.String()),
  postVerificationRedirectPath: Type.Union([Type.String(), Type.Null()]),
  allowedScopes: Type.Array(Type.String()),
  enabled: Type.Boolean(),
  requireMfa: Type.Boolean(),
  tokenEndpointAuthMethod: Type.Enum([...TOKEN_ENDPOINT_AUTH_METHODS]),
  clientType: Type.Union([Type.Literal('public'), Type.Literal('confidential')]),
  pkce: Type.Enum([...PKCE_POLICIES]),
  grantTypes: Type.Array(Type.Enum([...GRANT_TYPES])),
  jwks: Type.Union([Type.Object({ keys: Type.Array(Type.Object({})) }), Type.Null()]),
  jwksUri: Type.Union([Type.String(), Type.Null()]),
  registration: Type.Union([Type.Literal('operator'), Type.Literal('dynamic'), Type.Literal('metadata_document')]),
  source: Type.Union([Type.Literal('database'), Type.Literal('static')]),
  createdAt: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Type.Union([Type.String(), Type.Null()]),
});

/**
 * The answer to a create or an update: the application, and the client secret when one was made (a new
 * client_secret_basic/post application, or one switched to such a method). Shown once: never stored readable.
 */
export const ApplicationWithSecretSchema = Type.Object({
  ...ApplicationSchema.properties,
  clientSecret: Type.Optional(
    Type.String({ description: 'the new client secret, present only when one was made: shown once, never again' }),
  ),
});

/** A client secret as the admin API lists it: its id and dates, never the secret or its hash. */
export const ClientSecretInfoSchema = Type.Object({
  id: Type.String(),
  createdAt: Type.String(),
  expiresAt: Type.Union([Type.String(), Type.Null()], {
    description: 'null: the current secret; set: the old secret of a rotation, live until then',
  }),
});

export const ClientSecretListSchema = Type.Object({ items: Type.Array(ClientSecretInfoSchema) });

export const SecretRotateSchema = Type.Object(
  {
    overlapSeconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_SECRET_OVERLAP_SECONDS,
        description: 'how long the current secret stays valid (default 86400; 0: it ends now)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const SecretRotatedSchema = Type.Object({
  clientSecret: Type.String({ description: 'the new client secret: shown once, never again' }),
  secret: ClientSecretInfoSchema,
});

export const SecretParamsSchema = Type.Object({
  clientId: Type.String({ minLength: 1, maxLength: 256 }),
  secretId: Type.String({ minLength: 1, maxLength: 64 }),
});

export const ApplicationListSchema = Type.Object({
  items: Type.Array(ApplicationSchema),
  nextCursor: Type.Optional(Type.String()),
});

export const UserIdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 320 }) });

export const UserSchema = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  givenName: Type.Union([Type.String(), Type.Null()]),
  familyName: Type.Union([Type.String(), Type.Null()]),
  picture: Type.Union([Type.String(), Type.Null()]),
  emailVerified: Type.Boolean(),
  permissions: Type.Array(Type.String()),
  disabled: Type.Boolean(),
  role: RoleSchema,
  hasPassword: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});

export const UserListSchema = Type.Object({
  items: Type.Array(UserSchema),
  nextCursor: Type.Optional(Type.String()),
});

// The response schemas describe the domain types, no more and no less (a compile error otherwise).
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const describesApplication: Same<Static<typeof ApplicationSchema>, Application> = true;
const describesUser: Same<Static<typeof UserSchema>, User> = true;
const describesSecret: Same<Static<typeof ClientSecretInfoSchema>, ClientSecretInfo> = true;
void describesSecret;
void describesApplication;
void describesUser;

export const AuditQuerySchema = Type.Object(
  {
    type: Type.Optional(
      Type.String({
        maxLength: 500,
        pattern: '^[a-z_.]+(,[a-z_.]+)*$',
        description: 'an event type, or several separated by commas',
      }),
    ),
    userId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    clientId: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    from: Type.Optional(Type.String({ maxLength: 64, description: 'events at or after this date-time (ISO 8601)' })),
    to: Type.Optional(Type.String({ maxLength: 64, description: 'events before this date-time (ISO 8601)' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
    cursor: Type.Optional(Type.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);

export const AuditEventSchema = Type.Object({
  id: Type.String(),
  type: Type.String(),
  actor: Type.Union([Type.String(), Type.Null()]),
  userId: Type.Union([Type.String(), Type.Null()]),
  clientId: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  detail: Type.Record(Type.String(), Type.Unknown()),
  createdAt: Type.String(),
});

export const AuditPageSchema = Type.Object({
  items: Type.Array(AuditEventSchema),
  nextCursor: Type.Optional(Type.String()),
});
