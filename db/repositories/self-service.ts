// SQL of the account self-service (src/services/self-service/): what the signed-in user holds, per
// application and per session, and the deletion of every row about a user.
import { sql } from 'kysely';
import type { Db, Tx } from '../create-db.js';
import { pseudonymiseUserAuditEvents } from './audit.js';

export async function listUserConsents(db: Db, userId: string) {
  return db
    .selectFrom('consents')
    .select(['client_id', 'scopes', 'created_at', 'updated_at'])
    .where('user_id', '=', userId)
    .execute();
}

export async function listLiveUserGrants(db: Db, userId: string) {
  return db
    .selectFrom('grants')
    .select(['id', 'client_id', 'scope', 'created_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .execute();
}

/** Per application, when the user's tokens were last issued or rotated (the newest access or refresh token). */
export async function lastUseByClient(db: Db, userId: string): Promise<Map<string, Date>> {
  const { rows } = await sql<{ client_id: string; last_used: Date }>`
    select client_id, max(created_at) as last_used from (
      select client_id, created_at from access_tokens where user_id = ${userId}
      union all
      select client_id, created_at from refresh_tokens where user_id = ${userId}
    ) t group by client_id`.execute(db);
  return new Map(rows.map((r) => [r.client_id, new Date(r.last_used)]));
}

/**
 * Everything the user gave one application ends: the remembered consent, every grant with its access
 * and refresh tokens (tokens outside a live grant too) and every code not yet exchanged. Returns
 * whether a consent was deleted and the ids of the grants that were live.
 */
export async function revokeClientAccess(
  db: Tx,
  userId: string,
  clientId: string,
): Promise<{ consent: boolean; grantIds: string[] }> {
  const consent = await db
    .deleteFrom('consents')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .executeTakeFirst();
  const grants = await db
    .updateTable('grants')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  for (const table of ['access_tokens', 'refresh_tokens'] as const) {
    await db
      .updateTable(table)
      .set({ revoked_at: sql`now()` })
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .where('revoked_at', 'is', null)
      .execute();
  }
  await db
    .deleteFrom('authorization_codes')
    .where('user_id', '=', userId)
    .where('client_id', '=', clientId)
    .where('consumed_at', 'is', null)
    .execute();
  // Sealed codes not yet exchanged die with the consent: the exchange wants the consent they were issued under.
  return { consent: Number(consent.numDeletedRows) > 0, grantIds: grants.map((g) => g.id) };
}

/** Sessions that still sign the user in: not revoked, within the absolute and the idle lifetime. */
export async function listLiveUserSessions(db: Db, userId: string, idleSeconds: number) {
  return db
    .selectFrom('sessions')
    .select(['id', 'ip', 'user_agent', 'created_at', 'last_seen_at', 'expires_at'])
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where('last_seen_at', '>', sql<Date>`now() - make_interval(secs => ${idleSeconds})`)
    .orderBy('last_seen_at', 'desc')
    .execute();
}

/** Revokes the user's live sessions except one (a password change keeps the session that made it). */
export async function revokeOtherUserSessions(db: Db, userId: string, keepSessionId: string): Promise<string[]> {
  const rows = await db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('id', '!=', keepSessionId)
    .where('revoked_at', 'is', null)
    .returning('id')
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Gives a live session a new cookie secret (its SHA-256): the session, its id and sign-in time stay, any copy
 * of the old cookie stops working. Answers the session's fixed expiry, or undefined when it is no longer live.
 */
export async function renewSessionSecret(db: Db, sessionId: string, tokenHash: string): Promise<Date | undefined> {
  const row = await db
    .updateTable('sessions')
    .set({ token_hash: tokenHash })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returning('expires_at')
    .executeTakeFirst();
  return row?.expires_at;
}

/** What the data export lists besides the profile: every row about the user, without hashes. */
export async function exportRows(db: Db, userId: string) {
  const [sessions, grants, accessTokens, refreshTokens, verifications, resets, audit, identities] = await Promise.all([
    db
      .selectFrom('sessions')
      .select(['id', 'ip', 'user_agent', 'auth_time', 'created_at', 'last_seen_at', 'expires_at', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('grants')
      .select(['id', 'client_id', 'scope', 'session_id', 'auth_time', 'created_at', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('access_tokens')
      .select(['grant_id', 'client_id', 'scope', 'session_id', 'created_at', 'expires_at', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('refresh_tokens')
      .select(['grant_id', 'client_id', 'scope', 'created_at', 'expires_at', 'used_at', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('email_verification_tokens')
      .select(['email', 'client_id', 'created_at', 'expires_at', 'used_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('password_reset_tokens')
      .select(['redirect_to', 'created_at', 'expires_at', 'used_at', 'revoked_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
    db
      .selectFrom('audit_events')
      .select(['id', 'type', 'actor', 'client_id', 'ip', 'detail', 'created_at'])
      .where('user_id', '=', userId)
      .orderBy('id')
      .execute(),
    // Linked upstream identities (issue 35), never their stored tokens.
    db
      .selectFrom('upstream_identities')
      .select(['provider_id', 'subject', 'email', 'created_at', 'last_used_at'])
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .execute(),
  ]);
  return { sessions, grants, accessTokens, refreshTokens, verifications, resets, audit, identities };
}

/**
 * Deletes the user and every row that references them, table by table (not by relying on the foreign
 * keys' cascades alone: some references have none, e.g. pending authorization requests, which may also
 * name the address as login_hint). The user's audit events stay as security records under `pseudonym`,
 * without personal data (pseudonymiseUserAuditEvents; issue 31 item 7a), and so do the events of actions
 * the user took as an administrator. Returns the number of rows per table.
 */
export async function deleteUserEverywhere(
  db: Tx,
  userId: string,
  email: string,
  pseudonym: string,
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  const count = (table: string, r: { numDeletedRows: bigint } | { numUpdatedRows: bigint }) => {
    counts[table] = Number('numDeletedRows' in r ? r.numDeletedRows : r.numUpdatedRows);
  };
  for (const table of [
    'access_tokens',
    'refresh_tokens',
    'authorization_codes',
    'grants',
    'consents',
    'sessions',
    'email_verification_tokens',
    'password_reset_tokens',
    'email_change_tokens',
  ] as const) {
    count(table, await db.deleteFrom(table).where('user_id', '=', userId).executeTakeFirst());
  }
  count(
    'authorization_requests',
    await db
      .deleteFrom('authorization_requests')
      .where((eb) =>
        eb.or([
          eb('login_user_id', '=', userId),
          eb('consent_user_id', '=', userId),
          // A pending request that names the address (login_hint) is about the user too.
          eb(sql`lower(params->>'login_hint')`, '=', sql`lower(${email})`),
        ]),
      )
      .executeTakeFirst(),
  );
  counts['audit_events (pseudonymised)'] = await pseudonymiseUserAuditEvents(db, userId, email, pseudonym);
  count('users', await db.deleteFrom('users').where('id', '=', userId).executeTakeFirst());
  return counts;
}

/**
 * Whether an enabled administrator other than `userId` exists. The admins' rows are locked, so that two
 * administrators deleting themselves at once cannot both count on the other.
 */
export async function anotherActiveAdmin(db: Tx, userId: string): Promise<boolean> {
  const rows = await db
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'admin')
    .where('disabled', '=', false)
    .orderBy('id')
    .forUpdate()
    .execute();
  return rows.some((r) => r.id !== userId);
}
