// The first-party cookie token endpoints (spec: POST /api/auth/oauth2/token/cookie and .../cookie-logout;
// decisions.md, Cookie refresh endpoints). The browser never sees the refresh token: it lives in an
// HttpOnly cookie scoped to the token path. Only first-party origins may call these (Origin required);
// a cross-origin first-party page gets CORS with credentials, nobody else any CORS at all.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import '@fastify/cookie';
import type { Config } from '../../src/config.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { hashToken } from '../../src/oauth/tokens.js';
import { formParams, tokenRequest } from './client-endpoint.js';
import { oauthJsonErrors } from '../infra/error-handlers.js';
import {
  documentOnly,
  NoContent,
  OAuthErrorSchema,
  OAuthParamsSchema,
  TokenErrors,
  TokenResponseSchema,
} from '../../schemas/oauth.js';

export function refreshCookieName(config: Config): string {
  return config.cookieSecure ? '__Secure-idp.refresh' : 'idp.refresh';
}

const tokenCookiePlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const name = refreshCookieName(config);
  const attributes = {
    path: `${new URL(config.issuer).pathname}/oauth2/token`,
    httpOnly: true,
    secure: config.cookieSecure,
    sameSite: config.cookieSameSite,
  } as const;
  const firstParty = new Set([originOf(config.loginUrl), ...config.firstPartyOrigins].filter(Boolean) as string[]);
  const clear = (reply: FastifyReply) => reply.clearCookie(name, attributes);

  // cookie-logout takes any body (navigator.sendBeacon sends text/plain); the token route still
  // demands a form body through formParams().
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, _body, done) => done(null, undefined));

  documentOnly(app);
  app.setErrorHandler(oauthJsonErrors());

  // Every answer (errors included) tells a first-party origin it may read it with credentials.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('vary', 'Origin').header('cache-control', 'no-store').header('pragma', 'no-cache');
    const origin = request.headers.origin;
    if (origin && firstParty.has(origin)) {
      reply.header('access-control-allow-origin', origin).header('access-control-allow-credentials', 'true');
    }
  });

  function requireFirstParty(request: FastifyRequest) {
    const origin = request.headers.origin;
    if (!origin || !firstParty.has(origin)) {
      throw new OAuthError(
        'access_denied',
        'this endpoint accepts requests from first-party origins only (send an Origin header)',
        { status: 403 },
      );
    }
  }

  for (const path of ['/oauth2/token/cookie', '/oauth2/token/cookie-logout']) {
    app.options(
      path,
      { schema: { response: { 204: NoContent('CORS preflight (first-party origins, with credentials)') } } },
      async (request, reply) => {
        if (request.headers.origin && firstParty.has(request.headers.origin)) {
          reply
            .header('access-control-allow-methods', 'POST, OPTIONS')
            .header('access-control-allow-headers', 'Content-Type')
            .header('access-control-max-age', '600');
        }
        return reply.code(204).send();
      },
    );
  }

  app.post(
    '/oauth2/token/cookie',
    {
      schema: {
        body: OAuthParamsSchema,
        response: { 200: TokenResponseSchema, ...TokenErrors, 403: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      requireFirstParty(request);
      let body = formParams(request, reply);
      const refreshing = body.grant_type === 'refresh_token';
      if (refreshing) {
        if (body.refresh_token !== undefined) {
          throw new OAuthError(
            'invalid_request',
            'this endpoint reads the refresh token from its cookie; do not send refresh_token',
          );
        }
        const cookie = request.cookies[name];
        if (!cookie)
          throw new OAuthError('invalid_grant', 'there is no refresh cookie; sign in again', { status: 401 });
        body = { ...body, refresh_token: cookie };
      }
      let tokens: Awaited<ReturnType<typeof tokenRequest>>;
      try {
        tokens = await tokenRequest(app, request, reply, body);
      } catch (error) {
        // A dead refresh token (used, reused, revoked, expired) is dropped from the browser too.
        if (refreshing && error instanceof OAuthError && error.error === 'invalid_grant') clear(reply);
        throw error;
      }
      const { refresh_token: refreshToken, ...rest } = tokens;
      if (refreshToken) reply.setCookie(name, refreshToken, { ...attributes, maxAge: config.ttl.refreshToken });
      return reply.send(rest);
    },
  );

  app.post(
    '/oauth2/token/cookie-logout',
    {
      schema: {
        response: { 204: NoContent('the refresh family is revoked and the cookie cleared'), 403: OAuthErrorSchema },
      },
    },
    async (request, reply) => {
      requireFirstParty(request);
      const cookie = request.cookies[name];
      if (cookie && cookie.length <= 256) await app.services.tokens.revokeRefreshFamily(hashToken(cookie), request.ip);
      clear(reply);
      return reply.code(204).send();
    },
  );
};

export default tokenCookiePlugin;
