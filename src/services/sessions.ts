// Hosted-login sessions: an opaque cookie value, only its hash stored; absolute and idle lifetimes.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import {
  findLiveSession,
  insertSession,
  insertSignedInSession,
  lockSession,
  revokeSessionByHash,
  stepUpSession,
} from '../../db/repositories/sessions.js';
import { combineAmr } from '../domain/mfa.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { revokeSessionAccessTokens } from '../../db/repositories/access-tokens.js';
import type { Session, SessionContext } from '../domain/session.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { toAccountUser, toSession } from './rows.js';

export type { SessionContext } from '../domain/session.js';

/** last_seen_at is written at most this often per session (see findLiveSession). */
export const sessionTouchSeconds = (idleSeconds: number) => Math.min(60, idleSeconds / 10);

export function createSessionService(deps: { db: Db; ttlSeconds: number; idleSeconds: number }) {
  const { db } = deps;
  const touchSeconds = sessionTouchSeconds(deps.idleSeconds);
  const newSession = (
    userId: string,
    meta: { ip: string | null; userAgent: string | null },
    amr: string[] = ['pwd'],
  ) => {
    const token = generateToken();
    const now = new Date();
    const row = {
      id: randomUUID(),
      token_hash: hashToken(token),
      user_id: userId,
      auth_time: now,
      expires_at: new Date(now.getTime() + deps.ttlSeconds * 1000),
      ip: meta.ip,
      user_agent: meta.userAgent?.slice(0, 512) ?? null,
      amr,
    };
    return { token, row };
  };
  return {
    async create(
      userId: string,
      meta: { ip: string | null; userAgent: string | null },
      trx: Db = db,
      amr: string[] = ['pwd'],
    ): Promise<{ token: string; session: Session }> {
      const { token, row } = newSession(userId, meta, amr);
      return { token, session: toSession(await insertSession(trx, row)) };
    },
    /**
     * A session after a sign-in, recorded with its user.signed_in event in one statement. `amr`: how the user
     * authenticated (default a password alone; src/domain/mfa.ts).
     */
    async signedIn(userId: string, meta: { ip: string | null; userAgent: string | null }, amr: string[] = ['pwd']) {
      const { token, row } = newSession(userId, meta, amr);
      await insertSignedInSession(db, row);
      return { token, session: toSession(row) };
    },
    /**
     * A step-up (issue 34): the live session gets the methods `added` (combined with its own: combineAmr) and a
     * new auth_time, in place: the same session, cookie and sid. Audited as user.stepped_up. Undefined when
     * the session is no longer live.
     */
    async stepUp(
      sessionId: string,
      userId: string,
      added: string[],
      meta: { ip: string | null },
    ): Promise<Session | undefined> {
      return db.transaction().execute(async (trx) => {
        const locked = await lockSession(trx, sessionId, userId);
        if (!locked) return undefined;
        const amr = combineAmr(locked.amr, added);
        const row = await stepUpSession(trx, sessionId, userId, amr);
        if (!row) return undefined;
        await appendAuditEvent(trx, {
          type: 'user.stepped_up',
          userId,
          ip: meta.ip,
          detail: { sessionId, amr },
        });
        return toSession(row);
      });
    },
    async resolve(token: string | undefined): Promise<SessionContext | undefined> {
      if (!token || token.length > 100) return undefined;
      const live = await findLiveSession(db, hashToken(token), deps.idleSeconds, touchSeconds);
      return live && { session: toSession(live.session), user: toAccountUser(live.user) };
    },
    async revoke(token: string, actor: { ip?: string | null }) {
      await db.transaction().execute(async (trx) => {
        const session = await revokeSessionByHash(trx, hashToken(token));
        if (session) {
          // The session's access tokens end with it; offline tokens issued by refresh are not bound to it.
          await revokeSessionAccessTokens(trx, [session.id]);
          await appendAuditEvent(trx, {
            type: 'session.revoked',
            userId: session.user_id,
            ip: actor.ip ?? null,
            detail: { sessionId: session.id, reason: 'sign-out' },
          });
        }
      });
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
