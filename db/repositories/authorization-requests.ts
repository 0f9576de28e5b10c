// Pending authorization requests (the state machine is at the top of src/services/authorization.ts):
// each is found only together with the hash of its browser-binding cookie.
import { sql, type Selectable } from 'kysely';
import { executeText, type Db } from '../create-db.js';
import type { AuthorizationRequestParams, AuthorizationRequestsTable } from '../tables.js';

export type AuthorizationRequestRow = Selectable<AuthorizationRequestsTable>;

// The sign-in path's statements, as fixed SQL text: no query building per request (each ran several times
// per sign-in, ~0.1 ms of the server's CPU per sign-in each when built). Unnamed, not prepared: `*` stays
// right when a migration adds a column.
const INSERT = `insert into authorization_requests (id, client_id, params, expires_at, browser_hash)
  values ($1, $2, $3, $4, $5) returning *`;

const PENDING = `select * from authorization_requests
  where id = $1 and browser_hash = $2 and completed_at is null and expires_at > now()`;

const SIGNED_IN = `update authorization_requests
  set login_completed_at = now(), login_user_id = $3, login_session_id = $4
  where id = $1 and browser_hash = $2 and completed_at is null and expires_at > now()
  returning id`;

export async function insertAuthorizationRequest(
  db: Db,
  row: { id: string; client_id: string; params: AuthorizationRequestParams; expires_at: Date; browser_hash: string },
): Promise<AuthorizationRequestRow> {
  const [inserted] = await executeText<AuthorizationRequestRow>(db, INSERT, [
    row.id,
    row.client_id,
    JSON.stringify(row.params),
    row.expires_at,
    row.browser_hash,
  ]);
  if (!inserted) throw new Error('insert into authorization_requests returned no row');
  return inserted;
}

/** A request that is neither completed nor expired, presented by the browser that started it. */
export async function findPendingAuthorizationRequest(
  db: Db,
  id: string,
  browserHash: string,
): Promise<AuthorizationRequestRow | undefined> {
  const [row] = await executeText<AuthorizationRequestRow>(db, PENDING, [id, browserHash]);
  return row;
}

/** Records who completed sign-in on a pending request of this browser, in which session. */
export async function recordRequestSignIn(
  db: Db,
  id: string,
  browserHash: string,
  who: { userId: string; sessionId: string },
): Promise<boolean> {
  const updated = await executeText<{ id: string }>(db, SIGNED_IN, [id, browserHash, who.userId, who.sessionId]);
  return updated.length > 0;
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
