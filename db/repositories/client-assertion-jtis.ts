// SQL for the jti of private_key_jwt assertions (0017-confidential-clients, RFC 7523 §3): each one is remembered
// per client until its assertion expires, so that a replay is refused. The clean-up job deletes expired rows.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

/**
 * Records a jti; false when it is already recorded and still live (a replay). One statement, atomic under
 * concurrency: of two requests with the same jti, exactly one inserts. A row whose assertion has expired (not yet
 * cleaned up) is taken over, as if it were gone.
 */
export async function recordClientAssertionJti(
  db: Db,
  row: { clientId: string; jti: string; expiresAt: Date },
): Promise<boolean> {
  const result = await db
    .insertInto('client_assertion_jtis')
    .values({ client_id: row.clientId, jti: row.jti, expires_at: row.expiresAt })
    .onConflict((oc) =>
      oc
        .columns(['client_id', 'jti'])
        .doUpdateSet({ expires_at: (eb) => eb.ref('excluded.expires_at') })
        .where('client_assertion_jtis.expires_at', '<=', sql<Date>`now()`),
    )
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0n) === 1;
}
