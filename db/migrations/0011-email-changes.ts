// E-mail changes by the user (issue 17): a request stores the new address with a single-use token that
// is mailed to it; the address changes only when the link is opened. A table of its own, so that the
// verification tokens keep their rule (a link verifies the address it was mailed to, if still current).
// previous_email binds the link to the address of the moment: once the address changed otherwise (an
// operator), the link is dead. Rows go with their user (on delete cascade) and with the clean-up job.
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('email_change_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('previous_email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('email_change_tokens_user_idx').on('email_change_tokens').column('user_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('email_change_tokens').execute();
}
