import { CompiledQuery, sql } from 'kysely';
import { executePrepared, type Db } from '../create-db.js';
import type { SessionRow, UserRow } from '../tables.js';

export type { SessionRow };

export async function insertSession(
  db: Db,
  row: {
    id: string;
    token_hash: string;
    user_id: string;
    auth_time: Date;
    expires_at: Date;
    ip: string | null;
    user_agent: string | null;
    /** RFC 8176 methods (src/domain/mfa.ts); the column's default is ["pwd"]. */
    amr?: string[];
  },
): Promise<SessionRow> {
  const { amr, ...rest } = row;
  return db
    .insertInto('sessions')
    .values({ ...rest, ...(amr && { amr: JSON.stringify(amr) }) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

const SIGNED_IN = `with s as (
  insert into sessions (id, token_hash, user_id, auth_time, expires_at, ip, user_agent, amr)
  values ($1::text, $2::text, $3::text, $4::timestamptz, $5::timestamptz, $6::text, $7::text, $8::jsonb)
  returning id, amr
)
insert into audit_events (type, user_id, ip, detail)
select 'user.signed_in', $3::text, $6::text, jsonb_build_object('sessionId', s.id, 'amr', s.amr) from s`;

/** A new session after a sign-in and its user.signed_in event (with the session's amr), in one statement. */
export async function insertSignedInSession(
  db: Db,
  row: Parameters<typeof insertSession>[1] & { amr: string[] },
): Promise<void> {
  const { id, token_hash, user_id, auth_time, expires_at, ip, user_agent, amr } = row;
  const parameters = [id, token_hash, user_id, auth_time, expires_at, ip, user_agent, JSON.stringify(amr)];
  await executePrepared(db, 'idp_signed_in', CompiledQuery.raw(SIGNED_IN, parameters));
}

// The live session for a cookie with its enabled user, in one statement. last_seen_at (the sliding idle
// timeout) is written only when it is older than $3 seconds: a read on almost every request, a write
// about once a minute per session. The idle timeout then counts from a last-seen time up to $3 seconds
// old, so a session ends at most that much EARLIER than idle-after-last-use, never later.
// The two CTEs (s: the live session; touched) are shared with single sign-on's one-statement authorize
// (issuance.ts), so that both judge a session alike: `liveSessionCtes(hash, idle, touch)` with the numbers
// of the parameters holding the cookie's hash, the idle timeout and the touch interval.
export const liveSessionCtes = (hash: number, idle: number, touch: number) => `s as (
  select id, user_id, auth_time, amr from sessions
   where token_hash = $${hash}::text and revoked_at is null and expires_at > now()
     and last_seen_at > now() - make_interval(secs => $${idle}::double precision)
), touched as (
  update sessions set last_seen_at = now()
   where id = (select id from s) and last_seen_at < now() - make_interval(secs => $${touch}::double precision)
)`;

const LIVE_SESSION = `with ${liveSessionCtes(1, 2, 3)}
select s.id as session_id, s.auth_time, s.amr, u.id, u.email, u.email_verified, u.name, u.given_name, u.family_name,
  u.picture, u.permissions, u.disabled, u.role
from s join users u on u.id = s.user_id and u.disabled = false`;

export interface LiveSession {
  session: { id: string; auth_time: Date; amr: string[] };
  user: AccountUserColumns;
}

/** The user columns a session lookup reads: what an AccountUser is made of (src/services/rows.ts). */
export type AccountUserColumns = Pick<
  UserRow,
  | 'id'
  | 'email'
  | 'email_verified'
  | 'name'
  | 'given_name'
  | 'family_name'
  | 'picture'
  | 'permissions'
  | 'disabled'
  | 'role'
>;

/**
 * The live session for a cookie: not revoked, within its absolute lifetime and its idle timeout, of an
 * enabled user; touches last_seen_at at most every `touchSeconds`.
 */
export async function findLiveSession(
  db: Db,
  tokenHash: string,
  idleSeconds: number,
  touchSeconds: number,
): Promise<LiveSession | undefined> {
  const query = CompiledQuery.raw(LIVE_SESSION, [tokenHash, idleSeconds, touchSeconds]);
  type Row = AccountUserColumns & { session_id: string; auth_time: Date; amr: string[] };
  const [row] = await executePrepared(db, 'idp_live_session', query as CompiledQuery<Row>);
  if (!row) return undefined;
  const { session_id, auth_time, amr, ...user } = row;
  return { session: { id: session_id, auth_time, amr }, user };
}

export async function revokeSessionByHash(db: Db, tokenHash: string): Promise<SessionRow | undefined> {
  return db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

export async function listUserSessions(db: Db, userId: string): Promise<SessionRow[]> {
  return db.selectFrom('sessions').selectAll().where('user_id', '=', userId).orderBy('created_at', 'desc').execute();
}

/** Revokes the user's live sessions (one, or all); returns the ids revoked. */
export async function revokeUserSessions(db: Db, userId: string, sessionId?: string): Promise<string[]> {
  let q = db
    .updateTable('sessions')
    .set({ revoked_at: sql`now()` })
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null);
  if (sessionId) q = q.where('id', '=', sessionId);
  return (await q.returning('id').execute()).map((r) => r.id);
}

/**
 * A step-up (issue 34): the live session `sessionId` of `userId` gets the methods `amr` (the caller has combined
 * them with the session's own: src/domain/mfa.ts combineAmr) and a new auth_time (the user just authenticated).
 * Undefined when the session is no longer live.
 */
export async function stepUpSession(
  db: Db,
  sessionId: string,
  userId: string,
  amr: string[],
): Promise<SessionRow | undefined> {
  return db
    .updateTable('sessions')
    .set({ amr: JSON.stringify(amr), auth_time: sql`now()` })
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .returningAll()
    .executeTakeFirst();
}

/** The session `sessionId` of `userId`, locked, if it is not revoked (the step-up reads its amr under this lock). */
export async function lockSession(db: Db, sessionId: string, userId: string): Promise<SessionRow | undefined> {
  return db
    .selectFrom('sessions')
    .selectAll()
    .where('id', '=', sessionId)
    .where('user_id', '=', userId)
    .where('revoked_at', 'is', null)
    .forUpdate()
    .executeTakeFirst();
}
