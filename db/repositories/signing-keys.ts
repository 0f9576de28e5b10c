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

export async function lockAllKeys(db: Db): Promise<SigningKeyRow[]> {
  return db.selectFrom('signing_keys').selectAll().orderBy('created_at').forUpdate().execute();
}

export async function insertKey(
  db: Db,
  row: { kid: string; alg: string; state: 'next' | 'current'; public_jwk: string; private_jwk: string },
): Promise<void> {
  await db
    .insertInto('signing_keys')
    .values({ ...row, ...(row.state === 'current' ? { activated_at: sql`now()` as unknown as Date } : {}) })
    .execute();
}

export async function setKeyState(db: Db, kid: string, state: 'current' | 'retired'): Promise<void> {
  await db
    .updateTable('signing_keys')
    .set(
      state === 'current'
        ? { state, activated_at: sql`now()` as unknown as Date }
        : { state, retired_at: sql`now()` as unknown as Date },
    )
    .where('kid', '=', kid)
    .execute();
}

export async function deleteKey(db: Db, kid: string): Promise<boolean> {
  const r = await db.deleteFrom('signing_keys').where('kid', '=', kid).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** Retired keys past the longest lifetime of a token they signed are no longer published. */
export async function deleteExpiredRetiredKeys(db: Db, olderThanSeconds: number): Promise<number> {
  const r = await db
    .deleteFrom('signing_keys')
    .where('state', '=', 'retired')
    .where(sql<boolean>`retired_at < now() - make_interval(secs => ${olderThanSeconds})`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
