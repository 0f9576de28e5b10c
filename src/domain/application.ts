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
  /** database: managed through the admin API, web or CLI; static: read-only, from the static file. */
  source: 'database' | 'static';
  /** null for static applications. */
  createdAt: string | null;
  updatedAt: string | null;
}

const ScopeName = Type.Enum([...SCOPE_NAMES]);
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
