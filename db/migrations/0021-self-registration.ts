// Clients registered without an operator (issue 36; decisions.md, Protocol: off unless the operator turns it on).
//  - applications.registration_access_token_hash: SHA-256 of the RFC 7592 registration access token of a client
//    registered by RFC 7591 (shown once, in the registration response); null for every other application.
//  - applications.last_used_at: when the client last came to authorize or the token endpoint (updated at most
//    hourly); the clean-up job deletes self-registered clients unused for SELF_REGISTERED_CLIENT_TTL days.
//  - applications.metadata_fetched_at / metadata_expires_at: a client ID metadata document's last fetch and until
//    when it is fresh (its Cache-Control, bounded); after that the next authorize fetches it again.
//  - registration_tokens: the initial access tokens (RFC 7591 §3) an operator issues for REGISTRATION=token, stored
//    as SHA-256 hashes, with an expiry and an optional count of registrations left.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('registration_access_token_hash', 'text')
    .addColumn('last_used_at', 'timestamptz')
    .addColumn('metadata_fetched_at', 'timestamptz')
    .addColumn('metadata_expires_at', 'timestamptz')
    .execute();
  await db.schema
    .createTable('registration_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('description', 'text')
    .addColumn('uses_left', 'integer')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('registration_tokens').execute();
  await db.schema
    .alterTable('applications')
    .dropColumn('metadata_expires_at')
    .dropColumn('metadata_fetched_at')
    .dropColumn('last_used_at')
    .dropColumn('registration_access_token_hash')
    .execute();
}
