// E-mail verification tokens are bound to the address they were sent to (issue 12, item 3): a link
// mailed to an old address must not verify a new one. Tokens live before this migration were sent to
// the user's address of now, so they are bound to it. Plus a user_id index: an e-mail change removes
// every outstanding verification token of the user.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('email_verification_tokens').addColumn('email', 'text').execute();
  await sql`update email_verification_tokens t set email = u.email from users u where u.id = t.user_id`.execute(db);
  await db.schema
    .alterTable('email_verification_tokens')
    .alterColumn('email', (c) => c.setNotNull())
    .execute();
  await db.schema
    .createIndex('email_verification_tokens_user_idx')
    .on('email_verification_tokens')
    .column('user_id')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('email_verification_tokens_user_idx').execute();
  await db.schema.alterTable('email_verification_tokens').dropColumn('email').execute();
}
