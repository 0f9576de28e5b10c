// SQL for pending sign-ups (0013-sign-up-requests) and for the accounts a confirmed sign-up replaces.
import { sql, type Insertable, type Selectable } from 'kysely';
import { executeText, type Db } from '../create-db.js';
import type { SignUpRequestsTable, UserRow } from '../tables.js';

export type SignUpRequestRow = Selectable<SignUpRequestsTable>;

export async function insertSignUpRequest(db: Db, row: Insertable<SignUpRequestsTable>): Promise<void> {
  await db.insertInto('sign_up_requests').values(row).execute();
}

/** The pending sign-up while its link can still be used (a GET of the link reads, never consumes). */
export async function findLiveSignUpRequest(db: Db, tokenHash: string): Promise<SignUpRequestRow | undefined> {
  return db
    .selectFrom('sign_up_requests')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Single use, atomically: the first caller gets the row, every later or concurrent one nothing. */
export async function consumeSignUpRequest(db: Db, tokenHash: string): Promise<SignUpRequestRow | undefined> {
  return db
    .updateTable('sign_up_requests')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Reserves one password check of a confirmation from another browser, atomically and before the check
 * (so that concurrent guesses cannot exceed the limit): the row with its count raised, or nothing when the
 * link is dead or its `max` checks are spent.
 */
export async function reserveSignUpPasswordAttempt(
  db: Db,
  tokenHash: string,
  max: number,
): Promise<SignUpRequestRow | undefined> {
  return db
    .updateTable('sign_up_requests')
    .set({ password_attempts: sql`password_attempts + 1` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where('password_attempts', '<', max)
    .returningAll()
    .executeTakeFirst();
}

/** Deletes a pending sign-up (its link dies). */
export async function deleteSignUpRequest(db: Db, tokenHash: string): Promise<void> {
  await db.deleteFrom('sign_up_requests').where('token_hash', '=', tokenHash).execute();
}

const BY_EMAIL_LOCKED = 'select * from users where lower(email) = lower($1) for update';

/** The account holding the address, locked until the transaction ends (call inside one). */
export async function lockUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  const [row] = await executeText<UserRow>(db, BY_EMAIL_LOCKED, [email]);
  return row;
}

/**
 * Removes an account whose address was taken over. Its sessions, consents, grants (with their codes,
 * access and refresh tokens) and its links go with the users row (on delete cascade); the pending
 * authorization requests it signed in or consented to are deleted here. Its audit trail stays.
 */
export async function deleteTakenOverUser(db: Db, userId: string): Promise<Record<string, number>> {
  const sessions = await db.selectFrom('sessions').select('id').where('user_id', '=', userId).execute();
  const grants = await db.selectFrom('grants').select('id').where('user_id', '=', userId).execute();
  const requests = await db
    .deleteFrom('authorization_requests')
    .where((eb) => eb.or([eb('login_user_id', '=', userId), eb('consent_user_id', '=', userId)]))
    .executeTakeFirst();
  await db.deleteFrom('users').where('id', '=', userId).execute();
  return {
    sessions: sessions.length,
    grants: grants.length,
    authorizationRequests: Number(requests.numDeletedRows),
  };
}
