// /api/admin/registration-tokens: the initial access tokens of REGISTRATION=token (RFC 7591 §3). A token is shown
// once, in the creation's answer, and stored as a SHA-256 hash; the list shows ids, descriptions, the uses left
// and the expiry, never a token. Revoking one deletes it (a registration with it then gets 401 invalid_token).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { ErrorSchema } from '../../schemas/common.js';
import { MAX_INITIAL_TOKEN_DAYS } from '../../src/services/self-registration.js';

type App = Parameters<FastifyPluginAsyncTypebox>[0];

const errors = { 400: ErrorSchema, 401: ErrorSchema, 404: ErrorSchema, 409: ErrorSchema };

const InitialToken = Type.Object({
  id: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  usesLeft: Type.Union([Type.Integer(), Type.Null()], { description: 'null: any number until it expires' }),
  expiresAt: Type.String({ format: 'date-time' }),
  createdBy: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
});
const InitialTokenCreated = Type.Object({
  ...InitialToken.properties,
  token: Type.String({ description: 'the initial access token, shown once: Authorization: Bearer <token>' }),
});
const InitialTokenCreate = Type.Object(
  {
    description: Type.Optional(Type.String({ maxLength: 200 })),
    expiresInDays: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_INITIAL_TOKEN_DAYS, description: 'default 7' }),
    ),
    uses: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'absent: no limit' })),
  },
  { additionalProperties: false },
);

export function registerAdminRegistrationTokenRoutes(
  app: App,
  context: (request: { ip: string }) => { actor: string; ip: string },
) {
  const service = app.services.selfRegistration;
  app.get(
    '/registration-tokens',
    { schema: { response: { 200: Type.Object({ items: Type.Array(InitialToken) }), ...errors } } },
    async () => ({ items: await service.listInitialTokens() }),
  );
  app.post(
    '/registration-tokens',
    { schema: { body: InitialTokenCreate, response: { 201: InitialTokenCreated, ...errors } } },
    async (request, reply) => {
      const created = await service.createInitialToken(request.body, context(request));
      return reply.code(201).send(created);
    },
  );
  app.delete(
    '/registration-tokens/:id',
    {
      schema: {
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 204: Type.Null(), ...errors },
      },
    },
    async (request, reply) => {
      await service.revokeInitialToken(request.params.id, context(request));
      return reply.code(204).send(null);
    },
  );
}
