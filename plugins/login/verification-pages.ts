// Hosted login pages: e-mail verification (the reminder page, resending the link, the link's landing page)
// and consent.
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { ipKey } from '../../src/rate-limit.js';
import type { SessionContext } from '../../src/domain/session.js';
import { sendDecision } from '../infra/decisions.js';
import { first, Form, type LoginContext, RequestQuery } from './page-context.js';
import * as views from './views.js';
import { verificationContext } from '../../src/services/authorization.js';

/** Where the consent's answer goes: the redirect_uri's host, or its scheme for a native app's private-use one. */
function redirectHost(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    return url.host || url.protocol;
  } catch {
    return redirectUri;
  }
}

export function registerVerificationPages({
  app,
  config,
  loginPath,
  csrfToken,
  checkCsrf,
  page,
  pending,
  continueUrl,
  mailHint,
}: LoginContext) {
  // E-mail verification
  async function requireSession(
    request: FastifyRequest,
    reply: FastifyReply,
    requestId: string | undefined,
  ): Promise<SessionContext | undefined> {
    const ctx = await app.currentSession(request);
    if (!ctx) {
      reply
        .code(303)
        .header('location', `${loginPath}/sign-in${requestId ? `?request=${encodeURIComponent(requestId)}` : ''}`)
        .send();
      return undefined;
    }
    return ctx;
  }

  app.get('/verify-email', { schema: { querystring: RequestQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    const ctx = await requireSession(request, reply, request.query.request);
    if (!ctx) return reply;
    if (ctx.user.email_verified && request.query.request)
      return reply.code(303).header('location', continueUrl(request.query.request)).send();
    return page(
      reply,
      views.verifyEmailPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        email: ctx.user.email,
        app: found?.app,
        mailHint,
      }),
    );
  });
  app.post('/verify-email/resend', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const requestId = first(request.body.request) || undefined;
    const found = await pending(request, requestId);
    const ctx = await requireSession(request, reply, requestId);
    if (!ctx) return reply;
    const again = (seconds: number) =>
      `A link was sent a moment ago. You can ask again in ${seconds} second${seconds === 1 ? '' : 's'}.`;
    await app.rateLimit(reply, 'RESEND_IP', ipKey(request.ip), again);
    await app.rateLimit(reply, 'RESEND_ACCOUNT', ctx.user.id, again);
    if (!ctx.user.email_verified) {
      await app.services.accounts.sendVerification(ctx.user, verificationContext(found));
    }
    return page(
      reply,
      views.verifyEmailPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId,
        email: ctx.user.email,
        sent: true,
        app: found?.app,
        mailHint,
      }),
    );
  });
  app.get(
    '/verify-email/confirm',
    { schema: { querystring: Type.Object({ token: Type.String({ maxLength: 256 }) }) } },
    async (request, reply) => {
      const result = await app.services.accounts.verifyEmail(request.query.token);
      if (!result) {
        return page(
          reply,
          views.messagePage({
            loginPath,
            title: 'This link does not work',
            message: 'The verification link is invalid, expired or was used already. Sign in to get a new one.',
            role: 'alert',
            link: { href: `${loginPath}/sign-in`, text: 'Sign in' },
          }),
          400,
        );
      }
      // Continue the pending authorization when there is one; otherwise the application's
      // post-verification page, derived as the public application metadata derives it.
      // (A link opened in another browser, e.g. on a phone, only verifies: the request stays with the
      // browser that started it, which continues once the user goes back to it.)
      if (
        result.requestId &&
        (await app.services.authorization.pendingRequest(result.requestId, app.browserBinding(request)))
      ) {
        return reply.code(303).header('location', continueUrl(result.requestId)).send();
      }
      const client = result.clientId ? await app.services.applications.find(result.clientId) : undefined;
      if (
        client?.enabled &&
        client.postVerificationRedirectPath &&
        result.redirectUri &&
        client.redirectUris.includes(result.redirectUri)
      ) {
        return reply
          .code(303)
          .header('location', `${originOf(result.redirectUri)}${client.postVerificationRedirectPath}`)
          .send();
      }
      return page(
        reply,
        views.messagePage({
          loginPath,
          ...(result.emailChanged
            ? {
                title: 'E-mail address changed',
                message: `Your account uses ${result.user.email} from now on; you can close this page.`,
              }
            : {
                title: 'E-mail address verified',
                message: 'Thank you. Your e-mail address is verified; you can close this page.',
              }),
          role: 'status',
        }),
      );
    },
  );

  // Consent
  app.get(
    '/consent',
    { schema: { querystring: Type.Object({ request: Type.String({ maxLength: 128 }) }) } },
    async (request, reply) => {
      const found = await pending(request, request.query.request);
      const ctx = await requireSession(request, reply, request.query.request);
      if (!ctx || !found) return reply;
      return page(
        reply,
        views.consentPage({
          loginPath,
          csrf: csrfToken(request, reply),
          requestId: request.query.request,
          scopes: found.request.params.scope,
          userEmail: ctx.user.email,
          app: found.app,
          redirectHost: redirectHost(found.request.params.redirect_uri),
          offline: { idle: config.ttl.refreshToken, absolute: config.ttl.refreshTokenAbsolute },
        }),
      );
    },
  );
  app.post('/consent', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const requestId = first(request.body.request);
    const decision = first(request.body.decision);
    if (!requestId || (decision !== 'allow' && decision !== 'deny'))
      throw new AppError(400, 'VALIDATION_ERROR', 'Choose Allow or Deny');
    const ctx = await requireSession(request, reply, requestId);
    if (!ctx) return reply;
    return sendDecision(
      reply,
      await app.services.authorization.consent(requestId, app.browserBinding(request), ctx, decision === 'allow'),
      config.loginUrl,
    );
  });
}
