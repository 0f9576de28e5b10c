// One second factor of a user removed by an operator (issue 34): a passkey by its id, the authenticator app, or
// the set of recovery codes. Inside the transaction that records the change (services.factors.recordChange).
import type { Db } from '../create-db.js';

/** Deletes the user's passkey `id`; answers its name, or undefined when the user has no such passkey. */
export async function deleteUserPasskey(db: Db, userId: string, id: string): Promise<{ name: string } | undefined> {
  return db
    .deleteFrom('webauthn_credentials')
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .returning(['name'])
    .executeTakeFirst();
}

/** Deletes the user's TOTP secret; answers whether it was a confirmed one (an enrolled factor). */
export async function deleteUserTotp(db: Db, userId: string): Promise<boolean> {
  const rows = await db.deleteFrom('totp_factors').where('user_id', '=', userId).returning(['confirmed_at']).execute();
  return rows.some((r) => r.confirmed_at !== null);
}

/** Deletes the user's recovery codes (used or not); answers how many there were. */
export async function deleteUserRecoveryCodes(db: Db, userId: string): Promise<number> {
  const result = await db.deleteFrom('recovery_codes').where('user_id', '=', userId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
