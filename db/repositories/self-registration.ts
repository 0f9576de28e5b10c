// SQL for clients that registered themselves (0021-self-registration): their rows in applications (registration
// 'dynamic' or 'metadata_document'), the initial access tokens of REGISTRATION=token, and the clean-up of unused ones.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';
import type { ApplicationRow, NewApplicationRow } from '../tables.js';

export async function insertSelfRegistered(db: Db, row: NewApplicationRow): Promise<ApplicationRow> {
  return db.insertInto('applications').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * A metadata document's application, as fetched now: inserted, or its name, redirect URIs, logo and scopes replaced
 * and its freshness renewed. Only a row that is a metadata document's is changed (enabled stays as the operator set
 * it); undefined when the client id belongs to another kind of application.
 */
export async function upsertMetadataDocumentClient(
  db: Db,
  row: NewApplicationRow & { metadata_fetched_at: Date; metadata_expires_at: Date },
): Promise<ApplicationRow | undefined> {
  return db
    .insertInto('applications')
    .values(row)
    .onConflict((oc) =>
      oc
        .column('client_id')
        .doUpdateSet({
          name: row.name,
          logo_url: row.logo_url ?? null,
          redirect_uris: row.redirect_uris,
          allowed_scopes: row.allowed_scopes,
          metadata_fetched_at: row.metadata_fetched_at,
          metadata_expires_at: row.metadata_expires_at,
          updated_at: sql`now()`,
        })
        .where('applications.registration', '=', 'metadata_document'),
    )
    .returningAll()
    .executeTakeFirst();
}

/** The client was used now: last_used_at, written at most once an hour per client. */
export async function touchSelfRegistered(db: Db, clientId: string): Promise<void> {
  await db
    .updateTable('applications')
    .set({ last_used_at: sql`now()` })
    .where('client_id', '=', clientId)
    .where('registration', '<>', 'operator')
    .where((eb) =>
      eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - interval '1 hour'`)]),
    )
    .execute();
}

/** Self-registered clients not used (nor created) for `days` days: deleted, their ids returned. */
export async function deleteUnusedSelfRegistered(db: Db, days: number): Promise<string[]> {
  const rows = await db
    .deleteFrom('applications')
    .where('registration', '<>', 'operator')
    .where(sql<boolean>`coalesce(last_used_at, created_at) < now() - make_interval(days => ${days})`)
    .returning('client_id')
    .execute();
  return rows.map((r) => r.client_id);
}

export interface RegistrationTokenRow {
  id: string;
  description: string | null;
  uses_left: number | null;
  expires_at: Date;
  created_by: string;
  created_at: Date;
}

export async function insertRegistrationToken(
  db: Db,
  row: {
    id: string;
    token_hash: string;
    description: string | null;
    uses_left: number | null;
    expires_at: Date;
    created_by: string;
  },
): Promise<RegistrationTokenRow> {
  return db
    .insertInto('registration_tokens')
    .values(row)
    .returning(['id', 'description', 'uses_left', 'expires_at', 'created_by', 'created_at'])
    .executeTakeFirstOrThrow();
}

export async function listRegistrationTokens(db: Db): Promise<RegistrationTokenRow[]> {
  return db
    .selectFrom('registration_tokens')
    .select(['id', 'description', 'uses_left', 'expires_at', 'created_by', 'created_at'])
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('created_at', 'desc')
    .execute();
}

export async function deleteRegistrationToken(db: Db, id: string): Promise<boolean> {
  const result = await db.deleteFrom('registration_tokens').where('id', '=', id).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/**
 * One registration with an initial access token, in one statement: a live token with uses left has one fewer
 * (null: unlimited). The token's id when it was spent, undefined when it is unknown, expired or used up.
 */
export async function spendRegistrationToken(db: Db, tokenHash: string): Promise<string | undefined> {
  const row = await db
    .updateTable('registration_tokens')
    .set({ uses_left: sql`case when uses_left is null then null else uses_left - 1 end` })
    .where('token_hash', '=', tokenHash)
    .where('expires_at', '>', sql<Date>`now()`)
    .where((eb) => eb.or([eb('uses_left', 'is', null), eb('uses_left', '>', 0)]))
    .returning('id')
    .executeTakeFirst();
  return row?.id;
}

/** Expired and used-up initial access tokens (the clean-up job). */
export async function deleteDeadRegistrationTokens(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('registration_tokens')
    .where((eb) => eb.or([eb('expires_at', '<=', sql<Date>`now()`), eb('uses_left', '=', 0)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Everything users gave a client id ends: its grants, access and refresh tokens, and remembered consents. Run when
 * a self-registered client goes (its own deletion, the clean-up) and when a metadata document's URL gets a new row
 * after its old one was deleted: what was given to the deleted client does not come back with the new one.
 * Answers how many live grants were revoked.
 */
export async function revokeClientGrants(db: Db, clientId: string): Promise<number> {
  const grants = await db
    .updateTable('grants')
    .set({ revoked_at: sql`now()` })
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  for (const table of ['access_tokens', 'refresh_tokens'] as const) {
    await db
      .updateTable(table)
      .set({ revoked_at: sql`now()` })
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute();
  }
  await db.deleteFrom('consents').where('client_id', '=', clientId).execute();
  return Number(grants.numUpdatedRows);
}
