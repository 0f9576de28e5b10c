// The authorize request's parameters after client and redirect_uri are trusted (RFC 6749 §4.1.1, RFC 7636
// §4.3, OpenID Connect Core §3.1.2.1): pure parsing, every rule an OAuthError that authorize redirects.
// Parameters OpenID Connect Core defines that need nothing of us are accepted and not stored: `display` (one of
// the four values §3.1.2.1 defines, like prompt's; the pages are the same for each), `ui_locales` and
// `claims_locales` (preferences; the pages are English). `acr_values` is kept with the request (the values asked
// for, in order of preference; the level they require is requiredAcr's, src/oauth/authorize-flow.ts).
// `claims` (§5.5) is parsed and kept with the request (parseClaimsParameter),
// and asks for the scopes that carry the claims it names (withClaimScopes);
// `id_token_hint` is checked for length here and verified by the service (src/services/authorization.ts).
import { OAuthError, parameterError } from './errors.js';
import { isValidCodeChallenge } from './pkce.js';
import {
  authorizeResources,
  checkResourceScopes,
  type ResourceClient,
  type ResourceRegistry,
  resourceScopesOf,
} from './resource-indicators.js';
import { parseRequestedScope, splitScope } from './scope.js';
import { isScopeName, SCOPES } from './scopes.js';

export type RawParams = Record<string, string | string[] | undefined>;

/** A valid authorize request (stored as a pending request's params; db/tables.ts has the same shape). */
export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  scope: string[];
  state?: string;
  nonce?: string;
  /** Absent when the application's PKCE is optional and the request sent none. */
  code_challenge?: string;
  prompt: string[];
  max_age?: number;
  login_hint?: string;
  /** Absent: query (the default). OAuth 2.0 Form Post Response Mode. */
  response_mode?: 'form_post';
  /** acr_values (OpenID Connect Core §3.1.2.1): the values asked for, in order of preference (unknown ones too). */
  acr_values?: string[];
  /** The `claims` parameter's members (OpenID Connect Core §5.5), as parsed. */
  claims?: RequestedClaims;
  /** RFC 8707 resource indicators: identifiers of enabled resource servers the client may use, deduplicated. */
  resource?: string[];
}

/** One requested claim (§5.5.1): null, or essential / value / values. */
export type ClaimRequest = { essential?: boolean; value?: unknown; values?: unknown[] } | null;
/** The `claims` parameter: claims requested for UserInfo and for the ID token, by name. */
export interface RequestedClaims {
  userinfo?: Record<string, ClaimRequest>;
  id_token?: Record<string, ClaimRequest>;
}

/** The application's PKCE policy, as authorize reads it (decisions.md, Protocol). */
export interface AuthorizeClient {
  clientId: string;
  allowedScopes: string[];
  /** 'optional' counts only for a confidential client; anything else (or absent) is 'required'. */
  pkce?: 'required' | 'optional';
  clientType?: 'public' | 'confidential';
}

/**
 * The response mode a request asks for, read before anything else can fail (its errors go back that way). A
 * request object we refuse (request_not_supported) may name the mode only inside itself, as the conformance suite's
 * form_post plan does: its unverified payload is read for that alone, since it only chooses how the refusal reaches
 * the redirect_uri already verified from the outer parameters.
 */
export function requestedResponseMode(raw: RawParams): 'form_post' | undefined {
  if (raw.response_mode !== undefined) return raw.response_mode === 'form_post' ? 'form_post' : undefined;
  return typeof raw.request === 'string' && unverifiedClaim(raw.request, 'response_mode') === 'form_post'
    ? 'form_post'
    : undefined;
}

function unverifiedClaim(jwt: string, name: string): unknown {
  const payload = jwt.split('.')[1];
  if (!payload || payload.length > 8192) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    return isObject(claims) ? claims[name] : undefined;
  } catch {
    return undefined;
  }
}

const CLAIM_REQUEST_MEMBERS = new Set(['essential', 'value', 'values']);

/**
 * The `claims` parameter (OpenID Connect Core §5.5): a JSON object whose `userinfo` and `id_token` members are
 * objects of claim name to null or { essential?, value?, values? }. Other members are ignored (§5.5: "other
 * members MAY be present"; unknown claim names are ignored when served). Anything else is invalid_request.
 */
export function parseClaimsParameter(value: string): RequestedClaims {
  const invalid = (detail: string) =>
    new OAuthError('invalid_request', 'claims is not a valid claims request', { detail });
  if (value.length > 4096) throw parameterError('claims', 'is too long');
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw invalid('not JSON');
  }
  if (!isObject(parsed)) throw invalid('not an object');
  const claims: RequestedClaims = {};
  for (const member of ['userinfo', 'id_token'] as const) {
    const requested = parsed[member];
    if (requested === undefined) continue;
    if (!isObject(requested)) throw invalid(`${member} is not an object`);
    const out: Record<string, ClaimRequest> = {};
    for (const [name, request] of Object.entries(requested)) {
      if (request !== null && !isObject(request)) throw invalid(`${member}.${name} is not null or an object`);
      if (request && 'essential' in request && typeof request.essential !== 'boolean')
        throw invalid(`${member}.${name}.essential is not a boolean`);
      if (request && 'values' in request && !Array.isArray(request.values))
        throw invalid(`${member}.${name}.values is not an array`);
      out[name] =
        request === null
          ? null
          : Object.fromEntries(Object.entries(request).filter(([k]) => CLAIM_REQUEST_MEMBERS.has(k)));
    }
    claims[member] = out;
  }
  return claims;
}

/**
 * A claim asked for by name (§5.5) asks for the scope that carries it in the one scope table (decisions.md,
 * "Scopes and claims"): `{"userinfo":{"name":null}}` with scope `openid` asks for `profile` as well, when the
 * application may have it. So the consent page names what will be released, the user's consent and the grant
 * record it the one way they record everything, and UserInfo serves it by scope as always (ID tokens carry no
 * profile claims: decisions.md). Unknown claims, and claims of a scope the application may not have, are
 * ignored (§5.5: a request, not a demand, even when essential).
 */
export function withClaimScopes(scope: string[], claims: RequestedClaims, allowed: readonly string[]): string[] {
  if (!scope.includes('openid')) return scope;
  const names = [...Object.keys(claims.userinfo ?? {}), ...Object.keys(claims.id_token ?? {})];
  const added = SCOPES.filter(
    (s) =>
      s.name !== 'openid' &&
      !scope.includes(s.name) &&
      allowed.includes(s.name) &&
      (s.claims as readonly string[]).some((c) => names.includes(c)),
  ).map((s) => s.name);
  return added.length ? [...scope, ...added] : scope;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** RFC 6749 §3.1: parameters must not be included more than once. */
export function single(params: RawParams, name: string): string | undefined {
  const v = params[name];
  if (Array.isArray(v)) throw parameterError(name, 'must not be repeated');
  return v === undefined || v === '' ? undefined : v;
}

export function appendQuery(uri: string, values: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(values)) if (v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

const PROMPTS = new Set(['none', 'login', 'consent', 'create']);
/** OpenID Connect Core §3.1.2.1. */
const DISPLAYS = new Set(['page', 'popup', 'touch', 'wap']);

/** Whether a request names a resource or a scope outside the scope table: only then is the registry read. */
export function needsResourceRegistry(raw: RawParams): boolean {
  if (raw.resource !== undefined) return true;
  const scope = raw.scope;
  return typeof scope === 'string' && splitScope(scope).some((name) => !isScopeName(name));
}

/**
 * The request's scope: the scope table's values as always (parseRequestedScope), then the scopes of the requested
 * registered resource servers (RFC 8707), in the order asked. A scope of a resource server not requested is
 * invalid_scope naming it. Only resource scopes asked: the built-in part is absent, so `openid` (the default).
 */
function requestedScope(scope: string | undefined, resources: ResourceContext | undefined, requested: string[]) {
  if (!resources || scope === undefined) return { builtIn: scope, own: [] as string[] };
  const names = splitScope(scope);
  checkResourceScopes(names, requested, resources.registry);
  const own = resourceScopesOf(names, requested, resources.registry);
  const rest = names.filter((n) => !own.includes(n));
  return { builtIn: own.length && rest.length === 0 ? undefined : rest.join(' '), own };
}

/** The resource registry and the client as resource indicators read them (loaded when needsResourceRegistry). */
export interface ResourceContext {
  registry: ResourceRegistry;
  client: ResourceClient;
}

export function parseAuthorizeParams(
  raw: RawParams,
  app: AuthorizeClient,
  redirectUri: string,
  resources?: ResourceContext,
): AuthorizeParams {
  for (const name of Object.keys(raw)) {
    // RFC 8707 §2: resource is the one parameter that may be repeated.
    if (Array.isArray(raw[name]) && name !== 'resource') throw parameterError(name, 'must not be repeated');
  }
  if (single(raw, 'request') !== undefined)
    throw new OAuthError('request_not_supported', 'request objects are not supported');
  if (single(raw, 'request_uri') !== undefined)
    throw new OAuthError('request_uri_not_supported', 'request_uri is not supported');
  const responseType = single(raw, 'response_type');
  if (!responseType) throw new OAuthError('invalid_request', 'response_type is required');
  if (responseType !== 'code')
    throw new OAuthError('unsupported_response_type', 'only response_type=code is supported');
  const responseMode = single(raw, 'response_mode');
  if (responseMode !== undefined && responseMode !== 'query' && responseMode !== 'form_post')
    throw new OAuthError('invalid_request', 'only response_mode=query or form_post is supported');
  const resource = resources ? authorizeResources(raw.resource, resources.registry, resources.client) : [];
  const asked = requestedScope(single(raw, 'scope'), resources, resource);
  const scope = [...parseRequestedScope(asked.builtIn, app.allowedScopes), ...asked.own];
  const codeChallenge = single(raw, 'code_challenge');
  const method = single(raw, 'code_challenge_method');
  // PKCE: always for a public client; a confidential client whose operator made it optional may send none.
  const pkceOptional = app.pkce === 'optional' && app.clientType === 'confidential';
  if (codeChallenge !== undefined || method !== undefined || !pkceOptional) {
    if (!codeChallenge) throw new OAuthError('invalid_request', 'code_challenge is required (PKCE)');
    if (!method) throw new OAuthError('invalid_request', 'code_challenge_method is required and must be S256');
    if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
    if (!isValidCodeChallenge(codeChallenge))
      throw new OAuthError('invalid_request', 'code_challenge must be 43 base64url characters');
  }
  const display = single(raw, 'display');
  if (display !== undefined && !DISPLAYS.has(display))
    throw new OAuthError('invalid_request', 'display has a value that is not supported', {
      detail: `display ${display.slice(0, 100)}`,
    });
  const prompt = splitScope(single(raw, 'prompt') ?? '');
  const unknownPrompt = prompt.filter((p) => !PROMPTS.has(p));
  if (unknownPrompt.length)
    throw new OAuthError('invalid_request', 'prompt has a value that is not supported', {
      detail: `prompt ${unknownPrompt.join(' ')}`,
    });
  if (prompt.includes('none') && prompt.length > 1)
    throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other values');
  const maxAgeRaw = single(raw, 'max_age');
  let maxAge: number | undefined;
  if (maxAgeRaw !== undefined) {
    if (!/^\d{1,10}$/.test(maxAgeRaw))
      throw new OAuthError('invalid_request', 'max_age must be a non-negative integer');
    maxAge = Number(maxAgeRaw);
  }
  const state = single(raw, 'state');
  const nonce = single(raw, 'nonce');
  const loginHint = single(raw, 'login_hint');
  const idTokenHint = single(raw, 'id_token_hint');
  const acrValues = single(raw, 'acr_values');
  for (const [name, value] of [
    ['state', state],
    ['nonce', nonce],
    ['login_hint', loginHint],
    ['id_token_hint', idTokenHint],
    ['ui_locales', single(raw, 'ui_locales')],
    ['claims_locales', single(raw, 'claims_locales')],
    ['acr_values', acrValues],
  ] as const) {
    if (value !== undefined && value.length > (name === 'id_token_hint' ? 8192 : 2048))
      throw parameterError(name, 'is too long');
  }
  // Without PKCE, an OpenID Connect request is bound to its code by the nonce alone (decisions.md, Protocol).
  if (codeChallenge === undefined && scope.includes('openid') && nonce === undefined)
    throw new OAuthError('invalid_request', 'nonce is required when PKCE is not used');
  const claimsRaw = single(raw, 'claims');
  const claims = claimsRaw === undefined ? undefined : parseClaimsParameter(claimsRaw);
  return {
    client_id: app.clientId,
    redirect_uri: redirectUri,
    scope: claims ? withClaimScopes(scope, claims, app.allowedScopes) : scope,
    ...(codeChallenge !== undefined && { code_challenge: codeChallenge }),
    prompt,
    ...(state !== undefined && { state }),
    ...(nonce !== undefined && { nonce }),
    ...(maxAge !== undefined && { max_age: maxAge }),
    ...(loginHint !== undefined && { login_hint: loginHint }),
    ...(responseMode === 'form_post' && { response_mode: 'form_post' as const }),
    ...(claims !== undefined && { claims }),
    ...(acrValues !== undefined && splitScope(acrValues).length > 0 && { acr_values: splitScope(acrValues) }),
    ...(resource.length > 0 && { resource }),
  };
}
