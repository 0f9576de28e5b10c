// Hosted login pages: e-mail verification (the reminder page, resending the link, the link's landing page)
// and consent.
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import type { SessionContext } from '../../src/domain/session.js';
import { sendDecision } from '../infra/decisions.js';
import { first, Form, type LoginContext, RequestQuery } from './page-context.js';
import * as views from './views.js';
import { verificationContext } from '../../src/services/authorization.js';
import { isSelfRegistered } from '../../src/domain/application.js';
import { isUrlClientId } from '../../src/domain/client-registration.js';

/** Where the consent's answer goes: the redirect_uri's host, or its scheme for a native app's private-use one. */
function redirectHost(redirectUri: string): string {
  try {
    const url = new URL(redirectUri);
    return url.host || url.protocol;
  } catch {
    return redirectUri;
  }
}

/**
 * Who vouches for a self-registered client: a metadata document's host (its client id is the document's URL), or
 * for a dynamically registered one the host its answer goes to.
 */
function selfRegisteredHost(clientId: string, redirectUri: string): string {
  if (isUrlClientId(clientId)) {
    try {
      return new URL(clientId).host;
    } catch {
      // fall through: an id that is not a URL after all
    }
  }
  return redirectHost(redirectUri);
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
  safeReturnTo,
}: LoginContext) {
  /** A return path after "Not you?": only a path under the login path (safeReturnTo, admin URLs left out). */
  const safeLoginReturn = (value: string | undefined) => (value?.startsWith('/') ? safeReturnTo(value) : undefined);
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
        notYou: true,
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
    await app.rateLimit(reply, 'RESEND_EMAIL', emailKey(ctx.user.email), again);
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
        notYou: true,
      }),
    );
  });
  // The mailed link (verification or e-mail change). Opening it (GET, or HEAD, which Fastify answers with
  // the GET handler) changes nothing, since mail gateways and link scanners fetch every link in a message
  // (issue 31): the page names the address and the action, and its button POSTs (CSRF-protected) to
  // confirm. An e-mail change is confirmed only by a session of the account that asked for it.
  const TokenQuery = Type.Object({ token: Type.String({ maxLength: 256 }) });
  const confirmPath = (token: string) => `${loginPath}/verify-email/confirm?token=${encodeURIComponent(token)}`;
  const linkDoesNotWork = (reply: FastifyReply) =>
    page(
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

  app.get('/verify-email/confirm', { schema: { querystring: TokenQuery } }, async (request, reply) => {
    const { token } = request.query;
    const link = await app.services.accounts.inspectLink(token);
    if (!link) return linkDoesNotWork(reply);
    const ctx = await app.currentSession(request);
    const csrf = csrfToken(request, reply);
    const returnTo = confirmPath(token);
    if (link.kind === 'email-change' && ctx?.user.id !== link.userId) {
      return page(
        reply,
        views.signInToConfirmPage({ loginPath, csrf, email: link.email, returnTo, signedInAs: ctx?.user.email }),
      );
    }
    return page(
      reply,
      views.confirmLinkPage({
        loginPath,
        csrf,
        token,
        action:
          link.kind === 'email-change'
            ? { kind: 'email-change', email: link.email, account: link.previousEmail }
            : { kind: 'verification', email: link.email },
        signedIn: ctx && { email: ctx.user.email, returnTo },
      }),
    );
  });

  app.post('/verify-email/confirm', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const token = first(request.body.token) ?? '';
    if (token.length > 256) return linkDoesNotWork(reply);
    const ctx = await app.currentSession(request);
    let result: Awaited<ReturnType<typeof app.services.accounts.verifyEmail>>;
    try {
      result = await app.services.accounts.verifyEmail(token, ctx?.user.id);
    } catch (error) {
      // An e-mail change link, and not the session of the account that asked: nothing was consumed.
      if (error instanceof AppError && (error.code === 'UNAUTHENTICATED' || error.code === 'WRONG_ACCOUNT')) {
        const link = await app.services.accounts.inspectLink(token);
        if (!link) return linkDoesNotWork(reply);
        return page(
          reply,
          views.signInToConfirmPage({
            loginPath,
            csrf: csrfToken(request, reply),
            email: link.email,
            returnTo: confirmPath(token),
            signedInAs: ctx?.user.email,
            refused: true,
          }),
          error.statusCode,
        );
      }
      throw error;
    }
    if (!result) return linkDoesNotWork(reply);
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
  });

  // "Not you?" on the verification pages (ASVS 7.4.4): a POST with the CSRF token signs out, then the
  // sign-in page continues the pending request or comes back to the page (a path under the login path
  // only: safeReturnTo).
  app.post('/switch-account', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    await app.signOut(request, reply);
    const requestId = first(request.body.request) || undefined;
    const returnTo = safeLoginReturn(first(request.body.return_to));
    const query = requestId
      ? `?request=${encodeURIComponent(requestId)}`
      : returnTo
        ? `?return_to=${encodeURIComponent(returnTo)}`
        : '';
    return reply.code(303).header('location', `${loginPath}/sign-in${query}`).send();
  });

  /** The resource servers a pending request names (RFC 8707), with the scopes of theirs it asks for. */
  async function requestedApis(resources: string[], scopes: string[]) {
    const apis = [];
    for (const identifier of resources) {
      const server = await app.services.resourceServers.find(identifier);
      if (!server) continue;
      apis.push({
        name: server.name,
        identifier: server.identifier,
        scopes: server.builtIn ? [] : server.scopes.filter((s) => scopes.includes(s.name)),
      });
    }
    return apis;
  }

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
          selfRegistered: isSelfRegistered(found.app)
            ? { host: selfRegisteredHost(found.app.clientId, found.request.params.redirect_uri) }
            : undefined,
          apis: await requestedApis(found.request.params.resource ?? [], found.request.params.scope),
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
