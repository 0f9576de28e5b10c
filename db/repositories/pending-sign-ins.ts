// Sign-ins waiting for their second factor (migration 0018): found by the SHA-256 of the browser's cookie.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';
import type { PendingSignInsTable } from '../tables.js';
import type { Selectable } from 'kysely';

export type PendingSignInRow = Selectable<PendingSignInsTable>;

export async function insertPendingSignIn(
  db: Db,
  row: {
    id: string;
    token_hash: string;
    user_id: string;
    amr: string[];
    request_id: string | null;
    ip: string | null;
    user_agent: string | null;
    expires_at: Date;
  },
): Promise<void> {
  await db
    .insertInto('pending_sign_ins')
    .values({ ...row, amr: JSON.stringify(row.amr) })
    .execute();
}

/** The live pending sign-in of this cookie hash (not expired, of an enabled user). */
export async function findPendingSignIn(db: Db, tokenHash: string): Promise<PendingSignInRow | undefined> {
  return db
    .selectFrom('pending_sign_ins as p')
    .innerJoin('users as u', 'u.id', 'p.user_id')
    .selectAll('p')
    .where('p.token_hash', '=', tokenHash)
    .where('p.expires_at', '>', sql<Date>`now()`)
    .where('u.disabled', '=', false)
    .executeTakeFirst();
}

/** Counts a wrong second-factor attempt; answers the attempts so far (undefined: the row is gone). */
export async function countPendingFailure(db: Db, id: string): Promise<number | undefined> {
  const row = await db
    .updateTable('pending_sign_ins')
    .set({ attempts: sql`attempts + 1` })
    .where('id', '=', id)
    .returning('attempts')
    .executeTakeFirst();
  return row?.attempts;
}

/** Takes the pending sign-in (once: concurrent completions, one wins); undefined when gone or expired. */
export async function consumePendingSignIn(db: Db, id: string): Promise<PendingSignInRow | undefined> {
  return db
    .deleteFrom('pending_sign_ins')
    .where('id', '=', id)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

export async function deletePendingSignIn(db: Db, id: string): Promise<void> {
  await db.deleteFrom('pending_sign_ins').where('id', '=', id).execute();
}

/** Every pending sign-in of the user ends (a factor or the password changed). */
export async function deleteUserPendingSignIns(db: Db, userId: string): Promise<void> {
  await db.deleteFrom('pending_sign_ins').where('user_id', '=', userId).execute();
}
