// The upstream identities linked to users (issue 35): (provider, subject) -> user. Linking never goes by e-mail
// alone: the sign-in flow (flow.ts) links only an identity whose account owner proved the account, a signed-in
// user adding one, or an account it just created. Unlinking never removes the last way to sign in.
// Every link and unlink is audited and mailed to the account's address (after the commit), and ends sessions as a
// factor change does (sessionsToEnd).
import { randomUUID } from 'node:crypto';
import type { Db, Tx } from '../../../db/create-db.js';
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
import type { Config } from '../../config.js';
import { conflict, notFound } from '../../errors.js';
import type { Mailer } from '../../mail/mailer.js';
import { upstreamLinkedMail, upstreamUnlinkedMail } from '../../mail/templates.js';
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
  /**
   * The session the user acted in (the account pages' "link another" and unlink, or the sign-in that just proved
   * a pending link): it stays, and every other session of the user ends, as for a factor change.
   */
  keepSessionId?: string;
}

/**
 * Which sessions a link or an unlink ends. The same rule as a factor change (services.factors.recordChange): a
 * way to sign in was added or removed, so the user's other sessions end (an intruder who made one of them, or who
 * made it through the identity just unlinked, is out; the owner who made the change keeps the session it was made
 * in), and an operator's change ends them all. A link made by the sign-in flow itself without a session to keep
 * (an account created from the identity, a link whose proof made no session) ends nothing: whoever signed in is
 * the one who proved it, and there is no earlier session to distrust.
 */
function sessionsToEnd(actor: LinkActor, unlink: boolean): 'others' | 'all' | 'none' {
  if (actor.keepSessionId) return 'others';
  if (actor.actor || unlink) return 'all';
  return 'none';
}

export function createUpstreamIdentityStore(deps: {
  db: Db;
  config: Pick<Config, 'loginUrl'>;
  mailer: Pick<Mailer, 'sendInBackground'>;
  factors: Pick<FactorService, 'summary' | 'recordChange'>;
}) {
  const { db, config } = deps;

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

  /**
   * Inside the change's transaction: the audit event and, by sessionsToEnd, the sessions that end (through
   * services.factors.recordChange, which also ends the user's sign-ins waiting for a second factor).
   */
  async function record(
    trx: Tx,
    type: 'upstream.linked' | 'upstream.unlinked',
    userId: string,
    actor: LinkActor,
    ended: 'others' | 'all' | 'none',
    detail: Record<string, unknown>,
  ) {
    if (ended === 'none') {
      await appendAuditEvent(trx, { type, userId, actor: actor.actor ?? userId, ip: actor.ip, detail });
      return;
    }
    // recordChange's own mail (the factor-changed notice) is not sent: the caller mails its own notice.
    await deps.factors.recordChange(trx, userId, {
      type,
      description: type,
      keepSessionId: ended === 'others' ? actor.keepSessionId : undefined,
      actor: actor.actor ?? userId,
      ip: actor.ip,
      detail,
    });
  }

  /** After the commit: the notice to the account's address (never held back by the per-recipient cap). */
  async function notify(
    linked: boolean,
    userId: string,
    row: { provider_id: string; email: string | null },
    actor: LinkActor,
    ended: 'others' | 'all' | 'none',
  ) {
    const user = await findUserById(db, userId);
    if (!user) return;
    const notice = {
      provider: (await names()).get(row.provider_id) ?? row.provider_id,
      upstreamEmail: row.email,
      when: new Date(),
      ip: actor.ip,
      byOperator: Boolean(actor.actor && actor.actor !== userId),
      sessionsEnded: ended,
      methodsLink: `${config.loginUrl}/account/sign-in-methods`,
      resetLink: `${config.loginUrl}/forgot-password`,
    };
    deps.mailer.sendInBackground(
      linked ? upstreamLinkedMail(user.email, notice) : upstreamUnlinkedMail(user.email, notice),
    );
  }

  return {
    /** The link of (provider, subject), if any. */
    async find(providerId: string, subject: string): Promise<UpstreamIdentityRow | undefined> {
      return findUpstreamIdentity(db, providerId, subject);
    },
    async listForUser(userId: string): Promise<LinkedIdentity[]> {
      const providerNames = await names();
      return (await listUpstreamIdentitiesOfUser(db, userId)).map((r) => view(r, providerNames));
    },
    /** Whether the user has an identity of this provider linked (the SSO rule of password sign-in). */
    async isLinkedTo(userId: string, providerId: string): Promise<boolean> {
      return (await listUpstreamIdentitiesOfUser(db, userId)).some((r) => r.provider_id === providerId);
    },
    /**
     * Links (provider, subject) to the user, audited as upstream.linked. 409 UPSTREAM_IDENTITY_TAKEN when it is
     * linked already (to this user or another).
     *  - Without `trx`: in a transaction of its own, ending sessions as sessionsToEnd says (keepSessionId: the
     *    others), then, after the commit, the user is mailed (upstream-linked).
     *  - In the caller's transaction `trx` (an account created from this identity in that transaction): only the
     *    row and the audit event; nothing is mailed (the account was just made by this identity: there is no
     *    earlier owner to tell, and a mail must not go before the commit). A caller linking an EXISTING account
     *    must not pass `trx`.
     */
    async link(
      input: { userId: string; providerId: string; subject: string; email: string | null },
      actor: LinkActor,
      trx?: Db,
    ): Promise<string> {
      const id = randomUUID();
      const insert = async (t: Db) => {
        const inserted = await insertUpstreamIdentity(t, {
          id,
          user_id: input.userId,
          provider_id: input.providerId,
          subject: input.subject,
          email: input.email,
          last_used_at: new Date(),
        });
        if (!inserted) throw conflict('UPSTREAM_IDENTITY_TAKEN', 'this identity is linked to an account already');
      };
      const detail = { provider: input.providerId, identity: id };
      if (trx && trx !== db) {
        await insert(trx);
        await appendAuditEvent(trx, {
          type: 'upstream.linked',
          userId: input.userId,
          actor: actor.actor ?? input.userId,
          ip: actor.ip,
          detail,
        });
        return id;
      }
      const ended = sessionsToEnd(actor, false);
      await db.transaction().execute(async (t) => {
        await insert(t);
        await record(t, 'upstream.linked', input.userId, actor, ended, detail);
      });
      await notify(true, input.userId, { provider_id: input.providerId, email: input.email }, actor, ended);
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
    /**
     * Unlinks one of the user's identities, never the last way to sign in; audited as upstream.unlinked. Sessions
     * end as sessionsToEnd says (the user's: every other one; an operator's: all); the user is mailed after the
     * commit (upstream-unlinked).
     */
    async unlink(userId: string, id: string, actor: LinkActor): Promise<void> {
      const ended = sessionsToEnd(actor, true);
      const own = await db.transaction().execute(async (trx) => {
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
        await record(trx, 'upstream.unlinked', userId, actor, ended, { provider: own.provider_id, identity: id });
        return own;
      });
      await notify(false, userId, own, actor, ended);
    },
  };
}

export type UpstreamIdentityStore = ReturnType<typeof createUpstreamIdentityStore>;
