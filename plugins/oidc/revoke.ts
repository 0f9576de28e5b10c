// POST /api/auth/oauth2/revoke (RFC 7009): the client authenticates as at the token endpoint (public clients send
// client_id alone); unknown tokens and tokens of other clients are answered 200 like any other (nothing to learn
// from the answer). A refresh token revokes its whole family and the access tokens issued from it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OAuthError } from '../../src/oauth/errors.js';
import { hashToken } from '../../src/oauth/tokens.js';
import { authenticateClient, formParams, setUpClientEndpoint } from './client-endpoint.js';
import { Empty, OAuthErrorSchema, OAuthParamsSchema } from '../../schemas/oauth.js';

const revokePlugin: FastifyPluginAsyncTypebox = async (app) => {
  setUpClientEndpoint(app, '/oauth2/revoke');

  app.post(
    '/oauth2/revoke',
    {
      schema: {
        body: OAuthParamsSchema,
        response: {
          200: Empty('revoked, or nothing to revoke (RFC 7009 §2.2)'),
          400: OAuthErrorSchema,
          401: OAuthErrorSchema,
        },
      },
    },
    async (request, reply) => {
      const body = formParams(request, reply);
      const client = await authenticateClient(app, request, reply, body);
      const token = body.token as string | undefined;
      if (!token) throw new OAuthError('invalid_request', 'token is required');
      // Opaque tokens are 43 characters; JWT access tokens (RFC 9068) a few hundred more.
      if (token.length <= 8192) {
        await app.services.tokens.revoke(
          hashToken(token),
          client.clientId,
          body.token_type_hint === 'access_token' ? 'access_token' : 'refresh_token',
          request.ip,
        );
      }
      return reply.code(200).header('cache-control', 'no-store').header('pragma', 'no-cache').send(undefined);
    },
  );
};

export default revokePlugin;
