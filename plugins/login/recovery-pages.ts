// Hosted login pages: password reset, the form that asks for the link and the page the link leads to.
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import { upstreamStartUrl } from '../../src/domain/sso.js';
import { first, Form, type LoginContext } from './page-context.js';
import * as views from './views.js';

export function registerRecoveryPages({ app, loginPath, csrfToken, checkCsrf, page, meta, mailHint }: LoginContext) {
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
    await app.rateLimit(reply, 'RESET_REQUEST_EMAIL_DAY', emailKey(email));
    // An address at an SSO domain (issue 35) has no password to reset: its organisation's provider signs it in.
    // Decided by the domain alone (the same page whether or not the address has an account); nothing is mailed.
    const sso = await app.services.upstreams.providers.ssoFor(email);
    if (sso) {
      return page(
        reply,
        views.ssoPage({
          loginPath,
          title: 'Reset your password',
          provider: sso.name,
          startUrl: upstreamStartUrl(loginPath, sso.id, { loginHint: email }),
          message: 'There is no password to reset here: continue with it to sign in.',
        }),
      );
    }
    await app.services.recovery.requestReset({ email, redirectTo: app.services.recovery.resetPage }, meta(request));
    return page(reply, views.forgotPasswordPage({ loginPath, csrf: csrfToken(request, reply), sent: true, mailHint }));
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
}
