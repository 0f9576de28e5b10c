// What the token and revocation endpoints share: form-encoded bodies only, no repeated parameters,
// RFC 6749 §5.2 errors, browser CORS for the client the body names, client authentication in one
// place, and the token request itself (parse → authenticate the client → the grant's handler), which
// the token endpoint and the first-party cookie token endpoint both answer with.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Application } from '../../src/domain/application.js';
import { ClientAuthError, presentedClientAuth } from '../../src/oauth/client-auth.js';
import type { ClientEndpoint } from '../../src/oauth/client-assertion.js';
import { OAuthError, parameterError } from '../../src/oauth/errors.js';
import type { TokenParams, TokenResponse } from '../../src/oauth/grants/grant.js';
import { REPEATED_RESOURCE_SEPARATOR } from '../../src/oauth/resource-indicators.js';
import { ipKey } from '../../src/rate-limit.js';
import { oauthJsonErrors } from '../infra/error-handlers.js';
import { documentOnly, NoContent } from '../../schemas/oauth.js';

export function setUpClientEndpoint(app: FastifyInstance, path: string) {
  documentOnly(app);
  app.setErrorHandler(oauthJsonErrors());
  // Browser CORS: preflight from any registered origin; the answer readable only by the client's own origins.
  app.addHook('preHandler', async (request) => {
    const clientId = (request.body as Record<string, unknown> | undefined)?.client_id;
    if (typeof clientId === 'string') request.corsClientId = clientId;
  });
  app.addHook('onSend', app.cors.onSend);
  app.options(path, { schema: { response: { 204: NoContent('CORS preflight') } } }, async (request, reply) =>
    app.cors.preflight(request, reply),
  );
}

/** The form body, after the checks every client endpoint makes. */
export function formParams(request: FastifyRequest, _reply: FastifyReply): TokenParams {
  if (!String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
    throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
  }
  const body = { ...((request.body ?? {}) as Record<string, string | string[] | undefined>) };
  for (const [name, value] of Object.entries(body)) {
    // RFC 8707 §2: resource may be repeated; the token endpoint takes one (invalid_target, by the grant, after the
    // client is authenticated), so several are joined with a separator no resource identifier holds.
    if (Array.isArray(value) && name === 'resource') body[name] = value.join(REPEATED_RESOURCE_SEPARATOR);
    else if (Array.isArray(value)) throw parameterError(name, 'must not be repeated');
  }
  return body as TokenParams;
}

/** Which client endpoint the request is at: a client assertion's audience may name it (RFC 7523 §3). */
function clientEndpointOf(request: FastifyRequest): ClientEndpoint {
  const route = request.routeOptions.url ?? '';
  if (route.endsWith('/oauth2/revoke')) return 'revocation';
  if (route.endsWith('/oauth2/introspect')) return 'introspection';
  return 'token';
}

const WRONG_METHOD = {
  none: 'this client is public: send client_id alone, without a secret or an assertion',
  client_secret_basic: 'this client authenticates with client_secret_basic',
  client_secret_post: 'this client authenticates with client_secret_post',
  private_key_jwt: 'this client authenticates with private_key_jwt',
} as const;

/**
 * Client authentication of the token, revocation and introspection endpoints (RFC 6749 §2.3, RFC 7523 §2.2): the
 * method the request presents (src/oauth/client-auth.ts) must be the application's one, and its secret or assertion
 * must verify. The one lookup of the request: the client found is also the one CORS answers for. Rate limits count
 * per IP before the lookup and per client only for a known, enabled client, so made-up client_ids never become
 * rate-limit keys; secrets are checked after the per-client limit. RFC 6749 §5.2: a 401 after an Authorization
 * header names the scheme in WWW-Authenticate.
 */
export async function authenticateClient(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  params: TokenParams,
): Promise<Application> {
  const authorization = request.headers.authorization;
  try {
    const presented = presentedClientAuth(authorization, params);
    const clientId = presented.clientId;
    await app.rateLimit(reply, 'TOKEN_IP', ipKey(request.ip));
    const client = clientId.length <= 256 ? await app.services.applications.find(clientId) : undefined;
    if (!client) throw new OAuthError('invalid_client', 'unknown client', { detail: `client_id ${clientId}` });
    // A metadata document's client, once the operator has turned metadata documents off, is refused everywhere.
    if (client.registration === 'metadata_document' && !app.services.selfRegistration.metadataDocumentsOn) {
      throw new OAuthError('invalid_client', 'client ID metadata documents are not accepted here', {
        detail: `client_id ${clientId}`,
      });
    }
    request.corsClient = client;
    if (client.enabled) await app.rateLimit(reply, 'TOKEN', `${client.clientId}\u0000${ipKey(request.ip)}`);
    if (presented.method !== client.tokenEndpointAuthMethod) {
      throw new OAuthError('invalid_client', WRONG_METHOD[client.tokenEndpointAuthMethod], {
        detail: `client ${client.clientId} presented ${presented.method}`,
      });
    }
    if (presented.method === 'client_secret_basic' || presented.method === 'client_secret_post') {
      if (!(await app.services.applications.verifySecret(client.clientId, presented.secret))) {
        throw new OAuthError('invalid_client', 'client authentication failed', {
          detail: `client ${client.clientId}: no live secret matches`,
        });
      }
    } else if (presented.method === 'private_key_jwt') {
      await app.services.clientAssertions.verify(client, presented.assertion, clientEndpointOf(request));
    }
    if (client.enabled) await app.services.selfRegistration.touch(client);
    return client;
  } catch (error) {
    if (authorization !== undefined && error instanceof OAuthError && error.error === 'invalid_client') {
      const scheme = error instanceof ClientAuthError && error.scheme === 'Bearer' ? 'Bearer' : 'Basic';
      reply.header('www-authenticate', `${scheme} realm="token"`);
    }
    throw error;
  }
}

/** A token request (RFC 6749 §3.2): the grant_type's handler answers for the authenticated client. */
export async function tokenRequest(
  app: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  params: TokenParams,
): Promise<TokenResponse> {
  const grantType = params.grant_type;
  if (!grantType) throw new OAuthError('invalid_request', 'grant_type is required');
  const client = await authenticateClient(app, request, reply, params);
  const grant = app.services.grants.get(grantType);
  if (!grant)
    throw new OAuthError('unsupported_grant_type', 'the grant_type is not supported', {
      detail: `grant_type ${grantType}`,
    });
  if (!(client.grantTypes as string[]).includes(grantType)) {
    throw new OAuthError('unauthorized_client', 'this client may not use this grant type', {
      detail: `client ${client.clientId} grant_type ${grantType}`,
    });
  }
  try {
    return await grant(params, client);
  } catch (error) {
    // A grant's own invalid_client (a disabled application) after Basic authentication names the scheme too.
    if (
      request.headers.authorization !== undefined &&
      error instanceof OAuthError &&
      error.error === 'invalid_client'
    ) {
      reply.header('www-authenticate', 'Basic realm="token"');
    }
    throw error;
  }
}
