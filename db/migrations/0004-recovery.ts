// Password reset tokens: only the SHA-256 hash is stored; single use (used_at), superseded by a newer
// request (revoked_at), 30 minutes by default. Plus user_id indexes for revoking all of a user's
// tokens, and audit indexes.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const now = sql`now()`;
  await db.schema
    .createTable('password_reset_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('redirect_to', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(now))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('password_reset_tokens_user_idx').on('password_reset_tokens').column('user_id').execute();
  await db.schema
    .createIndex('password_reset_tokens_expires_idx')
    .on('password_reset_tokens')
    .column('expires_at')
    .execute();
  // A password reset revokes every token of the user by user_id (and user deletion cascades by it).
  for (const table of ['access_tokens', 'refresh_tokens', 'authorization_codes']) {
    await db.schema.createIndex(`${table}_user_idx`).on(table).column('user_id').execute();
  }
  // The audit API filters by user and application, newest first.
  await db.schema.createIndex('audit_events_user_idx').on('audit_events').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('audit_events_client_idx').on('audit_events').columns(['client_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('audit_events_user_idx').execute();
  await db.schema.dropIndex('audit_events_client_idx').execute();
  for (const table of ['access_tokens', 'refresh_tokens', 'authorization_codes']) {
    await db.schema.dropIndex(`${table}_user_idx`).execute();
  }
  await db.schema.dropTable('password_reset_tokens').execute();
}
