// Authorization codes: single use, consumed by one atomic statement.
import { sql, type Selectable } from 'kysely';
import type { Db } from '../create-db.js';
import type { AuthorizationCodesTable } from '../tables.js';

export type AuthorizationCodeRow = Selectable<AuthorizationCodesTable>;

export async function insertAuthorizationCode(
  db: Db,
  row: Omit<AuthorizationCodeRow, 'created_at' | 'consumed_at'>,
): Promise<void> {
  await db.insertInto('authorization_codes').values(row).execute();
}

/**
 * Consumes a code in one statement: of two concurrent exchanges exactly one gets the row. A code that
 * exists but was consumed before comes back with `replayed: true`.
 */
export async function consumeAuthorizationCode(
  db: Db,
  codeHash: string,
): Promise<
  { code: AuthorizationCodeRow; replayed: false } | { code: AuthorizationCodeRow; replayed: true } | undefined
> {
  const consumed = await db
    .updateTable('authorization_codes')
    .set({ consumed_at: sql`now()` })
    .where('code_hash', '=', codeHash)
    .where('consumed_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (consumed) return { code: consumed, replayed: false };
  const existing = await db
    .selectFrom('authorization_codes')
    .selectAll()
    .where('code_hash', '=', codeHash)
    .executeTakeFirst();
  return existing ? { code: existing, replayed: true } : undefined;
}
