// GET /api/external/me (scope openid): the same scope-gated claims as UserInfo for this token.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { claimsFor } from '../../src/oauth/claims.js';
import { ClaimsSchema as Claims } from '../../schemas/oauth.js';

const meRoute: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/me',
    {
      preValidation: app.requireScopes('openid'),
      schema: {
        response: {
          200: Claims,
          401: Type.Object({ error: Type.Literal('UNAUTHORIZED') }),
          403: Type.Object({ error: Type.Literal('FORBIDDEN'), missingScopes: Type.Array(Type.String()) }),
          404: Type.Object({ error: Type.Literal('USER_NOT_FOUND') }),
          500: Type.Object({ error: Type.Literal('INTERNAL_ERROR') }),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      const user = request.bearer!.user;
      if (!user) return reply.code(404).send({ error: 'USER_NOT_FOUND' as const });
      return claimsFor(user, request.bearer!.scopes) as never;
    },
  );
};

export default meRoute;
