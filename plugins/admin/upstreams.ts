// /api/admin/upstreams: the upstream identity providers people sign in with (issue 35), and a user's linked
// identities. Responses never carry a secret: they show the callback URL to register at the upstream and, for
// private_key_jwt, the public key to register there. Removing a provider takes its linked identities with it; it
// is refused (409 UPSTREAM_IN_USE) when some user could then sign in only by a password reset, unless ?force=true.
// Unlinking a user's identity keeps the last-method rule (409 LAST_SIGN_IN_METHOD): an operator who means to take
// the last way in away sets a password for the user first, or deletes the account.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { UserIdParamsSchema } from '../../schemas/admin.js';
import {
  IdentityParamsSchema,
  LinkedIdentityListSchema,
  UpstreamDeleteQuerySchema,
  UpstreamParamsSchema,
  UpstreamProviderCreateSchema,
  UpstreamProviderListSchema,
  UpstreamProviderSchema,
  UpstreamProviderUpdateSchema,
  UpstreamRemovalSchema,
} from '../../schemas/admin-upstreams.js';
import { ErrorSchema } from '../../schemas/common.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

export function registerAdminUpstreamRoutes(
  app: App,
  context: (request: { ip: string }) => { actor: string; ip: string },
) {
  const { users } = app.services;
  const { providers, identities } = app.services.upstreams;

  app.get('/upstreams', { schema: { response: { 200: UpstreamProviderListSchema, ...errors } } }, async () => ({
    items: (await providers.list()).map((p) => providers.details(p)),
  }));
  app.post(
    '/upstreams',
    { schema: { body: UpstreamProviderCreateSchema, response: { 201: UpstreamProviderSchema, ...errors } } },
    async (request, reply) => {
      const created = await providers.create(request.body, context(request));
      reply.code(201).header('location', `/api/admin/upstreams/${encodeURIComponent(created.id)}`);
      return providers.details(created);
    },
  );
  app.get(
    '/upstreams/:id',
    { schema: { params: UpstreamParamsSchema, response: { 200: UpstreamProviderSchema, ...errors } } },
    async (request) => providers.details(await providers.require(request.params.id)),
  );
  app.patch(
    '/upstreams/:id',
    {
      schema: {
        params: UpstreamParamsSchema,
        body: UpstreamProviderUpdateSchema,
        response: { 200: UpstreamProviderSchema, ...errors },
      },
    },
    async (request) => providers.details(await providers.update(request.params.id, request.body, context(request))),
  );
  app.post(
    '/upstreams/:id/rotate-key',
    { schema: { params: UpstreamParamsSchema, response: { 200: UpstreamProviderSchema, ...errors } } },
    async (request) => providers.details(await providers.rotateKey(request.params.id, context(request))),
  );
  app.delete(
    '/upstreams/:id',
    {
      schema: {
        params: UpstreamParamsSchema,
        querystring: UpstreamDeleteQuerySchema,
        response: { 200: UpstreamRemovalSchema, ...errors },
      },
    },
    async (request) => providers.remove(request.params.id, context(request), { force: request.query.force === true }),
  );

  // A user's linked identities (":id": the user id or the e-mail address, as for the other user routes).
  app.get(
    '/users/:id/identities',
    { schema: { params: UserIdParamsSchema, response: { 200: LinkedIdentityListSchema, ...errors } } },
    async (request) => ({ items: await identities.listForUser((await users.get(request.params.id)).id) }),
  );
  app.delete(
    '/users/:id/identities/:identityId',
    { schema: { params: IdentityParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      const user = await users.get(request.params.id);
      const { ip, actor } = context(request);
      await identities.unlink(user.id, request.params.identityId, { ip, actor });
      return reply.code(204).send(null);
    },
  );
}
