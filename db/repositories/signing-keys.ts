import { sql } from 'kysely';
import type { Db } from '../create-db.js';
import type { Insertable, Selectable } from 'kysely';
import type { SigningKeysTable } from '../tables.js';

export type SigningKeyRow = Selectable<SigningKeysTable>;

/** Keys that are published: next, current, and retired ones not yet removed. */
export async function listPublishedKeys(db: Db): Promise<SigningKeyRow[]> {
  return db.selectFrom('signing_keys').selectAll().orderBy('created_at', 'desc').execute();
}

/**
 * Inserts a current key unless one exists. The partial unique index makes concurrent first starts of
 * several instances safe: exactly one insert wins, the others read the winner.
 */
export async function insertCurrentKeyIfNone(db: Db, row: Insertable<SigningKeysTable>): Promise<void> {
  await sql`insert into signing_keys (kid, alg, state, public_jwk, private_jwk, activated_at)
    values (${row.kid}, ${row.alg}, 'current', ${row.public_jwk}::jsonb, ${row.private_jwk}, now())
    on conflict do nothing`.execute(db);
}
