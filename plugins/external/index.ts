// /api/external/*: the stable namespace for third parties. A new route is one file with one
// `preValidation: app.requireScopes(...)` line (preValidation: the hook sees a form body, so a token
// sent there as well as in the header is refused), registered here.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import meRoute from './me.js';
import { externalErrors } from '../infra/error-handlers.js';
import { NoContent } from '../../schemas/oauth.js';

const externalPlugin: FastifyPluginAsyncTypebox = async (app) => {
  // Anything unexpected is a bare INTERNAL_ERROR: nothing internal leaks to third parties.
  app.setErrorHandler(externalErrors());
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'NOT_FOUND' }));
  // Browser CORS: preflight for every external path; actual answers readable by the token's client's origins.
  app.options(
    '/*',
    { schema: { hide: true, response: { 204: NoContent('CORS preflight') } } as never },
    async (request, reply) => app.cors.preflight(request, reply),
  );
  app.addHook('onSend', app.cors.onSend);
  await app.register(meRoute);
};

export default externalPlugin;
