// Pending authorization requests, consents, grants, codes and tokens.
import { sql, type Selectable } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import type {
  RefreshTokensTable,
  AccessTokensTable,
  AuthorizationCodesTable,
  AuthorizationRequestParams,
  AuthorizationRequestsTable,
} from '../tables.js';

export type AuthorizationRequestRow = Selectable<AuthorizationRequestsTable>;
export type AuthorizationCodeRow = Selectable<AuthorizationCodesTable>;
export type AccessTokenRow = Selectable<AccessTokensTable>;

export async function insertAuthorizationRequest(
  db: Db,
  row: { id: string; client_id: string; params: AuthorizationRequestParams; expires_at: Date; browser_hash: string },
): Promise<AuthorizationRequestRow> {
  return db
    .insertInto('authorization_requests')
    .values({ ...row, params: JSON.stringify(row.params) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** A request that is neither completed nor expired, presented by the browser that started it. */
export async function findPendingAuthorizationRequest(db: Db, id: string, browserHash: string): Promise<AuthorizationRequestRow | undefined> {
  return db
    .selectFrom('authorization_requests')
    .selectAll()
    .where('id', '=', id)
    .where('browser_hash', '=', browserHash)
    .where('completed_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** Records who completed sign-in on a pending request of this browser, in which session. */
export async function recordRequestSignIn(db: Db, id: string, browserHash: string, who: { userId: string; sessionId: string }): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ login_completed_at: sql`now()`, login_user_id: who.userId, login_session_id: who.sessionId })
    .where('id', '=', id)
    .where('browser_hash', '=', browserHash)
    .where('completed_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records who consented on a pending request, and to which scopes. */
export async function recordRequestConsent(db: Db, id: string, userId: string, scopes: string[]): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ consent_given_at: sql`now()`, consent_user_id: userId, consent_scopes: JSON.stringify(scopes) })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Ends a request (a code was issued, or an error was redirected); true only for the first caller. */
export async function completeAuthorizationRequest(db: Db, id: string): Promise<boolean> {
  const r = await db
    .updateTable('authorization_requests')
    .set({ completed_at: sql`now()` })
    .where('id', '=', id)
    .where('completed_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

export async function findConsent(db: Db, userId: string, clientId: string): Promise<string[] | undefined> {
  const row = await db.selectFrom('consents').select('scopes').where('user_id', '=', userId).where('client_id', '=', clientId).executeTakeFirst();
  return row?.scopes;
}

/** Remembers the union of what the user has consented to for this application. */
export async function upsertConsent(db: Db, userId: string, clientId: string, scopes: string[]): Promise<void> {
  const existing = (await findConsent(db, userId, clientId)) ?? [];
  const merged = [...new Set([...existing, ...scopes])];
  await db
    .insertInto('consents')
    .values({ user_id: userId, client_id: clientId, scopes: JSON.stringify(merged) })
    .onConflict((oc) => oc.columns(['user_id', 'client_id']).doUpdateSet({ scopes: JSON.stringify(merged), updated_at: sql`now()` }))
    .execute();
}

export async function insertGrant(db: Db, row: { id: string; user_id: string; client_id: string; scope: string; session_id: string | null; auth_time: Date }) {
  await db.insertInto('grants').values(row).execute();
}

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
): Promise<{ code: AuthorizationCodeRow; replayed: false } | { code: AuthorizationCodeRow; replayed: true } | undefined> {
  const consumed = await db
    .updateTable('authorization_codes')
    .set({ consumed_at: sql`now()` })
    .where('code_hash', '=', codeHash)
    .where('consumed_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  if (consumed) return { code: consumed, replayed: false };
  const existing = await db.selectFrom('authorization_codes').selectAll().where('code_hash', '=', codeHash).executeTakeFirst();
  return existing ? { code: existing, replayed: true } : undefined;
}

/** RFC 6749 §4.1.2: a replayed code revokes every token issued from its grant. */
export async function revokeGrant(db: Db, grantId: string): Promise<void> {
  await db.updateTable('grants').set({ revoked_at: sql`now()` }).where('id', '=', grantId).where('revoked_at', 'is', null).execute();
  await db.updateTable('access_tokens').set({ revoked_at: sql`now()` }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
  await db.updateTable('refresh_tokens').set({ revoked_at: sql`now()` }).where('grant_id', '=', grantId).where('revoked_at', 'is', null).execute();
}

export async function insertAccessToken(db: Db, row: Omit<AccessTokenRow, 'created_at' | 'revoked_at'>): Promise<void> {
  await db.insertInto('access_tokens').values(row).execute();
}

export async function insertRefreshToken(
  db: Db,
  row: { id: string; token_hash: string; grant_id: string; client_id: string; user_id: string; scope: string; expires_at: Date; absolute_expires_at: Date },
): Promise<void> {
  await db.insertInto('refresh_tokens').values(row).execute();
}

export type RefreshTokenRow = Selectable<RefreshTokensTable>;

/** The refresh token row, locked for the rest of the transaction, with its grant's state. */
export async function lockRefreshToken(db: Db, tokenHash: string) {
  return db
    .selectFrom('refresh_tokens')
    .innerJoin('grants', 'grants.id', 'refresh_tokens.grant_id')
    .selectAll('refresh_tokens')
    .select(['grants.revoked_at as grant_revoked_at', 'grants.scope as grant_scope', 'grants.auth_time as grant_auth_time'])
    .where('refresh_tokens.token_hash', '=', tokenHash)
    .forUpdate('refresh_tokens')
    .executeTakeFirst();
}

export async function markRefreshTokenUsed(
  db: Db,
  tokenHash: string,
  successor: { hash: string; sealed: string | null; accessSealed: string | null },
): Promise<void> {
  await db
    .updateTable('refresh_tokens')
    .set({ used_at: sql`now()`, successor_hash: successor.hash, successor_sealed: successor.sealed, successor_access_sealed: successor.accessSealed })
    .where('token_hash', '=', tokenHash)
    .execute();
}

export async function findRefreshTokenByHash(db: Db, tokenHash: string): Promise<RefreshTokenRow | undefined> {
  return db.selectFrom('refresh_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function revokeAccessToken(db: Db, tokenHash: string): Promise<void> {
  await db.updateTable('access_tokens').set({ revoked_at: sql`now()` }).where('token_hash', '=', tokenHash).where('revoked_at', 'is', null).execute();
}

export async function findAccessTokenByHash(db: Db, tokenHash: string): Promise<AccessTokenRow | undefined> {
  return db.selectFrom('access_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}


/** Revokes every token of a grant family issued to this client, for RFC 7009 refresh revocation. */
export async function revokeRefreshFamily(db: Db, refreshHash: string, clientId: string): Promise<{ grantId: string; userId: string } | undefined> {
  const row = await db.selectFrom('refresh_tokens').select(['grant_id', 'user_id', 'client_id']).where('token_hash', '=', refreshHash).executeTakeFirst();
  if (!row || row.client_id !== clientId) return undefined;
  await revokeGrant(db, row.grant_id);
  return { grantId: row.grant_id, userId: row.user_id };
}

/** Access tokens of these sessions (not the offline ones issued by refresh) are revoked. */
export async function revokeSessionAccessTokens(db: Db, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db.updateTable('access_tokens').set({ revoked_at: sql`now()` }).where('session_id', 'in', sessionIds).where('revoked_at', 'is', null).execute();
}

export async function listUserGrants(db: Db, userId: string) {
  return db.selectFrom('grants').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').execute();
}

/** Grants of the user (all, one, or those of some sessions) that are still live. */
export async function liveGrantIds(db: Db, userId: string, filter: { grantId?: string; sessionIds?: string[] } = {}): Promise<string[]> {
  let q = db.selectFrom('grants').select('id').where('user_id', '=', userId).where('revoked_at', 'is', null);
  if (filter.grantId) q = q.where('id', '=', filter.grantId);
  if (filter.sessionIds) {
    if (filter.sessionIds.length === 0) return [];
    q = q.where('session_id', 'in', filter.sessionIds);
  }
  return (await q.execute()).map((r) => r.id);
}

export async function deleteConsents(db: Db, userId: string, clientIds?: string[]): Promise<void> {
  let q = db.deleteFrom('consents').where('user_id', '=', userId);
  if (clientIds) {
    if (clientIds.length === 0) return;
    q = q.where('client_id', 'in', clientIds);
  }
  await q.execute();
}

export interface BearerRow {
  token: AccessTokenRow;
  /** undefined when the user row is gone. */
  user: { id: string; email: string; email_verified: boolean; name: string | null; given_name: string | null; family_name: string | null; picture: string | null; permissions: string[]; disabled: boolean } | undefined;
  /** null when the application is not in the database (it may be a static one). */
  applicationEnabled: boolean | null;
}

/**
 * Everything a bearer request needs, in one round trip: the live access token, its user and its
 * database application's enabled flag. Live: known, not expired, not revoked, its grant not revoked,
 * and, when it was issued in a browser session (not offline, by refresh), that session still live:
 * sign-out, session expiry (absolute or idle) and admin revocation end it.
 */
/** Every request to /api/external/* and UserInfo runs this: a prepared statement on PostgreSQL. */
export async function findBearer(db: Db, tokenHash: string, sessionIdleSeconds: number): Promise<BearerRow | undefined> {
  const query = db
    .selectFrom('access_tokens')
    .innerJoin('grants', 'grants.id', 'access_tokens.grant_id')
    .leftJoin('sessions', 'sessions.id', 'access_tokens.session_id')
    .leftJoin('users', 'users.id', 'access_tokens.user_id')
    .leftJoin('applications', 'applications.client_id', 'access_tokens.client_id')
    // Explicit columns (never `*`): a prepared statement must keep its result shape across migrations.
    .select([
      'access_tokens.token_hash',
      'access_tokens.grant_id',
      'access_tokens.client_id',
      'access_tokens.user_id',
      'access_tokens.scope',
      'access_tokens.session_id',
      'access_tokens.created_at',
      'access_tokens.expires_at',
      'access_tokens.revoked_at',
      'users.id as u_id',
      'users.email as u_email',
      'users.email_verified as u_email_verified',
      'users.name as u_name',
      'users.given_name as u_given_name',
      'users.family_name as u_family_name',
      'users.picture as u_picture',
      'users.permissions as u_permissions',
      'users.disabled as u_disabled',
      'applications.enabled as app_enabled',
    ])
    .where('access_tokens.token_hash', '=', tokenHash)
    .where('access_tokens.revoked_at', 'is', null)
    .where('grants.revoked_at', 'is', null)
    .where('access_tokens.expires_at', '>', sql<Date>`now()`)
    .where((eb) =>
      eb.or([
        eb('access_tokens.session_id', 'is', null),
        eb.and([
          eb('sessions.revoked_at', 'is', null),
          eb('sessions.expires_at', '>', sql<Date>`now()`),
          eb(sql`sessions.last_seen_at`, '>', sql`now() - make_interval(secs => ${sessionIdleSeconds})`),
        ]),
      ]),
    )
    .compile();
  const [row] = await executePrepared(db, 'idp_find_bearer', query);
  if (!row) return undefined;
  const { u_id, u_email, u_email_verified, u_name, u_given_name, u_family_name, u_picture, u_permissions, u_disabled, app_enabled, ...token } = row;
  return {
    token: token as AccessTokenRow,
    user: u_id
      ? { id: u_id, email: u_email!, email_verified: u_email_verified!, name: u_name ?? null, given_name: u_given_name ?? null, family_name: u_family_name ?? null, picture: u_picture ?? null, permissions: (u_permissions as string[] | null) ?? [], disabled: u_disabled! }
      : undefined,
    applicationEnabled: app_enabled ?? null,
  };
}

/**
 * Everything the user was ever given stops working: grants, access and refresh tokens (offline ones
 * included), and codes not yet exchanged. Returns how many live grants were revoked.
 */
export async function revokeAllUserTokens(db: Db, userId: string): Promise<number> {
  const grants = await db.updateTable('grants').set({ revoked_at: sql`now()` }).where('user_id', '=', userId).where('revoked_at', 'is', null).executeTakeFirst();
  await db.updateTable('access_tokens').set({ revoked_at: sql`now()` }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  await db.updateTable('refresh_tokens').set({ revoked_at: sql`now()` }).where('user_id', '=', userId).where('revoked_at', 'is', null).execute();
  await db.deleteFrom('authorization_codes').where('user_id', '=', userId).where('consumed_at', 'is', null).execute();
  return Number(grants.numUpdatedRows);
}

/** The refresh token's family, revoked whatever client it belongs to (the cookie logout has no client_id). */
export async function revokeRefreshFamilyByHash(db: Db, refreshHash: string): Promise<{ grantId: string; userId: string; clientId: string } | undefined> {
  const row = await db.selectFrom('refresh_tokens').select(['grant_id', 'user_id', 'client_id']).where('token_hash', '=', refreshHash).executeTakeFirst();
  if (!row) return undefined;
  await revokeGrant(db, row.grant_id);
  return { grantId: row.grant_id, userId: row.user_id, clientId: row.client_id };
}
