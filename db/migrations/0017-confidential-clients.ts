// Confidential clients (issue 33): an application's token endpoint authentication method (RFC 7591 §2
// token_endpoint_auth_method; 'none' is the public PKCE client every existing row stays), its PKCE policy, the grant
// types it may use, and its keys for private_key_jwt (inline jwks or a jwks_uri). Secrets live in their own table:
// only SHA-256 hashes of server-generated 256-bit secrets, at most two live at a time during a rotation (the old one
// with an end date). client_assertion_jtis remembers the jti of each private_key_jwt assertion until it expires
// (RFC 7523 §3: replay refused). client_access_tokens holds client_credentials tokens: no user and no grant, and
// apart from access_tokens so that UserInfo and /api/external/* (which need a user) never find them.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('applications')
    .addColumn('token_endpoint_auth_method', 'text', (c) => c.notNull().defaultTo('none'))
    .execute();
  await db.schema
    .alterTable('applications')
    .addColumn('pkce', 'text', (c) => c.notNull().defaultTo('required'))
    .execute();
  await db.schema
    .alterTable('applications')
    .addColumn('grant_types', 'jsonb', (c) =>
      c.notNull().defaultTo(sql`'["authorization_code","refresh_token"]'::jsonb`),
    )
    .execute();
  await db.schema.alterTable('applications').addColumn('jwks', 'jsonb').execute();
  await db.schema.alterTable('applications').addColumn('jwks_uri', 'text').execute();

  await db.schema
    .createTable('client_secrets')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull().references('applications.client_id').onDelete('cascade'))
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('client_secrets_client_idx').on('client_secrets').column('client_id').execute();

  await db.schema
    .createTable('client_assertion_jtis')
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('jti', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('client_assertion_jtis_pkey', ['client_id', 'jti'])
    .execute();
  await db.schema
    .createIndex('client_assertion_jtis_expiry_idx')
    .on('client_assertion_jtis')
    .column('expires_at')
    .execute();

  await db.schema
    .createTable('client_access_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('revoked_at', 'timestamptz')
    .execute();
  await db.schema
    .createIndex('client_access_tokens_client_idx')
    .on('client_access_tokens')
    .column('client_id')
    .execute();
  await db.schema
    .createIndex('client_access_tokens_expiry_idx')
    .on('client_access_tokens')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('client_access_tokens').execute();
  await db.schema.dropTable('client_assertion_jtis').execute();
  await db.schema.dropTable('client_secrets').execute();
  for (const column of ['jwks_uri', 'jwks', 'grant_types', 'pkce', 'token_endpoint_auth_method']) {
    await db.schema.alterTable('applications').dropColumn(column).execute();
  }
}
