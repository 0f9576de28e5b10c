// The hosted login pages under LOGIN_URL's path: sign-in, sign-up, e-mail verification, consent,
// sign-out. Forms work without JavaScript; every POST carries a double-submit CSRF token.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { AuthorizeRenderError } from '../../src/services/authorization.js';
import type { SessionContext } from '../../src/domain/session.js';
import { continueUrl as continueAt, sendDecision } from '../infra/decisions.js';
import { hostedPageErrors } from '../infra/error-handlers.js';
import { sendPage, sendStylesheet } from '../pages/kit.js';
import { createCsrf } from '../pages/csrf.js';
import * as views from './views.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';

const Form = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 2048 }), Type.Array(Type.String({ maxLength: 2048 }))]),
);
const RequestQuery = Type.Object({ request: Type.Optional(Type.String({ maxLength: 128 })) });
const SignInQuery = Type.Object({
  request: Type.Optional(Type.String({ maxLength: 128 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  prompt: Type.Optional(Type.String({ maxLength: 32 })),
});

export interface LoginPagesOptions {
  config: Config;
  loginPath: string;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

const loginPages: FastifyPluginAsyncTypebox<LoginPagesOptions> = async (app, { config, loginPath }) => {
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

  app.setErrorHandler(hostedPageErrors(loginPath));

  app.get('/assets/style.css', async (_request, reply) => sendStylesheet(reply, views.STYLESHEET));

  app.get('/', async (request, reply) => {
    const ctx = await app.currentSession(request);
    if (!ctx) return reply.code(303).header('location', `${loginPath}/sign-in`).send();
    return page(reply, views.signedInPage({ loginPath, csrf: csrfToken(request, reply), email: ctx.user.email }));
  });

  // Sign in
  app.get('/sign-in', { schema: { querystring: SignInQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    const returnTo = safeReturnTo(request.query.return_to);
    const ctx = returnTo ? await app.currentSession(request) : undefined;
    return page(
      reply,
      views.signInPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        email: found?.request.params.login_hint ?? ctx?.user.email,
        app: found?.app,
        returnTo,
        reauthenticate: Boolean(ctx),
      }),
    );
  });
  app.post('/sign-in', { schema: { body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    const requestId = first(form.request) || undefined;
    const found = await pending(request, requestId);
    const email = first(form.email) ?? '';
    let signedIn: { userId: string; sessionId: string };
    try {
      const { user, sessionToken, sessionId } = await app.signInLimits.attempt(request, reply, email, () =>
        app.services.accounts.signIn({ email, password: first(form.password) ?? '' }, meta(request)),
      );
      app.setSessionCookie(reply, sessionToken);
      signedIn = { userId: user.id, sessionId };
    } catch (error) {
      if (error instanceof AppError && error.code === 'INVALID_CREDENTIALS') {
        return page(
          reply,
          views.signInPage({
            loginPath,
            csrf: csrfToken(request, reply),
            requestId,
            email,
            error: error.message,
            app: found?.app,
            returnTo: safeReturnTo(first(form.return_to)),
          }),
          401,
        );
      }
      throw error;
    }
    if (!requestId)
      return reply
        .code(303)
        .header('location', safeReturnTo(first(form.return_to)) ?? `${loginPath}/`)
        .send();
    await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), signedIn);
    return reply.code(303).header('location', continueUrl(requestId)).send();
  });

  // Sign up
  app.get('/sign-up', { schema: { querystring: RequestQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    return page(
      reply,
      views.signUpPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        values: { email: found?.request.params.login_hint ?? '' },
        app: found?.app,
      }),
    );
  });
  app.post('/sign-up', { schema: { body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    await app.rateLimit(reply, 'SIGN_UP_IP', ipKey(request.ip));
    await app.rateLimit(reply, 'SIGN_UP_EMAIL', emailKey(first(form.email) ?? ''));
    const requestId = first(form.request) || undefined;
    const found = await pending(request, requestId);
    const values = { email: first(form.email) ?? '', name: first(form.name) ?? '' };
    let signedUp: { userId: string; sessionId: string };
    try {
      const { user, sessionToken, sessionId } = await app.services.accounts.signUp(
        { email: values.email, password: first(form.password) ?? '', name: values.name },
        meta(request),
        found
          ? {
              requestId,
              clientId: found.app.clientId,
              clientName: found.app.clientName,
              redirectUri: found.request.params.redirect_uri,
            }
          : {},
      );
      app.setSessionCookie(reply, sessionToken);
      signedUp = { userId: user.id, sessionId };
    } catch (error) {
      if (error instanceof AppError && (error.code === 'VALIDATION_ERROR' || error.code === 'EMAIL_TAKEN')) {
        const errors = Object.fromEntries((error.details ?? []).map((d) => [d.field, d.message]));
        return page(
          reply,
          views.signUpPage({ loginPath, csrf: csrfToken(request, reply), requestId, values, errors, app: found?.app }),
          error.statusCode,
        );
      }
      throw error;
    }
    if (requestId) await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), signedUp);
    return reply
      .code(303)
      .header('location', requestId ? continueUrl(requestId) : `${loginPath}/verify-email`)
      .send();
  });

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
      await app.services.accounts.sendVerification(
        ctx.user,
        found
          ? {
              requestId,
              clientId: found.app.clientId,
              clientName: found.app.clientName,
              redirectUri: found.request.params.redirect_uri,
            }
          : {},
      );
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
          title: 'E-mail address verified',
          message: 'Thank you. Your e-mail address is verified; you can close this page.',
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

  // Password reset: the form that asks for the link, and the page the link leads to (by default).
  app.get('/forgot-password', async (request, reply) =>
    page(reply, views.forgotPasswordPage({ loginPath, csrf: csrfToken(request, reply) })),
  );
  app.post('/forgot-password', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const email = (first(request.body.email) ?? '').trim();
    if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 254) {
      return page(
        reply,
        views.forgotPasswordPage({
          loginPath,
          csrf: csrfToken(request, reply),
          email,
          error: 'Enter a valid e-mail address',
        }),
        400,
      );
    }
    await app.rateLimit(reply, 'RESET_REQUEST_IP', ipKey(request.ip));
    await app.rateLimit(reply, 'RESET_REQUEST_EMAIL', emailKey(email));
    await app.services.recovery.requestReset({ email, redirectTo: app.services.recovery.resetPage }, meta(request));
    return page(reply, views.forgotPasswordPage({ loginPath, csrf: csrfToken(request, reply), sent: true }));
  });

  const invalidLinkPage = (reply: FastifyReply) =>
    page(
      reply,
      views.messagePage({
        loginPath,
        title: 'This link does not work',
        message: 'The reset link is invalid, expired or was used already. Ask for a new one.',
        role: 'alert',
        link: { href: `${loginPath}/forgot-password`, text: 'Send me a new link' },
      }),
      400,
    );

  app.get(
    '/reset-password',
    {
      schema: {
        querystring: Type.Object({
          token: Type.Optional(Type.String({ maxLength: 256 })),
          error: Type.Optional(Type.String({ maxLength: 64 })),
        }),
      },
    },
    async (request, reply) => {
      const { token, error } = request.query;
      if (error || !token || !(await app.services.recovery.isLive(token))) return invalidLinkPage(reply);
      return page(reply, views.resetPasswordPage({ loginPath, csrf: csrfToken(request, reply), token }));
    },
  );
  app.post('/reset-password', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    await app.rateLimit(reply, 'RESET_PASSWORD_IP', ipKey(request.ip));
    const token = first(request.body.token) ?? '';
    const newPassword = first(request.body.newPassword) ?? '';
    const again = (errors: Record<string, string>) =>
      page(reply, views.resetPasswordPage({ loginPath, csrf: csrfToken(request, reply), token, errors }), 400);
    if (newPassword !== (first(request.body.confirmPassword) ?? ''))
      return again({ confirmPassword: 'The two passwords are not the same' });
    try {
      await app.services.recovery.resetPassword({ token, newPassword }, meta(request));
    } catch (error) {
      if (error instanceof AppError && error.code === 'INVALID_TOKEN') return invalidLinkPage(reply);
      if (error instanceof AppError && error.code.startsWith('PASSWORD_TOO_'))
        return again({ newPassword: error.message });
      throw error;
    }
    return page(
      reply,
      views.messagePage({
        loginPath,
        title: 'Password changed',
        message: 'Your password is changed and every session was signed out. Sign in with the new password.',
        role: 'status',
        link: { href: `${loginPath}/sign-in`, text: 'Sign in' },
      }),
    );
  });

  // Sign out
  app.get('/sign-out', async (request, reply) => {
    const ctx = await app.currentSession(request);
    if (!ctx)
      return page(
        reply,
        views.messagePage({ loginPath, title: 'Signed out', message: 'You are not signed in.', role: 'status' }),
      );
    return page(reply, views.signedInPage({ loginPath, csrf: csrfToken(request, reply), email: ctx.user.email }));
  });
  app.post('/sign-out', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    await app.signOut(request, reply);
    return page(
      reply,
      views.messagePage({ loginPath, title: 'Signed out', message: 'You are signed out.', role: 'status' }),
    );
  });
};

export default loginPages;
