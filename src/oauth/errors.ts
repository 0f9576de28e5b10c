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
  | 'request_not_supported'
  | 'request_uri_not_supported'
  | 'invalid_token'
  | 'insufficient_scope';

const STATUS: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * RFC 6749 §4.1.2.1 and §5.2: error_description is limited to %x20-21 / %x23-5B / %x5D-7E. Anything
 * else (quotes, backslashes, non-ASCII, control characters, which may come from the request) becomes
 * "?", and the text is capped, so that a caller cannot write into the client's redirect.
 */
export function safeDescription(text: string): string {
  return text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, '?').slice(0, 300);
}

export class OAuthError extends Error {
  readonly statusCode: number;
  /** Public: the RFC 6749 §5.2 error_description. */
  readonly error_description: string;
  /** Private: what the log needs to explain this error (request values included); never sent. */
  readonly detail: string | undefined;
  constructor(
    readonly error: OAuthErrorCode,
    description: string,
    options: { status?: number; detail?: string } = {},
  ) {
    super(description);
    this.error_description = safeDescription(description);
    this.name = 'OAuthError';
    this.statusCode = options.status ?? STATUS[error] ?? 400;
    this.detail = options.detail;
  }

  /** @deprecated the public text under its wire name is `error_description`. */
  get description(): string {
    return this.error_description;
  }

  toJSON() {
    return { error: this.error, error_description: this.error_description };
  }
}
