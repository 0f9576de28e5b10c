import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { EmailVerificationTokensTable, UserRow } from '../tables.js';

export type EmailVerificationRow = Selectable<EmailVerificationTokensTable>;

/** `email` is the address the link is mailed to: the token verifies that address and no other. */
export async function insertEmailVerificationToken(
  db: Db,
  row: {
    token_hash: string;
    user_id: string;
    email: string;
    request_id: string | null;
    client_id: string | null;
    redirect_uri: string | null;
    expires_at: Date;
  },
): Promise<void> {
  await db.insertInto('email_verification_tokens').values(row).execute();
}

/**
 * Single use, atomically: the first caller gets the row, every later one nothing. A token whose
 * address is no longer the user's address is dead (the address was changed after it was mailed).
 */
export async function consumeEmailVerificationToken(
  db: Db,
  tokenHash: string,
): Promise<EmailVerificationRow | undefined> {
  return db
    .updateTable('email_verification_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where(({ exists, selectFrom }) =>
      exists(
        selectFrom('users')
          .select('users.id')
          .whereRef('users.id', '=', 'email_verification_tokens.user_id')
          .whereRef('users.email', '=', 'email_verification_tokens.email'),
      ),
    )
    .returningAll()
    .executeTakeFirst();
}

/**
 * The live token, read only (the confirmation page shows what the link would do; a GET or HEAD of a
 * mailed link changes nothing): the same conditions as consuming it, nothing written.
 */
export async function findLiveEmailVerificationToken(
  db: Db,
  tokenHash: string,
): Promise<EmailVerificationRow | undefined> {
  return db
    .selectFrom('email_verification_tokens as t')
    .innerJoin('users as u', 'u.id', 't.user_id')
    .selectAll('t')
    .where('t.token_hash', '=', tokenHash)
    .where('t.used_at', 'is', null)
    .where('t.expires_at', '>', sql<Date>`now()`)
    .whereRef('u.email', '=', 't.email')
    .executeTakeFirst();
}

/**
 * Marks the address verified only if it is still `email`: an address change committed meanwhile (the
 * row lock makes PostgreSQL re-check the condition) leaves the new address unverified.
 */
export async function markAddressVerified(db: Db, userId: string, email: string): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ email_verified: true, updated_at: sql`now()` })
    .where('id', '=', userId)
    .where('email', '=', email)
    .returningAll()
    .executeTakeFirst();
}

/** Every outstanding verification link of the user stops working (an e-mail change). Returns how many. */
export async function deleteUserEmailVerificationTokens(db: Db, userId: string): Promise<number> {
  const r = await db
    .deleteFrom('email_verification_tokens')
    .where('user_id', '=', userId)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
