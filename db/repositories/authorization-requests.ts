// Pending authorization requests (the state machine is at the top of src/services/authorization.ts):
// each is found only together with the hash of its browser-binding cookie.
import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { AuthorizationRequestParams, AuthorizationRequestsTable } from '../tables.js';

export type AuthorizationRequestRow = Selectable<AuthorizationRequestsTable>;

export async function insertAuthorizationRequest(
  db: Db,
  row: { id: string; client_id: string; params: AuthorizationRequestParams; expires_at: Date; browser_hash: string },
): Promise<AuthorizationRequestRow> {
  return db
    .insertInto('authorization_requests')
    .values({ ...row, params: JSON.stringify(row.params) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A request that is neither completed nor expired, presented by the browser that started it. */
export async function findPendingAuthorizationRequest(
  db: Db,
  id: string,
  browserHash: string,
): Promise<AuthorizationRequestRow | undefined> {
  return db
    .selectFrom('authorization_requests')
    .selectAll()
    .where('id', '=', id)
    .where('browser_hash', '=', browserHash)
    .where('completed_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Records who completed sign-in on a pending request of this browser, in which session. */
export async function recordRequestSignIn(
  db: Db,
  id: string,
  browserHash: string,
  who: { userId: string; sessionId: string },
): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ login_completed_at: sql`now()`, login_user_id: who.userId, login_session_id: who.sessionId })
    .where('id', '=', id)
    .where('browser_hash', '=', browserHash)
    .where('completed_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/**
 * Records who consented on a pending request, and to which scopes (always the request's own): once per
 * user, so of the same consent posted twice at once only the first counts (issue 16, part 2).
 */
export async function recordRequestConsent(db: Db, id: string, userId: string, scopes: string[]): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ consent_given_at: sql`now()`, consent_user_id: userId, consent_scopes: JSON.stringify(scopes) })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .where('consent_user_id', 'is distinct from', userId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Ends a request (a code was issued, or an error was redirected); true only for the first caller. */
export async function completeAuthorizationRequest(db: Db, id: string): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ completed_at: sql`now()` })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
