// /api/admin/users/:id/factors: a user's second factors (issue 34), for the operator of a user who lost them.
// The list shows kind, name, created and last use, never a secret. Removing one factor or all of them ends
// every session of the user, mails the user and is audited (mfa.factor_removed, mfa.factors_reset).
// ":id" is the user id or the e-mail address, as for the other user routes.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { UserIdParamsSchema } from '../../schemas/admin.js';
import { FactorListSchema, FactorParamsSchema, FactorResetSchema } from '../../schemas/admin-factors.js';
import { ErrorSchema } from '../../schemas/common.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

export function registerAdminFactorRoutes(
  app: App,
  context: (request: { ip: string }) => { actor: string; ip: string },
) {
  const { users, factors } = app.services;

  app.get(
    '/users/:id/factors',
    { schema: { params: UserIdParamsSchema, response: { 200: FactorListSchema, ...errors } } },
    async (request) => ({ items: await factors.list((await users.get(request.params.id)).id) }),
  );
  app.delete(
    '/users/:id/factors',
    { schema: { params: UserIdParamsSchema, response: { 200: FactorResetSchema, ...errors } } },
    async (request) => factors.resetAll((await users.get(request.params.id)).id, context(request)),
  );
  app.delete(
    '/users/:id/factors/:factorId',
    { schema: { params: FactorParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      const user = await users.get(request.params.id);
      await factors.removeOne(user.id, request.params.factorId, context(request));
      return reply.code(204).send(null);
    },
  );
}
