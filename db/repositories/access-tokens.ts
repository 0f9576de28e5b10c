// Access tokens (opaque; only their SHA-256 is stored) and the one-round-trip bearer lookup.
import { CompiledQuery, sql, type Selectable } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import type { AccessTokensTable } from '../tables.js';

export type AccessTokenRow = Selectable<AccessTokensTable>;

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
/**
 * The bearer answer for the access tokens of `source` (a table or a CTE with access_tokens' columns,
 * aliased t): token, user, application flag and how long the answer stays true, only while live.
 * `idle` names the parameter holding the session idle timeout in seconds. Shared by the lookup below and
 * by the statement that issues a token (db/repositories/issuance.ts), so both answer alike. `grants` names
 * the grants' source: a CTE when the same statement creates the grant (the code exchange, codes.ts).
 */
export function bearerSelect(source: string, idle: string, grants = 'grants'): string {
  return `select t.token_hash, t.grant_id, t.client_id, t.user_id, t.scope, t.session_id, t.created_at, t.audience,
  t.expires_at, t.revoked_at, u.id as u_id, u.email as u_email, u.email_verified as u_email_verified,
  u.name as u_name, u.given_name as u_given_name, u.family_name as u_family_name, u.picture as u_picture,
  u.permissions as u_permissions, u.disabled as u_disabled, a.enabled as app_enabled,
  (extract(epoch from least(t.expires_at, s.expires_at,
    s.last_seen_at + make_interval(secs => ${idle}::double precision)) - now()) * 1000)::float8 as live_ms
from ${source} t
join ${grants} g on g.id = t.grant_id
left join sessions s on s.id = t.session_id
left join users u on u.id = t.user_id
left join applications a on a.client_id = t.client_id
where t.revoked_at is null and g.revoked_at is null and t.expires_at > now()
  and (t.session_id is null or (s.revoked_at is null and s.expires_at > now()
    and s.last_seen_at > now() - make_interval(secs => ${idle}::double precision)))`;
}

// Fixed text (no query building per request), explicit columns (never `*`: a prepared statement must keep
// its result shape across migrations). $1 the token hash, $2 the session idle timeout in seconds.
const FIND_BEARER = `${bearerSelect('access_tokens', '$2')} and t.token_hash = $1::text`;

export type BearerQueryRow = AccessTokenRow & {
  u_id: string | null;
  u_email: string | null;
  u_email_verified: boolean | null;
  u_name: string | null;
  u_given_name: string | null;
  u_family_name: string | null;
  u_picture: string | null;
  u_permissions: string[] | null;
  u_disabled: boolean | null;
  app_enabled: boolean | null;
  live_ms: number;
};

/** Every request to /api/external/* and UserInfo runs this: a prepared statement on PostgreSQL. */
export async function findBearer(
  db: Db,
  tokenHash: string,
  sessionIdleSeconds: number,
): Promise<BearerRow | undefined> {
  const query = CompiledQuery.raw(FIND_BEARER, [tokenHash, sessionIdleSeconds]) as CompiledQuery<BearerQueryRow>;
  const [row] = await executePrepared(db, 'idp_find_bearer', query);
  if (!row) return undefined;
  return toBearerRow(row);
}

/** A row of bearerSelect as the bearer service takes it. */
export function toBearerRow(row: BearerQueryRow): BearerRow {
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
