// POST /api/auth/oauth2/token (RFC 6749 §3.2, §4.1.3; public clients: client_id in the body, no secret).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { OAuthError } from '../../src/oauth/errors.js';
import type { RawParams } from '../../src/services/authorization.js';
import { OAuthParamsSchema } from './authorize.js';
import { sendOAuthJson, toOAuthError } from './errors.js';

const tokenPlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.setErrorHandler((error, request, reply) => sendOAuthJson(reply, toOAuthError(error as never, request)));
  // Browser CORS: preflight from any registered origin; the answer readable only by the client's own origins.
  app.addHook('preHandler', async (request) => {
    const clientId = (request.body as Record<string, unknown> | undefined)?.client_id;
    if (typeof clientId === 'string') request.corsClientId = clientId;
  });
  app.addHook('onSend', async (request, reply) => {
    if (request.method !== 'OPTIONS') await app.cors.actual(request, reply);
  });
  app.options('/oauth2/token', async (request, reply) => app.cors.preflight(request, reply));

  app.post('/oauth2/token', { schema: { body: OAuthParamsSchema } }, async (request, reply) => {
    if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
    }
    const body = (request.body ?? {}) as RawParams;
    for (const [name, value] of Object.entries(body)) {
      if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must not be repeated`);
    }
    // Public clients authenticate with client_id alone (token_endpoint_auth_method=none).
    if (request.headers.authorization) {
      // RFC 6749 §5.2: a 401 after an Authorization header names the scheme in WWW-Authenticate.
      const scheme = /^(\w+)/.exec(request.headers.authorization)?.[1] ?? 'Basic';
      reply.header('www-authenticate', `${/^bearer$/i.test(scheme) ? 'Bearer' : 'Basic'} realm="token"`);
      throw new OAuthError('invalid_client', 'this client is public: send client_id in the body and no Authorization header');
    }
    const grantType = body.grant_type as string | undefined;
    const clientId = body.client_id as string | undefined;
    if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
    if (!clientId) throw new OAuthError('invalid_request', 'client_id is required');
    const client = clientId.length <= 256 ? await app.services.applications.find(clientId) : undefined;
    if (!client) throw new OAuthError('invalid_client', 'unknown client');
    if (body.client_secret) throw new OAuthError('invalid_client', 'this client is public and has no client secret');

    let tokens;
    if (grantType === 'authorization_code') {
      if (!client.enabled) throw new OAuthError('invalid_client', 'this application is disabled');
      tokens = await app.authorization.exchangeCode(body, client);
    } else if (grantType === 'refresh_token') {
      // A disabled application's refresh tokens stop working: invalid_grant.
      tokens = await app.refreshGrant(body, client);
    } else {
      throw new OAuthError('unsupported_grant_type', `grant_type ${grantType.slice(0, 64)} is not supported`);
    }
    return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(tokens);
  });
};

export default tokenPlugin;
