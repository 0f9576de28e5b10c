// One-time links that create the first admin (src/services/admin-setup.ts): only the token's SHA-256.
import { sql } from 'kysely';
import type { Db, Tx } from '../create-db.js';

export async function adminExists(db: Db): Promise<boolean> {
  return Boolean(await db.selectFrom('users').select('id').where('role', '=', 'admin').limit(1).executeTakeFirst());
}

export async function insertSetupToken(db: Db, tokenHash: string, expiresAt: Date): Promise<void> {
  await db.insertInto('admin_setup_tokens').values({ token_hash: tokenHash, expires_at: expiresAt }).execute();
}

/** The link is unused and unexpired. */
export async function isSetupTokenLive(db: Db, tokenHash: string): Promise<boolean> {
  const row = await db
    .selectFrom('admin_setup_tokens')
    .select('token_hash')
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return Boolean(row);
}

/**
 * Consumes the link and every other open one. All open links are locked first, in one order, so two
 * links used at once queue instead of deadlocking. False when this link was not live.
 */
export async function consumeSetupTokens(trx: Tx, tokenHash: string): Promise<boolean> {
  await trx
    .selectFrom('admin_setup_tokens')
    .select('token_hash')
    .where('used_at', 'is', null)
    .orderBy('token_hash')
    .forUpdate()
    .execute();
  const consumed = await trx
    .updateTable('admin_setup_tokens')
    .set({ used_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('token_hash')
    .executeTakeFirst();
  if (!consumed) return false;
  await trx.updateTable('admin_setup_tokens').set({ used_at: sql`now()` }).where('used_at', 'is', null).execute();
  return true;
}
