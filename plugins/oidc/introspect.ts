// POST /api/auth/oauth2/introspect (RFC 7662): the caller authenticates as at the token and revocation endpoints
// (one module: client-endpoint.ts authenticateClient), and is rate limited as they are. The answer is
// src/services/introspection.ts's: the token's metadata when it is live and the caller may see it, else
// `{ "active": false }` alone. Nothing is audited: an introspection reads.
//
// Public clients (token_endpoint_auth_method none) may call it, for their own tokens only, as node-oidc-provider
// allows (lib/actions/introspection.js with its default allowedPolicy: a client that authenticated with `none` sees
// only tokens issued to it). RFC 7662 §2.1 asks for authorization of the caller "to prevent token scanning": a
// public client proves only its client_id, but it learns nothing it could not learn by using the token (which it
// must already hold: 256 random bits), and only about its own tokens; the rate limits bound any scanning.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OAuthError } from '../../src/oauth/errors.js';
import { authenticateClient, formParams, setUpClientEndpoint } from './client-endpoint.js';
import { IntrospectionSchema, OAuthErrorSchema, OAuthParamsSchema } from '../../schemas/oauth.js';

const introspectPlugin: FastifyPluginAsyncTypebox = async (app) => {
  setUpClientEndpoint(app, '/oauth2/introspect');

  app.post(
    '/oauth2/introspect',
    {
      schema: {
        body: OAuthParamsSchema,
        response: { 200: IntrospectionSchema, 400: OAuthErrorSchema, 401: OAuthErrorSchema, 429: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      const body = formParams(request, reply);
      const client = await authenticateClient(app, request, reply, body);
      const token = body.token;
      if (!token) throw new OAuthError('invalid_request', 'token is required');
      const answer = await app.services.introspection.introspect(client, token, body.token_type_hint);
      return reply.code(200).header('cache-control', 'no-store').header('pragma', 'no-cache').send(answer);
    },
  );
};

export default introspectPlugin;
