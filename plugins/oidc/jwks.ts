// The JSON Web Key Set: public members only, every published key (next, current, retired).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { JWKS_MAX_AGE_SECONDS } from '../../src/services/signing-keys.js';
import { documentOnly, JwksSchema } from '../../schemas/oauth.js';

const jwksPlugin: FastifyPluginAsyncTypebox = async (app) => {
  documentOnly(app);
  // The key store hands out the same object until the keys change: serialized once per key set.
  const bodies = new WeakMap<object, string>();
  app.get('/jwks', { schema: { response: { 200: JwksSchema } } }, async (_request, reply) => {
    const jwks = await app.services.keys.jwks();
    let body = bodies.get(jwks.keys);
    if (body === undefined) {
      body = JSON.stringify(jwks);
      bodies.set(jwks.keys, body);
    }
    reply
      .header('content-type', 'application/jwk-set+json; charset=utf-8')
      .header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`)
      .header('access-control-allow-origin', '*');
    return reply.send(body as never);
  });
};

export default jwksPlugin;
