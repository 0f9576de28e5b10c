// Sign-in with another provider (issue 35).
//  - upstream_providers: the operator's upstream identity providers. kind 'oidc' (discovery from `issuer`, ID
//    token) or 'oauth2' (no ID token: the endpoints and a mapping say where the subject and the verified e-mail
//    are; GitHub is a preset). client_secret and private_jwk are sealed with SECRET_KEY (src/oauth/seal.ts, the
//    provider id as associated data). mapping: which upstream claim fills which field (subject, email,
//    email_verified, name, given_name, family_name, picture). allowed_domains: the e-mail domains it may sign in
//    (empty: any). sso_domains: addresses at these domains sign in with this provider (home-realm discovery).
//  - upstream_identities: a user's link to an upstream identity, by (provider, subject), never by e-mail. The
//    upstream's tokens only when the provider says store_tokens, sealed; they go with the link.
//  - upstream_flows: a round trip to an upstream in flight: keyed by the hash of its `state`, bound to the
//    browser (browser_hash: the hash of a cookie's value), with the nonce and the PKCE verifier, the pending
//    authorization request and where to return; consumed once.
//  - upstream_pending_links: an upstream identity whose e-mail belongs to an existing account, waiting for the
//    account's owner to prove it (a sign-in to that account in the same browser) before the link is made.
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('upstream_providers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('logo_url', 'text')
    .addColumn('issuer', 'text')
    .addColumn('authorization_endpoint', 'text')
    .addColumn('token_endpoint', 'text')
    .addColumn('userinfo_endpoint', 'text')
    .addColumn('emails_endpoint', 'text')
    .addColumn('client_id', 'text', (c) => c.notNull())
    .addColumn('client_secret', 'text')
    .addColumn('client_auth', 'text', (c) => c.notNull())
    .addColumn('private_jwk', 'text')
    .addColumn('scopes', 'jsonb', (c) => c.notNull())
    .addColumn('mapping', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('allow_sign_up', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('allowed_domains', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('trust_email_verified', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('sso_domains', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('store_tokens', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  await db.schema
    .createTable('upstream_identities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('provider_id', 'text', (c) => c.notNull().references('upstream_providers.id').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text')
    .addColumn('access_token', 'text')
    .addColumn('refresh_token', 'text')
    .addColumn('token_expires_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_used_at', 'timestamptz')
    .addUniqueConstraint('upstream_identities_subject_key', ['provider_id', 'subject'])
    .execute();
  await db.schema.createIndex('upstream_identities_user_idx').on('upstream_identities').column('user_id').execute();

  await db.schema
    .createTable('upstream_flows')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider_id', 'text', (c) => c.notNull().references('upstream_providers.id').onDelete('cascade'))
    .addColumn('browser_hash', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('request_id', 'text')
    .addColumn('return_to', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('upstream_flows_expiry_idx').on('upstream_flows').column('expires_at').execute();

  await db.schema
    .createTable('upstream_pending_links')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('provider_id', 'text', (c) => c.notNull().references('upstream_providers.id').onDelete('cascade'))
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('profile', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('request_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('upstream_pending_links_expiry_idx')
    .on('upstream_pending_links')
    .column('expires_at')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('upstream_pending_links').execute();
  await db.schema.dropTable('upstream_flows').execute();
  await db.schema.dropTable('upstream_identities').execute();
  await db.schema.dropTable('upstream_providers').execute();
}
