// SQL for the users table. E-mail lookups compare lower(email), matching the unique index.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';
import type { NewUserRow, UserRow, UserUpdate } from '../tables.js';

export type { UserRow };

export async function insertUser(db: Db, row: NewUserRow): Promise<UserRow> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

export async function listUserRows(
  db: Db,
  options: { q?: string | undefined; after?: string | undefined; limit: number },
): Promise<UserRow[]> {
  let query = db.selectFrom('users').selectAll().orderBy(sql`lower(email)`).limit(options.limit);
  if (options.after !== undefined) query = query.where(sql`lower(email)`, '>', options.after.toLowerCase());
  if (options.q) {
    const pattern = `%${options.q.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    query = query.where((eb) =>
      eb.or([
        eb(sql`lower(email)`, 'like', pattern),
        eb(sql`lower(coalesce(name, ''))`, 'like', pattern),
        eb('id', '=', options.q!),
      ]),
    );
  }
  return query.execute();
}

export async function updateUserRow(db: Db, id: string, changes: UserUpdate): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ ...changes, updated_at: sql`now()` })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteUserRow(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
