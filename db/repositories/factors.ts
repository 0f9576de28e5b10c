// A user's second factors across their tables (migration 0018): what the sign-in asks, what the account
// pages and the admin list, and the operator's reset. Each factor kind's own writes live with its service.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

export interface FactorCounts {
  passkeys: number;
  totp: boolean;
  recovery_codes: number;
}

/** How many passkeys, whether a confirmed TOTP, and how many unused recovery codes the user holds. */
export async function factorCounts(db: Db, userId: string): Promise<FactorCounts> {
  const row = await db
    .selectNoFrom([
      sql<string>`(select count(*) from webauthn_credentials where user_id = ${userId})`.as('passkeys'),
      sql<boolean>`exists (select 1 from totp_factors where user_id = ${userId} and confirmed_at is not null)`.as(
        'totp',
      ),
      sql<string>`(select count(*) from recovery_codes where user_id = ${userId} and used_at is null)`.as(
        'recovery_codes',
      ),
    ])
    .executeTakeFirstOrThrow();
  return { passkeys: Number(row.passkeys), totp: row.totp, recovery_codes: Number(row.recovery_codes) };
}

export async function listPasskeyRows(db: Db, userId: string) {
  return db
    .selectFrom('webauthn_credentials')
    .select(['id', 'name', 'created_at', 'last_used_at', 'backed_up', 'device_type'])
    .where('user_id', '=', userId)
    .orderBy('created_at')
    .execute();
}

export async function findTotpRow(db: Db, userId: string) {
  return db.selectFrom('totp_factors').selectAll().where('user_id', '=', userId).executeTakeFirst();
}

/** The user's recovery code set: when it was made, how many are unused, when one was last used. */
export async function recoveryCodeSet(db: Db, userId: string) {
  const row = await db
    .selectFrom('recovery_codes')
    .select([
      sql<Date | null>`min(created_at)`.as('created_at'),
      sql<Date | null>`max(used_at)`.as('last_used_at'),
      sql<string>`count(*) filter (where used_at is null)`.as('remaining'),
      sql<string>`count(*)`.as('total'),
    ])
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow();
  return Number(row.total) === 0
    ? undefined
    : { created_at: row.created_at!, last_used_at: row.last_used_at, remaining: Number(row.remaining) };
}

/** Deletes every factor of the user (an operator's reset); answers how many of each went. */
export async function deleteAllFactors(db: Db, userId: string) {
  const passkeys = await db.deleteFrom('webauthn_credentials').where('user_id', '=', userId).executeTakeFirst();
  const totp = await db.deleteFrom('totp_factors').where('user_id', '=', userId).executeTakeFirst();
  const codes = await db.deleteFrom('recovery_codes').where('user_id', '=', userId).executeTakeFirst();
  return {
    passkeys: Number(passkeys.numDeletedRows),
    totp: Number(totp.numDeletedRows),
    recoveryCodes: Number(codes.numDeletedRows),
  };
}
