// What the user has given applications and where they are signed in, and taking it back.
//  - Applications: the clients with a remembered consent or a live grant. Revoking one deletes the
//    consent (the next authorize asks again), revokes every grant with its access and refresh tokens
//    and deletes the codes not yet exchanged, in one transaction.
//  - Sessions: the live ones. Revoking one is the admin's revocation (user-access.ts, endSessions): the
//    session, its access tokens and the grants made in it end.
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  lastUseByClient,
  listLiveUserGrants,
  listLiveUserSessions,
  listUserConsents,
  revokeClientAccess,
} from '../../../db/repositories/self-service.js';
import { notFound } from '../../errors.js';
import { endSessions } from '../user-access.js';
import { iso, isoOrNull, type MeApplication, type MeSession, type RequestMeta, type SelfServiceDeps } from './types.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const CLIENT_ID = /^[\x21-\x7e]{1,255}$/;

const applicationNotFound = (clientId: string) =>
  notFound('APPLICATION_NOT_FOUND', `You have given ${clientId.slice(0, 100)} no access`);
const sessionNotFound = () => notFound('SESSION_NOT_FOUND', 'No live session of yours has this id');

export function createAccessMethods(deps: SelfServiceDeps) {
  const { db, config } = deps;

  async function listApplications(userId: string): Promise<MeApplication[]> {
    const [consents, grants, lastUse] = await Promise.all([
      listUserConsents(db, userId),
      listLiveUserGrants(db, userId),
      lastUseByClient(db, userId),
    ]);
    const byClient = new Map<string, { scopes: Set<string>; grantedAt: Date }>();
    const add = (clientId: string, scopes: string[], at: Date | string) => {
      const entry = byClient.get(clientId) ?? { scopes: new Set<string>(), grantedAt: new Date(at) };
      for (const s of scopes) entry.scopes.add(s);
      if (new Date(at) < entry.grantedAt) entry.grantedAt = new Date(at);
      byClient.set(clientId, entry);
    };
    for (const c of consents) add(c.client_id, c.scopes, c.created_at);
    for (const g of grants) add(g.client_id, g.scope.split(' ').filter(Boolean), g.created_at);
    const out: MeApplication[] = [];
    for (const [clientId, entry] of byClient) {
      const app = await deps.applications.find(clientId);
      out.push({
        clientId,
        clientName: app?.clientName ?? clientId,
        logoUrl: app?.clientLogoUrl ?? null,
        scopes: [...entry.scopes],
        grantedAt: iso(entry.grantedAt),
        lastUsedAt: isoOrNull(lastUse.get(clientId) ?? null),
      });
    }
    return out.sort((a, b) => a.clientName.localeCompare(b.clientName) || a.clientId.localeCompare(b.clientId));
  }

  async function revokeApplication(userId: string, clientId: string, meta: RequestMeta): Promise<void> {
    if (!CLIENT_ID.test(clientId)) throw applicationNotFound(clientId);
    await db.transaction().execute(async (trx) => {
      const { consent, grantIds } = await revokeClientAccess(trx, userId, clientId);
      if (!consent && grantIds.length === 0) throw applicationNotFound(clientId);
      const common = { actor: 'self', userId, clientId, ip: meta.ip };
      if (consent) await appendAuditEvent(trx, { type: 'consent.revoked', ...common, detail: { reason: 'self' } });
      for (const grantId of grantIds) {
        await appendAuditEvent(trx, { type: 'token.revoked', ...common, detail: { grantId, reason: 'self' } });
      }
    });
  }

  async function listSessions(userId: string, currentSessionId: string): Promise<MeSession[]> {
    const rows = await listLiveUserSessions(db, userId, config.ttl.sessionIdle);
    return rows.map((s) => ({
      id: s.id,
      userAgent: s.user_agent,
      ip: s.ip,
      createdAt: iso(s.created_at),
      lastSeenAt: iso(s.last_seen_at),
      expiresAt: iso(s.expires_at),
      current: s.id === currentSessionId,
    }));
  }

  async function revokeSession(userId: string, sessionId: string, meta: RequestMeta): Promise<void> {
    if (!UUID.test(sessionId)) throw sessionNotFound();
    await db.transaction().execute(async (trx) => {
      const ended = await endSessions(trx, userId, { actor: 'self', ip: meta.ip, reason: 'self' }, sessionId);
      if (ended.sessions === 0) throw sessionNotFound();
    });
  }

  return { listApplications, revokeApplication, listSessions, revokeSession };
}
