// What a user has signed in to: sessions and grants, for the admin API and the CLI. Revoking a
// session ends it and every token issued in it, offline refresh tokens included (an admin revocation
// is stronger than a sign-out). Revoking a grant ends its tokens and forgets the consent.
import type { Db, Tx } from '../../db/create-db.js';
import { revokeSessionAccessTokens } from '../../db/repositories/access-tokens.js';
import { deleteConsents } from '../../db/repositories/consents.js';
import { listUserGrants, liveGrantIds, revokeGrant } from '../../db/repositories/grants.js';
import * as sessions from '../../db/repositories/sessions.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { notFound } from '../errors.js';
import type { ActorContext } from './applications.js';
import type { UserService } from './users.js';

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);

/**
 * Ends the user's live sessions (all, or one) with the access tokens issued in them and the grants made
 * in them (offline refresh tokens included); one session.revoked event each. Inside a transaction. The
 * admin's revocation and the user's own (src/services/self-service/) share it.
 */
export async function endSessions(
  trx: Tx,
  userId: string,
  context: { actor?: string | null; ip?: string | null; reason: string },
  sessionId?: string,
): Promise<{ sessions: number; grants: number }> {
  const revoked = await sessions.revokeUserSessions(trx, userId, sessionId);
  const grants = await liveGrantIds(trx, userId, { sessionIds: revoked });
  for (const grantId of grants) await revokeGrant(trx, grantId);
  await revokeSessionAccessTokens(trx, revoked);
  for (const s of revoked) {
    await appendAuditEvent(trx, {
      type: 'session.revoked',
      actor: context.actor ?? null,
      ip: context.ip ?? null,
      userId,
      detail: { sessionId: s, reason: context.reason },
    });
  }
  return { sessions: revoked.length, grants: grants.length };
}

export function createUserAccessService(deps: { db: Db; users: UserService }) {
  const { db } = deps;
  const userId = async (ref: string) => (await deps.users.get(ref)).id;

  return {
    async listSessions(ref: string) {
      const rows = await sessions.listUserSessions(db, await userId(ref));
      const now = Date.now();
      return rows.map((s) => ({
        id: s.id,
        authTime: iso(s.auth_time)!,
        createdAt: iso(s.created_at)!,
        lastSeenAt: iso(s.last_seen_at)!,
        expiresAt: iso(s.expires_at)!,
        revokedAt: iso(s.revoked_at),
        active: !s.revoked_at && new Date(s.expires_at).getTime() > now,
        ip: s.ip,
        userAgent: s.user_agent,
      }));
    },

    async revokeSessions(
      ref: string,
      context: ActorContext,
      sessionId?: string,
    ): Promise<{ sessions: number; grants: number }> {
      const id = await userId(ref);
      return db.transaction().execute(async (trx) => {
        const revoked = await endSessions(trx, id, { ...context, reason: 'admin' }, sessionId);
        if (sessionId && revoked.sessions === 0)
          throw notFound('SESSION_NOT_FOUND', `No live session ${sessionId} of this user`);
        return revoked;
      });
    },

    async listGrants(ref: string) {
      const rows = await listUserGrants(db, await userId(ref));
      return rows.map((g) => ({
        id: g.id,
        clientId: g.client_id,
        scope: g.scope,
        sessionId: g.session_id,
        createdAt: iso(g.created_at)!,
        revokedAt: iso(g.revoked_at),
      }));
    },

    async revokeGrants(ref: string, context: ActorContext, grantId?: string): Promise<{ grants: number }> {
      const id = await userId(ref);
      return db.transaction().execute(async (trx) => {
        const grants = await liveGrantIds(trx, id, grantId ? { grantId } : {});
        if (grantId && grants.length === 0) throw notFound('GRANT_NOT_FOUND', `No live grant ${grantId} of this user`);
        const rows = (await listUserGrants(trx, id)).filter((g) => grants.includes(g.id));
        for (const g of grants) await revokeGrant(trx, g);
        await deleteConsents(trx, id, grantId ? [...new Set(rows.map((r) => r.client_id))] : undefined);
        for (const g of rows) {
          await appendAuditEvent(trx, {
            type: 'token.revoked',
            actor: context.actor,
            ip: context.ip,
            userId: id,
            clientId: g.client_id,
            detail: { grantId: g.id, reason: 'admin' },
          });
        }
        return { grants: grants.length };
      });
    },
  };
}

export type UserAccessService = ReturnType<typeof createUserAccessService>;
