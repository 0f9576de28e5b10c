// POST /api/auth/oauth2/token (RFC 6749 §3.2, §4.1.3, §6; public clients: client_id in the body, no
// secret): parse → authenticate the client → the grant's handler (src/oauth/grants) → reply.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { formParams, setUpClientEndpoint, tokenRequest } from './client-endpoint.js';
import { OAuthParamsSchema, TokenErrors, TokenResponseSchema } from '../../schemas/oauth.js';

const tokenPlugin: FastifyPluginAsyncTypebox = async (app) => {
  setUpClientEndpoint(app, '/oauth2/token');

  app.post(
    '/oauth2/token',
    { schema: { body: OAuthParamsSchema, response: { 200: TokenResponseSchema, ...TokenErrors } } },
    async (request, reply) => {
      const tokens = await tokenRequest(app, request, reply, formParams(request, reply));
      return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
    },
  );
};

export default tokenPlugin;
