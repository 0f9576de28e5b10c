// Hosted-login sessions: an opaque cookie value, only its hash stored; absolute and idle lifetimes.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import { insertSession, revokeSessionByHash, touchLiveSession } from '../../db/repositories/sessions.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { revokeSessionAccessTokens } from '../../db/repositories/access-tokens.js';
import type { Session, SessionContext } from '../domain/session.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { toAccountUser, toSession } from './rows.js';

export type { SessionContext } from '../domain/session.js';

export function createSessionService(deps: { db: Db; ttlSeconds: number; idleSeconds: number }) {
  const { db } = deps;
  return {
    async create(
      userId: string,
      meta: { ip: string | null; userAgent: string | null },
      trx: Db = db,
    ): Promise<{ token: string; session: Session }> {
      const token = generateToken();
      const now = new Date();
      const session = await insertSession(trx, {
        id: randomUUID(),
        token_hash: hashToken(token),
        user_id: userId,
        auth_time: now,
        expires_at: new Date(now.getTime() + deps.ttlSeconds * 1000),
        ip: meta.ip,
        user_agent: meta.userAgent?.slice(0, 512) ?? null,
      });
      return { token, session: toSession(session) };
    },
    async resolve(token: string | undefined): Promise<SessionContext | undefined> {
      if (!token || token.length > 100) return undefined;
      const live = await touchLiveSession(db, hashToken(token), deps.idleSeconds);
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
