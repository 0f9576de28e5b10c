// Remembered consent: the scopes a user has allowed an application, one row per user and application.
import { sql } from 'kysely';
import { executeText, type Db, type Tx } from '../create-db.js';

// Fixed SQL text (read on every sign-in's continuation): no query building per request.
const SCOPES = 'select scopes from consents where user_id = $1 and client_id = $2';

export async function findConsent(db: Db, userId: string, clientId: string): Promise<string[] | undefined> {
  const [row] = await executeText<{ scopes: string[] }>(db, SCOPES, [userId, clientId]);
  return row?.scopes;
}

/** Remembers the union of what the user has consented to for this application. */
export async function upsertConsent(db: Tx, userId: string, clientId: string, scopes: string[]): Promise<void> {
  const existing = (await findConsent(db, userId, clientId)) ?? [];
  const merged = [...new Set([...existing, ...scopes])];
  await db
    .insertInto('consents')
    .values({ user_id: userId, client_id: clientId, scopes: JSON.stringify(merged) })
    .onConflict((oc) =>
      oc.columns(['user_id', 'client_id']).doUpdateSet({ scopes: JSON.stringify(merged), updated_at: sql`now()` }),
    )
    .execute();
}

export async function deleteConsents(db: Db, userId: string, clientIds?: string[]): Promise<void> {
  let q = db.deleteFrom('consents').where('user_id', '=', userId);
  if (clientIds) {
    if (clientIds.length === 0) return;
    q = q.where('client_id', 'in', clientIds);
  }
  await q.execute();
}
