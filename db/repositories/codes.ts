// Authorization codes: single use, consumed by one atomic statement.
import { CompiledQuery, type Selectable } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import type { AuthorizationCodesTable } from '../tables.js';

export type AuthorizationCodeRow = Selectable<AuthorizationCodesTable>;

export async function insertAuthorizationCode(
  db: Db,
  row: Omit<AuthorizationCodeRow, 'created_at' | 'consumed_at'>,
): Promise<void> {
  await db.insertInto('authorization_codes').values(row).execute();
}

// Consumes the code and says whether its user is still there and enabled, in one statement.
const CONSUME = `with c as (
  update authorization_codes set consumed_at = now() where code_hash = $1::text and consumed_at is null
  returning code_hash, grant_id, client_id, user_id, redirect_uri, code_challenge, nonce, scope, auth_time,
    session_id, created_at, expires_at, consumed_at
)
select c.*, (u.disabled = false) as user_active from c left join users u on u.id = c.user_id`;

/**
 * Consumes a code in one statement: of two concurrent exchanges exactly one gets the row. A code that
 * exists but was consumed before comes back with `replayed: true`; a consumed one says whether its user
 * is active.
 */
export async function consumeAuthorizationCode(
  db: Db,
  codeHash: string,
): Promise<
  | { code: AuthorizationCodeRow; replayed: false; userActive: boolean }
  | { code: AuthorizationCodeRow; replayed: true }
  | undefined
> {
  const [consumed] = await executePrepared(db, 'idp_consume_code', CompiledQuery.raw(CONSUME, [codeHash]));
  if (consumed) {
    const { user_active, ...code } = consumed as AuthorizationCodeRow & { user_active: boolean | null };
    return { code, replayed: false, userActive: user_active === true };
  }
  const existing = await db
    .selectFrom('authorization_codes')
    .selectAll()
    .where('code_hash', '=', codeHash)
    .executeTakeFirst();
  return existing ? { code: existing, replayed: true } : undefined;
}
