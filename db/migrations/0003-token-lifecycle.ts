// Refresh rotation (successor links, grace-window replay), post-logout redirect URIs, session-bound
// access tokens, and indexes for the clean-up job.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('refresh_tokens')
    .addColumn('id', 'text')
    .addColumn('session_id', 'text')
    .addColumn('successor_hash', 'text')
    // The successor in plaintext, encrypted under SECRET_KEY, kept only for the grace window.
    .addColumn('successor_sealed', 'text')
    .addColumn('successor_access_sealed', 'text')
    .execute();
  // The original sign-in time, for the auth_time of ID tokens issued on refresh.
  await db.schema.alterTable('grants').addColumn('auth_time', 'timestamptz').execute();
  await db.schema
    .alterTable('applications')
    .addColumn('post_logout_redirect_uris', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
  await db.schema.createIndex('access_tokens_expires_idx').on('access_tokens').column('expires_at').execute();
  await db.schema.createIndex('access_tokens_session_idx').on('access_tokens').column('session_id').execute();
  await db.schema.createIndex('refresh_tokens_expires_idx').on('refresh_tokens').column('expires_at').execute();
  await db.schema
    .createIndex('authorization_codes_expires_idx')
    .on('authorization_codes')
    .column('expires_at')
    .execute();
  await db.schema
    .createIndex('authorization_requests_expires_idx')
    .on('authorization_requests')
    .column('expires_at')
    .execute();
  await db.schema.createIndex('sessions_expires_idx').on('sessions').column('expires_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of [
    'access_tokens_expires_idx',
    'access_tokens_session_idx',
    'refresh_tokens_expires_idx',
    'authorization_codes_expires_idx',
    'authorization_requests_expires_idx',
    'sessions_expires_idx',
  ]) {
    await db.schema.dropIndex(name).execute();
  }
  await db.schema.alterTable('applications').dropColumn('post_logout_redirect_uris').execute();
  await db.schema.alterTable('grants').dropColumn('auth_time').execute();
  await db.schema
    .alterTable('refresh_tokens')
    .dropColumn('id')
    .dropColumn('session_id')
    .dropColumn('successor_hash')
    .dropColumn('successor_sealed')
    .dropColumn('successor_access_sealed')
    .execute();
}
