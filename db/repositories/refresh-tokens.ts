// Refresh tokens: rotated on every use under a row lock; a token's family is its grant.
import type { Selectable } from 'kysely';
import type { Db, Tx } from '../create-db.js';
import type { RefreshTokensTable } from '../tables.js';
import { revokeGrant } from './grants.js';

export type RefreshTokenRow = Selectable<RefreshTokensTable>;

/**
 * The refresh token row, locked for the rest of the transaction, with its grant's and its user's state: what
 * the rules of db/repositories/refresh-rules.ts read (refreshChecks) to say why it is not current.
 */
export async function lockRefreshToken(db: Tx, tokenHash: string) {
  return refreshTokenState(db, tokenHash).forUpdate('refresh_tokens').executeTakeFirst();
}

/** The same row and state as lockRefreshToken, read without a lock (introspection only reads). */
export async function findRefreshTokenState(db: Db, tokenHash: string) {
  return refreshTokenState(db, tokenHash).executeTakeFirst();
}

function refreshTokenState(db: Db, tokenHash: string) {
  return db
    .selectFrom('refresh_tokens')
    .innerJoin('grants', 'grants.id', 'refresh_tokens.grant_id')
    .innerJoin('users', 'users.id', 'refresh_tokens.user_id')
    .selectAll('refresh_tokens')
    .select([
      'grants.revoked_at as grant_revoked_at',
      'grants.scope as grant_scope',
      'grants.auth_time as grant_auth_time',
      'grants.amr as grant_amr',
      'grants.resources as grant_resources',
      'users.disabled as user_disabled',
    ])
    .where('refresh_tokens.token_hash', '=', tokenHash);
}

export async function findRefreshTokenByHash(db: Db, tokenHash: string): Promise<RefreshTokenRow | undefined> {
  return db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

/** Revokes every token of a grant family issued to this client, for RFC 7009 refresh revocation. */
export async function revokeRefreshFamily(
  db: Tx,
  refreshHash: string,
  clientId: string,
): Promise<{ grantId: string; userId: string } | undefined> {
  const row = await db
    .selectFrom('refresh_tokens')
    .select(['grant_id', 'user_id', 'client_id'])
    .where('token_hash', '=', refreshHash)
    .executeTakeFirst();
  if (!row || row.client_id !== clientId) return undefined;
  await revokeGrant(db, row.grant_id);
  return { grantId: row.grant_id, userId: row.user_id };
}

/** The refresh token's family, revoked whatever client it belongs to (the cookie logout has no client_id). */
export async function revokeRefreshFamilyByHash(
  db: Tx,
  refreshHash: string,
): Promise<{ grantId: string; userId: string; clientId: string } | undefined> {
  const row = await db
    .selectFrom('refresh_tokens')
    .select(['grant_id', 'user_id', 'client_id'])
    .where('token_hash', '=', refreshHash)
    .executeTakeFirst();
  if (!row) return undefined;
  await revokeGrant(db, row.grant_id);
  return { grantId: row.grant_id, userId: row.user_id, clientId: row.client_id };
}
