// /api/public/*: metadata that needs no token.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { CLIENT_ID_PATTERN } from '../../src/domain/application.js';
import { isUrlClientId, metadataDocumentUrlProblem } from '../../src/domain/client-registration.js';
import { SCOPES } from '../../src/oauth/scopes.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { publicErrors } from '../infra/error-handlers.js';

const ScopeItem = Type.Object({
  name: Type.String(),
  label: Type.String(),
  consentDescription: Type.String(),
  developerDescription: Type.String(),
  claims: Type.Array(Type.String()),
});

const ApplicationMetadata = Type.Object(
  {
    clientId: Type.String(),
    clientName: Type.String(),
    clientDescription: Type.Optional(Type.String()),
    clientLogoUrl: Type.Optional(Type.String()),
    postVerificationRedirectPath: Type.Optional(Type.String()),
    postVerificationRedirectUri: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const PublicError = (code: string) => Type.Object({ error: Type.Literal(code) });
const clientIdPattern = new RegExp(CLIENT_ID_PATTERN);

const publicPlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.setErrorHandler(publicErrors());

  // The same for every request: serialized once (the schema documents it; it filters nothing here).
  const scopes = JSON.stringify({ items: SCOPES.map((s) => ({ ...s, claims: [...s.claims] })) });
  app.get(
    '/oidc/scopes',
    { schema: { response: { 200: Type.Object({ items: Type.Array(ScopeItem) }) } } },
    async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300').header('content-type', 'application/json; charset=utf-8');
      return reply.send(scopes as never);
    },
  );

  app.get(
    '/applications/:clientId',
    {
      schema: {
        // Loose here (no length limits either), so that a bad id answers the spec's INVALID_CLIENT_ID rather
        // than a schema error, and a redirect_uri of any length simply matches no registered URI. The
        // request line is bounded by Node's header limit.
        params: Type.Object({ clientId: Type.String() }),
        querystring: Type.Object({
          redirect_uri: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())])),
        }),
        response: {
          200: ApplicationMetadata,
          400: PublicError('INVALID_CLIENT_ID'),
          404: PublicError('NOT_FOUND'),
          500: PublicError('INTERNAL_ERROR'),
        },
      },
    },
    async (request, reply) => {
      const { clientId } = request.params;
      // A client ID metadata document's URL is a client id only while metadata documents are on.
      const urlClient =
        app.services.selfRegistration.metadataDocumentsOn &&
        isUrlClientId(clientId) &&
        metadataDocumentUrlProblem(clientId) === undefined;
      if (!clientIdPattern.test(clientId) && !urlClient)
        return reply
          .code(400)
          .header('cache-control', 'no-store')
          .send({ error: 'INVALID_CLIENT_ID' as const });
      const client = await app.services.applications.find(clientId);
      // A disabled application is as absent as a missing one.
      if (!client?.enabled)
        return reply
          .code(404)
          .header('cache-control', 'public, max-age=60')
          .send({ error: 'NOT_FOUND' as const });
      const redirectUri = typeof request.query.redirect_uri === 'string' ? request.query.redirect_uri : undefined;
      const path = client.postVerificationRedirectPath;
      reply.header('cache-control', 'public, max-age=60');
      return {
        clientId: client.clientId,
        clientName: client.clientName,
        ...(client.clientDescription && { clientDescription: client.clientDescription }),
        ...(client.clientLogoUrl && { clientLogoUrl: client.clientLogoUrl }),
        ...(path && { postVerificationRedirectPath: path }),
        // Only for a redirect_uri registered exactly for this client.
        ...(path &&
          redirectUri &&
          client.redirectUris.includes(redirectUri) && {
            postVerificationRedirectUri: `${originOf(redirectUri)}${path}`,
          }),
      };
    },
  );
};

export default publicPlugin;
