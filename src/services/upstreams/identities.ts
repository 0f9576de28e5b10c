// The upstream identities linked to users (issue 35): (provider, subject) -> user. Linking never goes by e-mail
// alone: the sign-in flow (flow.ts) links only an identity whose account owner proved the account, a signed-in
// user adding one, or an account it just created. Unlinking never removes the last way to sign in.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  deleteUpstreamIdentity,
  findUpstreamIdentity,
  insertUpstreamIdentity,
  listUpstreamIdentitiesOfUser,
  listUpstreamProviders,
  type UpstreamIdentityRow,
  updateUpstreamIdentity,
} from '../../../db/repositories/upstreams.js';
import { findUserById, lockUserById } from '../../../db/repositories/users.js';
import { conflict, notFound } from '../../errors.js';
import type { FactorService } from '../factors/index.js';

/** A linked identity as the account pages, the admin API and the CLI show it (no token). */
export interface LinkedIdentity {
  id: string;
  providerId: string;
  providerName: string;
  subject: string;
  email: string | null;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface LinkActor {
  ip: string | null;
  /** Who acted: the user themself (undefined) or an operator. */
  actor?: string;
}

export function createUpstreamIdentityStore(deps: { db: Db; factors: Pick<FactorService, 'summary'> }) {
  const { db } = deps;

  async function names(): Promise<Map<string, string>> {
    return new Map((await listUpstreamProviders(db)).map((p) => [p.id, p.name]));
  }
  const view = (row: UpstreamIdentityRow, providerNames: Map<string, string>): LinkedIdentity => ({
    id: row.id,
    providerId: row.provider_id,
    providerName: providerNames.get(row.provider_id) ?? row.provider_id,
    subject: row.subject,
    email: row.email,
    createdAt: new Date(row.created_at).toISOString(),
    lastUsedAt: row.last_used_at ? new Date(row.last_used_at).toISOString() : null,
  });

  return {
    /** The link of (provider, subject), if any. */
    async find(providerId: string, subject: string): Promise<UpstreamIdentityRow | undefined> {
      return findUpstreamIdentity(db, providerId, subject);
    },
    async listForUser(userId: string): Promise<LinkedIdentity[]> {
      const providerNames = await names();
      return (await listUpstreamIdentitiesOfUser(db, userId)).map((r) => view(r, providerNames));
    },
    /**
     * Links (provider, subject) to the user, in `trx` when given (with the account it creates, say), audited as
     * upstream.linked. 409 UPSTREAM_IDENTITY_TAKEN when it is linked already (to this user or another).
     */
    async link(
      input: { userId: string; providerId: string; subject: string; email: string | null },
      actor: LinkActor,
      trx: Db = db,
    ): Promise<string> {
      const id = randomUUID();
      const inserted = await insertUpstreamIdentity(trx, {
        id,
        user_id: input.userId,
        provider_id: input.providerId,
        subject: input.subject,
        email: input.email,
        last_used_at: new Date(),
      });
      if (!inserted) throw conflict('UPSTREAM_IDENTITY_TAKEN', 'this identity is linked to an account already');
      await appendAuditEvent(trx, {
        type: 'upstream.linked',
        userId: input.userId,
        actor: actor.actor ?? input.userId,
        ip: actor.ip,
        detail: { provider: input.providerId, identity: id },
      });
      return id;
    },
    /** Marks a sign-in with the identity. */
    async touch(id: string): Promise<void> {
      await updateUpstreamIdentity(db, id, { last_used_at: new Date() });
    },
    /**
     * The other ways this user can sign in besides the link `exceptId`: a password, a passkey, another link.
     * Unlinking refuses to leave none (409 LAST_SIGN_IN_METHOD).
     */
    async otherMethods(userId: string, exceptId: string, trx: Db = db): Promise<number> {
      const user = await findUserById(trx, userId);
      const links = (await listUpstreamIdentitiesOfUser(trx, userId)).filter((r) => r.id !== exceptId).length;
      const { passkeys } = await deps.factors.summary(userId, trx);
      return (user?.password_hash ? 1 : 0) + passkeys + links;
    },
    /** Unlinks one of the user's identities, never the last way to sign in; audited as upstream.unlinked. */
    async unlink(userId: string, id: string, actor: LinkActor): Promise<void> {
      await db.transaction().execute(async (trx) => {
        // The user's row is locked: two unlinks at once cannot each leave the other as the last method.
        await lockUserById(trx, userId);
        const own = (await listUpstreamIdentitiesOfUser(trx, userId)).find((r) => r.id === id);
        if (!own) throw notFound('UPSTREAM_IDENTITY_NOT_FOUND', 'no such linked identity');
        if ((await this.otherMethods(userId, id, trx)) === 0) {
          throw conflict(
            'LAST_SIGN_IN_METHOD',
            'this is the only way to sign in to the account: set a password or add a passkey first',
          );
        }
        await deleteUpstreamIdentity(trx, userId, id);
        await appendAuditEvent(trx, {
          type: 'upstream.unlinked',
          userId,
          actor: actor.actor ?? userId,
          ip: actor.ip,
          detail: { provider: own.provider_id, identity: id },
        });
      });
    },
  };
}

export type UpstreamIdentityStore = ReturnType<typeof createUpstreamIdentityStore>;
