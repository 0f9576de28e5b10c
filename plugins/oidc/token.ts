// POST /api/auth/oauth2/token (RFC 6749 §3.2, §4.1.3; public clients: client_id in the body, no secret).
// grantTokens() is the one implementation of the grants; the cookie token endpoint wraps it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../../src/oauth/errors.js';
import { ipKey } from '../../src/rate-limit.js';
import type { RawParams, TokenResponse } from '../../src/services/authorization.js';
import { OAuthParamsSchema } from './authorize.js';
import { formParams, setUpClientEndpoint } from './client-endpoint.js';
import { OAuthErrorSchema, TokenResponseSchema } from '../../schemas/oauth.js';

export const TokenErrors = { 400: OAuthErrorSchema, 401: OAuthErrorSchema, 429: OAuthErrorSchema };

/** Runs the grant the (already checked) form body asks for; counts the client's rate limit first. */
export async function grantTokens(app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, body: RawParams): Promise<TokenResponse> {
  const grantType = body.grant_type as string | undefined;
  const clientId = body.client_id as string | undefined;
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
  // Per IP before the lookup; per client and IP only for a known, enabled client, so made-up
  // client_ids never become rate-limit keys (issue 12, item 7).
  await app.rateLimit(reply, 'TOKEN_IP', ipKey(request.ip));
  const client = clientId.length <= 256 ? await app.services.applications.find(clientId) : undefined;
  if (!client) throw new OAuthError('invalid_client', 'unknown client');
  if (client.enabled) await app.rateLimit(reply, 'TOKEN', `${client.clientId}\u0000${ipKey(request.ip)}`);
  if (body.client_secret) throw new OAuthError('invalid_client', 'this client is public and has no client secret');

  if (grantType === 'authorization_code') {
    if (!client.enabled) throw new OAuthError('invalid_client', 'this application is disabled');
    return app.authorization.exchangeCode(body, client);
  }
  if (grantType === 'refresh_token') {
    // A disabled application's refresh tokens stop working: invalid_grant.
    return app.refreshGrant(body, client);
  }
  throw new OAuthError('unsupported_grant_type', `grant_type ${grantType.slice(0, 64)} is not supported`);
}

const tokenPlugin: FastifyPluginAsyncTypebox = async (app) => {
  setUpClientEndpoint(app, '/oauth2/token');

  app.post('/oauth2/token', { schema: { body: OAuthParamsSchema, response: { 200: TokenResponseSchema, ...TokenErrors } } }, async (request, reply) => {
    const tokens = await grantTokens(app, request, reply, formParams(request, reply));
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
  });
};

export default tokenPlugin;
