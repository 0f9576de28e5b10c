// Passkeys (migration 0018): the credentials (public keys only) and the ceremonies' challenges.
// A challenge travels sealed in the ceremony's options (src/services/factors/passkeys.ts); its nonce is claimed
// here once, by an INSERT that a second use of the same challenge cannot repeat.
import { sql } from 'kysely';
import type { Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { WebauthnCredentialsTable } from '../tables.js';

export type PasskeyRow = Selectable<WebauthnCredentialsTable>;

/**
 * Claims a challenge's nonce (the row's id) once: true the first time, false for a replay. The row is kept until
 * the challenge expires (the clean-up job deletes it), so the claim outlives every use the challenge allows.
 */
export async function claimChallenge(
  db: Db,
  row: {
    id: string;
    challenge: string;
    purpose: string;
    user_id: string | null;
    browser_hash: string;
    expires_at: Date;
  },
): Promise<boolean> {
  const inserted = await db
    .insertInto('webauthn_challenges')
    .values(row)
    .onConflict((c) => c.column('id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return Boolean(inserted);
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
