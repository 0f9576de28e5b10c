// Upstream identity providers, the identities linked to users, the round trips in flight and the links waiting
// for an account owner's proof (migration 0019).
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../create-db.js';
import type {
  UpstreamFlowsTable,
  UpstreamIdentitiesTable,
  UpstreamPendingLinksTable,
  UpstreamProvidersTable,
} from '../tables.js';

export type UpstreamProviderRow = Selectable<UpstreamProvidersTable>;
export type UpstreamIdentityRow = Selectable<UpstreamIdentitiesTable>;
export type UpstreamFlowRow = Selectable<UpstreamFlowsTable>;
export type UpstreamPendingLinkRow = Selectable<UpstreamPendingLinksTable>;

export async function listUpstreamProviders(db: Db): Promise<UpstreamProviderRow[]> {
  return db.selectFrom('upstream_providers').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function findUpstreamProvider(db: Db, id: string): Promise<UpstreamProviderRow | undefined> {
  return db.selectFrom('upstream_providers').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function insertUpstreamProvider(db: Db, row: Insertable<UpstreamProvidersTable>): Promise<void> {
  await db.insertInto('upstream_providers').values(row).execute();
}

export async function updateUpstreamProvider(
  db: Db,
  id: string,
  changes: Updateable<UpstreamProvidersTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('upstream_providers')
    .set({ ...changes, updated_at: sql`now()` })
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteUpstreamProvider(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('upstream_providers').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function findUpstreamIdentity(
  db: Db,
  providerId: string,
  subject: string,
): Promise<UpstreamIdentityRow | undefined> {
  return db
    .selectFrom('upstream_identities')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('subject', '=', subject)
    .executeTakeFirst();
}

export async function findUpstreamIdentityById(db: Db, id: string): Promise<UpstreamIdentityRow | undefined> {
  return db.selectFrom('upstream_identities').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function listUpstreamIdentitiesOfUser(db: Db, userId: string): Promise<UpstreamIdentityRow[]> {
  return db
    .selectFrom('upstream_identities')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Every identity linked through a provider (what removing the provider takes with it). */
export async function listUpstreamIdentitiesOfProvider(db: Db, providerId: string): Promise<UpstreamIdentityRow[]> {
  return db
    .selectFrom('upstream_identities')
    .selectAll()
    .where('provider_id', '=', providerId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Inserts a link; false when (provider, subject) is linked already (to anyone). */
export async function insertUpstreamIdentity(db: Db, row: Insertable<UpstreamIdentitiesTable>): Promise<boolean> {
  const inserted = await db
    .insertInto('upstream_identities')
    .values(row)
    .onConflict((c) => c.columns(['provider_id', 'subject']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

export async function updateUpstreamIdentity(
  db: Db,
  id: string,
  changes: Updateable<UpstreamIdentitiesTable>,
): Promise<void> {
  await db.updateTable('upstream_identities').set(changes).where('id', '=', id).execute();
}

export async function deleteUpstreamIdentity(db: Db, userId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('upstream_identities')
    .where('id', '=', id)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function insertUpstreamFlow(db: Db, row: Insertable<UpstreamFlowsTable>): Promise<void> {
  await db.insertInto('upstream_flows').values(row).execute();
}

/** Takes the flow of this state hash, once (one statement: a second callback with the same state finds none). */
export async function takeUpstreamFlow(db: Db, id: string): Promise<UpstreamFlowRow | undefined> {
  return db
    .deleteFrom('upstream_flows')
    .where('id', '=', id)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

export async function insertUpstreamPendingLink(db: Db, row: Insertable<UpstreamPendingLinksTable>): Promise<void> {
  await db.insertInto('upstream_pending_links').values(row).execute();
}

export async function findUpstreamPendingLink(db: Db, tokenHash: string): Promise<UpstreamPendingLinkRow | undefined> {
  return db
    .selectFrom('upstream_pending_links')
    .selectAll()
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Takes the pending link of this token hash, once. */
export async function takeUpstreamPendingLink(db: Db, tokenHash: string): Promise<UpstreamPendingLinkRow | undefined> {
  return db
    .deleteFrom('upstream_pending_links')
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}
