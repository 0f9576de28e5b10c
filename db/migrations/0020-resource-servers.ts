// Registered resource servers and audience-bound tokens (issue 36).
//  - resource_servers: the operator's APIs (RFC 8707 resource indicators). identifier: an absolute URI, the
//    `resource` a client names and the access token's `aud`. scopes: the API's own scopes ([{name, label,
//    consentDescription}]), unique across every resource server and distinct from the built-in scopes.
//    access_token_format: 'opaque' (checked by introspection) or 'jwt' (RFC 9068, checked with the JWKS).
//    access_token_ttl: seconds, null for ACCESS_TOKEN_TTL. allowed_clients: the client ids that may ask for it;
//    allow_self_registered: whether self-registered clients (RFC 7591, metadata documents) may.
//    introspection_clients: confidential applications (the API's own credentials) that may introspect the
//    tokens whose audience this is. The built-in `/api/external` is not a row (src/domain/resource-server.ts).
//  - grants.resources: the resources the grant covers (the authorization request's `resource` values); [] is a
//    grant without resource indicators, whose tokens are for `/api/external` and UserInfo, as before.
//  - applications.registration: who registered the client: 'operator' (admin API, web, CLI, seed), 'dynamic'
//    (RFC 7591) or 'metadata_document' (a client ID metadata document); the last two are "self-registered".
//  - access_tokens.audience, client_access_tokens.audience: the one resource a token is for; null: none named.
//  - A statement trigger on resource_servers sends ':resources' on the channel of migration 0008, so every
//    instance drops its cached list (src/services/invalidation.ts, RESOURCES_PAYLOAD).
import { type Kysely, sql } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('resource_servers')
    .addColumn('identifier', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('scopes', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('access_token_format', 'text', (c) => c.notNull().defaultTo('opaque'))
    .addColumn('access_token_ttl', 'integer')
    .addColumn('allowed_clients', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('allow_self_registered', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('introspection_clients', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('enabled', 'boolean', (c) => c.notNull().defaultTo(true))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .alterTable('grants')
    .addColumn('resources', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
  await db.schema.alterTable('access_tokens').addColumn('audience', 'text').execute();
  await db.schema
    .alterTable('applications')
    .addColumn('registration', 'text', (c) => c.notNull().defaultTo('operator'))
    .execute();
  await db.schema.alterTable('client_access_tokens').addColumn('audience', 'text').execute();
  await sql
    .raw(
      `create function idp_notify_resources_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('idp_applications_changed', ':resources');
  return null;
end $$`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger resource_servers_changed_notify after insert or update or delete on resource_servers
       for each statement execute function idp_notify_resources_changed()`,
    )
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger resource_servers_changed_notify on resource_servers`.execute(db);
  await sql`drop function idp_notify_resources_changed()`.execute(db);
  await db.schema.alterTable('client_access_tokens').dropColumn('audience').execute();
  await db.schema.alterTable('applications').dropColumn('registration').execute();
  await db.schema.alterTable('access_tokens').dropColumn('audience').execute();
  await db.schema.alterTable('grants').dropColumn('resources').execute();
  await db.schema.dropTable('resource_servers').execute();
}
