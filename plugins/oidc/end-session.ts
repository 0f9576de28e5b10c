// RP-Initiated Logout 1.0 at /api/auth/oauth2/end-session: HTTP only. The rules (id_token_hint,
// post_logout_redirect_uri) are src/services/end-session.ts; this plugin parses, asks for a confirmation
// when the hint does not name this session, signs out and answers with a page or a redirect.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import type { RawParams } from '../../src/services/authorization.js';
import { singleParam, type LogoutTarget } from '../../src/services/end-session.js';
import { createCsrf } from '../infra/browser-session.js';
import { sendPage } from '../pages/kit.js';
import { logoutConfirmPage, messagePage, signedOutPage } from '../pages/hosted.js';
import { endSessionErrors } from '../infra/error-handlers.js';
import { OAuthParamsSchema } from '../../schemas/oauth.js';
import { documentOnly, HtmlPage, Redirect } from '../../schemas/oauth.js';

const EndSessionResponses = {
  200: HtmlPage('a confirmation page, or "signed out"'),
  303: Redirect('to the registered post_logout_redirect_uri'),
  400: Type.Union([
    HtmlPage('error page'),
    Type.Object({ error: Type.String(), error_description: Type.Optional(Type.String()) }),
  ]),
};

const OUTCOMES = {
  'signed-out': { title: 'Signed out', message: 'You are signed out.' },
  'not-signed-in': { title: 'Signed out', message: 'You are not signed in.' },
  stayed: { title: 'Still signed in', message: 'You are still signed in.' },
} as const;

const endSessionPlugin: FastifyPluginAsyncTypebox<{ config: Config; loginPath: string }> = async (
  app,
  { config, loginPath },
) => {
  const csrf = createCsrf(config);
  const { endSession } = app.services;
  documentOnly(app);
  app.setErrorHandler(endSessionErrors(loginPath));

  type Outcome = keyof typeof OUTCOMES;
  async function finish(request: FastifyRequest, reply: FastifyReply, target: LogoutTarget, outcome: Outcome) {
    if (outcome === 'signed-out') await app.signOut(request, reply);
    const location = endSession.returnUrl(target);
    if (location) return reply.code(303).header('cache-control', 'no-store').header('location', location).send();
    // Signed out here, with no registered place to return to: a way to sign in again rather than a dead end.
    if (outcome !== 'stayed')
      return sendPage(reply, signedOutPage({ loginPath, ...OUTCOMES[outcome], app: target.client }));
    return sendPage(reply, messagePage({ loginPath, ...OUTCOMES[outcome], role: 'status', app: target.client }));
  }

  const handler = async (params: RawParams, request: FastifyRequest, reply: FastifyReply) => {
    const target = await endSession.resolve(params);
    const ctx = await app.currentSession(request);
    if (!ctx) return finish(request, reply, target, 'not-signed-in');
    if (endSession.hintNamesSession(target, { userId: ctx.user.id, sessionId: ctx.session.id })) {
      return finish(request, reply, target, 'signed-out');
    }
    return sendPage(
      reply,
      logoutConfirmPage({
        loginPath,
        action: `${config.issuer}/oauth2/end-session/confirm`,
        csrf: csrf.token(request, reply),
        email: ctx.user.email,
        app: target.client,
        fields: { client_id: target.client?.clientId, post_logout_redirect_uri: target.redirect, state: target.state },
      }),
    );
  };

  const schema = (part: 'querystring' | 'body') => ({
    schema: { [part]: OAuthParamsSchema, response: EndSessionResponses },
  });
  app.get('/oauth2/end-session', schema('querystring'), async (request, reply) =>
    handler(request.query as RawParams, request, reply),
  );
  app.post('/oauth2/end-session', schema('body'), async (request, reply) =>
    handler((request.body ?? {}) as RawParams, request, reply),
  );
  app.post('/oauth2/end-session/confirm', schema('body'), async (request, reply) => {
    const form = (request.body ?? {}) as RawParams;
    csrf.check(request, singleParam(form, 'csrf'));
    const { client_id, post_logout_redirect_uri, state } = form;
    const target = await endSession.resolve({ client_id, post_logout_redirect_uri, state });
    return finish(request, reply, target, singleParam(form, 'decision') === 'sign-out' ? 'signed-out' : 'stayed');
  });
};

export default endSessionPlugin;
