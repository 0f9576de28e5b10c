// SQL for the applications table. Every function takes the executor to run on: the database or a transaction.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';
import { likePattern } from './users.js';
import type { ApplicationRow, ApplicationUpdate, NewApplicationRow } from '../tables.js';

export type { ApplicationRow };

export async function insertApplication(db: Db, row: NewApplicationRow): Promise<ApplicationRow> {
  return db.insertInto('applications').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findApplicationRow(db: Db, clientId: string): Promise<ApplicationRow | undefined> {
  return db.selectFrom('applications').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

/** Locks the row for the rest of the transaction (read-modify-write of one application). */
export async function findApplicationRowForUpdate(db: Db, clientId: string): Promise<ApplicationRow | undefined> {
  return db.selectFrom('applications').selectAll().where('client_id', '=', clientId).forUpdate().executeTakeFirst();
}

export async function listApplicationRows(
  db: Db,
  options: { q?: string | undefined; after?: string | undefined; limit: number },
): Promise<ApplicationRow[]> {
  // Byte order ("C"), the order the service merges static applications in (client ids are ASCII).
  let query = db.selectFrom('applications').selectAll().orderBy(sql`client_id collate "C"`).limit(options.limit);
  if (options.after !== undefined)
    query = query.where(sql`client_id collate "C"`, '>', sql`${options.after} collate "C"`);
  if (options.q) {
    const pattern = likePattern(options.q);
    query = query.where((eb) =>
      eb.or([
        eb(sql`lower(name)`, 'like', sql`lower(${pattern})`),
        eb(sql`lower(client_id)`, 'like', sql`lower(${pattern})`),
      ]),
    );
  }
  return query.execute();
}

export async function updateApplicationRow(
  db: Db,
  clientId: string,
  changes: ApplicationUpdate,
): Promise<ApplicationRow | undefined> {
  return db
    .updateTable('applications')
    .set({ ...changes, updated_at: sql`now()` })
    .where('client_id', '=', clientId)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteApplicationRow(db: Db, clientId: string): Promise<boolean> {
  const result = await db.deleteFrom('applications').where('client_id', '=', clientId).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Every allowedWebOrigins value of the enabled applications, once. */
export async function listEnabledWebOrigins(db: Db): Promise<string[]> {
  const rows = await sql<{ origin: string }>`select distinct jsonb_array_elements_text(allowed_web_origins) as origin
    from applications where enabled`.execute(db);
  return rows.rows.map((r) => r.origin);
}

export const APPLICATIONS_CHANNEL = 'idp_applications_changed';

/** Delivered to every listening instance when the transaction commits (PostgreSQL NOTIFY). */
export async function notifyApplicationsChanged(db: Db, clientId: string): Promise<void> {
  await sql`select pg_notify(${APPLICATIONS_CHANNEL}, ${clientId})`.execute(db);
}
