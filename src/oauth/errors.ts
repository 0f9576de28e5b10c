// One error class keyed by the RFC code, as node-oidc-provider's errors are (lib/helpers/errors.js):
// `error_description` is public (a third party reads it: short, fixed per case, RFC 6749 §5.2 charset);
// `detail` is private, for the log only (it may quote the request). Anything unexpected becomes
// server_error at the edge (plugins/infra/error-handlers.ts).
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'login_required'
  | 'consent_required'
  | 'interaction_required'
  | 'unmet_authentication_requirements'
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'invalid_token'
  | 'insufficient_scope'
  // RFC 8707 §2: a resource indicator that is invalid, unknown, or not allowed to this client.
  | 'invalid_target'
  // RFC 7591 §3.2.2 (dynamic client registration)
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata';

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * OAuth parameters a description may name. The name in a description always comes from this list, never
 * from the request: a parameter the request made up is "a parameter" (its name goes to the detail).
 */
export const OAUTH_PARAMETERS = [
  'client_id',
  'client_secret',
  'redirect_uri',
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'login_hint',
  'request',
  'request_uri',
  'grant_type',
  'code',
  'code_verifier',
  'refresh_token',
  'token',
  'token_type_hint',
  'id_token_hint',
  'post_logout_redirect_uri',
  'ui_locales',
  'display',
  'claims_locales',
  'claims',
  'acr_values',
  'client_assertion',
  'client_assertion_type',
  'resource',
] as const;
export type OAuthParameter = (typeof OAUTH_PARAMETERS)[number];

export function isOAuthParameter(name: string): name is OAuthParameter {
  return (OAUTH_PARAMETERS as readonly string[]).includes(name);
}

/** Stands for one of OAUTH_PARAMETERS in a catalog entry. */
const PARAMETER = '{parameter}';
/**
 * Stands for a registered resource server's identifier at the end of a catalog entry: the operator registered it
 * (it is never the request's input) and resourceScopeError checks it is RFC 6749 section 5.2 text first.
 */
const RESOURCE = '{resource}';

/**
 * Every public error_description, per error code: the same refusal always reads the same, and nothing of
 * the request is in it (reflected input in an error page or a redirect is an injection and phishing
 * vector). What varies (the value refused, the reason underneath) goes to the private `detail`, which
 * only the log sees. Each entry is RFC 6749 §5.2 text: %x20-21 / %x23-5B / %x5D-7E, so ASCII without `"`
 * and `\` (test/unit/oauth-errors.test.ts). An error code with no entry cannot be thrown as an OAuthError.
 */
export const ERROR_DESCRIPTIONS = {
  invalid_request: [
    `${PARAMETER} is required`,
    `${PARAMETER} must not be repeated`,
    `${PARAMETER} is too long`,
    'a required parameter is missing',
    'a parameter must not be repeated',
    'a parameter is too long',
    'the request is malformed',
    'the request body is too large',
    'the body must be application/x-www-form-urlencoded',
    'send no body, or an application/x-www-form-urlencoded one',
    'the access token must be sent one way only, in the Authorization header (RFC 6750 section 2)',
    // authorize (RFC 6749 §4.1.1, RFC 7636 §4.3, OpenID Connect Core §3.1.2.1)
    'client_id is not valid',
    'redirect_uri is not registered for this client',
    'only response_mode=query or form_post is supported',
    'nonce is required when PKCE is not used',
    'display has a value that is not supported',
    'claims is not a valid claims request',
    'id_token_hint is not an ID token issued to this client',
    'code_challenge is required (PKCE)',
    'code_challenge_method is required and must be S256',
    'code_challenge_method must be S256',
    'code_challenge must be 43 base64url characters',
    'prompt has a value that is not supported',
    'prompt=none cannot be combined with other values',
    'max_age must be a non-negative integer',
    'the sign-in request has expired or was already used (or is from another browser); go back to the application',
    'this sign-in request was already used; start again from the application',
    // token endpoints (RFC 6749 §4.1.3, RFC 7636 §4.5)
    'code_verifier must be 43-128 unreserved characters',
    'this endpoint reads the refresh token from its cookie; do not send refresh_token',
    // end-session (OpenID Connect RP-Initiated Logout 1.0 §2)
    'id_token_hint is not an ID token issued here',
    'client_id does not match the id_token_hint',
    'unknown client_id',
    'post_logout_redirect_uri needs client_id or id_token_hint',
    'post_logout_redirect_uri is not registered for this client',
    // client authentication (RFC 6749 §2.3, RFC 7523 §2.2)
    'client authentication must use one method only (RFC 6749 section 2.3)',
    'client_id does not match the client authentication',
    'client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  ],
  invalid_client: [
    'unknown client',
    'unknown client_id',
    'this application is disabled',
    'client authentication failed',
    'the Authorization header is not valid Basic client authentication',
    'this client authenticates with client_secret_basic',
    'this client authenticates with client_secret_post',
    'this client authenticates with private_key_jwt',
    'this client is public: send client_id alone, without a secret or an assertion',
    'the client assertion is invalid',
    'the client assertion was already used',
    'the keys of this client could not be fetched from its jwks_uri',
    // client ID metadata documents (draft-ietf-oauth-client-id-metadata-document)
    'client ID metadata documents are not accepted here',
    'the client ID metadata document could not be fetched',
    'the client ID metadata document is not valid for this client_id',
  ],
  invalid_grant: [
    'the authorization code is invalid, expired or already used',
    'the authorization code was issued to another client',
    'redirect_uri does not match the authorization request',
    'code_verifier does not match the code_challenge',
    'the authorization code needs its code_verifier',
    'the user is not available',
    'the sign-in session of the authorization code has ended',
    "the user revoked the application's access",
    'the refresh token is invalid, expired or revoked',
    'the refresh token was already used; the whole grant is revoked',
    'the refresh token has expired',
    'the application is disabled',
    'there is no refresh cookie; sign in again',
  ],
  unauthorized_client: [
    'this client may not use this grant type',
    'client_credentials is for confidential clients only',
  ],
  unsupported_grant_type: ['the grant_type is not supported'],
  unsupported_response_type: ['only response_type=code is supported'],
  invalid_scope: [
    'scope contains characters that RFC 6749 section 3.3 does not allow',
    'scope contains a value that is not known here',
    'scope contains a value this client may not request',
    'the openid scope is required',
    'scope exceeds the original grant',
    'scope must not be empty',
    'openid and offline_access need a user; a client_credentials token has none',
    // RFC 8707: a scope of a registered resource server is granted only with that resource asked for.
    'scope has a value of a resource server that was not requested; add resource={resource}',
    'scope has a value of a resource server that was not requested; add its resource',
    'scope has a value that is not one of the scopes of the requested resource',
  ],
  access_denied: [
    'the user denied the request',
    'this endpoint accepts requests from first-party origins only (send an Origin header)',
  ],
  server_error: ['an unexpected error occurred'],
  temporarily_unavailable: [
    'The service is temporarily unavailable; try again shortly',
    'too many requests; try again later',
  ],
  login_required: [
    'the user is not signed in',
    'the sign-in is older than max_age',
    'the signed-in user is not the one of the id_token_hint',
    'the session does not meet the required level',
  ],
  consent_required: ['the user has not consented to these scopes'],
  interaction_required: ['the e-mail address is not verified'],
  // OpenID Connect Core 1.0 incorporating errata set 2, §3.1.2.6 (IANA OAuth Extensions Error registry).
  unmet_authentication_requirements: ['second factors are turned off here', 'the user did not give a second factor'],
  request_not_supported: ['request objects are not supported'],
  request_uri_not_supported: ['request_uri is not supported'],
  invalid_token: [
    // RFC 7591 §3 (initial access token) and RFC 7592 §2 (registration access token)
    'an initial access token is required to register a client',
    'the initial access token is invalid, expired or used up',
    'the registration access token is invalid',
  ],
  insufficient_scope: [],
  // RFC 8707 §2 (authorize) and §2.2 (token endpoint).
  invalid_target: [
    'resource must be an absolute URI without a fragment or query (RFC 8707 section 2)',
    'resource names no resource server known here',
    'resource names a resource server that is disabled',
    'this client may not ask for this resource',
    'name at most one resource at the token endpoint',
    'resource is not one of the resources of the grant',
    'several resources were granted: name one of the granted resources with resource',
  ],
  invalid_redirect_uri: [
    'redirect_uris is required and must list 1 to 20 URIs',
    'a redirect URI must be https (or http on a loopback host), absolute, without fragment or credentials',
  ],
  invalid_client_metadata: [
    'the registration request must be a JSON object',
    'client_name must be a string of 1 to 200 characters',
    'logo_uri must be an https URL',
    'token_endpoint_auth_method must be none here (public PKCE clients only)',
    'token_endpoint_auth_method must be none, client_secret_basic or client_secret_post',
    'grant_types may hold authorization_code and refresh_token only',
    'refresh_token needs the authorization_code grant type',
    'response_types may hold code only',
    'scope contains a value that is not known here',
    'jwks and jwks_uri are not accepted (private_key_jwt is for applications an operator registers)',
    'client_id does not match the client being updated',
    'a metadata field has a value of the wrong type',
  ],
} as const satisfies Record<OAuthErrorCode, readonly string[]>;

type Expand<S extends string> = S extends `${typeof PARAMETER}${infer Rest}`
  ? `${OAuthParameter}${Rest}`
  : S extends `${infer Head}${typeof RESOURCE}`
    ? `${Head}${string}`
    : S;

/** The public descriptions of an error code (a catalog entry, its parameter named). */
export type OAuthErrorDescription<E extends OAuthErrorCode = OAuthErrorCode> = E extends OAuthErrorCode
  ? Expand<(typeof ERROR_DESCRIPTIONS)[E][number]>
  : never;

/** Every (error, error_description) the service can answer, placeholders expanded: for tests and docs. */
export function allErrorDescriptions(): Array<{ error: OAuthErrorCode; description: string }> {
  return Object.entries(ERROR_DESCRIPTIONS).flatMap(([error, descriptions]) =>
    (descriptions as readonly string[]).flatMap((entry) =>
      (entry.startsWith(PARAMETER)
        ? OAUTH_PARAMETERS.map((p) => p + entry.slice(PARAMETER.length))
        : [entry.replace(RESOURCE, 'https://api.example.com')]
      ).map((description) => ({ error: error as OAuthErrorCode, description })),
    ),
  );
}

/** The detail is for the log; a request can make it long, the log line stays bounded. */
const DETAIL_LIMIT = 1000;

export class OAuthError<E extends OAuthErrorCode = OAuthErrorCode> extends Error {
  readonly statusCode: number;
  /** Public: the RFC 6749 §5.2 error_description, an entry of ERROR_DESCRIPTIONS. */
  readonly error_description: OAuthErrorDescription<E>;
  /** Private: what the log needs to explain this error (request values included); never sent. */
  readonly detail: string | undefined;
  constructor(
    readonly error: E,
    description: OAuthErrorDescription<E>,
    options: { status?: number; detail?: string } = {},
  ) {
    super(description);
    this.error_description = description;
    this.name = 'OAuthError';
    this.statusCode = options.status ?? STATUS[error] ?? 400;
    this.detail = options.detail?.slice(0, DETAIL_LIMIT);
  }

  /** @deprecated the public text under its wire name is `error_description`. */
  get description(): string {
    return this.error_description;
  }

  toJSON() {
    return { error: this.error, error_description: this.error_description };
  }
}

type ParameterProblem = 'is required' | 'must not be repeated' | 'is too long';
const UNNAMED: Record<ParameterProblem, OAuthErrorDescription<'invalid_request'>> = {
  'is required': 'a required parameter is missing',
  'must not be repeated': 'a parameter must not be repeated',
  'is too long': 'a parameter is too long',
};

/**
 * invalid_request about one parameter: named when it is one of OAUTH_PARAMETERS, else "a parameter"
 * (a name the request made up is never echoed); the name is in the detail either way.
 */
export function parameterError(name: string, problem: ParameterProblem): OAuthError<'invalid_request'> {
  const description = isOAuthParameter(name) ? (`${name} ${problem}` as const) : UNNAMED[problem];
  return new OAuthError('invalid_request', description, { detail: `parameter ${name}` });
}

/** RFC 6749 §5.2 text: what a description may hold. */
const DESCRIPTION_TEXT = /^[\x20\x21\x23-\x5b\x5d-\x7e]{1,255}$/;

/**
 * invalid_scope for a scope of a registered resource server asked for without its resource (RFC 8707): the
 * description names the resource to add (an identifier the operator registered, never the request's input) when it
 * is RFC 6749 section 5.2 text; the generic entry otherwise.
 */
export function resourceScopeError(identifier: string, scope: string): OAuthError<'invalid_scope'> {
  const detail = `scope ${scope.slice(0, 100)} belongs to ${identifier}`;
  if (!DESCRIPTION_TEXT.test(identifier))
    return new OAuthError(
      'invalid_scope',
      'scope has a value of a resource server that was not requested; add its resource',
      {
        detail,
      },
    );
  const template = 'scope has a value of a resource server that was not requested; add resource={resource}';
  return new OAuthError(
    'invalid_scope',
    template.replace(RESOURCE, identifier) as OAuthErrorDescription<'invalid_scope'>,
    {
      detail,
    },
  );
}
