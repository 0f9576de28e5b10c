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
import { userinfoErrors } from '../infra/error-handlers.js';
import { BearerErrors, ClaimsSchema, documentOnly, NoContent, OAuthErrorSchema } from '../../schemas/oauth.js';

const userinfoPlugin: FastifyPluginAsyncTypebox = async (app) => {
  documentOnly(app);
  const schema = { response: { 200: ClaimsSchema, 400: OAuthErrorSchema, ...BearerErrors } };
  app.setErrorHandler(userinfoErrors());
  const handler = async (request: FastifyRequest, reply: FastifyReply) => {
    reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
    const user = request.bearer!.user;
    if (!user)
      return reply.code(401).header('www-authenticate', 'Bearer error="invalid_token"').send({ error: 'UNAUTHORIZED' });
    return claimsFor(user, request.bearer!.scopes);
  };
  const preValidation = app.requireUserInfoScopes('openid');
  app.get('/oauth2/userinfo', { preValidation, schema }, handler as never);
  app.post('/oauth2/userinfo', { preValidation, schema }, handler as never);
  app.options(
    '/oauth2/userinfo',
    { schema: { response: { 204: NoContent('CORS preflight') } } },
    async (request, reply) => app.cors.preflight(request, reply),
  );
  app.addHook('onSend', app.cors.onSend);
};

export default userinfoPlugin;
