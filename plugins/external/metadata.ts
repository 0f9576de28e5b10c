// GET /.well-known/oauth-protected-resource/api/external (RFC 9728 §3): the protected-resource metadata of
// /api/external, at the root of the host with BASE_URL's path kept after the well-known segment (§3.1), like the
// RFC 8414 metadata (plugins/oidc/discovery.ts). Public, cacheable, readable from any origin, as discovery is.
// Every 401 and 403 of /api/external/* names this URL (plugins/infra/bearer-auth.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../src/config.js';
import { protectedResourceMetadata, protectedResourceMetadataPath } from '../../src/oauth/protected-resource.js';
import { documentOnly, ProtectedResourceMetadataSchema } from '../../schemas/oauth.js';

const protectedResourceMetadataPlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const builtIn = app.services.resourceServers.builtIn;
  // The built-in resource never changes while the process runs: serialized once.
  const document = JSON.stringify(protectedResourceMetadata(builtIn, config.issuer));
  documentOnly(app);
  app.get(
    protectedResourceMetadataPath(builtIn.identifier),
    {
      schema: {
        response: { 200: ProtectedResourceMetadataSchema },
        description: 'Protected resource metadata of /api/external (RFC 9728 §3)',
      },
    },
    async (_request, reply) => {
      reply
        .header('content-type', 'application/json; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .header('access-control-allow-origin', '*');
      return reply.send(document as never);
    },
  );
};

export default protectedResourceMetadataPlugin;
