// What the token and revocation endpoints share: form-encoded bodies only, no repeated parameters,
// RFC 6749 §5.2 errors, and browser CORS for the client the body names.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../../src/oauth/errors.js';
import type { RawParams } from '../../src/services/authorization.js';
import { sendOAuthJson, toOAuthError } from './errors.js';
import { documentOnly, NoContent } from '../../schemas/oauth.js';

export function setUpClientEndpoint(app: FastifyInstance, path: string) {
  documentOnly(app);
  app.setErrorHandler((error, request, reply) => sendOAuthJson(reply, toOAuthError(error as never, request)));
  // Browser CORS: preflight from any registered origin; the answer readable only by the client's own origins.
  app.addHook('preHandler', async (request) => {
    const clientId = (request.body as Record<string, unknown> | undefined)?.client_id;
    if (typeof clientId === 'string') request.corsClientId = clientId;
  });
  app.addHook('onSend', async (request, reply) => {
    if (request.method !== 'OPTIONS') await app.cors.actual(request, reply);
  });
  app.options(path, { schema: { response: { 204: NoContent('CORS preflight') } } }, async (request, reply) => app.cors.preflight(request, reply));
}

/** The form body, after the checks every client endpoint makes. */
export function formParams(request: FastifyRequest, reply: FastifyReply): RawParams {
  if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
  }
  const body = (request.body ?? {}) as RawParams;
  for (const [name, value] of Object.entries(body)) {
    if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must not be repeated`);
  }
  // Public clients authenticate with client_id alone (token_endpoint_auth_method=none). RFC 6749 §5.2:
  // a 401 after an Authorization header names the scheme in WWW-Authenticate.
  if (request.headers.authorization) {
    const scheme = /^(\w+)/.exec(request.headers.authorization)?.[1] ?? 'Basic';
    reply.header('www-authenticate', `${/^bearer$/i.test(scheme) ? 'Bearer' : 'Basic'} realm="token"`);
    throw new OAuthError('invalid_client', 'this client is public: send client_id in the body and no Authorization header');
  }
  return body;
}
