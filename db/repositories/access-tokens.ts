// Access tokens (opaque; only their SHA-256 is stored) and the one-round-trip bearer lookup.
import { sql, type Selectable } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import type { AccessTokensTable } from '../tables.js';

export type AccessTokenRow = Selectable<AccessTokensTable>;

export async function insertAccessToken(db: Db, row: Omit<AccessTokenRow, 'created_at' | 'revoked_at'>): Promise<void> {
  await db.insertInto('access_tokens').values(row).execute();
}

export async function findAccessTokenByHash(db: Db, tokenHash: string): Promise<AccessTokenRow | undefined> {
  return db.selectFrom('access_tokens').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
}

export async function revokeAccessToken(db: Db, tokenHash: string): Promise<void> {
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .execute();
}

/** Access tokens of these sessions (not the offline ones issued by refresh) are revoked. */
export async function revokeSessionAccessTokens(db: Db, sessionIds: string[]): Promise<void> {
  if (sessionIds.length === 0) return;
  await db
    .updateTable('access_tokens')
    .set({ revoked_at: sql`now()` })
    .where('session_id', 'in', sessionIds)
    .where('revoked_at', 'is', null)
    .execute();
}

export interface BearerRow {
  token: AccessTokenRow;
  /** undefined when the user row is gone. */
  user:
    | {
        id: string;
        email: string;
        email_verified: boolean;
        name: string | null;
        given_name: string | null;
        family_name: string | null;
        picture: string | null;
        permissions: string[];
        disabled: boolean;
      }
    | undefined;
  /** null when the application is not in the database (it may be a static one). */
  applicationEnabled: boolean | null;
  /**
   * Milliseconds (by the database's clock) until the first of: the token's expiry, and, for a token of
   * a browser session, the session's absolute expiry and its idle deadline (a bearer request does not
   * touch the session). How long a cached answer may live at most.
   */
  liveForMs: number;
}

/**
 * Everything a bearer request needs, in one round trip: the live access token, its user and its
 * database application's enabled flag. Live: known, not expired, not revoked, its grant not revoked,
 * and, when it was issued in a browser session (not offline, by refresh), that session still live:
 * sign-out, session expiry (absolute or idle) and admin revocation end it.
 */
/** Every request to /api/external/* and UserInfo runs this: a prepared statement on PostgreSQL. */
export async function findBearer(
  db: Db,
  tokenHash: string,
  sessionIdleSeconds: number,
): Promise<BearerRow | undefined> {
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
      sql<number>`(extract(epoch from least(access_tokens.expires_at, sessions.expires_at,
        sessions.last_seen_at + make_interval(secs => ${sessionIdleSeconds})) - now()) * 1000)::float8`.as('live_ms'),
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
  const {
    u_id,
    u_email,
    u_email_verified,
    u_name,
    u_given_name,
    u_family_name,
    u_picture,
    u_permissions,
    u_disabled,
    app_enabled,
    live_ms,
    ...token
  } = row;
  return {
    token: token as AccessTokenRow,
    user: u_id
      ? {
          id: u_id,
          email: u_email!,
          email_verified: u_email_verified!,
          name: u_name ?? null,
          given_name: u_given_name ?? null,
          family_name: u_family_name ?? null,
          picture: u_picture ?? null,
          permissions: (u_permissions as string[] | null) ?? [],
          disabled: u_disabled!,
        }
      : undefined,
    applicationEnabled: app_enabled ?? null,
    liveForMs: Number(live_ms),
  };
}
