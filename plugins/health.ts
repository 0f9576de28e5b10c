// Liveness (the process answers) and readiness (the database answers). Readiness also reports the mail
// queue to the operator: failing mail does not make the instance unready (it can still sign people in),
// but an operator sees the failures here and in the logs.
//
// Issue 31, item 6: the details are for `Authorization: Bearer <ADMIN_API_TOKEN>` only. The mail counts
// move when a reset mail is sent (so "reset, then /readyz twice" told anyone whether an address has an
// account) and the last SMTP refusal usually names a recipient. Anyone else gets `{"status":"ready"}`,
// the same whatever happened before; the 503 body is fixed too (it names no mail and no account).
// A wrong or missing token is not refused: load balancers probe without one.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type from 'typebox';
import { createAdminTokenCheck } from './admin/auth.js';

const MailSchema = Type.Object({
  transport: Type.Union([Type.Literal('smtp'), Type.Literal('outbox')]),
  sent: Type.Integer(),
  failed: Type.Integer(),
  retried: Type.Integer(),
  pending: Type.Integer(),
  lastFailure: Type.Union([Type.Null(), Type.Object({ at: Type.String(), kind: Type.String(), error: Type.String() })]),
});

const healthPlugin: FastifyPluginAsyncTypebox<{ adminApiToken: string | undefined }> = async (
  app,
  { adminApiToken },
) => {
  const carriesAdminToken = createAdminTokenCheck(adminApiToken);
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
          // database and mail: with the admin token only.
          200: Type.Object({
            status: Type.Literal('ready'),
            database: Type.Optional(Type.String()),
            mail: Type.Optional(MailSchema),
          }),
          503: Type.Object({ status: Type.Literal('unavailable'), error: Type.String(), message: Type.String() }),
        },
      },
      logLevel: 'warn',
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      try {
        await app.database.ping(2000);
        if (!carriesAdminToken(request)) return { status: 'ready' as const };
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
