// Sign-up proves mailbox control before an account exists (issue 31, item 3). A sign-up stores a pending
// request here (the password already hashed) and mails a single-use link; the account is created, verified,
// only when the mailbox owner confirms it. users.self_registered tells an account made by sign-up from one
// an operator made (admin API, CLI, seed): a self-registered account that never verified its address gives
// no claim to it (a confirmed sign-up takes the address over) and expires (UNVERIFIED_ACCOUNT_TTL).
// Existing rows count as self-registered when the audit trail records their sign-up.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('sign_up_requests')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('name', 'text')
    .addColumn('request_id', 'text')
    .addColumn('client_id', 'text')
    .addColumn('redirect_uri', 'text')
    .addColumn('ip', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('sign_up_requests_expires_idx').on('sign_up_requests').column('expires_at').execute();
  await db.schema
    .alterTable('users')
    .addColumn('self_registered', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  await sql`update users set self_registered = true where exists (
      select 1 from audit_events a where a.type = 'user.signed_up' and a.user_id = users.id)`.execute(db);
  // The clean-up job looks for never-verified self-registered accounts by age.
  await sql`create index users_unverified_self_registered_idx on users (created_at)
      where self_registered and not email_verified`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists users_unverified_self_registered_idx`.execute(db);
  await db.schema.alterTable('users').dropColumn('self_registered').execute();
  await db.schema.dropTable('sign_up_requests').execute();
}
