// The error handlers of every scope, from one factory: each route plugin picks the answer shape of its
// family with one line, `app.setErrorHandler(xxxErrors(...))`.
//  - firstPartyJsonErrors: the root; first-party JSON `{ error: "CODE", message }` (src/errors.ts).
//  - oauthJsonErrors: token, revocation, cookie token endpoints; RFC 6749 §5.2 JSON.
//  - authorizeErrors / endSessionErrors: rendered (never redirected) error pages, or JSON when asked.
//  - userinfoErrors / externalErrors / publicErrors: third-party JSON; nothing internal leaks.
//  - hostedPageErrors / adminPageErrors: HTML pages of the login and admin web.
// An OAuthError's `error_description` is public (a fixed text of src/oauth/errors.ts); its `detail` (which
// may quote the request) only goes to the log (logOAuthError, also for errors redirected to the client).
// Anything unexpected is logged and answered as a bare server error, except a database that does not
// answer (src/database-unavailable.ts): 503 with Retry-After, in each family's shape.
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError, type OAuthErrorDescription } from '../../src/oauth/errors.js';
import { AppError, validationError, type FieldProblem } from '../../src/errors.js';
import { describeSchemaErrors } from '../../src/validate.js';
import {
  DATABASE_RETRY_AFTER_SECONDS,
  describeUnavailable,
  isDatabaseUnavailable,
} from '../../src/database-unavailable.js';
import { sendPage } from '../pages/kit.js';
import { errorPage, messagePage } from '../pages/hosted.js';

export type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => FastifyReply;

// PostgreSQL text cannot hold U+0000 (22021; 22P05 for a character the encoding lacks): input carrying one is
// malformed (never stored, never equal to anything stored), a 400 in each family's shape, not a server error.
const isUnstorableText = (error: unknown): boolean =>
  ['22021', '22P05'].includes(String((error as { code?: unknown }).code));
const statusOf = (error: unknown): number =>
  (error as { statusCode?: number }).statusCode ?? (isUnstorableText(error) ? 400 : 500);
const isValidation = (error: unknown): boolean => Boolean((error as { validation?: unknown }).validation);

const UNAVAILABLE_MESSAGE = 'The service is temporarily unavailable; try again shortly';

/** The database does not answer: logs it once, sets Retry-After and no-store; the caller answers 503. */
function databaseUnavailable(error: unknown, request: FastifyRequest, reply: FastifyReply): boolean {
  if (!isDatabaseUnavailable(error)) return false;
  request.log.warn({ database: describeUnavailable(error) }, 'database unavailable: answered 503');
  reply.header('retry-after', String(DATABASE_RETRY_AFTER_SECONDS)).header('cache-control', 'no-store');
  return true;
}

/** Any error thrown in a protocol endpoint, as the OAuthError to answer with. */
export function toOAuthError(error: FastifyError | OAuthError, request: FastifyRequest): OAuthError {
  if (error instanceof OAuthError) return error;
  // Logged and given its Retry-After by the caller (databaseUnavailable).
  if (isDatabaseUnavailable(error)) return new OAuthError('temporarily_unavailable', UNAVAILABLE_MESSAGE);
  // Rate limits (Retry-After is already set): a 429 with the RFC body.
  if (error instanceof AppError && error.statusCode === 429) {
    return new OAuthError('temporarily_unavailable', 'too many requests; try again later', {
      status: 429,
      detail: error.message,
    });
  }
  const status = statusOf(error);
  const detail = error.message;
  if (isValidation(error) || status === 400) {
    return new OAuthError('invalid_request', 'the request is malformed', { detail });
  }
  if (status === 413) return new OAuthError('invalid_request', 'the request body is too large', { detail });
  if (status === 415) {
    return new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded', { detail });
  }
  request.log.error({ err: error }, 'unexpected error in a protocol endpoint');
  return new OAuthError('server_error', 'an unexpected error occurred');
}

/**
 * A refusal on the request's log: the code, the public description and the private detail (what the
 * request sent that was refused), at info like the request's own line. Server errors are logged where
 * they are caught, at their own level.
 */
export function logOAuthError(log: FastifyBaseLogger, error: OAuthError) {
  if (error.statusCode >= 500) return;
  const { error: oauthError, error_description, detail } = error;
  log.info({ oauthError, error_description, ...(detail !== undefined && { detail }) }, 'oauth error');
}
const logDetail = (request: FastifyRequest, error: OAuthError) => logOAuthError(request.log, error);

/** RFC 6749 §5.2: the JSON error body, never cached. */
export function sendOAuthJson(reply: FastifyReply, error: OAuthError) {
  logDetail(reply.request, error);
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

/** The authorize endpoint's errors that cannot be redirected: an error page, or JSON when asked for. */
export function renderAuthorizeError(
  request: FastifyRequest,
  reply: FastifyReply,
  error: OAuthError,
  loginPath: string,
) {
  logDetail(request, error);
  const status = [500, 503, 429].includes(error.statusCode) ? error.statusCode : 400;
  if (wantsJson(request)) return reply.code(status).header('cache-control', 'no-store').send(error.toJSON());
  const page = errorPage({ loginPath, error: error.error, description: error.error_description });
  return sendPage(reply, page, status);
}

export function oauthJsonErrors(): ErrorHandler {
  return (error, request, reply) => {
    databaseUnavailable(error, request, reply);
    return sendOAuthJson(reply, toOAuthError(error, request));
  };
}

export function authorizeErrors(loginPath: string): ErrorHandler {
  return (error, request, reply) => {
    databaseUnavailable(error, request, reply);
    return renderAuthorizeError(request, reply, toOAuthError(error, request), loginPath);
  };
}

const notRight = (loginPath: string, message: string) =>
  messagePage({ loginPath, title: 'Something is not right', message, role: 'alert' });

/** End-session: first-party refusals (CSRF) as a message page, protocol errors as on authorize. */
export function endSessionErrors(loginPath: string): ErrorHandler {
  const protocol = authorizeErrors(loginPath);
  return (error, request, reply) => {
    if (error instanceof AppError) return sendPage(reply, notRight(loginPath, error.message), error.statusCode);
    return protocol(error, request, reply);
  };
}

/** The pages' shared rules: bodies Fastify refused keep their status; anything else unexpected is a 500. */
function pageErrors(o: {
  where: string;
  oauth?: (error: OAuthError) => string;
  appError: (error: AppError) => string;
  message: (title: string, message: string) => string;
  malformed: string;
}): ErrorHandler {
  return (error, request, reply) => {
    if (o.oauth && error instanceof OAuthError) {
      logDetail(request, error);
      return sendPage(reply, o.oauth(error), error.statusCode >= 500 ? 500 : 400);
    }
    if (error instanceof AppError) return sendPage(reply, o.appError(error), error.statusCode);
    if (databaseUnavailable(error, request, reply)) {
      return sendPage(reply, o.message('Temporarily unavailable', 'Please try again in a moment.'), 503);
    }
    const status = statusOf(error);
    // A body Fastify refused (too large, not a form): its own status, never a 500.
    if (status === 413 || status === 415) {
      const page = o.message('Something is not right', 'The form could not be read. Please fill it in again.');
      return sendPage(reply, page, status);
    }
    if (isValidation(error) || status === 400) {
      return sendPage(reply, o.message('Something is not right', o.malformed), 400);
    }
    request.log.error({ err: error }, `unexpected error in ${o.where}`);
    return sendPage(reply, o.message('Something went wrong', 'Please try again in a moment.'), 500);
  };
}

export function hostedPageErrors(loginPath: string): ErrorHandler {
  return pageErrors({
    where: 'a hosted page',
    oauth: (error) => errorPage({ loginPath, error: error.error, description: error.error_description }),
    appError: (error) => notRight(loginPath, error.message),
    message: (title, message) => messagePage({ loginPath, title, message, role: 'alert' }),
    malformed: 'The form was not filled in correctly.',
  });
}

export function adminPageErrors(messagePage: (title: string, message: string, link?: boolean) => string): ErrorHandler {
  return pageErrors({
    where: 'the admin web',
    appError: (error) =>
      messagePage(error.statusCode === 404 ? 'Not found' : 'Something is not right', error.message, true),
    message: (title, message) => messagePage(title, message),
    malformed: 'The request was not well formed.',
  });
}

/** The first-party shape (and the external and public APIs'), as while the server drains. */
const serviceUnavailable = { error: 'SERVICE_UNAVAILABLE', message: UNAVAILABLE_MESSAGE };

const noStoreJson = (reply: FastifyReply, status: number, body: unknown) =>
  reply.code(status).header('cache-control', 'no-store').send(body);

/** UserInfo: bearer errors as the spec's JSON; a body Fastify could not take is RFC 6749 §5.2 with its status. */
export function userinfoErrors(): ErrorHandler {
  return (error, request, reply) => {
    if (error instanceof AppError) return noStoreJson(reply, error.statusCode, error.toJSON());
    const status = statusOf(error);
    if (status >= 400 && status < 500) {
      const description: OAuthErrorDescription<'invalid_request'> =
        status === 413
          ? 'the request body is too large'
          : status === 415
            ? 'send no body, or an application/x-www-form-urlencoded one'
            : 'the request is malformed';
      return noStoreJson(reply, status, { error: 'invalid_request', error_description: description });
    }
    if (databaseUnavailable(error, request, reply)) {
      return reply.code(503).send({ error: 'temporarily_unavailable', error_description: UNAVAILABLE_MESSAGE });
    }
    request.log.error({ err: error }, 'unexpected error in userinfo');
    return noStoreJson(reply, 500, { error: 'INTERNAL_ERROR' });
  };
}

/** /api/external/*: deliberate answers (rate limits) as they are; anything unexpected a bare INTERNAL_ERROR. */
export function externalErrors(): ErrorHandler {
  return (error, request, reply) => {
    if (error instanceof AppError) return noStoreJson(reply, error.statusCode, error.toJSON());
    if (statusOf(error) < 500 && isValidation(error)) return reply.code(400).send({ error: 'BAD_REQUEST' });
    // A body Fastify refused before the route (an empty or malformed JSON body on the CORS preflight, one
    // too large, an unknown type): its own 4xx in the first-party shape, never a 500.
    const status = statusOf(error);
    if (status >= 400 && status < 500) {
      const code = status === 413 ? 'PAYLOAD_TOO_LARGE' : status === 415 ? 'UNSUPPORTED_MEDIA_TYPE' : 'BAD_REQUEST';
      return noStoreJson(reply, status, { error: code });
    }
    if (databaseUnavailable(error, request, reply)) return reply.code(503).send(serviceUnavailable);
    request.log.error({ err: error }, 'unexpected error in the external API');
    return noStoreJson(reply, 500, { error: 'INTERNAL_ERROR' });
  };
}

/** /api/public/*: the routes answer every expected case themselves. */
export function publicErrors(): ErrorHandler {
  return (error, request, reply) => {
    if (databaseUnavailable(error, request, reply)) return reply.code(503).send(serviceUnavailable);
    request.log.error({ err: error }, 'unexpected error in a public endpoint');
    return noStoreJson(reply, 500, { error: 'INTERNAL_ERROR' });
  };
}

function validationDetails(error: FastifyError): FieldProblem[] {
  const part = error.validationContext ?? 'body';
  // Query, params and headers are named as such; body fields by their own path.
  return describeSchemaErrors(error.validation ?? [], part === 'body' ? '' : part);
}

/** The root: the first-party JSON shape of src/errors.ts. */
export function firstPartyJsonErrors(o: { bodyLimit: number }): ErrorHandler {
  return (error, request, reply) => {
    if (error instanceof AppError) return reply.code(error.statusCode).send(error.toJSON());
    if (error.validation) return reply.code(400).send(validationError(validationDetails(error)).toJSON());
    const status = statusOf(error);
    if (isUnstorableText(error)) {
      return reply.code(400).send({ error: 'BAD_REQUEST', message: 'The request contains a NUL character' });
    }
    if (status === 413) {
      const message = `The body is larger than ${o.bodyLimit} bytes`;
      return reply.code(413).send({ error: 'PAYLOAD_TOO_LARGE', message });
    }
    if (status === 415) return reply.code(415).send({ error: 'UNSUPPORTED_MEDIA_TYPE', message: error.message });
    if (status >= 400 && status < 500) {
      const invalidJson = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError;
      return reply.code(status).send({ error: invalidJson ? 'INVALID_JSON' : 'BAD_REQUEST', message: error.message });
    }
    if (databaseUnavailable(error, request, reply)) return reply.code(503).send(serviceUnavailable);
    request.log.error({ err: error }, 'unexpected error');
    return reply.code(500).send({ error: 'INTERNAL_ERROR', message: 'An unexpected error occurred' });
  };
}
