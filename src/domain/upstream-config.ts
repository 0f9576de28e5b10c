// How an operator configures an upstream identity provider (issue 35): the input schemas the admin API, the admin
// web, the CLI and SEED_FILE share, the presets, and the rules a provider's settings meet after a create or an
// update (upstreamProblems: field-level, as VALIDATION_ERROR details). The stored provider and how its claims
// become an identity are in upstream.ts.
import Type, { type Static } from 'typebox';
import type { FieldProblem } from '../errors.js';
import { webUrlProblem } from '../oauth/redirect-uri.js';
import { Nullable, Text } from './fields.js';
import {
  MAPPING_FIELDS,
  UPSTREAM_CLIENT_AUTH,
  UPSTREAM_KINDS,
  UPSTREAM_PRESETS,
  type UpstreamClientAuth,
  type UpstreamKind,
  type UpstreamProvider,
} from './upstream.js';

/** A provider's id: in its callback address and its button. */
export const UPSTREAM_ID_PATTERN = /^[a-z0-9][a-z0-9-]{0,31}$/;
export const UPSTREAM_PRESET_NAMES = Object.keys(UPSTREAM_PRESETS) as Array<keyof typeof UPSTREAM_PRESETS>;
export type UpstreamPresetName = keyof typeof UPSTREAM_PRESETS;

/** Where the upstream sends the browser back: what the operator registers at the upstream as the redirect URI. */
export function upstreamCallbackUrl(loginUrl: string, id: string): string {
  return `${loginUrl}/upstream/${encodeURIComponent(id)}/callback`;
}

/** An upstream provider as the admin API, the admin web and the CLI show it: with the callback URL to register. */
export interface UpstreamProviderDetails extends UpstreamProvider {
  /** The redirect URI to register at the upstream: {LOGIN_URL}/upstream/{id}/callback. */
  callbackUrl: string;
}

const Url = Text(2048);
const DomainList = Type.Array(Type.String({ minLength: 1, maxLength: 253 }), { maxItems: 100 });
const ScopeList = Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 50 });
const Mapping = Type.Record(Type.String({ maxLength: 64 }), Type.String({ minLength: 1, maxLength: 200 }), {
  description: `which upstream claim fills each field: ${MAPPING_FIELDS.join(', ')} (absent: the standard claims)`,
});

const SettingFields = {
  kind: Type.Optional(
    Type.Enum([...UPSTREAM_KINDS], { description: 'oidc (an issuer, ID tokens; the default) or oauth2' }),
  ),
  name: Type.Optional(Text(100)),
  logoUrl: Type.Optional(Nullable(Url)),
  issuer: Type.Optional(Nullable(Url)),
  authorizationEndpoint: Type.Optional(Nullable(Url)),
  tokenEndpoint: Type.Optional(Nullable(Url)),
  userinfoEndpoint: Type.Optional(Nullable(Url)),
  emailsEndpoint: Type.Optional(Nullable(Url)),
  clientId: Type.Optional(Text(255)),
  clientSecret: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()], {
      description:
        'the client secret the upstream gave (client_secret_basic/post); stored sealed, never shown; ' +
        'a new one replaces the old',
    }),
  ),
  clientAuth: Type.Optional(Type.Enum([...UPSTREAM_CLIENT_AUTH])),
  scopes: Type.Optional(ScopeList),
  mapping: Type.Optional(Mapping),
  allowSignUp: Type.Optional(Type.Boolean({ description: 'a first sign-in with an unknown address creates one' })),
  allowedDomains: Type.Optional(DomainList),
  trustEmailVerified: Type.Optional(Type.Boolean()),
  ssoDomains: Type.Optional(DomainList),
  storeTokens: Type.Optional(Type.Boolean()),
  enabled: Type.Optional(Type.Boolean()),
};

export const UpstreamProviderCreateSchema = Type.Object(
  {
    id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 32, description: 'a slug, [a-z0-9-]; default: the preset name' }),
    ),
    preset: Type.Optional(
      Type.Enum([...UPSTREAM_PRESET_NAMES], { description: 'fills the endpoints, scopes and mapping (github)' }),
    ),
    ...SettingFields,
  },
  { additionalProperties: false },
);
export type UpstreamProviderCreate = Static<typeof UpstreamProviderCreateSchema>;

export const UpstreamProviderUpdateSchema = Type.Object(
  {
    ...SettingFields,
    rotateKey: Type.Optional(
      Type.Boolean({ description: 'private_key_jwt: make a new key (register the new publicJwk upstream)' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);
export type UpstreamProviderUpdate = Static<typeof UpstreamProviderUpdateSchema>;

/**
 * A provider's settings as they are after a create or an update: what upstreamProblems checks. The provider as shown,
 * without what the store makes (its public key, its dates); hasClientSecret: a secret is (or will be) stored.
 */
export type UpstreamSettings = Omit<UpstreamProvider, 'publicJwk' | 'createdAt' | 'updatedAt'>;

/** The defaults of a new provider of this kind (the preset's values first). */
export function settingsOfCreate(input: UpstreamProviderCreate): {
  settings: UpstreamSettings;
  problems: FieldProblem[];
} {
  const preset = input.preset ? UPSTREAM_PRESETS[input.preset] : undefined;
  const problems: FieldProblem[] = [];
  const id = input.id ?? input.preset;
  if (id === undefined) problems.push({ field: 'id', message: 'is required (a slug such as "google" or "acme")' });
  const kind = input.kind ?? preset?.kind ?? 'oidc';
  if (preset && input.kind !== undefined && input.kind !== preset.kind) {
    problems.push({ field: 'kind', message: `the ${input.preset} preset is an ${preset.kind} provider` });
  }
  const name = input.name ?? preset?.name;
  if (name === undefined) problems.push({ field: 'name', message: 'is required (the button says "Continue with …")' });
  if (input.clientId === undefined) {
    problems.push({ field: 'clientId', message: 'is required: the client id the upstream gave this provider' });
  }
  const resolvedKind: UpstreamKind = kind;
  const settings: UpstreamSettings = {
    id: id ?? '',
    kind: resolvedKind,
    name: name ?? '',
    logoUrl: input.logoUrl ?? null,
    issuer: input.issuer ?? null,
    authorizationEndpoint: input.authorizationEndpoint ?? preset?.authorizationEndpoint ?? null,
    tokenEndpoint: input.tokenEndpoint ?? preset?.tokenEndpoint ?? null,
    userinfoEndpoint: input.userinfoEndpoint ?? preset?.userinfoEndpoint ?? null,
    emailsEndpoint: input.emailsEndpoint ?? preset?.emailsEndpoint ?? null,
    clientId: input.clientId ?? '',
    clientAuth: input.clientAuth ?? preset?.clientAuth ?? 'client_secret_basic',
    hasClientSecret: typeof input.clientSecret === 'string',
    scopes:
      input.scopes ?? (preset ? [...preset.scopes] : resolvedKind === 'oidc' ? ['openid', 'email', 'profile'] : []),
    mapping: input.mapping ?? (preset ? { ...preset.mapping } : {}),
    allowSignUp: input.allowSignUp ?? false,
    allowedDomains: input.allowedDomains ?? [],
    trustEmailVerified: input.trustEmailVerified ?? preset?.trustEmailVerified ?? false,
    ssoDomains: input.ssoDomains ?? [],
    storeTokens: input.storeTokens ?? false,
    enabled: input.enabled ?? true,
  };
  return { settings, problems };
}

/** The settings after an update of `current`: each given field replaces the current one. */
export function settingsOfUpdate(current: UpstreamProvider, input: UpstreamProviderUpdate): UpstreamSettings {
  const pick = <K extends keyof UpstreamSettings>(key: K, value: UpstreamSettings[K] | undefined) =>
    value === undefined ? (current[key as keyof UpstreamProvider] as UpstreamSettings[K]) : value;
  const clientAuth = input.clientAuth ?? current.clientAuth;
  return {
    id: current.id,
    kind: pick('kind', input.kind),
    name: pick('name', input.name),
    logoUrl: pick('logoUrl', input.logoUrl),
    issuer: pick('issuer', input.issuer),
    authorizationEndpoint: pick('authorizationEndpoint', input.authorizationEndpoint),
    tokenEndpoint: pick('tokenEndpoint', input.tokenEndpoint),
    userinfoEndpoint: pick('userinfoEndpoint', input.userinfoEndpoint),
    emailsEndpoint: pick('emailsEndpoint', input.emailsEndpoint),
    clientId: pick('clientId', input.clientId),
    clientAuth,
    // A switch to private_key_jwt drops the secret; a new one replaces it.
    hasClientSecret:
      input.clientSecret === undefined
        ? clientAuth !== 'private_key_jwt' && current.hasClientSecret
        : input.clientSecret !== null,
    scopes: pick('scopes', input.scopes),
    mapping: pick('mapping', input.mapping),
    allowSignUp: pick('allowSignUp', input.allowSignUp),
    allowedDomains: pick('allowedDomains', input.allowedDomains),
    trustEmailVerified: pick('trustEmailVerified', input.trustEmailVerified),
    ssoDomains: pick('ssoDomains', input.ssoDomains),
    storeTokens: pick('storeTokens', input.storeTokens),
    enabled: pick('enabled', input.enabled),
  };
}

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/;
/** A lower-case host name: labels of letters, digits and inner hyphens, at most 253 characters. */
const HOSTNAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;
/** A claim name: a top-level member of the claims or of the user endpoint's JSON. */
const CLAIM_NAME = /^[\x21-\x7e]{1,200}$/;

function domainProblems(field: string, list: string[], problems: FieldProblem[]): void {
  list.forEach((domain, i) => {
    if (domain !== domain.toLowerCase() && HOSTNAME.test(domain.toLowerCase())) {
      problems.push({ field: `${field}.${i}`, message: `must be lower case (${domain.toLowerCase()})` });
    } else if (!HOSTNAME.test(domain)) {
      problems.push({ field: `${field}.${i}`, message: 'must be a domain name such as example.com (no @, no scheme)' });
    }
  });
  if (new Set(list).size !== list.length) problems.push({ field, message: 'must not contain duplicates' });
}

/** An upstream's URL: https, or http on a loopback host (a local test upstream); no fragment. */
function urlProblem(value: string): string | undefined {
  const problem = webUrlProblem(value);
  if (problem) return problem;
  if (value.includes('#')) return 'must not have a fragment';
  return undefined;
}

/**
 * The rules a provider's settings meet (after the defaults and the update are applied). Field names are the
 * admin API's (`allowedDomains.1`). The SSO domains other providers claim are checked by the store (409).
 */
export function upstreamProblems(s: UpstreamSettings, prefix = ''): FieldProblem[] {
  const problems: FieldProblem[] = [];
  const at = (field: string) => (prefix ? `${prefix}.${field}` : field);
  const push = (field: string, message: string) => problems.push({ field: at(field), message });
  if (s.id && !UPSTREAM_ID_PATTERN.test(s.id)) {
    push('id', 'must be 1 to 32 lower-case letters, digits and hyphens, starting with a letter or digit');
  }
  if (!s.name.trim()) push('name', 'must not be empty');
  if (!s.clientId.trim() && s.clientId !== '') push('clientId', 'must not be blank');
  const urls = ['logoUrl', 'issuer', 'authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint', 'emailsEndpoint'];
  for (const key of urls) {
    const value = s[key as keyof UpstreamSettings] as string | null;
    if (value === null) continue;
    const problem = urlProblem(value);
    if (problem) push(key, problem);
  }
  if (s.kind === 'oidc') {
    if (s.issuer === null) {
      push('issuer', 'an OpenID Connect provider needs its issuer (for example https://accounts.google.com)');
    } else if (/[?]/.test(s.issuer)) push('issuer', 'must not have a query');
    if (!s.scopes.includes('openid')) push('scopes', 'an OpenID Connect provider needs the openid scope');
  } else {
    const needed = ['authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint'] as const;
    for (const key of needed) {
      if (s[key] === null)
        push(key, 'an OAuth 2.0 provider (kind oauth2) needs its authorization, token and user endpoints');
    }
  }
  if (s.clientAuth !== 'private_key_jwt' && !s.hasClientSecret) {
    push('clientSecret', `${s.clientAuth} needs the client secret the upstream gave (or use private_key_jwt)`);
  }
  s.scopes.forEach((scope, i) => {
    if (!SCOPE_TOKEN.test(scope)) push(`scopes.${i}`, 'must be a scope token (no spaces, quotes or backslashes)');
  });
  if (new Set(s.scopes).size !== s.scopes.length) push('scopes', 'must not contain duplicates');
  for (const [key, claim] of Object.entries(s.mapping)) {
    if (!(MAPPING_FIELDS as readonly string[]).includes(key)) {
      push(`mapping.${key}`, `is not a mapping field; the fields are ${MAPPING_FIELDS.join(', ')}`);
    } else if (typeof claim !== 'string' || !CLAIM_NAME.test(claim)) {
      push(`mapping.${key}`, 'must be a claim name (printable, no spaces)');
    }
  }
  domainProblems(at('allowedDomains'), s.allowedDomains, problems);
  domainProblems(at('ssoDomains'), s.ssoDomains, problems);
  if (s.allowedDomains.length > 0) {
    s.ssoDomains.forEach((domain, i) => {
      if (!s.allowedDomains.includes(domain)) {
        push(`ssoDomains.${i}`, 'is not among allowedDomains: its users could not sign in with this provider');
      }
    });
  }
  return problems;
}

/** What a create or an update body may not carry together. */
export function secretInputProblems(
  clientAuth: UpstreamClientAuth,
  input: { clientSecret?: string | null | undefined; rotateKey?: boolean | undefined },
): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (clientAuth === 'private_key_jwt' && typeof input.clientSecret === 'string') {
    problems.push({
      field: 'clientSecret',
      message: 'a private_key_jwt provider signs with its key: it has no secret',
    });
  }
  if (typeof input.clientSecret === 'string' && !/^[\x21-\x7e]+$/.test(input.clientSecret)) {
    problems.push({ field: 'clientSecret', message: 'must be printable ASCII without spaces' });
  }
  if (input.rotateKey && clientAuth !== 'private_key_jwt') {
    problems.push({ field: 'rotateKey', message: 'only a private_key_jwt provider has a key' });
  }
  return problems;
}
