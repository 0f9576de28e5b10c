// A user's recovery codes (migration 0018): SHA-256 hashes only, one set per user, each code used once.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

/** Replaces the user's set (every old code, used or not, goes) with these hashes. */
export async function replaceRecoveryCodes(
  db: Db,
  userId: string,
  codes: Array<{ id: string; code_hash: string }>,
): Promise<number> {
  const gone = await db.deleteFrom('recovery_codes').where('user_id', '=', userId).executeTakeFirst();
  if (codes.length) {
    await db
      .insertInto('recovery_codes')
      .values(codes.map((c) => ({ ...c, user_id: userId })))
      .execute();
  }
  return Number(gone.numDeletedRows);
}

/** Uses the unused code of this hash, once (one statement: a second use, even at the same moment, finds none). */
export async function useRecoveryCode(db: Db, userId: string, codeHash: string): Promise<boolean> {
  const row = await db
    .updateTable('recovery_codes')
    .set({ used_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function countUnusedRecoveryCodes(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('recovery_codes')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
