// GET /api/openapi.json: an OpenAPI 3.1 document generated (@fastify/swagger) from the TypeBox schemas
// of every /api route: public, external, OAuth, first-party and (when enabled) admin. The hosted HTML
// pages are not an API and are left out. Registered before the routes, so that it sees each of them.
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../src/config.js';

export interface ApiRoute {
  method: string;
  url: string;
  /** Which parts of the route have a schema (the OpenAPI test demands a response schema on every one). */
  schemaParts: string[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route under /api as registered, for the OpenAPI completeness test and diagnostics. */
    apiRoutes: ApiRoute[];
  }
}

export default fp(
  async function openapiPlugin(app: FastifyInstance, { config }: { config: Config }) {
    const apiRoutes: ApiRoute[] = [];
    app.decorate('apiRoutes', apiRoutes);
    app.addHook('onRoute', (route) => {
      // The RFC 8414 §3 metadata at the host's root (/.well-known/oauth-authorization-server/<issuer path>) is
      // outside BASE_URL, so outside this document; the same document is under the issuer path.
      if (!route.url.includes('/api/') || route.url.endsWith('/openapi.json')) return;
      if (route.url.startsWith('/.well-known/')) return;
      for (const method of [route.method].flat()) {
        if (method === 'HEAD') continue;
        apiRoutes.push({
          method,
          url: route.url,
          schemaParts: Object.keys(route.schema ?? {}).filter((k) => k !== 'hide'),
        });
      }
    });
    const basePath = new URL(config.baseUrl).pathname.replace(/\/$/, '');
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'idp: OpenID Connect provider and external user API',
          version: '1',
          description:
            `Issuer ${config.issuer}. ` +
            `Relying parties should start from ${config.issuer}/.well-known/openid-configuration.`,
        },
        servers: [{ url: config.baseUrl }],
        components: {
          securitySchemes: {
            bearer: {
              type: 'http',
              scheme: 'bearer',
              description: 'An access token from the token endpoint (external API, UserInfo)',
            },
            adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_API_TOKEN (admin API)' },
            sessionCookie: {
              type: 'apiKey',
              in: 'cookie',
              name: config.cookieSecure ? '__Host-idp.session' : 'idp.session',
              description: 'The hosted-login session cookie (first-party /api/me/*); access tokens are refused',
            },
          },
        },
      },
      hideUntagged: false,
      transform({ schema, url, route }) {
        const path = url.startsWith(basePath) ? url.slice(basePath.length) : url;
        const api = path.startsWith('/api/') && route.method !== 'HEAD' && path !== '/api/openapi.json';
        const tags = path.startsWith('/api/admin')
          ? ['admin']
          : path.startsWith('/api/external')
            ? ['external']
            : path.startsWith('/api/public')
              ? ['public']
              : path.startsWith('/api/me')
                ? ['me']
                : ['auth'];
        const security = path.startsWith('/api/admin')
          ? [{ adminToken: [] }]
          : path.startsWith('/api/external') || path.includes('/oauth2/userinfo')
            ? [{ bearer: [] }]
            : path.startsWith('/api/me')
              ? [{ sessionCookie: [] }]
              : undefined;
        return { schema: { ...(schema ?? {}), hide: !api, tags, ...(security && { security }) } as never, url };
      },
    });
    app.get('/api/openapi.json', { schema: { hide: true } as never }, async (_request, reply) =>
      reply
        .header('cache-control', 'public, max-age=300')
        .header('access-control-allow-origin', '*')
        .send(app.swagger()),
    );
  },
  { name: 'openapi' },
);
