// Error rendering for the protocol endpoints: RFC 6749 §5.2 JSON, RFC 6750 WWW-Authenticate, and the
// authorize endpoint's rendered (never redirected) errors.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../../src/oauth/errors.js';
import { AppError } from '../../src/errors.js';
import { errorPage } from '../login/views.js';
import { securityHeaders } from '../login/security.js';

export function toOAuthError(error: FastifyError | OAuthError, request: FastifyRequest): OAuthError {
  if (error instanceof OAuthError) return error;
  // Rate limits (Retry-After is already set): a 429 with the RFC body.
  if (error instanceof AppError && error.statusCode === 429) return new OAuthError('temporarily_unavailable', error.message, { status: 429 });
  const status = (error as FastifyError).statusCode ?? 500;
  if ((error as FastifyError).validation || status === 400) return new OAuthError('invalid_request', 'the request is malformed');
  if (status === 413) return new OAuthError('invalid_request', 'the request body is too large');
  if (status === 415) return new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
  request.log.error({ err: error }, 'unexpected error in a protocol endpoint');
  return new OAuthError('server_error', 'an unexpected error occurred');
}

export function sendOAuthJson(reply: FastifyReply, error: OAuthError) {
  if (error.detail) reply.request.log.info({ oauthError: error.error, detail: error.detail }, 'oauth error');
  return reply
    .code(error.statusCode)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .send(error.toJSON());
}

export function wantsJson(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? '';
  return accept.includes('application/json') && !accept.includes('text/html');
}

export function renderAuthorizeError(request: FastifyRequest, reply: FastifyReply, error: OAuthError, loginPath: string) {
  reply.code(error.statusCode === 500 || error.statusCode === 429 ? error.statusCode : 400).header('cache-control', 'no-store');
  if (wantsJson(request)) return reply.send(error.toJSON());
  securityHeaders(reply);
  return reply.type('text/html; charset=utf-8').send(errorPage({ loginPath, error: error.error, description: error.description }));
}
