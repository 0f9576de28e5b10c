// Admin users (a role on the user) and the one-time setup links that create the first admin.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('user').check(sql`role in ('user', 'admin')`))
    .execute();
  await db.schema
    .createIndex('users_admin_idx')
    .on('users')
    .column('role')
    .where(sql.ref('role'), '=', 'admin')
    .execute();
  await db.schema
    .createTable('admin_setup_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('admin_setup_tokens').execute();
  await db.schema.dropIndex('users_admin_idx').execute();
  await db.schema.alterTable('users').dropColumn('role').execute();
}
