// The JSON Web Key Set: public members only, every published key (next, current, retired).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';

const jwksPlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/jwks', async (_request, reply) => {
    const jwks = await app.keys.jwks();
    reply
      .header('content-type', 'application/jwk-set+json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*');
    return reply.send(JSON.stringify(jwks));
  });
};

export default jwksPlugin;
