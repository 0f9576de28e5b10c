// Clients that register themselves (issue 36; decisions.md, Protocol): RFC 7591 client metadata as this provider
// reads it, and client ID metadata documents (draft-ietf-oauth-client-id-metadata-document). Pure: what a request
// or a document asks for becomes the application it registers, or the RFC 7591 §3.2.2 error that says why not.
// Such clients are public PKCE clients (token_endpoint_auth_method none) unless the operator allows confidential
// dynamic clients (REGISTRATION_CONFIDENTIAL; a secret the server generates, never private_key_jwt); they get the
// built-in scopes they name (openid always) and no web origins, post-logout or post-verification URLs.
import { OAuthError } from '../oauth/errors.js';
import { redirectUriProblem, webUrlProblem } from '../oauth/redirect-uri.js';
import { DEFAULT_ALLOWED_SCOPES, SCOPE_NAMES } from '../oauth/scopes.js';
import { splitScope } from '../oauth/scope.js';
import type { Application, GrantType, TokenEndpointAuthMethod } from './application.js';

/** What a self-registered client may choose; the rest is fixed (see the file's comment). */
export interface SelfRegisteredSettings {
  clientName: string;
  clientLogoUrl: string | null;
  redirectUris: string[];
  allowedScopes: string[];
  tokenEndpointAuthMethod: TokenEndpointAuthMethod;
  grantTypes: GrantType[];
}

export const MAX_SELF_REGISTERED_REDIRECT_URIS = 20;
const MAX_CLIENT_ID_URL = 255;

const metadataError = (
  description: ConstructorParameters<typeof OAuthError<'invalid_client_metadata'>>[1],
  detail?: string,
) => new OAuthError('invalid_client_metadata', description, detail === undefined ? {} : { detail });

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStringArray = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string');

/**
 * RFC 7591 §2 metadata (a registration or RFC 7592 update request, or a metadata document) as the settings of the
 * application it registers; an OAuthError (invalid_redirect_uri, invalid_client_metadata) when it cannot be one.
 * Unknown members are ignored (§2: "MUST ignore any client metadata it does not understand"). `confidential`:
 * whether the operator allows client_secret_basic and client_secret_post; when allowed, an absent
 * token_endpoint_auth_method is RFC 7591's default, client_secret_basic; otherwise none.
 */
export function selfRegisteredSettings(body: unknown, options: { confidential: boolean }): SelfRegisteredSettings {
  if (!isObject(body)) throw metadataError('the registration request must be a JSON object');
  const uris = body.redirect_uris;
  if (!isStringArray(uris) || uris.length === 0 || uris.length > MAX_SELF_REGISTERED_REDIRECT_URIS) {
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris is required and must list 1 to 20 URIs');
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) {
      throw new OAuthError(
        'invalid_redirect_uri',
        'a redirect URI must be https (or http on a loopback host), absolute, without fragment or credentials',
        { detail: `${uri.slice(0, 200)}: ${problem}` },
      );
    }
  }
  for (const name of ['client_name', 'logo_uri', 'scope', 'token_endpoint_auth_method'] as const) {
    if (body[name] !== undefined && typeof body[name] !== 'string') {
      throw metadataError('a metadata field has a value of the wrong type', `${name} is not a string`);
    }
  }
  for (const name of ['grant_types', 'response_types'] as const) {
    if (body[name] !== undefined && !isStringArray(body[name])) {
      throw metadataError('a metadata field has a value of the wrong type', `${name} is not an array of strings`);
    }
  }
  const name = body.client_name as string | undefined;
  if (name !== undefined && (name.trim() === '' || name.length > 200)) {
    throw metadataError('client_name must be a string of 1 to 200 characters');
  }
  const logo = body.logo_uri as string | undefined;
  if (logo !== undefined && webUrlProblem(logo) !== undefined) throw metadataError('logo_uri must be an https URL');
  if (body.jwks !== undefined || body.jwks_uri !== undefined) {
    throw metadataError(
      'jwks and jwks_uri are not accepted (private_key_jwt is for applications an operator registers)',
    );
  }
  const method =
    (body.token_endpoint_auth_method as string | undefined) ?? (options.confidential ? 'client_secret_basic' : 'none');
  if (!options.confidential && method !== 'none') {
    throw metadataError('token_endpoint_auth_method must be none here (public PKCE clients only)', `asked ${method}`);
  }
  if (!['none', 'client_secret_basic', 'client_secret_post'].includes(method)) {
    throw metadataError('token_endpoint_auth_method must be none, client_secret_basic or client_secret_post');
  }
  const grants = (body.grant_types as string[] | undefined) ?? ['authorization_code', 'refresh_token'];
  if (grants.length === 0 || grants.some((g) => g !== 'authorization_code' && g !== 'refresh_token')) {
    throw metadataError('grant_types may hold authorization_code and refresh_token only', grants.join(' '));
  }
  if (!grants.includes('authorization_code'))
    throw metadataError('refresh_token needs the authorization_code grant type');
  const responseTypes = (body.response_types as string[] | undefined) ?? ['code'];
  if (responseTypes.some((r) => r !== 'code')) throw metadataError('response_types may hold code only');
  const scope = body.scope as string | undefined;
  let allowedScopes: string[] = [...DEFAULT_ALLOWED_SCOPES];
  if (scope !== undefined) {
    // Built-in scopes limit the client; a registered resource's scopes are the resource's to allow (clientMayUse).
    const asked = splitScope(scope);
    if (asked.some((s) => !/^[\x21\x23-\x5b\x5d-\x7e]{1,100}$/.test(s))) {
      throw metadataError('scope contains a value that is not known here');
    }
    allowedScopes = ['openid', ...SCOPE_NAMES.filter((s) => s !== 'openid' && asked.includes(s))];
  }
  return {
    clientName: name?.trim() ?? 'Unnamed application',
    clientLogoUrl: logo ?? null,
    redirectUris: [...new Set(uris)],
    allowedScopes,
    tokenEndpointAuthMethod: method as TokenEndpointAuthMethod,
    grantTypes: [...new Set(grants)] as GrantType[],
  };
}

/** The client's metadata as RFC 7591 §3.2.1 and RFC 7592 §3 answer it (what was registered, defaults applied). */
export function clientMetadataOf(app: Application) {
  return {
    client_id: app.clientId,
    client_name: app.clientName,
    redirect_uris: app.redirectUris,
    token_endpoint_auth_method: app.tokenEndpointAuthMethod,
    grant_types: app.grantTypes,
    response_types: ['code'],
    scope: app.allowedScopes.join(' '),
    ...(app.clientLogoUrl && { logo_uri: app.clientLogoUrl }),
    ...(app.createdAt && { client_id_issued_at: Math.floor(Date.parse(app.createdAt) / 1000) }),
  };
}

/**
 * undefined when `value` may be a client ID metadata document's URL (the draft's §3): https, a host, a path other
 * than "/", no fragment, no credentials, no dot segments, at most 255 characters (so every admin surface can name
 * it); else why not. A client id that is not a URL at all is an ordinary client id (CLIENT_ID_PATTERN).
 */
export function metadataDocumentUrlProblem(value: string): string | undefined {
  if (value.length > MAX_CLIENT_ID_URL) return `must be at most ${MAX_CLIENT_ID_URL} characters`;
  if (!value.startsWith('https://')) return 'must be an https URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL';
  }
  if (url.href !== value) return 'must be written in its normal form';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.hash || value.includes('#')) return 'must not contain a fragment';
  if (url.pathname === '/' || url.pathname === '') return 'must have a path';
  if (/\/\.\.?(\/|$)/.test(url.pathname) || /%2e/i.test(url.pathname)) return 'must not contain dot segments';
  return undefined;
}

/** Whether a client id names a metadata document: it starts like an https URL (then the URL rules apply). */
export const isUrlClientId = (clientId: string) => clientId.startsWith('https://');

/**
 * A client ID metadata document, fetched from `clientId`, as the settings of the application it registers. Its
 * `client_id` must be the URL exactly; it is a public client (token_endpoint_auth_method none or absent; a document
 * cannot hold a secret); redirect_uris, client_name, logo_uri and scope as in a registration request.
 */
export function metadataDocumentSettings(clientId: string, document: unknown): SelfRegisteredSettings {
  if (!isObject(document)) throw new Error('the document is not a JSON object');
  if (document.client_id !== clientId) throw new Error(`its client_id is ${String(document.client_id).slice(0, 300)}`);
  if (document.client_secret !== undefined || document.client_secret_expires_at !== undefined) {
    throw new Error('it holds a client secret');
  }
  try {
    const settings = selfRegisteredSettings(
      { ...document, token_endpoint_auth_method: document.token_endpoint_auth_method ?? 'none' },
      {
        confidential: false,
      },
    );
    return {
      ...settings,
      clientName: typeof document.client_name === 'string' ? settings.clientName : new URL(clientId).host,
    };
  } catch (error) {
    if (error instanceof OAuthError)
      throw new Error(`${error.error_description}${error.detail ? ` (${error.detail})` : ''}`);
    throw error;
  }
}
