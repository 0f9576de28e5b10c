// Liveness (the process answers) and readiness (the database answers). Readiness also reports the mail
// queue: failing mail does not make the instance unready (it can still sign people in), but an operator
// sees the failures here and in the logs.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';

const MailSchema = Type.Object({
  transport: Type.Union([Type.Literal('smtp'), Type.Literal('outbox')]),
  sent: Type.Integer(),
  failed: Type.Integer(),
  retried: Type.Integer(),
  pending: Type.Integer(),
  lastFailure: Type.Union([Type.Null(), Type.Object({ at: Type.String(), kind: Type.String(), error: Type.String() })]),
});

const healthPlugin: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/healthz',
    { schema: { response: { 200: Type.Object({ status: Type.Literal('ok') }) } }, logLevel: 'warn' },
    async (_request, reply) => {
      reply.header('cache-control', 'no-store');
      return { status: 'ok' as const };
    },
  );

  // Browsers ask every origin for a favicon; answer without a 404 in their console.
  app.get('/favicon.ico', { logLevel: 'warn' }, async (_request, reply) =>
    reply.code(204).header('cache-control', 'public, max-age=86400').send(),
  );

  app.get(
    '/readyz',
    {
      schema: {
        response: {
          200: Type.Object({ status: Type.Literal('ready'), database: Type.String(), mail: MailSchema }),
          503: Type.Object({ status: Type.Literal('unavailable'), error: Type.String(), message: Type.String() }),
        },
      },
      logLevel: 'warn',
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        await app.database.ping(2000);
        return { status: 'ready' as const, database: app.database.engine, mail: app.services.mailer.stats() };
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed: database unavailable');
        return reply.code(503).send({
          status: 'unavailable' as const,
          error: 'DATABASE_UNAVAILABLE',
          message: 'The database does not answer',
        });
      }
    },
  );
};

export default healthPlugin;
