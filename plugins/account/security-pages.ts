// The security page: password change, the live sessions (each can be signed out), the data export and
// the account deletion.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { securityHeaders } from '../pages/kit.js';
import { type AccountContext, Form, missing, PageQuery, type RenderOptions, refusal, text } from './context.js';
import * as views from './views.js';

export function registerSecurityPages(context: AccountContext) {
  const { app, loginPath, base, csrfToken, signedIn, signedInPost, done, meta, page, me } = context;

  async function render(request: FastifyRequest, reply: FastifyReply, ctx: SessionContext, o: RenderOptions = {}) {
    const sessions = await me().listSessions(ctx.user.id, ctx.session.id);
    const body = views.securityPage({
      loginPath,
      csrf: csrfToken(request, reply),
      email: ctx.user.email,
      status: views.statusMessage(o.m),
      sessions,
      errors: o.errors,
    });
    return page(reply, body, o.status ?? 200);
  }

  app.get('/security', { schema: { querystring: PageQuery } }, async (request, reply) => {
    const ctx = await signedIn(request, reply, '/security');
    if (!ctx) return reply;
    return render(request, reply, ctx, { m: request.query.m });
  });

  app.post('/password', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '/security');
    if (!ctx) return reply;
    const currentPassword = text(request.body, 'current_password');
    const newPassword = text(request.body, 'new_password');
    const confirm = text(request.body, 'confirm_password');
    const wrong = missing('password', [
      ['current_password', !currentPassword, 'Enter your current password'],
      ['new_password', !newPassword, 'Enter a new password'],
      ['confirm_password', Boolean(newPassword) && confirm !== newPassword, 'The two new passwords are not the same'],
    ]);
    if (wrong) return render(request, reply, ctx, { status: 400, errors: wrong });
    try {
      const changed = await me().changePassword(
        ctx.user.id,
        ctx.session.id,
        { currentPassword, newPassword },
        meta(request),
      );
      // The session stays, under a new cookie secret: a copy of the old cookie is signed out. The cookie
      // keeps the session's own end.
      app.setSessionCookie(reply, changed.sessionToken, changed.sessionExpiresAt);
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'password', {
        codes: {
          INVALID_PASSWORD: 'current_password',
          PASSWORD_TOO_SHORT: 'new_password',
          PASSWORD_TOO_LONG: 'new_password',
          PASSWORD_TOO_COMMON: 'new_password',
        },
        fields: { currentPassword: 'current_password', newPassword: 'new_password' },
      });
      return render(request, reply, ctx, { status, errors });
    }
    return done(reply, '/security', 'password-changed');
  });

  app.post('/sessions/revoke', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '/security');
    if (!ctx) return reply;
    const sessionId = text(request.body, 'session');
    // This browser's own session: a sign-out (the session ends and its cookie goes).
    if (sessionId === ctx.session.id) {
      await app.signOut(request, reply);
      return reply.code(303).header('location', `${base}/signed-out`).send();
    }
    try {
      if (!sessionId) throw new AppError(404, 'SESSION_NOT_FOUND', 'Choose a session to sign out');
      await me().revokeSession(ctx.user.id, sessionId, meta(request));
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'sessions');
      return render(request, reply, ctx, { status, errors });
    }
    return done(reply, '/security', 'session-ended');
  });

  app.post('/delete', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '/security');
    if (!ctx) return reply;
    const password = text(request.body, 'password');
    // An account without a password (issue 35: made by an upstream sign-in) leaves the field empty: a recent
    // sign-in is its proof (the service says which applies).
    const wrong = missing('delete', [
      ['confirm', text(request.body, 'confirm') !== 'yes', 'Tick the box to confirm that you want this'],
    ]);
    if (wrong) return render(request, reply, ctx, { status: 400, errors: wrong });
    try {
      await me().deleteAccount(
        ctx.user.id,
        { password: password || undefined, freshSession: app.services.factors.isFresh(ctx.session) },
        meta(request),
      );
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'delete', {
        codes: { INVALID_PASSWORD: 'password' },
        fields: { password: 'password' },
      });
      return render(request, reply, ctx, { status, errors });
    }
    context.clearSessionCookie(reply);
    return reply.code(303).header('location', `${base}/deleted`).send();
  });

  // The export as a download (the same document as GET /api/me/export), never cached.
  app.get('/export', async (request, reply) => {
    const ctx = await signedIn(request, reply, '/security');
    if (!ctx) return reply;
    const data = await me().exportData(ctx.user.id);
    return securityHeaders(reply)
      .header('content-disposition', 'attachment; filename="account-data.json"')
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(data, null, 2));
  });
}
