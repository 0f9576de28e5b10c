// GET/POST /api/auth/oauth2/userinfo (OIDC Core §5.3): the scope-gated claims of the one claims table.
// Authentication follows the spec's rules for bearer tokens on external and UserInfo calls (the same
// requireScopes hook as /api/external/*): 401 { error: "UNAUTHORIZED" }, 403 { error: "FORBIDDEN",
// missingScopes }, each with its RFC 6750 WWW-Authenticate header.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { claimsFor } from '../../src/oauth/claims.js';
import { AppError } from '../../src/errors.js';
import { BearerErrors, ClaimsSchema, documentOnly } from '../../schemas/oauth.js';

const userinfoPlugin: FastifyPluginAsyncTypebox = async (app) => {
  documentOnly(app);
  const schema = { response: { 200: ClaimsSchema, ...BearerErrors } };
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof AppError) return reply.code(error.statusCode).header('cache-control', 'no-store').send(error.toJSON());
    request.log.error({ err: error }, 'unexpected error in userinfo');
    return reply.code(500).header('cache-control', 'no-store').send({ error: 'INTERNAL_ERROR' });
  });
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    const user = request.bearer!.user;
    if (!user) return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send({ error: 'UNAUTHORIZED' });
    return claimsFor(user, request.bearer!.scopes);
  };
  const onRequest = app.requireScopes('openid');
  app.get('/oauth2/userinfo', { onRequest, schema }, handler as never);
  app.post('/oauth2/userinfo', { onRequest, schema }, handler as never);
};

export default userinfoPlugin;
