// Dynamic browser CORS for the token and revocation endpoints and /api/external/* (spec: Browser CORS;
// decisions.md is stricter on actual requests). Hand-rolled rather than @fastify/cors: the actual-
// request rule depends on the client the request speaks for (client_id in the body, or the bearer
// token's client), which an origin delegator does not see.
//  - Preflight: 204; allowed for any origin in the union of allowedWebOrigins (cached 60 s, dropped at
//    once when an application changes, on every instance through PostgreSQL LISTEN/NOTIFY).
//    Applications themselves are cached by the application service (applications.find).
//  - Actual request: Access-Control-Allow-Origin only when the origin is registered for that client;
//    when the request speaks for no known client (an error before one is identified), any registered origin.
//  - Never credentials; always Vary: Origin.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from 'fastify';

export const CORS_CACHE_SECONDS = 60;
export const CORS_MAX_AGE_SECONDS = 600;

declare module 'fastify' {
  interface FastifyRequest {
    /** The client this request speaks for, once known; decides the actual-request CORS answer. */
    corsClientId?: string;
    /** The client itself, when the request already looked it up (the token endpoints): no second lookup. */
    corsClient?: { clientId: string; enabled: boolean; allowedWebOrigins: string[] };
  }
  interface FastifyInstance {
    cors: {
      preflight(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
      actual(request: FastifyRequest, reply: FastifyReply): Promise<void>;
      /** actual() as an onSend hook of a route's context (OPTIONS is the preflight's). */
      onSend: onSendHookHandler;
      invalidate(): void;
      registeredOrigins(): Promise<Set<string>>;
    };
  }
}

export default fp(
  async function corsPlugin(app: FastifyInstance, options: { cacheSeconds?: number }) {
    const cacheMs = (options.cacheSeconds ?? CORS_CACHE_SECONDS) * 1000;
    let cached: { at: number; origins: Promise<Set<string>> } | undefined;

    function registeredOrigins(): Promise<Set<string>> {
      if (!cached || Date.now() - cached.at >= cacheMs) {
        const origins = app.services.applications.webOrigins();
        cached = { at: Date.now(), origins };
        origins.catch(() => (cached = undefined));
      }
      return cached.origins;
    }
    const invalidate = () => {
      cached = undefined;
    };

    // Every application change drops the list: at once for changes in this process, by NOTIFY for other
    // instances' (one listener per process feeds app.services.invalidation; see src/services/invalidation.ts).
    app.services.invalidation.on((event) => {
      if (event.kind !== 'access') invalidate();
    });

    // Declared here (Fastify's decorateRequest), set by whoever learns the client: bearer-auth, the client endpoints.
    app.decorateRequest('corsClientId', undefined);
    app.decorateRequest('corsClient', undefined);
    async function actual(request: FastifyRequest, reply: FastifyReply) {
      reply.header('vary', 'Origin');
      const origin = request.headers.origin;
      if (!origin) return;
      const clientId = request.corsClient?.clientId ?? request.corsClientId;
      if (clientId) {
        const client = request.corsClient ?? (await app.services.applications.find(clientId).catch(() => undefined));
        if (client?.enabled && client.allowedWebOrigins.includes(origin))
          reply.header('access-control-allow-origin', origin);
        return;
      }
      // No client known (a 401 for an unknown token, say): registered origins may read the error, so an
      // app can tell "sign in again" from a network failure; nothing of any client is disclosed.
      if ((await registeredOrigins()).has(origin)) reply.header('access-control-allow-origin', origin);
    }

    app.decorate('cors', {
      registeredOrigins,
      invalidate,
      actual,
      // Callback style, and nothing awaited without an Origin header (most bearer and token requests come
      // from servers): no promise per request on the hot routes.
      onSend(request, reply, payload, done) {
        if (request.method === 'OPTIONS') return done(null, payload);
        if (request.headers.origin === undefined) {
          reply.header('vary', 'Origin');
          return done(null, payload);
        }
        actual(request, reply).then(
          () => done(null, payload),
          (error: Error) => done(error),
        );
      },
      async preflight(request: FastifyRequest, reply: FastifyReply) {
        const origin = request.headers.origin;
        reply.header('vary', 'Origin').header('cache-control', 'no-store');
        if (origin && (await registeredOrigins()).has(origin)) {
          reply
            .header('access-control-allow-origin', origin)
            .header('access-control-allow-methods', 'GET, POST, OPTIONS')
            .header('access-control-allow-headers', 'Authorization, Content-Type')
            .header('access-control-max-age', String(CORS_MAX_AGE_SECONDS));
        }
        return reply.code(204).send();
      },
    });
  },
  { name: 'cors', dependencies: ['db', 'services'] },
);
