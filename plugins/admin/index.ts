// /api/admin/*: registered only when ADMIN_API_TOKEN is set. Routes parse, call a service, and reply.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  ApplicationCreateSchema,
  ApplicationListSchema,
  ApplicationSchema,
  ApplicationUpdateSchema,
  ApplicationWithSecretSchema,
  ClientIdParamsSchema,
  ClientSecretListSchema,
  SecretParamsSchema,
  SecretRotatedSchema,
  SecretRotateSchema,
  UserCreateSchema,
  UserIdParamsSchema,
  UserListSchema,
  UserSchema,
  UserUpdateSchema,
  AuditQuerySchema,
  AuditPageSchema,
} from '../../schemas/admin.js';
import Type from 'typebox';
import { optionalBody } from '../../src/validate.js';
import { ErrorSchema, ListQuerySchema } from '../../schemas/common.js';
import { createAdminAuthHook } from './auth.js';
import { registerAdminFactorRoutes } from './factors.js';
import { registerAdminResourceServerRoutes } from './resource-servers.js';
import { registerAdminUpstreamRoutes } from './upstreams.js';
import { registerAdminRegistrationTokenRoutes } from './registration-tokens.js';

export interface AdminPluginOptions {
  adminApiToken: string;
}

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

const adminPlugin: FastifyPluginAsyncTypebox<AdminPluginOptions> = async (app, options) => {
  const adminAuth = createAdminAuthHook(options.adminApiToken);
  app.addHook('onRequest', adminAuth);
  // Unknown admin paths authenticate first, so an anonymous caller cannot map the routes.
  app.setNotFoundHandler({ preHandler: adminAuth }, async (request, reply) =>
    reply
      .code(404)
      .header('cache-control', 'no-store')
      .send({ error: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}` }),
  );
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });
  const context = (request: { ip: string }) => ({ actor: 'admin-api', ip: request.ip });
  const { applications, users } = app.services;

  // Applications
  app.get(
    '/applications',
    { schema: { querystring: ListQuerySchema, response: { 200: ApplicationListSchema, ...errors } } },
    async (request) => applications.list(request.query),
  );
  app.post(
    '/applications',
    { schema: { body: ApplicationCreateSchema, response: { 201: ApplicationWithSecretSchema, ...errors } } },
    async (request, reply) => {
      const created = await applications.create(request.body, context(request));
      reply.code(201).header('location', `/api/admin/applications/${encodeURIComponent(created.clientId)}`);
      return created;
    },
  );
  app.get(
    '/applications/:clientId',
    { schema: { params: ClientIdParamsSchema, response: { 200: ApplicationSchema, ...errors } } },
    async (request) => applications.get(request.params.clientId),
  );
  app.patch(
    '/applications/:clientId',
    {
      schema: {
        params: ClientIdParamsSchema,
        body: ApplicationUpdateSchema,
        response: { 200: ApplicationWithSecretSchema, ...errors },
      },
    },
    async (request) => applications.update(request.params.clientId, request.body, context(request)),
  );
  for (const [action, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    app.post(
      `/applications/:clientId/${action}`,
      { schema: { params: ClientIdParamsSchema, response: { 200: ApplicationSchema, ...errors } } },
      async (request) => applications.setEnabled(request.params.clientId, enabled, context(request)),
    );
  }
  app.delete(
    '/applications/:clientId',
    { schema: { params: ClientIdParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await applications.remove(request.params.clientId, context(request));
      return reply.code(204).send(null);
    },
  );

  // Client secrets (client_secret_basic/post applications): ids and dates; a new secret is shown once, when made.
  app.get(
    '/applications/:clientId/secrets',
    { schema: { params: ClientIdParamsSchema, response: { 200: ClientSecretListSchema, ...errors } } },
    async (request) => ({ items: await applications.listSecrets(request.params.clientId) }),
  );
  app.post(
    '/applications/:clientId/secrets',
    {
      schema: {
        params: ClientIdParamsSchema,
        body: SecretRotateSchema,
        response: { 201: SecretRotatedSchema, ...errors },
      },
      // No body at all: the defaults, as {} would give.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const rotated = await applications.rotateSecret(
        request.params.clientId,
        { overlapSeconds: request.body.overlapSeconds },
        context(request),
      );
      return reply.code(201).send(rotated);
    },
  );
  app.delete(
    '/applications/:clientId/secrets/:secretId',
    { schema: { params: SecretParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await applications.revokeSecret(request.params.clientId, request.params.secretId, context(request));
      return reply.code(204).send(null);
    },
  );

  // Signing keys
  const KeyList = Type.Object({
    items: Type.Array(
      Type.Object({
        kid: Type.String(),
        alg: Type.String(),
        state: Type.Union([Type.Literal('next'), Type.Literal('current'), Type.Literal('retired')]),
        createdAt: Type.String(),
        activatedAt: Type.Union([Type.String(), Type.Null()]),
        retiredAt: Type.Union([Type.String(), Type.Null()]),
      }),
    ),
  });
  app.get('/keys', { schema: { response: { 200: KeyList, ...errors } } }, async () => ({
    items: await app.services.signingKeys.list(),
  }));
  app.post(
    '/keys/rotate',
    {
      schema: {
        body: optionalBody(Type.Object({ force: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
        response: { 200: KeyList, ...errors },
      },
    },
    async (request) => {
      const items = await app.services.signingKeys.rotate(context(request), { force: request.body?.force ?? false });
      app.services.keys.invalidate();
      return { items };
    },
  );
  app.post(
    '/keys/:kid/retire',
    {
      schema: {
        params: Type.Object({ kid: Type.String({ minLength: 1, maxLength: 128 }) }),
        response: { 200: KeyList, ...errors },
      },
    },
    async (request) => {
      const items = await app.services.signingKeys.retire(request.params.kid, context(request));
      app.services.keys.invalidate();
      return { items };
    },
  );

  // Audit trail, newest first
  app.get(
    '/audit-events',
    { schema: { querystring: AuditQuerySchema, response: { 200: AuditPageSchema, ...errors } } },
    async (request) => app.services.audit.list(request.query),
  );

  // Users (":id" is the user id, or the e-mail address)
  app.get(
    '/users',
    { schema: { querystring: ListQuerySchema, response: { 200: UserListSchema, ...errors } } },
    async (request) => users.list(request.query),
  );
  app.post(
    '/users',
    { schema: { body: UserCreateSchema, response: { 201: UserSchema, ...errors } } },
    async (request, reply) => {
      const created = await users.create(request.body, context(request));
      reply.code(201).header('location', `/api/admin/users/${created.id}`);
      return created;
    },
  );
  app.get(
    '/users/:id',
    { schema: { params: UserIdParamsSchema, response: { 200: UserSchema, ...errors } } },
    async (request) => users.get(request.params.id),
  );
  app.patch(
    '/users/:id',
    { schema: { params: UserIdParamsSchema, body: UserUpdateSchema, response: { 200: UserSchema, ...errors } } },
    async (request) => users.update(request.params.id, request.body, context(request)),
  );
  for (const [action, disabled] of [
    ['enable', false],
    ['disable', true],
  ] as const) {
    app.post(
      `/users/:id/${action}`,
      { schema: { params: UserIdParamsSchema, response: { 200: UserSchema, ...errors } } },
      async (request) => users.setDisabled(request.params.id, disabled, context(request)),
    );
  }
  // A user's sessions and grants
  const Nullable = Type.Union([Type.String(), Type.Null()]);
  const SessionList = Type.Object({
    items: Type.Array(
      Type.Object({
        id: Type.String(),
        authTime: Type.String(),
        createdAt: Type.String(),
        lastSeenAt: Type.String(),
        expiresAt: Type.String(),
        revokedAt: Nullable,
        active: Type.Boolean(),
        ip: Nullable,
        userAgent: Nullable,
      }),
    ),
  });
  const GrantList = Type.Object({
    items: Type.Array(
      Type.Object({
        id: Type.String(),
        clientId: Type.String(),
        scope: Type.String(),
        sessionId: Nullable,
        createdAt: Type.String(),
        revokedAt: Nullable,
      }),
    ),
  });
  const Counts = Type.Object({ sessions: Type.Optional(Type.Integer()), grants: Type.Integer() });
  app.get(
    '/users/:id/sessions',
    { schema: { params: UserIdParamsSchema, response: { 200: SessionList, ...errors } } },
    async (request) => ({
      items: await app.services.access.listSessions(request.params.id),
    }),
  );
  app.post(
    '/users/:id/sessions/revoke',
    { schema: { params: UserIdParamsSchema, response: { 200: Counts, ...errors } } },
    async (request) => app.services.access.revokeSessions(request.params.id, context(request)),
  );
  app.delete(
    '/users/:id/sessions/:sessionId',
    {
      schema: {
        params: Type.Object({
          id: Type.String({ minLength: 1, maxLength: 320 }),
          sessionId: Type.String({ minLength: 1, maxLength: 64 }),
        }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await app.services.access.revokeSessions(request.params.id, context(request), request.params.sessionId);
      return reply.code(204).send(null);
    },
  );
  app.get(
    '/users/:id/grants',
    { schema: { params: UserIdParamsSchema, response: { 200: GrantList, ...errors } } },
    async (request) => ({
      items: await app.services.access.listGrants(request.params.id),
    }),
  );
  app.post(
    '/users/:id/grants/revoke',
    { schema: { params: UserIdParamsSchema, response: { 200: Counts, ...errors } } },
    async (request) => app.services.access.revokeGrants(request.params.id, context(request)),
  );
  app.delete(
    '/users/:id/grants/:grantId',
    {
      schema: {
        params: Type.Object({
          id: Type.String({ minLength: 1, maxLength: 320 }),
          grantId: Type.String({ minLength: 1, maxLength: 64 }),
        }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await app.services.access.revokeGrants(request.params.id, context(request), request.params.grantId);
      return reply.code(204).send(null);
    },
  );

  registerAdminFactorRoutes(app, context);
  registerAdminUpstreamRoutes(app, context);
  registerAdminResourceServerRoutes(app, context);
  registerAdminRegistrationTokenRoutes(app, context);

  app.delete(
    '/users/:id',
    { schema: { params: UserIdParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await users.remove(request.params.id, context(request));
      return reply.code(204).send(null);
    },
  );
};

export default adminPlugin;
