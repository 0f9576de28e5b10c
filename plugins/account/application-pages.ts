// The connected applications page: what each application may do, and a one-click "Revoke access".
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { type AccountContext, Form, PageQuery, type RenderOptions, refusal, text } from './context.js';
import * as views from './views.js';

export function registerApplicationPages(context: AccountContext) {
  const { app, loginPath, csrfToken, signedIn, signedInPost, done, meta, page, me } = context;

  app.get('/applications', { schema: { querystring: PageQuery } }, async (request, reply) => {
    const ctx = await signedIn(request, reply, '/applications');
    if (!ctx) return reply;
    return renderApplications(request, reply, ctx, { m: request.query.m });
  });

  async function renderApplications(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: SessionContext,
    o: RenderOptions = {},
  ) {
    const applications = await me().listApplications(ctx.user.id);
    const body = views.applicationsPage({
      loginPath,
      csrf: csrfToken(request, reply),
      email: ctx.user.email,
      status: views.statusMessage(o.m),
      applications,
      errors: o.errors,
    });
    return page(reply, body, o.status ?? 200);
  }

  app.post('/applications/revoke', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, '/applications');
    if (!ctx) return reply;
    const clientId = text(request.body, 'client_id');
    try {
      if (!clientId) throw new AppError(404, 'APPLICATION_NOT_FOUND', 'Choose an application');
      await me().revokeApplication(ctx.user.id, clientId, meta(request));
    } catch (error) {
      const { status, errors } = refusal(reply, error, 'applications');
      return renderApplications(request, reply, ctx, { status, errors });
    }
    return done(reply, '/applications', 'access-revoked');
  });
}
