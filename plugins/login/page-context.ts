// What the hosted login pages' route modules share: the form schemas and readers, and the context built once
// per plugin instance (config, CSRF, the pending authorization request, where a sign-in may return).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { AuthorizeRenderError } from '../../src/services/authorization.js';
import { continueUrl as continueAt } from '../infra/decisions.js';
import { sendPage } from '../pages/kit.js';
import { createCsrf } from '../pages/csrf.js';

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
        'This sign-in request has expired or was already used (or was started in another browser). ' +
          'Go back to the application and start again.',
      );
    return found;
  }

  /** Where a sign-in without an authorization request may return: pages of the admin web only. */
  function safeReturnTo(value: string | undefined): string | undefined {
    if (!value || /[\s\\]/.test(value)) return undefined;
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

  const continueUrl = (requestId: string) => continueAt(config.issuer, requestId);
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null });

  return { app, config, loginPath, csrfToken, checkCsrf, page, pending, safeReturnTo, continueUrl, meta };
}
