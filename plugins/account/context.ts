// What the account pages' route modules share: the session guard (signed out: 303 to the sign-in page, which
// comes back here), CSRF, Post/Redirect/Get, and how a refusal of the self-service becomes a form error.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { RateLimitError } from '../infra/rate-limit.js';
import { createCsrf } from '../infra/browser-session.js';
import { sendPage } from '../pages/kit.js';
import type { FormErrors } from './layout.js';
import { selfService } from './service.js';

/** The plugin's Fastify instance (TypeBox type provider). */
export type App = Parameters<FastifyPluginAsyncTypebox>[0];

/** A urlencoded form: bounded names and values; a repeated field keeps its first value. */
export const Form = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 2048 }), Type.Array(Type.String({ maxLength: 2048 }))]),
);
export type FormBody = Record<string, string | string[]>;

/** `?m=` names a status line of views.STATUS_MESSAGES; anything else is ignored. */
export const PageQuery = Type.Object({ m: Type.Optional(Type.String({ maxLength: 64 })) });

export function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export type AccountContext = ReturnType<typeof createAccountContext>;

/** How a page is rendered: after a refusal (its status and errors) or a redirect (its status code `m`). */
export interface RenderOptions {
  status?: number;
  errors?: FormErrors;
  m?: string | undefined;
}

export function createAccountContext(app: App, config: Config, loginPath: string) {
  const base = `${loginPath}/account`;
  // The same double-submit cookie as the login pages (one cookie name per config), so one token serves both.
  const csrf = createCsrf(config);
  const csrfToken = (request: FastifyRequest, reply: FastifyReply) => csrf.token(request, reply);

  /** The signed-in user, or (after a 303 to the sign-in page, which returns to `path`) undefined. */
  async function signedIn(request: FastifyRequest, reply: FastifyReply, path: string) {
    const ctx = await app.currentSession(request);
    if (!ctx) {
      const back = encodeURIComponent(`${base}${path}`);
      reply.code(303).header('location', `${loginPath}/sign-in?return_to=${back}`).send();
    }
    return ctx;
  }

  /** A POST: the CSRF token (and Origin) first, a 403 page when wrong; then the session. */
  async function signedInPost(
    request: FastifyRequest,
    form: FormBody,
    reply: FastifyReply,
    path: string,
  ): Promise<SessionContext | undefined> {
    csrf.check(request, first(form.csrf));
    return signedIn(request, reply, path);
  }

  /** Post/Redirect/Get: 303 to an account page with a status code (never a text) in the query. */
  const done = (reply: FastifyReply, path: string, code: string) =>
    reply.code(303).header('location', `${base}${path}?m=${code}`).send();

  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null });

  /** Clears the session cookie after the account is deleted (its session row is gone). */
  const clearSessionCookie = (reply: FastifyReply) => app.clearSessionCookie(reply);

  return {
    app,
    config,
    loginPath,
    base,
    csrfToken,
    signedIn,
    signedInPost,
    done,
    meta,
    clearSessionCookie,
    page: sendPage,
    me: () => selfService(app),
  };
}

/** A field of a form read as text ('' when absent). */
export const text = (form: FormBody, name: string) => first(form[name]) ?? '';

/**
 * A refusal of the self-service as the errors of one form: a code that names a field goes next to it, the
 * details of a VALIDATION_ERROR next to theirs (`fields` maps the service's names to the form's), anything
 * else into the form's summary. 429 keeps its status and gets its Retry-After. Server errors are not refusals.
 */
export function refusal(
  reply: FastifyReply,
  error: unknown,
  form: string,
  o: { codes?: Record<string, string>; fields?: Record<string, string> } = {},
): { status: number; errors: FormErrors } {
  if (!(error instanceof AppError) || error.statusCode >= 500 || error.statusCode === 401 || error.code === 'CSRF') {
    throw error;
  }
  // A limit the service counted itself had no reply to set Retry-After on.
  if (error instanceof RateLimitError && !reply.hasHeader('retry-after')) {
    reply.header('retry-after', String(error.retryAfterSeconds));
  }
  const fields: Record<string, string> = {};
  if (error.code === 'VALIDATION_ERROR') {
    for (const detail of error.details ?? []) {
      const key = detail.field.replace(/^(body)?[./]?/, '');
      const name = o.fields?.[key];
      if (name && !fields[name]) fields[name] = sentence(detail.message);
    }
  }
  const named = o.codes?.[error.code];
  if (named) fields[named] = error.message;
  const message = Object.keys(fields).length ? undefined : error.message;
  return { status: error.statusCode, errors: { form, fields, message } };
}

/** Schema messages start in lower case ("must be ..."): a sentence next to a field starts with a capital. */
const sentence = (message: string) => message.charAt(0).toUpperCase() + message.slice(1);

/** Errors found before asking the service (empty required fields, a mismatch): 400, or undefined if none. */
export function missing(form: string, checks: Array<[string, boolean, string]>): FormErrors | undefined {
  const fields: Record<string, string> = {};
  for (const [name, wrong, message] of checks) if (wrong && !fields[name]) fields[name] = message;
  return Object.keys(fields).length ? { form, fields } : undefined;
}
