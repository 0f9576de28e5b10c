// GET/POST /api/auth/oauth2/userinfo (OIDC Core §5.3): the scope-gated claims of the one claims table.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { claimsFor } from '../../src/oauth/claims.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { BearerError, createBearerAuthenticator, wwwAuthenticate } from '../../src/services/bearer.js';
import { toOAuthError } from './errors.js';

const userinfoPlugin: FastifyPluginAsyncTypebox<{ sessionIdleSeconds: number }> = async (app, { sessionIdleSeconds }) => {
  const authenticate = createBearerAuthenticator({ db: app.db, applications: app.services.applications, sessionIdleSeconds });

  app.setErrorHandler((error, request, reply) => {
    const oauth = toOAuthError(error as never, request);
    const sent = error instanceof BearerError ? error.tokenSent : true;
    if (oauth.statusCode === 401 || oauth.statusCode === 403) {
      reply.header('www-authenticate', wwwAuthenticate(oauth, sent, oauth.error === 'insufficient_scope' ? 'openid' : undefined));
    }
    return reply.code(oauth.statusCode).header('cache-control', 'no-store').send(oauth.toJSON());
  });

  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    const ctx = await authenticate(request.headers.authorization);
    if (!ctx.scopes.includes('openid')) throw new OAuthError('insufficient_scope', 'the access token lacks the openid scope');
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(claimsFor(ctx.user, ctx.scopes));
  };
  app.get('/oauth2/userinfo', handler);
  app.post('/oauth2/userinfo', handler);
};

export default userinfoPlugin;
