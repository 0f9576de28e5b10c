// Admin API bodies. Shapes only; the URL and scope rules live in src/services and src/oauth, so the
// CLI and the API apply the same ones.
import Type, { type Static } from 'typebox';
import { SCOPE_NAMES } from '../src/oauth/scopes.js';

export const CLIENT_ID_PATTERN = '^[A-Za-z0-9._~-]{1,128}$';
const Text = (max: number) => Type.String({ minLength: 1, maxLength: max });
const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);
const ScopeName = Type.Enum([...SCOPE_NAMES]);
const UrlList = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { maxItems: 100 });

export const ClientIdParamsSchema = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 256 }) });

export const ApplicationCreateSchema = Type.Object(
  {
    clientId: Type.Optional(Type.String({ pattern: CLIENT_ID_PATTERN, description: 'generated when absent' })),
    clientName: Text(200),
    clientDescription: Type.Optional(Nullable(Text(2000))),
    clientLogoUrl: Type.Optional(Nullable(Text(2048))),
    redirectUris: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 100 }),
    allowedWebOrigins: Type.Optional(UrlList),
    postLogoutRedirectUris: Type.Optional(UrlList),
    postVerificationRedirectPath: Type.Optional(Nullable(Text(1024))),
    allowedScopes: Type.Optional(Type.Array(ScopeName, { minItems: 1, uniqueItems: true })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ApplicationCreate = Static<typeof ApplicationCreateSchema>;

export const ApplicationUpdateSchema = Type.Object(
  {
    clientName: Type.Optional(Text(200)),
    clientDescription: Type.Optional(Nullable(Text(2000))),
    clientLogoUrl: Type.Optional(Nullable(Text(2048))),
    redirectUris: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 100 })),
    allowedWebOrigins: Type.Optional(UrlList),
    postLogoutRedirectUris: Type.Optional(UrlList),
    postVerificationRedirectPath: Type.Optional(Nullable(Text(1024))),
    allowedScopes: Type.Optional(Type.Array(ScopeName, { minItems: 1, uniqueItems: true })),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type ApplicationUpdate = Static<typeof ApplicationUpdateSchema>;

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
  source: Type.Union([Type.Literal('database'), Type.Literal('static')]),
  createdAt: Type.Union([Type.String(), Type.Null()]),
  updatedAt: Type.Union([Type.String(), Type.Null()]),
});
export type Application = Static<typeof ApplicationSchema>;

export const ApplicationListSchema = Type.Object({
  items: Type.Array(ApplicationSchema),
  nextCursor: Type.Optional(Type.String()),
});

export const UserIdParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 320 }) });

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^[^\\s@]+@[^\\s@]+$' });
const Password = Type.String({ minLength: 8, maxLength: 128 });
const Permissions = Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: '^\\S+$' }), {
  maxItems: 200,
  uniqueItems: true,
});

/** admin: may use the admin web (ADMIN_URL); user: everyone else. */
export const Role = Type.Union([Type.Literal('user'), Type.Literal('admin')], { description: 'user or admin' });

export const UserCreateSchema = Type.Object(
  {
    email: Email,
    password: Type.Optional(Password),
    name: Type.Optional(Nullable(Text(200))),
    givenName: Type.Optional(Nullable(Text(200))),
    familyName: Type.Optional(Nullable(Text(200))),
    picture: Type.Optional(Nullable(Text(2048))),
    emailVerified: Type.Optional(Type.Boolean()),
    permissions: Type.Optional(Permissions),
    disabled: Type.Optional(Type.Boolean()),
    role: Type.Optional(Role),
  },
  { additionalProperties: false },
);
export type UserCreate = Static<typeof UserCreateSchema>;

export const UserUpdateSchema = Type.Object(
  {
    email: Type.Optional(Email),
    password: Type.Optional(Password),
    name: Type.Optional(Nullable(Text(200))),
    givenName: Type.Optional(Nullable(Text(200))),
    familyName: Type.Optional(Nullable(Text(200))),
    picture: Type.Optional(Nullable(Text(2048))),
    emailVerified: Type.Optional(Type.Boolean()),
    permissions: Type.Optional(Permissions),
    disabled: Type.Optional(Type.Boolean()),
    role: Type.Optional(Role),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UserUpdate = Static<typeof UserUpdateSchema>;

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
  role: Role,
  hasPassword: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type User = Static<typeof UserSchema>;

export const UserListSchema = Type.Object({
  items: Type.Array(UserSchema),
  nextCursor: Type.Optional(Type.String()),
});

export const AuditQuerySchema = Type.Object(
  {
    type: Type.Optional(Type.String({ maxLength: 500, pattern: '^[a-z_.]+(,[a-z_.]+)*$', description: 'an event type, or several separated by commas' })),
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

export const AuditPageSchema = Type.Object({ items: Type.Array(AuditEventSchema), nextCursor: Type.Optional(Type.String()) });
