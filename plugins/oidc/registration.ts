// Dynamic client registration (RFC 7591) at `${issuer}/register` and its management (RFC 7592) at
// `${issuer}/register/:clientId`, registered only when REGISTRATION is token or open (src/services/self-registration.ts
// holds the rules). JSON bodies; errors are RFC 7591 §3.2.2 bodies (invalid_redirect_uri, invalid_client_metadata),
// RFC 6750 §3 for a missing or wrong initial or registration access token (401 with WWW-Authenticate: Bearer).
// Rate limits: REGISTRATION_IP per IP for registrations (the only guard of REGISTRATION=open), REGISTRATION_MANAGE
// per IP for reads, updates and deletions.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { ipKey } from '../../src/rate-limit.js';
import { documentOnly, NoContent, OAuthErrorSchema } from '../../schemas/oauth.js';
import { oauthJsonErrors } from '../infra/error-handlers.js';

const Metadata = Type.Object(
  {
    redirect_uris: Type.Optional(Type.Unknown({ description: 'the redirect URIs (required), 1 to 20' })),
    client_name: Type.Optional(Type.Unknown()),
    logo_uri: Type.Optional(Type.Unknown()),
    scope: Type.Optional(Type.Unknown({ description: 'the built-in scopes the client may ask for' })),
    token_endpoint_auth_method: Type.Optional(
      Type.Unknown({
        description: 'none (the default); client_secret_basic or _post when REGISTRATION_CONFIDENTIAL=on',
      }),
    ),
    grant_types: Type.Optional(Type.Unknown({ description: 'authorization_code and refresh_token' })),
    response_types: Type.Optional(Type.Unknown({ description: 'code' })),
  },
  { additionalProperties: true, description: 'RFC 7591 §2 client metadata (unknown members are ignored)' },
);
const Registered = Type.Object(
  {
    client_id: Type.String(),
    client_id_issued_at: Type.Optional(Type.Integer()),
    client_secret: Type.Optional(Type.String()),
    client_secret_expires_at: Type.Optional(Type.Integer()),
    registration_access_token: Type.Optional(Type.String()),
    registration_client_uri: Type.String(),
    client_name: Type.String(),
    redirect_uris: Type.Array(Type.String()),
    token_endpoint_auth_method: Type.String(),
    grant_types: Type.Array(Type.String()),
    response_types: Type.Array(Type.String()),
    scope: Type.String(),
    logo_uri: Type.Optional(Type.String()),
  },
  { description: 'RFC 7591 §3.2.1 client information response' },
);
/** The body limit of every JSON and form endpoint (decisions.md, Limits). */
const BODY_LIMIT = 16 * 1024;
const ClientIdParams = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 256 }) });
const errors = { 400: OAuthErrorSchema, 401: OAuthErrorSchema, 429: OAuthErrorSchema };

/** The Bearer token of the Authorization header (RFC 6750 §2.1), undefined when there is none. */
function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  const match = header ? /^Bearer ([A-Za-z0-9._~+/-]+=*)$/i.exec(header.trim()) : null;
  return match?.[1];
}

/** RFC 7591 §3.1: the request is a JSON document; anything else is not client metadata. */
function requireJson(request: FastifyRequest) {
  if (!String(request.headers['content-type'] ?? '').startsWith('application/json')) {
    throw new OAuthError('invalid_client_metadata', 'the registration request must be a JSON object', {
      detail: `content-type ${String(request.headers['content-type']).slice(0, 100)}`,
    });
  }
}

function noStore(reply: FastifyReply) {
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}

const registrationPlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (app) => {
  documentOnly(app);
  const answer = oauthJsonErrors();
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // A body that is not a JSON object (another content type, bad JSON, not an object): RFC 7591 §3.2.2.
    const status = (error as { statusCode?: number }).statusCode;
    if (
      !(error instanceof OAuthError) &&
      ((error as { validation?: unknown }).validation || status === 400 || status === 415)
    ) {
      return answer(
        new OAuthError('invalid_client_metadata', 'the registration request must be a JSON object', {
          detail: error.message,
        }) as never,
        request,
        reply,
      );
    }
    if (error instanceof OAuthError && error.error === 'invalid_token') {
      reply.header('www-authenticate', 'Bearer error="invalid_token"');
    }
    return answer(error, request, reply);
  });

  app.post(
    '/register',
    { bodyLimit: BODY_LIMIT, schema: { body: Metadata, response: { 201: Registered, ...errors } } },
    async (request, reply) => {
      await app.rateLimit(reply, 'REGISTRATION_IP', ipKey(request.ip));
      requireJson(request);
      const registered = await app.services.selfRegistration.register(request.body, {
        initialToken: bearerToken(request),
        ip: request.ip,
      });
      return noStore(reply).code(201).send(registered);
    },
  );

  const manage = async (request: FastifyRequest, reply: FastifyReply) => {
    await app.rateLimit(reply, 'REGISTRATION_MANAGE', ipKey(request.ip));
  };
  app.get(
    '/register/:clientId',
    { schema: { params: ClientIdParams, response: { 200: Registered, ...errors } } },
    async (request, reply) => {
      await manage(request, reply);
      const client = await app.services.selfRegistration.read(request.params.clientId, bearerToken(request));
      return noStore(reply).send(client);
    },
  );
  app.put(
    '/register/:clientId',
    {
      bodyLimit: BODY_LIMIT,
      schema: { params: ClientIdParams, body: Metadata, response: { 200: Registered, ...errors } },
    },
    async (request, reply) => {
      await manage(request, reply);
      requireJson(request);
      const client = await app.services.selfRegistration.replace(
        request.params.clientId,
        bearerToken(request),
        request.body,
        { ip: request.ip },
      );
      return noStore(reply).send(client);
    },
  );
  app.delete(
    '/register/:clientId',
    { schema: { params: ClientIdParams, response: { 204: NoContent('deleted'), ...errors } } },
    async (request, reply) => {
      await manage(request, reply);
      await app.services.selfRegistration.remove(request.params.clientId, bearerToken(request), { ip: request.ip });
      return noStore(reply).code(204).send();
    },
  );
};

export default registrationPlugin;
