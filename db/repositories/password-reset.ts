import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { PasswordResetTokensTable } from '../tables.js';

export type PasswordResetRow = Selectable<PasswordResetTokensTable>;

/** Stores a new token and supersedes the user's earlier live ones (call inside a transaction). */
export async function replacePasswordResetToken(
  db: Db,
  row: { token_hash: string; user_id: string; redirect_to: string; expires_at: Date },
): Promise<number> {
  // Overlapping requests for one user queue here, so exactly one link stays live.
  await db.selectFrom('users').select('id').where('id', '=', row.user_id).forUpdate().execute();
  const superseded = await db
    .updateTable('password_reset_tokens')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', row.user_id)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  await db.insertInto('password_reset_tokens').values(row).execute();
  return Number(superseded.numUpdatedRows);
}

/** The token if it can still be used (not used, not superseded, not expired). */
export async function findLivePasswordResetToken(db: Db, tokenHash: string): Promise<PasswordResetRow | undefined> {
  return db
    .selectFrom('password_reset_tokens')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Single use, atomically: the first caller gets the row, every later or concurrent one nothing. */
export async function consumePasswordResetToken(db: Db, tokenHash: string): Promise<PasswordResetRow | undefined> {
  return db
    .updateTable('password_reset_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/** After a reset, no other outstanding link of the user works. */
export async function revokeUserPasswordResetTokens(db: Db, userId: string): Promise<void> {
  await db
    .updateTable('password_reset_tokens')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .where('revoked_at', 'is', null)
    .execute();
}
