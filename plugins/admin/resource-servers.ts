// /api/admin/resource-servers: the operator's APIs (issue 36), which clients name with RFC 8707's `resource`.
// One is addressed by its identifier, percent-encoded as one path segment (`encodeURIComponent`): the router splits
// the path before it decodes a parameter, so `%2F` stays inside it. The built-in `/api/external` is listed
// (builtIn: true) and read-only (400 BUILT_IN_RESOURCE). Everything goes through services.resourceServers, as the
// admin web, the CLI and SEED_FILE do (the rules, 409 RESOURCE_SERVER_EXISTS, the audit events).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import {
  ResourceServerCreateSchema,
  ResourceServerListSchema,
  ResourceServerParamsSchema,
  ResourceServerSchema,
  ResourceServerUpdateSchema,
} from '../../schemas/admin-resource-servers.js';
import { ErrorSchema } from '../../schemas/common.js';
import { notFound } from '../../src/errors.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

export function registerAdminResourceServerRoutes(
  app: App,
  context: (request: { ip: string }) => { actor: string; ip: string },
) {
  const { resourceServers } = app.services;
  const found = async (identifier: string) => {
    const server = await resourceServers.find(identifier);
    if (!server) throw notFound('NOT_FOUND', `no resource server "${identifier}"`);
    return server;
  };

  app.get('/resource-servers', { schema: { response: { 200: ResourceServerListSchema, ...errors } } }, async () => ({
    items: await resourceServers.list(),
  }));
  app.post(
    '/resource-servers',
    { schema: { body: ResourceServerCreateSchema, response: { 201: ResourceServerSchema, ...errors } } },
    async (request, reply) => {
      const created = await resourceServers.create(request.body, context(request));
      reply.code(201).header('location', `/api/admin/resource-servers/${encodeURIComponent(created.identifier)}`);
      return created;
    },
  );
  app.get(
    '/resource-servers/:identifier',
    { schema: { params: ResourceServerParamsSchema, response: { 200: ResourceServerSchema, ...errors } } },
    async (request) => found(request.params.identifier),
  );
  app.patch(
    '/resource-servers/:identifier',
    {
      schema: {
        params: ResourceServerParamsSchema,
        body: ResourceServerUpdateSchema,
        response: { 200: ResourceServerSchema, ...errors },
      },
    },
    async (request) => resourceServers.update(request.params.identifier, request.body, context(request)),
  );
  app.delete(
    '/resource-servers/:identifier',
    { schema: { params: ResourceServerParamsSchema, response: { 204: Type.Null(), ...errors } } },
    async (request, reply) => {
      await resourceServers.remove(request.params.identifier, context(request));
      return reply.code(204).send(null);
    },
  );
}
