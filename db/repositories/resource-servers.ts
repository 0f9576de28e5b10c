// Registered resource servers (migration 0020).
import { sql, type Insertable, type Selectable, type Updateable } from 'kysely';
import type { Db } from '../create-db.js';
import type { ResourceServersTable } from '../tables.js';

export type ResourceServerRow = Selectable<ResourceServersTable>;

export async function listResourceServers(db: Db): Promise<ResourceServerRow[]> {
  return db.selectFrom('resource_servers').selectAll().orderBy('created_at').orderBy('identifier').execute();
}

export async function findResourceServer(db: Db, identifier: string): Promise<ResourceServerRow | undefined> {
  return db.selectFrom('resource_servers').selectAll().where('identifier', '=', identifier).executeTakeFirst();
}

export async function insertResourceServer(db: Db, row: Insertable<ResourceServersTable>): Promise<void> {
  await db.insertInto('resource_servers').values(row).execute();
}

export async function updateResourceServer(
  db: Db,
  identifier: string,
  changes: Updateable<ResourceServersTable>,
): Promise<boolean> {
  const result = await db
    .updateTable('resource_servers')
    .set({ ...changes, updated_at: sql`now()` })
    .where('identifier', '=', identifier)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

export async function deleteResourceServer(db: Db, identifier: string): Promise<boolean> {
  const result = await db.deleteFrom('resource_servers').where('identifier', '=', identifier).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}
