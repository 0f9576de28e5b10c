// Deletes expired rows in small batches. `for update skip locked` lets several instances run the job at
// once without waiting on each other or on requests that hold a row.
import { sql } from 'kysely';
import type { Db } from '../create-db.js';

export interface ExpiryRule {
  table: string;
  /** SQL condition over the table's columns; only fixed text from this file, never input. */
  where: string;
}

export function expiryRules(options: { sessionIdleSeconds: number; unverifiedAccountSeconds?: number }): ExpiryRule[] {
  const idle = Math.floor(options.sessionIdleSeconds);
  const unverified = Math.floor(options.unverifiedAccountSeconds ?? 7 * 24 * 3600);
  return [
    { table: 'authorization_codes', where: 'expires_at < now()' },
    { table: 'authorization_requests', where: 'expires_at < now()' },
    { table: 'access_tokens', where: 'expires_at < now()' },
    { table: 'client_access_tokens', where: 'expires_at < now()' },
    { table: 'refresh_tokens', where: 'expires_at < now() or absolute_expires_at < now()' },
    { table: 'email_verification_tokens', where: 'expires_at < now()' },
    { table: 'password_reset_tokens', where: 'expires_at < now()' },
    { table: 'email_change_tokens', where: 'expires_at < now()' },
    { table: 'sign_up_requests', where: 'expires_at < now()' },
    // The jti of a private_key_jwt assertion is kept only while the assertion could be replayed.
    { table: 'client_assertion_jtis', where: 'expires_at < now()' },
    // Second factors (issue 34): ceremonies and sign-ins waiting for a second factor are short-lived;
    // a TOTP enrolment never confirmed with a first code goes after a day.
    { table: 'webauthn_challenges', where: 'expires_at < now()' },
    { table: 'pending_sign_ins', where: 'expires_at < now()' },
    { table: 'upstream_flows', where: 'expires_at < now()' },
    { table: 'upstream_pending_links', where: 'expires_at < now()' },
    { table: 'totp_factors', where: "confirmed_at is null and created_at < now() - interval '1 day'" },
    // Self-registered accounts that never verified their address (issue 31): their sessions, grants,
    // tokens and links go with them (on delete cascade). Accounts an operator made never expire.
    {
      table: 'users',
      where: `self_registered and not email_verified and created_at < now() - interval '${unverified} seconds'`,
    },
    { table: 'sessions', where: `expires_at < now() or last_seen_at < now() - interval '${idle} seconds'` },
    // Shared rate-limit windows (expire: epoch milliseconds); the library's own sweep is off.
    { table: 'rate_limits', where: 'expire < extract(epoch from now()) * 1000' },
  ];
}

export async function deleteExpiredBatch(db: Db, rule: ExpiryRule, batchSize: number): Promise<number> {
  const victims = sql`select ctid from ${sql.table(rule.table)} where ${sql.raw(rule.where)} limit ${batchSize}`;
  const result = await sql`delete from ${sql.table(rule.table)} where ctid in (
      ${victims} for update skip locked)`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/** The plaintext successors kept for the refresh grace window are wiped once it has passed. */
export async function wipeExpiredSuccessors(db: Db, graceSeconds: number): Promise<number> {
  const result = await sql`update refresh_tokens set successor_sealed = null, successor_access_sealed = null
    where successor_sealed is not null and used_at < now() - make_interval(secs => ${graceSeconds})`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
