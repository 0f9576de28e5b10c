import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { EmailVerificationTokensTable } from '../tables.js';

export type EmailVerificationRow = Selectable<EmailVerificationTokensTable>;

export async function insertEmailVerificationToken(
  db: Db,
  row: { token_hash: string; user_id: string; request_id: string | null; client_id: string | null; redirect_uri: string | null; expires_at: Date },
): Promise<void> {
  await db.insertInto('email_verification_tokens').values(row).execute();
}

/** Single use, atomically: the first caller gets the row, every later one nothing. */
export async function consumeEmailVerificationToken(db: Db, tokenHash: string): Promise<EmailVerificationRow | undefined> {
  return db
    .updateTable('email_verification_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}
