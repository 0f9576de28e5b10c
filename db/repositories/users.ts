// SQL for the users table. E-mail lookups compare lower(email), matching the unique index.
import { sql } from 'kysely';
import { executeText, type Db } from '../create-db.js';
import type { NewUserRow, UserRow, UserUpdate } from '../tables.js';

export type { UserRow };

/** A LIKE pattern matching `text` anywhere, with the wildcards in it escaped. */
export function likePattern(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

export async function insertUser(db: Db, row: NewUserRow): Promise<UserRow> {
  return db.insertInto('users').values(row).returningAll().executeTakeFirstOrThrow();
}

export async function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The row, locked until the transaction ends (call inside one). */
/** The e-mail addresses of these users (those that exist), in one query. */
export async function findUserEmails(db: Db, ids: string[]): Promise<Array<{ id: string; email: string }>> {
  if (ids.length === 0) return [];
  return db.selectFrom('users').select(['id', 'email']).where('id', 'in', ids).execute();
}

export async function lockUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).forUpdate().executeTakeFirst();
}

// lower() on both sides: JavaScript and PostgreSQL case mappings differ (final sigma, dotted I). Fixed SQL text
// (run on every sign-in): no query building per request.
const BY_EMAIL = 'select * from users where lower(email) = lower($1)';

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  const [row] = await executeText<UserRow>(db, BY_EMAIL, [email]);
  return row;
}

export async function listUserRows(
  db: Db,
  options: { q?: string | undefined; after?: string | undefined; limit: number },
): Promise<UserRow[]> {
  // Byte order ("C") for a stable order whatever the database's collation; the cursor is the last
  // e-mail as stored, compared with the same expression. Ties on lower(email) cannot happen (unique).
  let query = db.selectFrom('users').selectAll().orderBy(sql`lower(email) collate "C"`).limit(options.limit);
  if (options.after !== undefined)
    query = query.where(sql`lower(email) collate "C"`, '>', sql`lower(${options.after}) collate "C"`);
  if (options.q) {
    const pattern = likePattern(options.q);
    query = query.where((eb) =>
      eb.or([
        eb(sql`lower(email)`, 'like', sql`lower(${pattern})`),
        eb(sql`lower(coalesce(name, ''))`, 'like', sql`lower(${pattern})`),
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
