// RP-Initiated Logout 1.0 at /api/auth/oauth2/end-session. A valid id_token_hint for the signed-in
// user ends the session at once; otherwise the user confirms. post_logout_redirect_uri must exactly
// match one the application registered, and needs the application to be known (hint or client_id).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import * as jose from 'jose';
import type { Config } from '../../src/config.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { AppError } from '../../src/errors.js';
import { appendQuery, type RawParams } from '../../src/services/authorization.js';
import type { Application } from '../../src/domain/application.js';
import { createCsrf } from '../login/csrf.js';
import { securityHeaders } from '../login/security.js';
import * as views from '../login/views.js';
import { OAuthParamsSchema } from './authorize.js';
import { renderAuthorizeError, toOAuthError } from './errors.js';
import { documentOnly, HtmlPage, Redirect } from '../../schemas/oauth.js';
import Type from 'typebox';

const EndSessionResponses = {
  200: HtmlPage('a confirmation page, or "signed out"'),
  303: Redirect('to the registered post_logout_redirect_uri'),
  400: Type.Union([HtmlPage('error page'), Type.Object({ error: Type.String(), error_description: Type.Optional(Type.String()) })]),
};

const endSessionPlugin: FastifyPluginAsyncTypebox<{ config: Config; loginPath: string }> = async (app, { config, loginPath }) => {
  const csrf = createCsrf(config);
  const cookie = { path: '/', httpOnly: true, secure: config.cookieSecure, sameSite: config.cookieSameSite } as const;
  documentOnly(app);
  app.setErrorHandler((error, request, reply) => {
    if (error instanceof AppError) {
      securityHeaders(reply);
      return reply.code(error.statusCode).type('text/html; charset=utf-8').send(views.messagePage({ loginPath, title: 'Something is not right', message: error.message, role: 'alert' }));
    }
    return renderAuthorizeError(request, reply, toOAuthError(error as never, request), loginPath);
  });

  function single(params: RawParams, name: string): string | undefined {
    const v = params[name];
    if (Array.isArray(v)) throw new OAuthError('invalid_request', `${name} must not be repeated`);
    return v === undefined || v === '' ? undefined : v;
  }

  /** The hint's claims if we signed it (expired hints are fine: OIDC RP-Initiated Logout §2). */
  async function verifyHint(hint: string): Promise<jose.JWTPayload> {
    try {
      const { payload } = await jose.compactVerify(hint, jose.createLocalJWKSet(await app.keys.jwks()));
      const claims = JSON.parse(new TextDecoder().decode(payload)) as jose.JWTPayload;
      if (claims.iss !== config.issuer) throw new Error('issuer');
      return claims;
    } catch {
      throw new OAuthError('invalid_request', 'id_token_hint is not an ID token issued here');
    }
  }

  interface Target {
    client: Application | undefined;
    redirect: string | undefined;
    state: string | undefined;
    hint: jose.JWTPayload | undefined;
  }

  async function resolve(params: RawParams): Promise<Target> {
    const hintRaw = single(params, 'id_token_hint');
    const clientId = single(params, 'client_id');
    const redirect = single(params, 'post_logout_redirect_uri');
    const state = single(params, 'state');
    const hint = hintRaw ? await verifyHint(hintRaw) : undefined;
    const hintClient = hint ? (Array.isArray(hint.aud) ? hint.aud[0] : hint.aud) : undefined;
    if (clientId && hintClient && clientId !== hintClient) throw new OAuthError('invalid_request', 'client_id does not match the id_token_hint');
    const id = clientId ?? hintClient;
    const client = id ? await app.services.applications.find(id) : undefined;
    if (id && !client) throw new OAuthError('invalid_request', 'unknown client_id');
    if (redirect) {
      if (!client) throw new OAuthError('invalid_request', 'post_logout_redirect_uri needs client_id or id_token_hint');
      if (!client.postLogoutRedirectUris.includes(redirect)) throw new OAuthError('invalid_request', 'post_logout_redirect_uri is not registered for this client');
    }
    return { client, redirect, state, hint };
  }

  const OUTCOMES = {
    'signed-out': { title: 'Signed out', message: 'You are signed out.' },
    'not-signed-in': { title: 'Signed out', message: 'You are not signed in.' },
    stayed: { title: 'Still signed in', message: 'You are still signed in.' },
  } as const;

  async function finish(request: FastifyRequest, reply: FastifyReply, target: Target, outcome: keyof typeof OUTCOMES) {
    if (outcome === 'signed-out') {
      const token = request.cookies[app.sessionCookieName];
      if (token) await app.sessions.revoke(token, { ip: request.ip });
      reply.clearCookie(app.sessionCookieName, cookie);
    }
    if (target.redirect) {
      return reply.code(303).header('cache-control', 'no-store').header('location', appendQuery(target.redirect, { state: target.state })).send();
    }
    securityHeaders(reply);
    return reply.type('text/html; charset=utf-8').send(
      views.messagePage({ loginPath, ...OUTCOMES[outcome], role: 'status', app: target.client }),
    );
  }

  const handler = async (params: RawParams, request: FastifyRequest, reply: FastifyReply) => {
    const target = await resolve(params);
    const ctx = await app.currentSession(request);
    if (!ctx) return finish(request, reply, target, 'not-signed-in');
    // A hint for this very session (same user, and same sid when it carries one) needs no confirmation.
    const matches = target.hint && target.hint.sub === ctx.user.id && (!target.hint.sid || target.hint.sid === ctx.session.id);
    if (matches) return finish(request, reply, target, 'signed-out');
    securityHeaders(reply);
    return reply.type('text/html; charset=utf-8').send(
      views.logoutConfirmPage({
        loginPath,
        action: `${config.issuer}/oauth2/end-session/confirm`,
        csrf: csrf.token(request, reply),
        email: ctx.user.email,
        app: target.client,
        fields: { client_id: target.client?.clientId, post_logout_redirect_uri: target.redirect, state: target.state },
      }),
    );
  };

  app.get('/oauth2/end-session', { schema: { querystring: OAuthParamsSchema, response: EndSessionResponses } }, async (request, reply) => handler(request.query as RawParams, request, reply));
  app.post('/oauth2/end-session', { schema: { body: OAuthParamsSchema, response: EndSessionResponses } }, async (request, reply) => handler((request.body ?? {}) as RawParams, request, reply));
  app.post('/oauth2/end-session/confirm', { schema: { body: OAuthParamsSchema, response: EndSessionResponses } }, async (request, reply) => {
    const form = (request.body ?? {}) as RawParams;
    csrf.check(request, single(form, 'csrf'));
    const target = await resolve({ client_id: form.client_id, post_logout_redirect_uri: form.post_logout_redirect_uri, state: form.state });
    return finish(request, reply, target, single(form, 'decision') === 'sign-out' ? 'signed-out' : 'stayed');
  });
};

export default endSessionPlugin;
