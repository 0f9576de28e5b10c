// Response shapes of the protocol endpoints, for the OpenAPI document. The protocol plugins serialize
// with JSON.stringify (documentOnly), so these describe the answers without filtering them.
import Type from 'typebox';
import type { FastifyInstance } from 'fastify';

export function documentOnly(app: FastifyInstance) {
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
}

export const OAuthErrorSchema = Type.Object(
  { error: Type.String({ description: 'RFC 6749 §5.2 error code' }), error_description: Type.Optional(Type.String()) },
  { description: 'OAuth error (RFC 6749 §5.2)' },
);

/**
 * Query or form parameters of a protocol endpoint. Loose on purpose: the code answers with the RFC's
 * error codes, not a schema error. A value may be as long as a sealed authorization code with the longest
 * nonce authorize accepts (2,048 characters of up to 3 UTF-8 bytes: about 9,000); the body limit is 16 KiB.
 */
const PARAM_MAX = 12_288;
export const OAuthParamsSchema = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([
    Type.String({ maxLength: PARAM_MAX }),
    Type.Array(Type.String({ maxLength: PARAM_MAX }), { maxItems: 10 }),
  ]),
);

/** The error answers of the token endpoints. */
export const TokenErrors = { 400: OAuthErrorSchema, 401: OAuthErrorSchema, 429: OAuthErrorSchema };

export const TokenResponseSchema = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  id_token: Type.Optional(Type.String()),
  refresh_token: Type.Optional(
    Type.String({ description: 'only when offline_access was granted; never from the cookie endpoint' }),
  ),
  scope: Type.Optional(Type.String({ description: 'absent when a client_credentials request asked for no scope' })),
});

/** RFC 7662 §2.2: everything but `active` is absent for an inactive token. */
export const IntrospectionSchema = Type.Object(
  {
    active: Type.Boolean(),
    scope: Type.Optional(Type.String()),
    client_id: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.Literal('Bearer', { description: 'access tokens; refresh tokens have none' })),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    sub: Type.Optional(Type.String({ description: 'the user; absent for client_credentials tokens' })),
    iss: Type.Optional(Type.String()),
    aud: Type.Optional(
      Type.String({ description: 'the resource (RFC 8707) the access token is for; absent when it names none' }),
    ),
  },
  { description: 'Token introspection response (RFC 7662 §2.2)' },
);

export const ClaimsSchema = Type.Object(
  {
    sub: Type.String(),
    email: Type.Optional(Type.String()),
    email_verified: Type.Optional(Type.Boolean()),
    name: Type.Optional(Type.String()),
    given_name: Type.Optional(Type.String()),
    family_name: Type.Optional(Type.String()),
    picture: Type.Optional(Type.String()),
    permissions: Type.Optional(Type.Array(Type.String())),
  },
  { additionalProperties: false },
);

export const BearerErrors = {
  401: Type.Object(
    { error: Type.Literal('UNAUTHORIZED') },
    { description: 'missing, unknown, expired or revoked token (WWW-Authenticate: Bearer)' },
  ),
  403: Type.Object(
    { error: Type.Literal('FORBIDDEN'), missingScopes: Type.Array(Type.String()) },
    { description: 'a required scope was not granted' },
  ),
  429: Type.Object(
    { error: Type.Literal('TOO_MANY_REQUESTS'), message: Type.String() },
    { description: 'rate limit per access token; Retry-After' },
  ),
};

export const DiscoverySchema = Type.Object(
  {
    issuer: Type.String(),
    authorization_endpoint: Type.String(),
    token_endpoint: Type.String(),
    userinfo_endpoint: Type.String(),
    jwks_uri: Type.String(),
    revocation_endpoint: Type.Optional(Type.String()),
    introspection_endpoint: Type.Optional(Type.String()),
    grant_types_supported: Type.Optional(Type.Array(Type.String())),
    token_endpoint_auth_methods_supported: Type.Optional(Type.Array(Type.String())),
    token_endpoint_auth_signing_alg_values_supported: Type.Optional(Type.Array(Type.String())),
    revocation_endpoint_auth_methods_supported: Type.Optional(Type.Array(Type.String())),
    revocation_endpoint_auth_signing_alg_values_supported: Type.Optional(Type.Array(Type.String())),
    introspection_endpoint_auth_methods_supported: Type.Optional(Type.Array(Type.String())),
    introspection_endpoint_auth_signing_alg_values_supported: Type.Optional(Type.Array(Type.String())),
  },
  {
    additionalProperties: true,
    description: 'OpenID Provider Metadata (OIDC Discovery 1.0 §3), also Authorization Server Metadata (RFC 8414 §2)',
  },
);

export const ProtectedResourceMetadataSchema = Type.Object(
  {
    resource: Type.String(),
    authorization_servers: Type.Array(Type.String()),
    scopes_supported: Type.Array(Type.String()),
    bearer_methods_supported: Type.Array(Type.Literal('header')),
    resource_name: Type.String(),
  },
  { additionalProperties: false, description: 'OAuth 2.0 Protected Resource Metadata (RFC 9728 §2)' },
);

export const JwksSchema = Type.Object({
  keys: Type.Array(
    Type.Object(
      { kty: Type.String(), kid: Type.String(), alg: Type.String(), use: Type.String() },
      { additionalProperties: true },
    ),
  ),
});

/** No body (send() without a payload); `type: null` in the document. */
export const Empty = (description: string) => Type.Unsafe<undefined>({ type: 'null', description });
export const Redirect = (description: string) => Empty(`${description} (Location header)`);
export const NoContent = Empty;
export const HtmlPage = (description: string) => Type.String({ description: `text/html: ${description}` });
