// GET/POST /api/auth/oauth2/userinfo (OIDC Core §5.3): the scope-gated claims of the one claims table.
// Authentication follows the spec's rules for bearer tokens on external and UserInfo calls (the same
// requireScopes hook as /api/external/*): 401 { error: "UNAUTHORIZED" }, 403 { error: "FORBIDDEN",
// missingScopes }, each with its RFC 6750 WWW-Authenticate header; a token sent both in the header and
// in the query or form body is 400 invalid_request (RFC 6750 §2, §3.1), refused without a lookup.
// Browser CORS as on the token endpoint (OIDC Core §5.3 SHOULD): preflight for any registered origin,
// the answer readable by the token's client's origins (decisions.md, CORS).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { claimsFor } from '../../src/oauth/claims.js';
import { AppError } from '../../src/errors.js';
import { BearerErrors, ClaimsSchema, documentOnly, NoContent, OAuthErrorSchema } from '../../schemas/oauth.js';

const userinfoPlugin: FastifyPluginAsyncTypebox = async (app) => {
  documentOnly(app);
  const schema = { response: { 200: ClaimsSchema, 400: OAuthErrorSchema, ...BearerErrors } };
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof AppError) return reply.code(error.statusCode).header('cache-control', 'no-store').send(error.toJSON());
    // A body Fastify could not take (unknown content type, too large, malformed): an RFC 6749 §5.2 error
    // with its own status, never a 500.
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const description = status === 413 ? 'the request body is too large' : status === 415 ? 'send no body, or an application/x-www-form-urlencoded one' : 'the request is malformed';
      return reply.code(status).header('cache-control', 'no-store').send({ error: 'invalid_request', error_description: description });
    }
    request.log.error({ err: error }, 'unexpected error in userinfo');
    return reply.code(500).header('cache-control', 'no-store').send({ error: 'INTERNAL_ERROR' });
  });
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    const user = request.bearer!.user;
    if (!user) return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send({ error: 'UNAUTHORIZED' });
    return claimsFor(user, request.bearer!.scopes);
  };
  const preValidation = app.requireUserInfoScopes('openid');
  app.get('/oauth2/userinfo', { preValidation, schema }, handler as never);
  app.post('/oauth2/userinfo', { preValidation, schema }, handler as never);
  app.options('/oauth2/userinfo', { schema: { response: { 204: NoContent('CORS preflight') } } }, async (request, reply) => app.cors.preflight(request, reply));
  app.addHook('onSend', async (request, reply) => {
    if (request.method !== 'OPTIONS') await app.cors.actual(request, reply);
  });
};

export default userinfoPlugin;
