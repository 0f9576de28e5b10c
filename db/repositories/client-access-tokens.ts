// Access tokens of the client_credentials grant (RFC 6749 §4.4): opaque, only their SHA-256 stored, no user and no
// grant. Apart from access_tokens on purpose: the bearer lookup of UserInfo and /api/external/* (findBearer) reads
// access_tokens only, so these tokens are unknown there.
import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { ClientAccessTokensTable } from '../tables.js';

export type ClientAccessTokenRow = Selectable<ClientAccessTokensTable>;

export async function insertClientAccessToken(
  db: Db,
  token: { tokenHash: string; clientId: string; scope: string; expiresAt: Date; audience?: string | null },
): Promise<void> {
  await db
    .insertInto('client_access_tokens')
    .values({
      token_hash: token.tokenHash,
      client_id: token.clientId,
      scope: token.scope,
      expires_at: token.expiresAt,
      audience: token.audience ?? null,
    })
    .execute();
}

/** The token when it is live: not revoked, not expired (by the database's clock). */
export async function findLiveClientAccessToken(db: Db, tokenHash: string): Promise<ClientAccessTokenRow | undefined> {
  return db
    .selectFrom('client_access_tokens')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Revokes the token if it is this client's and not revoked yet (RFC 7009); true when it did. */
export async function revokeClientAccessToken(db: Db, tokenHash: string, clientId: string): Promise<boolean> {
  const result = await db
    .updateTable('client_access_tokens')
    .set({ revoked_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}
