// SQL for the applications table. Every function takes the executor to run on: the database or a transaction.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';
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
  let query = db.selectFrom('applications').selectAll().orderBy('client_id').limit(options.limit);
  if (options.after !== undefined) query = query.where('client_id', '>', options.after);
  if (options.q) {
    const pattern = `%${options.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where((eb) =>
      eb.or([eb(sql`lower(name)`, 'like', pattern), eb(sql`lower(client_id)`, 'like', pattern)]),
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
