// One error class keyed by the RFC code. `description` is public (error_description); `detail` is for
// the log only. Anything unexpected becomes server_error at the edge.
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

export class OAuthError extends Error {
  readonly statusCode: number;
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    options: { status?: number; detail?: string } = {},
  ) {
    super(description);
    this.name = 'OAuthError';
    this.statusCode = options.status ?? STATUS[error] ?? 400;
    this.detail = options.detail;
  }
  readonly detail: string | undefined;

  toJSON() {
    return { error: this.error, error_description: this.description };
  }
}
