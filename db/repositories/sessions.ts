import { sql } from 'kysely';
import type { Db } from '../create-db.js';
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
  },
): Promise<SessionRow> {
  return db.insertInto('sessions').values(row).returningAll().executeTakeFirstOrThrow();
}

/**
 * The live session for a cookie: not revoked, within its absolute lifetime and its idle timeout, of an
 * enabled user. Touches last_seen_at (sliding idle timeout) in the same statement.
 */
export async function touchLiveSession(
  db: Db,
  tokenHash: string,
  idleSeconds: number,
): Promise<{ session: SessionRow; user: UserRow } | undefined> {
  const session = await db
    .updateTable('sessions')
    .set({ last_seen_at: sql`now()` })
    .where('token_hash', '=', tokenHash)
    .where('revoked_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .where(sql<boolean>`last_seen_at > now() - make_interval(secs => ${idleSeconds})`)
    .returningAll()
    .executeTakeFirst();
  if (!session) return undefined;
  const user = await db
    .selectFrom('users')
    .selectAll()
    .where('id', '=', session.user_id)
    .where('disabled', '=', false)
    .executeTakeFirst();
  return user ? { session, user } : undefined;
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
