// Passkeys (migration 0018): the credentials (public keys only) and the ceremonies' challenges.
// A challenge is consumed by one atomic DELETE ... RETURNING that also checks its purpose, its browser and
// (for a registration or a second factor) its user, and that it has not expired: used once, whatever happens.
import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { WebauthnCredentialsTable } from '../tables.js';

export type PasskeyRow = Selectable<WebauthnCredentialsTable>;

export async function insertChallenge(
  db: Db,
  row: {
    id: string;
    challenge: string;
    purpose: string;
    user_id: string | null;
    browser_hash: string;
    expires_at: Date;
  },
): Promise<void> {
  await db.insertInto('webauthn_challenges').values(row).execute();
}

/**
 * Consumes the live challenge with this value, purpose and browser (and user, when given: null means a
 * challenge made for nobody in particular). Undefined when there is none: unknown, used, expired, or made for
 * another purpose, browser or user.
 */
export async function consumeChallenge(
  db: Db,
  where: { challenge: string; purpose: string; browserHash: string; userId: string | null },
): Promise<{ challenge: string; user_id: string | null } | undefined> {
  let query = db
    .deleteFrom('webauthn_challenges')
    .where('challenge', '=', where.challenge)
    .where('purpose', '=', where.purpose)
    .where('browser_hash', '=', where.browserHash)
    .where('expires_at', '>', sql<Date>`now()`);
  query = where.userId === null ? query.where('user_id', 'is', null) : query.where('user_id', '=', where.userId);
  return query.returning(['challenge', 'user_id']).executeTakeFirst();
}

export async function insertPasskey(
  db: Db,
  row: {
    id: string;
    user_id: string;
    credential_id: string;
    public_key: string;
    counter: number;
    transports: string[];
    device_type: string;
    backed_up: boolean;
    aaguid: string | null;
    name: string;
  },
): Promise<PasskeyRow> {
  return db
    .insertInto('webauthn_credentials')
    .values({ ...row, transports: JSON.stringify(row.transports) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** The passkey with this credential id, of an enabled user. */
export async function findPasskeyByCredentialId(db: Db, credentialId: string): Promise<PasskeyRow | undefined> {
  return db
    .selectFrom('webauthn_credentials as c')
    .innerJoin('users as u', 'u.id', 'c.user_id')
    .selectAll('c')
    .where('c.credential_id', '=', credentialId)
    .where('u.disabled', '=', false)
    .executeTakeFirst();
}

export async function listUserPasskeys(db: Db, userId: string): Promise<PasskeyRow[]> {
  return db
    .selectFrom('webauthn_credentials')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .execute();
}

/**
 * Records a use: the new counter (only if it still moves forward, or both are zero: a concurrent use of the
 * same assertion loses), the backup state and last_used_at. Undefined when the counter no longer allows it.
 */
export async function recordPasskeyUse(
  db: Db,
  id: string,
  use: { counter: number; backedUp: boolean },
): Promise<PasskeyRow | undefined> {
  return db
    .updateTable('webauthn_credentials')
    .set({ counter: use.counter, backed_up: use.backedUp, last_used_at: sql<Date>`now()` })
    .where('id', '=', id)
    .where((eb) => (use.counter === 0 ? eb('counter', '=', '0') : eb('counter', '<', String(use.counter))))
    .returningAll()
    .executeTakeFirst();
}

export async function renamePasskey(db: Db, userId: string, id: string, name: string) {
  return db
    .updateTable('webauthn_credentials')
    .set({ name })
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .returning(['id', 'name'])
    .executeTakeFirst();
}

export async function deletePasskey(db: Db, userId: string, id: string) {
  return db
    .deleteFrom('webauthn_credentials')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .returning(['id', 'name', 'credential_id'])
    .executeTakeFirst();
}
