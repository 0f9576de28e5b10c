// Sealed authorization codes (issue 14): a code is no longer stored (src/oauth/sealed-code.ts), so issuing one
// writes nothing and the exchange creates the grant. What deleted a user's unexchanged codes (a password
// change, disabling) now also stamps users.codes_revoked_at; the exchange refuses a sealed code issued before
// it. Additive: authorization_codes stays, so codes stored before the upgrade (or by an instance of the earlier
// release during a rolling upgrade) still redeem until they expire; a later release drops it.
import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('codes_revoked_at', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('codes_revoked_at').execute();
}
