// SQL for client secrets (0017-confidential-clients): only SHA-256 hashes, at most two live per application during
// a rotation (the old one with an end date). Every function takes the executor to run on.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

export interface ClientSecretRow {
  id: string;
  client_id: string;
  created_at: Date;
  expires_at: Date | null;
}

const LIVE = sql<boolean>`(expires_at is null or expires_at > now())`;

export async function insertClientSecret(
  db: Db,
  row: { id: string; client_id: string; secret_hash: string },
): Promise<ClientSecretRow> {
  return db
    .insertInto('client_secrets')
    .values(row)
    .returning(['id', 'client_id', 'created_at', 'expires_at'])
    .executeTakeFirstOrThrow();
}

/** The live secrets of an application, newest first. */
export async function listLiveClientSecrets(db: Db, clientId: string): Promise<ClientSecretRow[]> {
  return db
    .selectFrom('client_secrets')
    .select(['id', 'client_id', 'created_at', 'expires_at'])
    .where('client_id', '=', clientId)
    .where(LIVE)
    .orderBy('created_at', 'desc')
    .execute();
}

/** The live secret of this application with this hash, if any (the hash is of a 256-bit secret: an index lookup). */
export async function findLiveClientSecret(
  db: Db,
  clientId: string,
  secretHash: string,
): Promise<ClientSecretRow | undefined> {
  return db
    .selectFrom('client_secrets')
    .select(['id', 'client_id', 'created_at', 'expires_at'])
    .where('secret_hash', '=', secretHash)
    .where('client_id', '=', clientId)
    .where(LIVE)
    .executeTakeFirst();
}

/**
 * Before a new secret is added: a secret already on its way out (it has an end date) goes now, and the ones without
 * an end date end `overlapSeconds` from now by the database clock (0: they go now). So at most two are live once
 * the new one is in. Returns when the old secret ends (null: no secret was live without an end date).
 */
export async function retireClientSecrets(db: Db, clientId: string, overlapSeconds: number): Promise<Date | null> {
  await sql`delete from client_secrets
    where client_id = ${clientId} and (expires_at is not null or ${overlapSeconds}::int = 0)`.execute(db);
  const ended = await sql<{ expires_at: Date }>`update client_secrets
    set expires_at = now() + make_interval(secs => ${overlapSeconds}::int)
    where client_id = ${clientId} and expires_at is null
    returning expires_at`.execute(db);
  const endsAt = ended.rows[0]?.expires_at;
  return endsAt ? new Date(endsAt) : null;
}

export async function deleteClientSecret(db: Db, clientId: string, id: string): Promise<boolean> {
  const result = await db
    .deleteFrom('client_secrets')
    .where('client_id', '=', clientId)
    .where('id', '=', id)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

export async function deleteClientSecrets(db: Db, clientId: string): Promise<number> {
  const result = await db.deleteFrom('client_secrets').where('client_id', '=', clientId).executeTakeFirst();
  return Number(result.numDeletedRows);
}
