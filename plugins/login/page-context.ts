// What the hosted login pages' route modules share: the form schemas and readers, and the context built once
// per plugin instance (config, CSRF, the pending authorization request, where a sign-in may return).
import { isAbsolute, join, relative } from 'node:path';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { AuthorizeRenderError } from '../../src/services/authorization.js';
import { continueUrl as continueAt } from '../infra/decisions.js';
import { sendPage } from '../pages/kit.js';
import { createCsrf } from '../infra/browser-session.js';

/** The plugin's Fastify instance (TypeBox type provider). */
export type App = Parameters<FastifyPluginAsyncTypebox>[0];

export const Form = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 2048 }), Type.Array(Type.String({ maxLength: 2048 }))]),
);
export const RequestQuery = Type.Object({ request: Type.Optional(Type.String({ maxLength: 128 })) });

export function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export type LoginContext = ReturnType<typeof createLoginContext>;

/**
 * Development without SMTP_URL: the mailer keeps mail in DATA_DIR/outbox.jsonl and logs its link
 * (src/mail/mailer.ts), so the "check your inbox" pages say where to look. Undefined when mail is sent.
 */
export function devMailHint(config: Pick<Config, 'smtpUrl' | 'env' | 'dataDir'>, cwd = process.cwd()) {
  if (config.smtpUrl || config.env === 'production') return undefined;
  const start = 'Development: SMTP_URL is not set, so no mail is sent.';
  if (config.dataDir === ':memory:') return `${start} The link is in the server's console.`;
  const outbox = join(config.dataDir, 'outbox.jsonl');
  const near = relative(cwd, outbox);
  const shown = near && !near.startsWith('..') && !isAbsolute(near) ? near : outbox;
  return `${start} Find the mail and its link in the server's console and in ${shown}.`;
}

/** The context of one login pages plugin instance, shared by its route modules. */
export function createLoginContext(app: App, config: Config, loginPath: string) {
  const csrf = createCsrf(config);
  const csrfToken = (request: FastifyRequest, reply: FastifyReply) => csrf.token(request, reply);
  const checkCsrf = (request: FastifyRequest, form: Record<string, string | string[]>) =>
    csrf.check(request, first(form.csrf));

  const page = sendPage;

  /** The pending authorization request named by a page, if it belongs to this browser. */
  async function pending(request: FastifyRequest, requestId: string | undefined) {
    if (!requestId) return undefined;
    const found = await app.services.authorization.pendingRequest(requestId, app.browserBinding(request));
    if (!found)
      throw new AuthorizeRenderError(
        'invalid_request',
        'the sign-in request has expired or was already used (or is from another browser); go back to the application',
      );
    return found;
  }

  /**
   * Where a sign-in without an authorization request may return: pages of the admin web (absolute), or a
   * path under the login path on this origin (the account pages), never anywhere else (no open redirect).
   */
  function safeReturnTo(value: string | undefined): string | undefined {
    if (!value || /[\s\\]/.test(value)) return undefined;
    if (value.startsWith('/')) return safeLoginPath(value);
    try {
      const url = new URL(value);
      const admin = new URL(config.adminUrl);
      const adminPath = admin.pathname.replace(/\/$/, '');
      return url.origin === admin.origin && (url.pathname === adminPath || url.pathname.startsWith(`${adminPath}/`))
        ? url.href
        : undefined;
    } catch {
      return undefined;
    }
  }

  /** A same-origin path under the login path ("//host" and dot segments that leave it are refused). */
  function safeLoginPath(value: string): string | undefined {
    if (value.startsWith('//') || !/^[\x21-\x7e]+$/.test(value)) return undefined;
    const origin = 'http://login.invalid';
    const url = new URL(value, origin);
    const under = url.pathname === loginPath || url.pathname.startsWith(`${loginPath}/`);
    return url.origin === origin && under ? `${url.pathname}${url.search}` : undefined;
  }

  const continueUrl = (requestId: string) => continueAt(config.issuer, requestId);
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null });

  const mailHint = devMailHint(config);

  return { app, config, loginPath, csrfToken, checkCsrf, page, pending, safeReturnTo, continueUrl, meta, mailHint };
}
