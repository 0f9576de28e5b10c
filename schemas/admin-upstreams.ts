// Admin API bodies for upstream identity providers (issue 35) and a user's linked identities. The input schemas and
// their rules are the domain's (src/domain/upstream-config.ts), shared with the admin web, the CLI and SEED_FILE; the
// response schemas describe the domain types exactly (checked at compile time below). No response carries a secret:
// `hasClientSecret` says whether one is stored, `publicJwk` is the public half of a private_key_jwt key.
import Type, { type Static } from 'typebox';
import {
  UpstreamProviderCreateSchema,
  UpstreamProviderUpdateSchema,
  type UpstreamProviderDetails,
} from '../src/domain/upstream-config.js';
import { MAPPING_FIELDS, UPSTREAM_CLIENT_AUTH, UPSTREAM_KINDS } from '../src/domain/upstream.js';
import type { LinkedIdentity } from '../src/services/upstreams/identities.js';
import type { UpstreamRemoval } from '../src/services/upstreams/providers.js';

export { UpstreamProviderCreateSchema, UpstreamProviderUpdateSchema };

const Nullable = Type.Union([Type.String(), Type.Null()]);

export const UpstreamParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export const UpstreamProviderSchema = Type.Object({
  id: Type.String(),
  kind: Type.Enum([...UPSTREAM_KINDS]),
  name: Type.String(),
  logoUrl: Nullable,
  issuer: Nullable,
  authorizationEndpoint: Nullable,
  tokenEndpoint: Nullable,
  userinfoEndpoint: Nullable,
  emailsEndpoint: Nullable,
  clientId: Type.String(),
  clientAuth: Type.Enum([...UPSTREAM_CLIENT_AUTH]),
  hasClientSecret: Type.Boolean({ description: 'a client secret is stored (sealed; never shown)' }),
  publicJwk: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: 'private_key_jwt: the public key to register at the upstream',
  }),
  scopes: Type.Array(Type.String()),
  mapping: Type.Partial(
    Type.Object(
      Object.fromEntries(MAPPING_FIELDS.map((f) => [f, Type.String()])) as Record<
        (typeof MAPPING_FIELDS)[number],
        ReturnType<typeof Type.String>
      >,
    ),
  ),
  allowSignUp: Type.Boolean(),
  allowedDomains: Type.Array(Type.String()),
  trustEmailVerified: Type.Boolean(),
  ssoDomains: Type.Array(Type.String()),
  storeTokens: Type.Boolean(),
  enabled: Type.Boolean(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
  callbackUrl: Type.String({ description: 'the redirect URI to register at the upstream' }),
});

export const UpstreamProviderListSchema = Type.Object({ items: Type.Array(UpstreamProviderSchema) });

export const UpstreamDeleteQuerySchema = Type.Object(
  {
    force: Type.Optional(
      Type.Boolean({ description: 'remove it even when some user could then sign in only by a password reset' }),
    ),
  },
  { additionalProperties: false },
);

export const UpstreamRemovalSchema = Type.Object({
  identitiesRemoved: Type.Integer(),
  usersLeftWithoutSignIn: Type.Array(Type.String(), { description: 'the ids of users left with no way to sign in' }),
});

export const LinkedIdentitySchema = Type.Object({
  id: Type.String(),
  providerId: Type.String(),
  providerName: Type.String(),
  subject: Type.String(),
  email: Nullable,
  createdAt: Type.String(),
  lastUsedAt: Nullable,
});
export const LinkedIdentityListSchema = Type.Object({ items: Type.Array(LinkedIdentitySchema) });

export const IdentityParamsSchema = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 320 }),
  identityId: Type.String({ minLength: 1, maxLength: 64 }),
});

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const describesProvider: Same<Static<typeof UpstreamProviderSchema>, UpstreamProviderDetails> = true;
const describesIdentity: Same<Static<typeof LinkedIdentitySchema>, LinkedIdentity> = true;
const describesRemoval: Same<Static<typeof UpstreamRemovalSchema>, UpstreamRemoval> = true;
void describesProvider;
void describesIdentity;
void describesRemoval;
