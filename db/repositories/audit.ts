// Append-only audit trail; written in the same transaction as the change it records. The one rewrite:
// a deleted user's events are pseudonymised (pseudonymiseUserAuditEvents), never deleted.
import { sql } from 'kysely';
import type { Db, Tx } from '../create-db.js';

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

/** Keys of audit details that carry personal data (addresses, names); removed when their user is deleted. */
export const PERSONAL_DETAIL_KEYS = [
  'email',
  'newEmail',
  'previousEmail',
  'name',
  'givenName',
  'familyName',
  'loginHint',
  'login_hint',
] as const;

/**
 * Keeps a deleted user's security events under a pseudonym (issue 31 item 7a), in the deleting transaction:
 * every event of the user names the pseudonym instead of the user id; the personal data leave their details
 * (PERSONAL_DETAIL_KEYS; an event whose details still contain the address after that keeps none of them);
 * actions the user took as an administrator (actor `admin:<email>`) name `admin:<pseudonym>`. Type, time,
 * IP, application and the rest of the details stay. Returns the number of the user's events kept.
 */
export async function pseudonymiseUserAuditEvents(
  db: Tx,
  userId: string,
  email: string,
  pseudonym: string,
): Promise<number> {
  const keys = sql.join(PERSONAL_DETAIL_KEYS.map((k) => sql.lit(k)));
  const stripped = sql`(detail - array[${keys}]::text[])`;
  const kept = await db
    .updateTable('audit_events')
    .set({
      user_id: pseudonym,
      detail: sql`case when strpos(lower(${stripped}::text), lower(${email})) > 0
        then '{"personalDataRemoved":true}'::jsonb else ${stripped} end`,
    })
    .where('user_id', '=', userId)
    .executeTakeFirst();
  await db
    .updateTable('audit_events')
    .set({ actor: `admin:${pseudonym}` })
    .where('actor', '=', `admin:${email}`)
    .execute();
  return Number(kept.numUpdatedRows);
}
