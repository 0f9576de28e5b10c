// Applications (OAuth clients) as the services hand them out, and the rules every application meets
// whoever declares it: the admin API, the admin web, the CLI and the static applications file. The
// admin API's HTTP schemas (schemas/admin.ts) are built from these; the rules do not live there.
import Type, { type Static } from 'typebox';
import type { FieldProblem } from '../errors.js';
import { redirectPathProblem, redirectUriProblem, webOriginProblem, webUrlProblem } from '../oauth/redirect-uri.js';
import { SCOPE_NAMES } from '../oauth/scopes.js';
import { Nullable, Text } from './fields.js';

/** RFC 6749 §2.2 leaves the client identifier's syntax to us: unreserved URL characters, 1-128. */
export const CLIENT_ID_PATTERN = '^[A-Za-z0-9._~-]{1,128}$';

/**
 * The client id of the built-in demo relying party (DEMO, plugins/demo): reserved. Nobody else may create
 * an application with it (admin API, admin web, CLI, seed file, static applications file); only the demo
 * registers it (src/services/demo.ts, through the service's reservedClientId option).
 */
export const DEMO_CLIENT_ID = 'demo';
const RESERVED_CLIENT_IDS: readonly string[] = [DEMO_CLIENT_ID];

export interface Application {
  clientId: string;
  clientName: string;
  clientDescription: string | null;
  clientLogoUrl: string | null;
  redirectUris: string[];
  allowedWebOrigins: string[];
  postLogoutRedirectUris: string[];
  postVerificationRedirectPath: string | null;
  allowedScopes: string[];
  enabled: boolean;
  /**
   * Only sessions with a second factor (acr urn:idp:mfa) get codes for this application: a session without one
   * is stepped up, or its user sent to enrol (src/oauth/authorize-flow.ts, requiredAcr). Default false.
   */
  requireMfa: boolean;
  /**
   * How the client authenticates at the token, revocation and introspection endpoints (RFC 7591 §2). 'none': a
   * public PKCE client (the default); the others make a confidential client ("server-side application").
   */
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  /** Derived from tokenEndpointAuthMethod: 'none' is public, every other method confidential. */
  clientType: 'public' | 'confidential';
  /** PKCE on the authorization code flow: always 'required' for public clients; 'optional' is an operator's choice. */
  pkce: PkcePolicy;
  /** The grants the token endpoint accepts from it; client_credentials only for confidential clients. */
  grantTypes: GrantType[];
  /** private_key_jwt: the client's public keys (a JWK Set), or the https URL where it publishes them. */
  jwks: { keys: object[] } | null;
  jwksUri: string | null;
  /**
   * Who registered it: the operator (admin API, web, CLI, seed, static file), the client itself by dynamic
   * registration (RFC 7591), or a client ID metadata document. The last two are self-registered clients: public
   * PKCE clients that always see the consent page (decisions.md).
   */
  registration: ApplicationRegistration;
  /** database: managed through the admin API, web or CLI; static: read-only, from the static file. */
  source: 'database' | 'static';
  /** null for static applications. */
  createdAt: string | null;
  updatedAt: string | null;
}

export const TOKEN_ENDPOINT_AUTH_METHODS = [
  'none',
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
] as const;
export type TokenEndpointAuthMethod = (typeof TOKEN_ENDPOINT_AUTH_METHODS)[number];
/** The methods that authenticate with a secret the server generated (shown once, stored hashed). */
export const SECRET_METHODS: readonly TokenEndpointAuthMethod[] = ['client_secret_basic', 'client_secret_post'];
export const PKCE_POLICIES = ['required', 'optional'] as const;
export type PkcePolicy = (typeof PKCE_POLICIES)[number];
export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const DEFAULT_GRANT_TYPES: GrantType[] = ['authorization_code', 'refresh_token'];

export const APPLICATION_REGISTRATIONS = ['operator', 'dynamic', 'metadata_document'] as const;
export type ApplicationRegistration = (typeof APPLICATION_REGISTRATIONS)[number];
export const isSelfRegistered = (app: Pick<Application, 'registration'>) => app.registration !== 'operator';

export const clientTypeOf = (method: TokenEndpointAuthMethod): 'public' | 'confidential' =>
  method === 'none' ? 'public' : 'confidential';

const ScopeName = Type.Enum([...SCOPE_NAMES]);
/** A JWK Set of public keys (RFC 7517 §5); each key is checked by confidentialProblems. */
const JwksSchema = Type.Object(
  { keys: Type.Array(Type.Object({ kty: Type.String({ maxLength: 16 }) }), { minItems: 1, maxItems: 10 }) },
  { additionalProperties: false },
);
const ClientAuthFields = {
  tokenEndpointAuthMethod: Type.Optional(Type.Enum([...TOKEN_ENDPOINT_AUTH_METHODS])),
  pkce: Type.Optional(Type.Enum([...PKCE_POLICIES])),
  grantTypes: Type.Optional(Type.Array(Type.Enum([...GRANT_TYPES]), { minItems: 1, uniqueItems: true })),
  jwks: Type.Optional(Type.Union([JwksSchema, Type.Null()])),
  jwksUri: Type.Optional(Nullable(Text(2048))),
};
const UrlList = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { maxItems: 100 });

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
    requireMfa: Type.Optional(Type.Boolean({ description: 'only sessions with a second factor; default false' })),
    ...ClientAuthFields,
  },
  { additionalProperties: false },
);
export type ApplicationCreate = Static<typeof ApplicationCreateSchema>;

export const ApplicationUpdateSchema = Type.Object(
  {
    clientName: Type.Optional(Text(200)),
    clientDescription: Type.Optional(Nullable(Text(2000))),
    clientLogoUrl: Type.Optional(Nullable(Text(2048))),
    redirectUris: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), { minItems: 1, maxItems: 100 }),
    ),
    allowedWebOrigins: Type.Optional(UrlList),
    postLogoutRedirectUris: Type.Optional(UrlList),
    postVerificationRedirectPath: Type.Optional(Nullable(Text(1024))),
    allowedScopes: Type.Optional(Type.Array(ScopeName, { minItems: 1, uniqueItems: true })),
    enabled: Type.Optional(Type.Boolean()),
    requireMfa: Type.Optional(Type.Boolean({ description: 'only sessions with a second factor' })),
    ...ClientAuthFields,
  },
  { additionalProperties: false, minProperties: 1 },
);
export type ApplicationUpdate = Static<typeof ApplicationUpdateSchema>;

/** An entry of the static applications file: a create body whose clientId is required. */
export const StaticApplicationSchema = Type.Object(
  { ...ApplicationCreateSchema.properties, clientId: Type.String({ pattern: CLIENT_ID_PATTERN }) },
  { additionalProperties: false },
);

/**
 * Semantic rules shared by created, updated and static applications; prefix names the field path.
 * `reservedClientId`: the reserved client id the caller may use (the demo registering its own application).
 */
export function applicationProblems(
  input: Partial<ApplicationCreate>,
  prefix = '',
  options: { reservedClientId?: string } = {},
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const at = (field: string) => (prefix ? `${prefix}.${field}` : field);
  if (
    input.clientId !== undefined &&
    RESERVED_CLIENT_IDS.includes(input.clientId) &&
    input.clientId !== options.reservedClientId
  ) {
    problems.push({
      field: at('clientId'),
      message: `"${input.clientId}" is reserved for the built-in demo application (DEMO); choose another client id`,
    });
  }
  input.redirectUris?.forEach((uri, i) => {
    const problem = redirectUriProblem(uri);
    if (problem) problems.push({ field: at(`redirectUris.${i}`), message: problem });
  });
  if (input.redirectUris && new Set(input.redirectUris).size !== input.redirectUris.length) {
    problems.push({ field: at('redirectUris'), message: 'must not contain duplicates' });
  }
  input.postLogoutRedirectUris?.forEach((uri, i) => {
    const problem = redirectUriProblem(uri);
    if (problem) problems.push({ field: at(`postLogoutRedirectUris.${i}`), message: problem });
  });
  input.allowedWebOrigins?.forEach((origin, i) => {
    const problem = webOriginProblem(origin);
    if (problem) problems.push({ field: at(`allowedWebOrigins.${i}`), message: problem });
  });
  if (input.clientLogoUrl) {
    const problem = webUrlProblem(input.clientLogoUrl);
    if (problem) problems.push({ field: at('clientLogoUrl'), message: problem });
  }
  if (input.postVerificationRedirectPath) {
    const problem = redirectPathProblem(input.postVerificationRedirectPath);
    if (problem) problems.push({ field: at('postVerificationRedirectPath'), message: problem });
  }
  if (input.allowedScopes && !input.allowedScopes.includes('openid')) {
    problems.push({ field: at('allowedScopes'), message: 'must include openid (this is an OpenID Connect provider)' });
  }
  return problems;
}

/** The client-authentication settings of an application, as they are after a create or an update. */
export interface ClientAuthSettings {
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  pkce: PkcePolicy;
  grantTypes: GrantType[];
  jwks: { keys: object[] } | null;
  jwksUri: string | null;
}

/** The settings a create body asks for, with the defaults: a public PKCE client. */
export function clientAuthSettings(
  input: Partial<ApplicationCreate>,
  current?: ClientAuthSettings,
): ClientAuthSettings {
  return {
    tokenEndpointAuthMethod: input.tokenEndpointAuthMethod ?? current?.tokenEndpointAuthMethod ?? 'none',
    pkce: input.pkce ?? current?.pkce ?? 'required',
    grantTypes: input.grantTypes ?? current?.grantTypes ?? [...DEFAULT_GRANT_TYPES],
    jwks: input.jwks !== undefined ? input.jwks : (current?.jwks ?? null),
    jwksUri: input.jwksUri !== undefined ? input.jwksUri : (current?.jwksUri ?? null),
  };
}

/** A client secret an operator supplies (SEED_FILE, from the environment): long enough and printable. */
export function clientSecretProblem(secret: string): string | undefined {
  if (secret.length < 32) return 'must be at least 32 characters (generate one: openssl rand -base64 32)';
  if (secret.length > 256) return 'must be at most 256 characters';
  if (!/^[\x21-\x7e]+$/.test(secret)) return 'must be printable ASCII without spaces';
  return undefined;
}

const PRIVATE_KEY_PARTS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];

/**
 * The rules of client authentication, over the settings as they will be (decisions.md "Protocol"): a public client
 * always uses PKCE and never client_credentials; private_key_jwt needs exactly one of jwks and jwksUri, and only it
 * may have them; keys are public keys (no private or symmetric parts) of a type jose verifies.
 * `options.static`: the static applications file cannot hold a secret (secrets are generated and stored hashed).
 */
export function clientAuthProblems(
  settings: ClientAuthSettings,
  prefix = '',
  options: { static?: boolean } = {},
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const at = (field: string) => (prefix ? `${prefix}.${field}` : field);
  const method = settings.tokenEndpointAuthMethod;
  if (options.static && SECRET_METHODS.includes(method)) {
    problems.push({
      field: at('tokenEndpointAuthMethod'),
      message: 'a static application cannot have a client secret; use private_key_jwt, or create it with SEED_FILE',
    });
  }
  if (method === 'none' && settings.pkce !== 'required') {
    problems.push({
      field: at('pkce'),
      message: 'a public client (tokenEndpointAuthMethod none) always requires PKCE',
    });
  }
  if (method === 'none' && settings.grantTypes.includes('client_credentials')) {
    problems.push({ field: at('grantTypes'), message: 'client_credentials needs a confidential client' });
  }
  if (!settings.grantTypes.includes('authorization_code') && settings.grantTypes.includes('refresh_token')) {
    problems.push({ field: at('grantTypes'), message: 'refresh_token needs authorization_code' });
  }
  if (method === 'private_key_jwt') {
    if ((settings.jwks === null) === (settings.jwksUri === null)) {
      problems.push({ field: at('jwks'), message: 'private_key_jwt needs exactly one of jwks and jwksUri' });
    }
  } else {
    if (settings.jwks !== null) problems.push({ field: at('jwks'), message: 'only private_key_jwt clients have keys' });
    if (settings.jwksUri !== null) {
      problems.push({ field: at('jwksUri'), message: 'only private_key_jwt clients have keys' });
    }
  }
  if (settings.jwksUri !== null) {
    const problem = webUrlProblem(settings.jwksUri);
    if (problem) problems.push({ field: at('jwksUri'), message: problem });
  }
  settings.jwks?.keys.forEach((key, i) => {
    const k = key as Record<string, unknown>;
    if (!['RSA', 'EC', 'OKP'].includes(String(k.kty))) {
      problems.push({ field: at(`jwks.keys.${i}.kty`), message: 'must be RSA, EC or OKP (public keys)' });
    }
    if (PRIVATE_KEY_PARTS.some((part) => part in k)) {
      problems.push({ field: at(`jwks.keys.${i}`), message: 'must be a public key: it has private key parts' });
    }
  });
  return problems;
}
