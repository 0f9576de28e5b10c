// A pending sign-up is bound to the browser that made it (issue 31, the residual pre-registration risk):
// browser_hash is the SHA-256 of a random secret the sign-up answer set as an HttpOnly cookie. The link
// confirms without a password only in that browser; anywhere else the confirmation asks for the password
// chosen at sign-up, and password_attempts counts those tries (reserved before each check; the pending
// sign-up is deleted when the limit is reached). Rows from before this migration have no binding: their
// links ask for the password in every browser.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sign_up_requests').addColumn('browser_hash', 'text').execute();
  await db.schema
    .alterTable('sign_up_requests')
    .addColumn('password_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('sign_up_requests').dropColumn('password_attempts').execute();
  await db.schema.alterTable('sign_up_requests').dropColumn('browser_hash').execute();
}
