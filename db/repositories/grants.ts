// Grants: what a user allowed an application in one authorization, and the family of every code,
// access token and refresh token issued from it. Revoking a grant revokes the family.
import { sql } from 'kysely';
import type { Db, Tx } from '../create-db.js';

export async function insertGrant(
  db: Db,
  row: { id: string; user_id: string; client_id: string; scope: string; session_id: string | null; auth_time: Date },
) {
  await db.insertInto('grants').values(row).execute();
}

/** RFC 6749 §4.1.2: a replayed code revokes every token issued from its grant. */
export async function revokeGrant(db: Tx, grantId: string): Promise<void> {
  await db
    .updateTable('grants')
    .set({ revoked_at: sql`now()` })
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: sql`now()` })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
  await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: sql`now()` })
    .where('grant_id', '=', grantId)
    .where('revoked_at', 'is', null)
    .execute();
}

export async function listUserGrants(db: Db, userId: string) {
  return db.selectFrom('grants').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').execute();
}

/** Grants of the user (all, one, or those of some sessions) that are still live. */
export async function liveGrantIds(
  db: Db,
  userId: string,
  filter: { grantId?: string; sessionIds?: string[] } = {},
): Promise<string[]> {
  let q = db.selectFrom('grants').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null);
  if (filter.grantId) q = q.where('id', '=', filter.grantId);
  if (filter.sessionIds) {
    if (filter.sessionIds.length === 0) return [];
    q = q.where('session_id', 'in', filter.sessionIds);
  }
  return (await q.execute()).map((r) => r.id);
}

/**
 * Everything the user was ever given stops working: grants, access and refresh tokens (offline ones
 * included), and codes not yet exchanged. Returns how many live grants were revoked.
 */
export async function revokeAllUserTokens(db: Tx, userId: string): Promise<number> {
  const grants = await db
    .updateTable('grants')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
  await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .execute();
  await db.deleteFrom('authorization_codes').where('user_id', '=', userId).where('consumed_at', 'is', null).execute();
  await revokeUserCodes(db, userId);
  return Number(grants.numUpdatedRows);
}

/**
 * Kills every sealed authorization code of the user not yet exchanged: they are not stored, so the exchange
 * refuses a code issued before this time (db/repositories/codes.ts).
 */
export async function revokeUserCodes(db: Tx, userId: string): Promise<void> {
  await db.updateTable('users').set({ codes_revoked_at: sql`now()` }).where('id', '=', userId).execute();
}

/**
 * Revokes every live refresh token of a client (a confidential client turned public: tokens it obtained while
 * authenticating must not be usable with its client_id alone). Answers how many were revoked.
 */
export async function revokeClientRefreshTokens(db: Tx, clientId: string): Promise<number> {
  const result = await db
    .updateTable('refresh_tokens')
    .set({ revoked_at: sql`now()` })
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
