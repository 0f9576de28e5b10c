// Bearer authentication for /api/external/* (the spec's Authentication rules 1-4, in that order):
// header present; Bearer scheme (any case); the token in the access-token store by hash, not expired,
// not revoked, of an enabled application and a user who is not disabled; then the scopes. A cookie
// session never authenticates these routes. Tokens count only in the Authorization header; a request
// that also carries `access_token` in the query string or a form body uses two methods, which RFC 6750
// §2 forbids: it is refused before any lookup (401 here, 400 invalid_request on UserInfo). A token in the
// query or body alone is simply no token (401, bare challenge), except on UserInfo, where a form-encoded POST body
// may carry it (RFC 6750 §2.2, OIDC Core §5.3.1; the conformance module oidcc-userinfo-post-body).
//   401 { error: "UNAUTHORIZED" } + WWW-Authenticate: Bearer [error="invalid_token" | error="invalid_request"]
//   403 { error: "FORBIDDEN", missingScopes } + WWW-Authenticate: Bearer error="insufficient_scope", scope="..."
// A token whose audience (RFC 8707) is a registered resource server other than /api/external is another API's
// token: refused here and on UserInfo as if unknown (401 invalid_token). On /api/external/* every challenge also
// names the protected-resource metadata (RFC 9728 §5.1: resource_metadata="…"), so that a client that meets a
// 401 finds this resource's authorization server from it (as MCP clients do).
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../src/config.js';
import type { OAuthErrorDescription } from '../../src/oauth/errors.js';
import type { BearerAuth } from '../../src/services/bearer.js';
import { protectedResourceMetadataUrl } from '../../src/oauth/protected-resource.js';

export type { BearerAuth };

declare module 'fastify' {
  interface FastifyRequest {
    bearer?: BearerAuth;
  }
  interface FastifyInstance {
    /**
     * For /api/external/*: a preValidation hook (it sees the form body) that authenticates the bearer token, then
     * checks the scopes; its challenges name the protected-resource metadata (RFC 9728).
     */
    requireScopes(...scopes: string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
    /** The same for UserInfo: a token sent two ways is 400 invalid_request (RFC 6750 §3.1), not 401. */
    requireUserInfoScopes(...scopes: string[]): (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  }
}

const TOKEN = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i;

/**
 * A Bearer challenge (RFC 6750 §3) of these attributes, then `resource_metadata` when the route names one (RFC 9728
 * §5.1). A bare challenge with no attribute at all is `Bearer`.
 */
function challenge(attributes: string[], resourceMetadata: string | undefined): string {
  const all = resourceMetadata ? [...attributes, `resource_metadata="${resourceMetadata}"`] : attributes;
  return all.length ? `Bearer ${all.join(', ')}` : 'Bearer';
}

// ASCII only: it goes into a header and an RFC 6749 §5.2 error_description.
const TWO_WAYS: OAuthErrorDescription<'invalid_request'> =
  'the access token must be sent one way only, in the Authorization header (RFC 6750 section 2)';

/** RFC 6750 §2.1 b64token, as in the header. */
const BODY_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

const hasFormBody = (request: FastifyRequest) =>
  /^application\/x-www-form-urlencoded/i.test(String(request.headers['content-type'] ?? ''));

/** `access_token` in the query string or the form body, next to the Authorization header. */
function tokenAlsoElsewhere(request: FastifyRequest): boolean {
  const has = (o: unknown) => typeof o === 'object' && o !== null && Object.hasOwn(o, 'access_token');
  return has(request.query) || (hasFormBody(request) && has(request.body));
}

export default fp(
  async function bearerAuth(app: FastifyInstance, _options: { config: Config }) {
    app.decorateRequest('bearer', undefined);
    // Created with the token issuer, which seeds its cache (createServices, src/compose.ts).
    const bearers = app.services.bearers;
    // The only audience, besides none, that /api/external/* and UserInfo accept (src/domain/resource-server.ts).
    const builtInAudience = app.services.resourceServers.builtIn.identifier;
    const externalMetadata = protectedResourceMetadataUrl(builtInAudience);
    async function authenticate(
      request: FastifyRequest,
      bodyToken: boolean,
    ): Promise<BearerAuth | 'missing' | 'invalid'> {
      const header = request.headers.authorization;
      // UserInfo only (decisions.md, OIDC Core §5.3.1, RFC 6750 §2.2): with no Authorization header, a POST with a
      // form-encoded body may carry the token as access_token. Never the query string.
      if (!header && bodyToken && request.method === 'POST' && hasFormBody(request)) {
        const token = (request.body as Record<string, unknown> | undefined)?.access_token;
        if (token === undefined) return 'missing';
        if (typeof token !== 'string' || !BODY_TOKEN.test(token) || token.length > 256) return 'invalid';
        return (await bearers.authenticate(token)) ?? 'invalid';
      }
      // RFC 6750 §3.1: without a Bearer credential (none, or another scheme) the challenge has no error code.
      if (!header || !/^Bearer(\s|$)/i.test(header)) return 'missing';
      const match = TOKEN.exec(header);
      if (!match || match[1]!.length > 256) return 'invalid';
      return (await bearers.authenticate(match[1]!)) ?? 'invalid';
    }

    /** A live token is for these routes when it names no audience or the built-in one; another API's is refused. */
    const forUs = (auth: BearerAuth) => auth.audience === null || auth.audience === builtInAudience;

    function hook(
      required: string[],
      twoWays: (reply: FastifyReply) => FastifyReply,
      options: { bodyToken?: boolean; resourceMetadata?: string },
    ) {
      const { bodyToken = false, resourceMetadata } = options;
      return async function requireScopes(request: FastifyRequest, reply: FastifyReply) {
        // A Bearer header plus a token elsewhere: refused without looking either up.
        if (/^Bearer(\s|$)/i.test(request.headers.authorization ?? '') && tokenAlsoElsewhere(request))
          return twoWays(reply.header('cache-control', 'no-store'));
        const found = await authenticate(request, bodyToken);
        // Another resource server's token is refused as an unknown one would be: nothing says whose it is.
        const result = typeof found === 'object' && !forUs(found) ? 'invalid' : found;
        if (result === 'missing' || result === 'invalid') {
          return reply
            .code(401)
            .header(
              'www-authenticate',
              challenge(result === 'invalid' ? ['error="invalid_token"'] : [], resourceMetadata),
            )
            .header('cache-control', 'no-store')
            .send({ error: 'UNAUTHORIZED' });
        }
        request.bearer = result;
        request.corsClientId = result.clientId;
        // 600/min per access token (decisions.md): counted once the token is known to be real.
        await app.rateLimit(reply, 'BEARER', result.tokenHash);
        const missing = required.filter((s) => !result.scopes.includes(s));
        if (missing.length) {
          return reply
            .code(403)
            .header(
              'www-authenticate',
              challenge(['error="insufficient_scope"', `scope="${missing.join(' ')}"`], resourceMetadata),
            )
            .header('cache-control', 'no-store')
            .send({ error: 'FORBIDDEN', missingScopes: missing });
        }
      };
    }

    app.decorate('requireScopes', (...required: string[]) =>
      hook(
        required,
        (reply) =>
          reply
            .code(401)
            .header(
              'www-authenticate',
              challenge(['error="invalid_request"', `error_description="${TWO_WAYS}"`], externalMetadata),
            )
            .send({ error: 'UNAUTHORIZED' }),
        { resourceMetadata: externalMetadata },
      ),
    );
    app.decorate('requireUserInfoScopes', (...required: string[]) =>
      hook(
        required,
        (reply) =>
          reply
            .code(400)
            .header('www-authenticate', `Bearer error="invalid_request", error_description="${TWO_WAYS}"`)
            .send({ error: 'invalid_request', error_description: TWO_WAYS }),
        { bodyToken: true },
      ),
    );
  },
  { name: 'bearer-auth', dependencies: ['db', 'services', 'rate-limit', 'cors'] },
);
