// Append-only audit trail; written in the same transaction as the change it records.
import type { Db } from '../create-db.js';

export interface AuditEventInput {
  type: string;
  actor?: string | null;
  userId?: string | null;
  clientId?: string | null;
  ip?: string | null;
  detail?: Record<string, unknown>;
}

export async function appendAuditEvent(db: Db, event: AuditEventInput): Promise<void> {
  await db
    .insertInto('audit_events')
    .values({
      type: event.type,
      actor: event.actor ?? null,
      user_id: event.userId ?? null,
      client_id: event.clientId ?? null,
      ip: event.ip ?? null,
      detail: JSON.stringify(event.detail ?? {}),
    })
    .execute();
}

export async function listAuditEvents(db: Db, filter: { type?: string; clientId?: string; userId?: string } = {}) {
  let query = db.selectFrom('audit_events').selectAll().orderBy('id');
  if (filter.type) query = query.where('type', '=', filter.type);
  if (filter.clientId) query = query.where('client_id', '=', filter.clientId);
  if (filter.userId) query = query.where('user_id', '=', filter.userId);
  return query.execute();
}

export interface AuditFilter {
  types?: string[] | undefined;
  userId?: string | undefined;
  clientId?: string | undefined;
  from?: Date | undefined;
  to?: Date | undefined;
  /** Only events older than this id (the cursor). */
  beforeId?: string | undefined;
}

/** Newest first, at most `limit` rows; ids are bigserial, so the id order is the insertion order. */
export async function pageAuditEvents(db: Db, filter: AuditFilter, limit: number) {
  let query = db.selectFrom('audit_events').selectAll().orderBy('id', 'desc').limit(limit);
  if (filter.types?.length) query = query.where('type', 'in', filter.types);
  if (filter.userId) query = query.where('user_id', '=', filter.userId);
  if (filter.clientId) query = query.where('client_id', '=', filter.clientId);
  if (filter.from) query = query.where('created_at', '>=', filter.from);
  if (filter.to) query = query.where('created_at', '<', filter.to);
  if (filter.beforeId) query = query.where('id', '<', filter.beforeId);
  return query.execute();
}
