// Admin web: the audit log, filtered by event type, user, application and time.
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { AUDIT_EVENT_TYPES } from '../../src/services/audit.js';
import type { AdminContext } from './context.js';
import * as views from './views.js';

const AuditFilters = Type.Object({
  type: Type.Optional(Type.String({ maxLength: 64 })),
  userId: Type.Optional(Type.String({ maxLength: 128 })),
  clientId: Type.Optional(Type.String({ maxLength: 128 })),
  from: Type.Optional(Type.String({ maxLength: 32 })),
  to: Type.Optional(Type.String({ maxLength: 32 })),
  cursor: Type.Optional(Type.String({ maxLength: 64 })),
});

export function registerAuditRoutes({ app, page, requireAdmin }: AdminContext) {
  const { audit } = app.services;

  app.get('/audit', { schema: { querystring: AuditFilters } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const q = request.query;
    const filters = {
      type: q.type || undefined,
      userId: q.userId || undefined,
      clientId: q.clientId || undefined,
      from: q.from || undefined,
      to: q.to || undefined,
    };
    // datetime-local values have no zone: the page says UTC.
    const utc = (v: string | undefined) => (v && !/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? `${v}Z` : v);
    try {
      const result = await audit.list({
        ...filters,
        from: utc(filters.from),
        to: utc(filters.to),
        cursor: q.cursor || undefined,
        limit: 50,
      });
      return page(
        reply,
        views.auditPage(admin.frame, {
          items: result.items,
          filters,
          nextCursor: result.nextCursor,
          types: AUDIT_EVENT_TYPES,
        }),
      );
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 400) {
        return page(
          reply,
          views.auditPage(admin.frame, {
            items: [],
            filters,
            types: AUDIT_EVENT_TYPES,
            error: error.details?.map((d) => `${d.field} ${d.message}`).join('; ') ?? error.message,
          }),
          400,
        );
      }
      throw error;
    }
  });
}
