// /api/external/*: the stable namespace for third parties. A new route is one file with one
// `preValidation: app.requireScopes(...)` line (preValidation: the hook sees a form body, so a token
// sent there as well as in the header is refused), registered here.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import meRoute from './me.js';
import { AppError } from '../../src/errors.js';
import { NoContent } from '../../schemas/oauth.js';

const externalPlugin: FastifyPluginAsyncTypebox = async (app) => {
  // Anything unexpected is a bare INTERNAL_ERROR: nothing internal leaks to third parties.
  app.setErrorHandler((error, request, reply) => {
    // Rate limits (429, Retry-After already set) and other deliberate answers.
    if (error instanceof AppError) return reply.code(error.statusCode).header('cache-control', 'no-store').send(error.toJSON());
    const status = (error as { statusCode?: number }).statusCode ?? 500;
    if (status < 500 && (error as { validation?: unknown }).validation) {
      return reply.code(400).send({ error: 'BAD_REQUEST' });
    }
    request.log.error({ err: error }, 'unexpected error in the external API');
    return reply.code(500).header('cache-control', 'no-store').send({ error: 'INTERNAL_ERROR' });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'NOT_FOUND' }));
  // Browser CORS: preflight for every external path; actual answers readable by the token's client's origins.
  app.options('/*', { schema: { hide: true, response: { 204: NoContent('CORS preflight') } } as never }, async (request, reply) => app.cors.preflight(request, reply));
  app.addHook('onSend', async (request, reply) => {
    if (request.method !== 'OPTIONS') await app.cors.actual(request, reply);
  });
  await app.register(meRoute);
};

export default externalPlugin;
