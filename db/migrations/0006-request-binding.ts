// Pending authorization requests are bound to the browser that started them and record who took
// each step (decisions.md, "Pending authorization requests"): the hash of the browser-binding cookie,
// the user and session that completed sign-in on the request, and the user who consented and to what.
// Requests pending during the upgrade have no binding and so can no longer be continued (they last
// at most CONSENT_REQUEST_TTL; the user starts again from the application).
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('authorization_requests')
    .addColumn('browser_hash', 'text')
    .addColumn('login_user_id', 'text')
    .addColumn('login_session_id', 'text')
    .addColumn('consent_user_id', 'text')
    .addColumn('consent_scopes', 'jsonb')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('authorization_requests')
    .dropColumn('browser_hash')
    .dropColumn('login_user_id')
    .dropColumn('login_session_id')
    .dropColumn('consent_user_id')
    .dropColumn('consent_scopes')
    .execute();
}
