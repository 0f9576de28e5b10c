// Requested e-mail changes (migration 0011): only the SHA-256 of the mailed token is stored; the latest
// request of a user is the only live one; a link works once, before it expires, and only while the
// user's address is still the one it was requested from.
import { sql, type Selectable } from 'kysely';
import type { Db, Tx } from '../create-db.js';
import type { EmailChangeTokensTable } from '../tables.js';

export type EmailChangeRow = Selectable<EmailChangeTokensTable>;

/** Stores a new request and kills the user's older ones (only the latest change is valid). */
export async function replaceEmailChangeToken(
  db: Tx,
  row: { token_hash: string; user_id: string; email: string; previous_email: string; expires_at: Date },
): Promise<number> {
  // Overlapping requests of one user queue here, so exactly one link stays live.
  await db.selectFrom('users').select('id').where('id', '=', row.user_id).forUpdate().execute();
  const killed = await deleteUserEmailChangeTokens(db, row.user_id);
  await db.insertInto('email_change_tokens').values(row).execute();
  return killed;
}

/** Requests still live: not used, not expired, and asked from the address the user still has. */
const liveRequests = (db: Db) =>
  db
    .selectFrom('email_change_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .selectAll('t')
    .where('t.used_at', 'is', null)
    .where('t.expires_at', '>', sql<Date>`now()`)
    .whereRef('u.email', '=', 't.previous_email');

/** The user's live request, if any (what the profile shows as the pending address). */
export async function findPendingEmailChange(db: Db, userId: string): Promise<EmailChangeRow | undefined> {
  return liveRequests(db).where('t.user_id', '=', userId).orderBy('t.created_at', 'desc').limit(1).executeTakeFirst();
}

/**
 * A live request by its token, read only (the confirmation page shows what the link would do; a GET or
 * HEAD of a mailed link changes nothing): the same conditions as consuming it, nothing written.
 */
export async function findLiveEmailChangeToken(db: Db, tokenHash: string): Promise<EmailChangeRow | undefined> {
  return liveRequests(db).where('t.token_hash', '=', tokenHash).where('u.disabled', '=', false).executeTakeFirst();
}

/**
 * Single use, atomically: the first caller gets the row. Call inside the transaction that applies the
 * change: if applying fails (the address was taken meanwhile), the rollback leaves the link usable.
 */
export async function consumeEmailChangeToken(db: Tx, tokenHash: string): Promise<EmailChangeRow | undefined> {
  return db
    .updateTable('email_change_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('users')
          .select('users.id')
          .whereRef('users.id', '=', 'email_change_tokens.user_id')
          .whereRef('users.email', '=', 'email_change_tokens.previous_email'),
      ),
    )
    .returningAll()
    .executeTakeFirst();
}

/** Every requested change of the user dies (a newer request, a password change, a reset). */
export async function deleteUserEmailChangeTokens(db: Db, userId: string): Promise<number> {
  const r = await db.deleteFrom('email_change_tokens').where('user_id', '=', userId).executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The user's requests for the data export: addresses and times, never the token hash. */
export async function listUserEmailChanges(db: Db, userId: string) {
  return db
    .selectFrom('email_change_tokens')
    .select(['email', 'previous_email', 'created_at', 'expires_at', 'used_at'])
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .execute();
}
