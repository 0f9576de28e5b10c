// The authorize request's parameters after client and redirect_uri are trusted (RFC 6749 §4.1.1, RFC 7636
// §4.3, OpenID Connect Core §3.1.2.1): pure parsing, every rule an OAuthError that authorize redirects.
import { OAuthError, parameterError } from './errors.js';
import { isValidCodeChallenge } from './pkce.js';
import { parseRequestedScope, splitScope } from './scope.js';

export type RawParams = Record<string, string | string[] | undefined>;

/** A valid authorize request (stored as a pending request's params; db/tables.ts has the same shape). */
export interface AuthorizeParams {
  client_id: string;
  redirect_uri: string;
  scope: string[];
  state?: string;
  nonce?: string;
  code_challenge: string;
  prompt: string[];
  max_age?: number;
  login_hint?: string;
}

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

export function parseAuthorizeParams(
  raw: RawParams,
  app: { clientId: string; allowedScopes: string[] },
  redirectUri: string,
): AuthorizeParams {
  for (const name of Object.keys(raw)) {
    if (Array.isArray(raw[name])) throw parameterError(name, 'must not be repeated');
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
  if (responseMode !== undefined && responseMode !== 'query')
    throw new OAuthError('invalid_request', 'only response_mode=query is supported');
  const scope = parseRequestedScope(single(raw, 'scope'), app.allowedScopes);
  const codeChallenge = single(raw, 'code_challenge');
  const method = single(raw, 'code_challenge_method');
  if (!codeChallenge) throw new OAuthError('invalid_request', 'code_challenge is required (PKCE)');
  if (!method) throw new OAuthError('invalid_request', 'code_challenge_method is required and must be S256');
  if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
  if (!isValidCodeChallenge(codeChallenge))
    throw new OAuthError('invalid_request', 'code_challenge must be 43 base64url characters');
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
  for (const [name, value] of [
    ['state', state],
    ['nonce', nonce],
    ['login_hint', loginHint],
  ] as const) {
    if (value !== undefined && value.length > 2048) throw parameterError(name, 'is too long');
  }
  return {
    client_id: app.clientId,
    redirect_uri: redirectUri,
    scope,
    code_challenge: codeChallenge,
    prompt,
    ...(state !== undefined && { state }),
    ...(nonce !== undefined && { nonce }),
    ...(maxAge !== undefined && { max_age: maxAge }),
    ...(loginHint !== undefined && { login_hint: loginHint }),
  };
}
