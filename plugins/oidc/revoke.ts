// POST /api/auth/oauth2/revoke (RFC 7009): public clients send client_id; unknown tokens and tokens of
// other clients are answered 200 like any other (nothing to learn from the answer). A refresh token
// revokes its whole family and the access tokens issued from it.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OAuthError } from '../../src/oauth/errors.js';
import { hashToken } from '../../src/oauth/tokens.js';
import type { RawParams } from '../../src/services/authorization.js';
import { OAuthParamsSchema } from './authorize.js';
import { sendOAuthJson, toOAuthError } from './errors.js';

const revokePlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.setErrorHandler((error, request, reply) => sendOAuthJson(reply, toOAuthError(error as never, request)));
  // Browser CORS: preflight from any registered origin; the answer readable only by the client's own origins.
  app.addHook('preHandler', async (request) => {
    const clientId = (request.body as Record<string, unknown> | undefined)?.client_id;
    if (typeof clientId === 'string') request.corsClientId = clientId;
  });
  app.addHook('onSend', async (request, reply) => {
    if (request.method !== 'OPTIONS') await app.cors.actual(request, reply);
  });
  app.options('/oauth2/revoke', async (request, reply) => app.cors.preflight(request, reply));

  app.post('/oauth2/revoke', { schema: { body: OAuthParamsSchema } }, async (request, reply) => {
    if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
    }
    const body = (request.body ?? {}) as RawParams;
    for (const [name, value] of Object.entries(body)) {
      if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must not be repeated`);
    }
    if (request.headers.authorization) throw new OAuthError('invalid_client', 'this client is public: send client_id in the body');
    const clientId = body.client_id as string | undefined;
    const token = body.token as string | undefined;
    if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
    const client = clientId.length <= 256 ? await app.services.applications.find(clientId) : undefined;
    if (!client) throw new OAuthError('invalid_client', 'unknown client');
    if (!token) throw new OAuthError('invalid_request', 'token is required');
    if (token.length <= 256) {
      await app.tokens.revoke(hashToken(token), client.clientId, body.token_type_hint === 'access_token' ? 'access_token' : 'refresh_token', request.ip);
    }
    return reply.code(200).header('cache-control', 'no-store').header('pragma', 'no-cache').send();
  });
};

export default revokePlugin;
