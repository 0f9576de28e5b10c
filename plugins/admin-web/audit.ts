// Admin web: the audit log, filtered by event type, user, application and time.
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { AUDIT_EVENT_TYPES, type AuditEvent } from '../../src/services/audit.js';
import type { AdminContext } from './context.js';
import * as views from './views.js';
import type { AuditNames } from './views-audit.js';

const AuditFilters = Type.Object({
  type: Type.Optional(Type.String({ maxLength: 64 })),
  userId: Type.Optional(Type.String({ maxLength: 128 })),
  clientId: Type.Optional(Type.String({ maxLength: 128 })),
  from: Type.Optional(Type.String({ maxLength: 32 })),
  to: Type.Optional(Type.String({ maxLength: 32 })),
  cursor: Type.Optional(Type.String({ maxLength: 64 })),
});

export function registerAuditRoutes({ app, page, requireAdmin }: AdminContext) {
  const { audit, users, applications } = app.services;

  /**
   * The names a page of events mentions, each distinct id once per page (not once per row). Applications
   * come from the service's cache; users are read by id, in parallel (at most one page of distinct ids).
   * A user or application deleted since keeps its id on the page.
   */
  async function namesOf(items: AuditEvent[]): Promise<AuditNames> {
    const distinct = (ids: Array<string | null>) => [...new Set(ids.filter((id): id is string => Boolean(id)))];
    // Users in one query; applications from the in-memory application cache.
    const [userEmails, appRows] = await Promise.all([
      users.emailsOf(distinct(items.map((e) => e.userId))),
      Promise.all(
        distinct(items.map((e) => e.clientId)).map(async (id) => {
          const found = await applications.find(id);
          return found ? ([id, found.clientName] as const) : undefined;
        }),
      ),
    ]);
    const known = <T>(rows: Array<T | undefined>) => rows.filter((r): r is T => r !== undefined);
    return { users: userEmails, applications: new Map(known(appRows)) };
  }

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
          names: await namesOf(result.items),
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
