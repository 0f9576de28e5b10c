// GET/POST /api/auth/oauth2/authorize and the continuation after each hosted page.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { ipKey } from '../../src/rate-limit.js';
import { AuthorizeRenderError, EXPIRED_REQUEST, type RawParams } from '../../src/services/authorization.js';
import { authorizeErrors } from '../infra/error-handlers.js';
import { sendDecision } from '../infra/decisions.js';
import { documentOnly, HtmlPage, OAuthErrorSchema, OAuthParamsSchema, Redirect } from '../../schemas/oauth.js';

const AuthorizeResponses = {
  303: Redirect('to a hosted login page, or to the redirect_uri with a code or an error'),
  400: Type.Union([
    HtmlPage('error page (an unknown client or redirect_uri is never redirected to)'),
    OAuthErrorSchema,
  ]),
  429: Type.Union([HtmlPage('rate limited; Retry-After'), OAuthErrorSchema]),
};

const authorizePlugin: FastifyPluginAsyncTypebox<{ config: Config; loginPath: string }> = async (
  app,
  { config, loginPath },
) => {
  documentOnly(app);
  app.setErrorHandler(authorizeErrors(loginPath));

  const handler = async (params: RawParams, request: Parameters<typeof app.currentSession>[0], reply: FastifyReply) => {
    await app.rateLimit(reply, 'AUTHORIZE', ipKey(request.ip));
    // A client ID metadata document's URL may make this server fetch it: counted on its own (issue 36).
    if (typeof params.client_id === 'string' && params.client_id.startsWith('https://')) {
      await app.rateLimit(reply, 'METADATA_FETCH_IP', ipKey(request.ip));
    }
    // The binding cookie is set only when a pending request is stored (a code issued at once needs none).
    const decision = await app.services.authorization.authorize(params, () => app.bindBrowser(request, reply), {
      cookie: request.cookies?.[app.sessionCookieName],
      resolve: () => app.currentSession(request),
    });
    return sendDecision(reply, decision, config.loginUrl);
  };

  app.get(
    '/oauth2/authorize',
    { schema: { querystring: OAuthParamsSchema, response: AuthorizeResponses } },
    async (request, reply) => handler(request.query as RawParams, request, reply),
  );
  app.post(
    '/oauth2/authorize',
    { schema: { body: OAuthParamsSchema, response: AuthorizeResponses } },
    async (request, reply) => {
      if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
        throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
      }
      return handler(request.body as RawParams, request, reply);
    },
  );

  // A form_post answer reached through the JSON consent endpoint (plugins/login/api.ts): its page, in the
  // browser it was sealed for; anything else is the expired-request page.
  app.get(
    '/oauth2/authorize/deliver',
    {
      schema: {
        querystring: Type.Object({ response: Type.String({ minLength: 1, maxLength: 16_000 }) }),
        response: {
          200: HtmlPage('the form that POSTs the response to the redirect_uri'),
          400: AuthorizeResponses[400],
        },
      },
    },
    async (request, reply) => {
      const decision = app.services.authorization.openDelivery(request.query.response, app.browserBinding(request));
      if (!decision) throw new AuthorizeRenderError('invalid_request', EXPIRED_REQUEST);
      return sendDecision(reply, decision, config.loginUrl);
    },
  );

  app.get(
    '/oauth2/authorize/continue',
    {
      schema: {
        querystring: Type.Object({ request: Type.String({ minLength: 1, maxLength: 128 }) }),
        response: AuthorizeResponses,
      },
    },
    async (request, reply) => {
      const decision = await app.services.authorization.decide(
        request.query.request,
        app.browserBinding(request),
        await app.currentSession(request),
      );
      return sendDecision(reply, decision, config.loginUrl);
    },
  );
};

export default authorizePlugin;
