// /api/me/* (issue 17): the signed-in user's own account, for the first party only.
//  - Authentication by the hosted-login session cookie alone. An access token is for /api/external/*:
//    alone it is 401 UNAUTHENTICATED (no WWW-Authenticate: this is no bearer resource), the mirror of
//    /api/external/* refusing the session cookie.
//  - CSRF, as on the first-party JSON endpoints (plugins/login/api.ts): a foreign Origin is 403; a
//    POST, a PATCH and a DELETE with a body need application/json, which no cross-site form can send;
//    a bodiless DELETE is a method no cross-site page can send without a CORS preflight, and no answer
//    here ever carries a CORS header (an OPTIONS is a 404).
//  - Every answer is no-store, errors included; errors are { error, message }.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { ErrorSchema } from '../../schemas/common.js';
import {
  AcceptedSchema,
  DeleteAccountSchema,
  EmailChangeSchema,
  MeApplicationsSchema,
  MeExportSchema,
  MeIdentitiesSchema,
  MeProfileSchema,
  MeSessionsSchema,
  PasswordChangeSchema,
  ProfileUpdateSchema,
  StatusSchema,
} from '../../schemas/me.js';
import { NoContent } from '../../schemas/oauth.js';
import { firstPartyJsonErrors } from '../infra/error-handlers.js';
import { RateLimitError } from '../infra/rate-limit.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The session of the cookie, set by the /api/me authentication hook. */
    me?: SessionContext;
  }
}

const errors = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  415: ErrorSchema,
  429: ErrorSchema,
};

const BODY_METHODS = new Set(['POST', 'PATCH', 'PUT']);

const hasBody = (request: FastifyRequest) =>
  request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;

const meApi: FastifyPluginAsyncTypebox<{ config: Config; bodyLimit: number }> = async (app, { config, bodyLimit }) => {
  const trusted = new Set([originOf(config.loginUrl), originOf(config.baseUrl)].filter(Boolean) as string[]);
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
  const me = () => app.services.me;
  const session = (request: FastifyRequest) => request.me!;

  const jsonErrors = firstPartyJsonErrors({ bodyLimit });
  app.setErrorHandler((error, request, reply) => {
    // A limit counted by the service itself has no reply to set Retry-After on: set it here.
    if (error instanceof RateLimitError && !reply.hasHeader('retry-after'))
      reply.header('retry-after', String(error.retryAfterSeconds));
    return jsonErrors(error as FastifyError, request, reply);
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}` }),
  );

  app.addHook('onRequest', async (request) => {
    const origin = request.headers.origin;
    if (origin !== undefined && !trusted.has(origin))
      throw new AppError(403, 'FORBIDDEN_ORIGIN', 'This endpoint is first-party only');
    if (
      (BODY_METHODS.has(request.method) || hasBody(request)) &&
      !String(request.headers['content-type'] ?? '').startsWith('application/json')
    )
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send application/json');
    const ctx = await app.currentSession(request);
    if (!ctx) {
      const bearer = /^bearer\s/i.test(String(request.headers.authorization ?? ''));
      throw new AppError(
        401,
        'UNAUTHENTICATED',
        bearer
          ? 'This API accepts only the session cookie of the hosted login, not access tokens (use /api/external/*)'
          : 'Sign in first',
      );
    }
    request.me = ctx;
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
    // First party only: no CORS header, whatever a hook elsewhere may have set.
    for (const name of Object.keys(reply.getHeaders()))
      if (name.toLowerCase().startsWith('access-control-')) reply.removeHeader(name);
  });

  const signOut = async (request: FastifyRequest, reply: FastifyReply) => app.signOut(request, reply);

  app.get('', { schema: { response: { 200: MeProfileSchema, ...errors } } }, async (request) =>
    me().profile(session(request).user.id),
  );

  app.patch(
    '',
    { schema: { body: ProfileUpdateSchema, response: { 200: MeProfileSchema, ...errors } } },
    async (request) => me().updateProfile(session(request).user.id, request.body, meta(request)),
  );

  app.post(
    '/email',
    { schema: { body: EmailChangeSchema, response: { 202: AcceptedSchema, ...errors } } },
    async (request, reply) => {
      await me().requestEmailChange(session(request).user.id, request.body, meta(request));
      return reply.code(202).send({
        status: true as const,
        message: 'Open the link we sent to the new address to confirm it; until then your address stays as it is',
      });
    },
  );

  app.post(
    '/password',
    { schema: { body: PasswordChangeSchema, response: { 200: StatusSchema, ...errors } } },
    async (request, reply) => {
      const { user, session: current } = session(request);
      const changed = await me().changePassword(user.id, current.id, request.body, meta(request));
      // The session stays, under a new cookie secret: a copy of the old cookie is signed out. The cookie
      // keeps the session's own end.
      app.setSessionCookie(reply, changed.sessionToken, changed.sessionExpiresAt);
      return { status: true as const };
    },
  );

  app.get('/applications', { schema: { response: { 200: MeApplicationsSchema, ...errors } } }, async (request) => ({
    applications: await me().listApplications(session(request).user.id),
  }));

  app.delete(
    '/applications/:clientId',
    {
      schema: {
        params: Type.Object({ clientId: Type.String() }),
        response: { 204: NoContent('revoked: consent, grants, tokens and pending codes'), ...errors },
      },
    },
    async (request, reply) => {
      await me().revokeApplication(session(request).user.id, request.params.clientId, meta(request));
      return reply.code(204).send();
    },
  );

  app.get('/sessions', { schema: { response: { 200: MeSessionsSchema, ...errors } } }, async (request) => {
    const { user, session: current } = session(request);
    return { sessions: await me().listSessions(user.id, current.id) };
  });

  app.delete(
    '/sessions/:id',
    {
      schema: {
        params: Type.Object({ id: Type.String() }),
        response: { 204: NoContent('ended (the current one: signed out, cookie cleared)'), ...errors },
      },
    },
    async (request, reply) => {
      const { user, session: current } = session(request);
      await me().revokeSession(user.id, request.params.id, meta(request));
      if (request.params.id === current.id) await signOut(request, reply);
      return reply.code(204).send();
    },
  );

  // Linked identities (issue 35): list; unlink one (needs a recent authentication, MFA_FRESHNESS, as on the
  // sign-in methods page; never the last way to sign in). An unlink ends the user's other sessions and mails the
  // user (services.upstreams.identities).
  app.get('/identities', { schema: { response: { 200: MeIdentitiesSchema, ...errors } } }, async (request) => ({
    identities: await app.services.upstreams.identities.listForUser(session(request).user.id),
  }));

  app.delete(
    '/identities/:id',
    {
      schema: {
        params: Type.Object({ id: Type.String() }),
        response: {
          204: NoContent('unlinked; every other session of the user ended; the user is mailed'),
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const { user, session: current } = session(request);
      if (!app.services.factors.isFresh(current)) {
        throw new AppError(401, 'REAUTHENTICATION_REQUIRED', 'Sign in again to unlink an identity');
      }
      await app.services.upstreams.identities.unlink(user.id, request.params.id, {
        ip: request.ip,
        keepSessionId: current.id,
      });
      return reply.code(204).send();
    },
  );

  app.get('/export', { schema: { response: { 200: MeExportSchema, ...errors } } }, async (request, reply) => {
    const data = await me().exportData(session(request).user.id);
    reply.header('content-disposition', 'attachment; filename="account-data.json"');
    return data as never;
  });

  app.delete(
    '',
    {
      schema: {
        body: DeleteAccountSchema,
        response: { 204: NoContent('deleted, with every row about the user; cookie cleared'), ...errors },
      },
    },
    async (request, reply) => {
      const { user, session: current } = session(request);
      await me().deleteAccount(
        user.id,
        { password: request.body.password, freshSession: app.services.factors.isFresh(current) },
        meta(request),
      );
      await signOut(request, reply);
      return reply.code(204).send();
    },
  );
};

export default meApi;
