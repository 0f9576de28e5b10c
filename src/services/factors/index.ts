// Second factors (issue 34): what a user holds, the sign-in that waits for its second factor, and what every
// change of a factor does. The kinds' own ceremonies live beside this file (passkeys, TOTP, recovery codes) and
// call recordChange for every enrolment or removal.
//
// The sign-in with a second factor, and who may move it on:
//   password (or another first factor) ─▶ PENDING (pending_sign_ins: user, amr so far, the authorization
//   request, 10 minutes, a wrong-attempt count) ─▶ a second factor of THAT user ─▶ a session (amr combined)
// The pending sign-in is bound to the browser by an HttpOnly cookie (only its SHA-256 stored): another browser,
// or this one after it expired, has nothing to continue. No session exists before the second factor, so nothing
// that reads sessions (single sign-on, UserInfo, the account pages) can be reached with the password alone.
// MAX_ATTEMPTS wrong second factors end the pending sign-in (the password must be given again); each attempt
// also passes the sign-in limits of the account (plugins/infra/rate-limit.ts), as a password attempt does.
// A session that lacks a level an application asks for is stepped up in place (sessions.stepUp) by the same
// second-factor page, from the session instead of a pending sign-in.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../db/create-db.js';
import { revokeSessionAccessTokens } from '../../../db/repositories/access-tokens.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  deleteAllFactors,
  factorCounts,
  findTotpRow,
  listPasskeyRows,
  recoveryCodeSet,
} from '../../../db/repositories/factors.js';
import {
  consumePendingSignIn,
  countPendingFailure,
  deletePendingSignIn,
  deleteUserPendingSignIns,
  findPendingSignIn,
  insertPendingSignIn,
} from '../../../db/repositories/pending-sign-ins.js';
import { revokeOtherUserSessions } from '../../../db/repositories/self-service.js';
import { revokeUserSessions } from '../../../db/repositories/sessions.js';
import { findUserById } from '../../../db/repositories/users.js';
import type { Tx } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import { combineAmr, type Factor, type FactorSummary, hasSecondFactor } from '../../domain/mfa.js';
import type { Session } from '../../domain/session.js';
import type { Mailer } from '../../mail/mailer.js';
import { factorChangedMail } from '../../mail/templates.js';
import { generateToken, hashToken } from '../../oauth/tokens.js';
import type { SessionService } from '../sessions.js';
import { type Operator, removeFactor } from './operator.js';

/** How long a sign-in waits for its second factor. */
export const PENDING_SIGN_IN_SECONDS = 600;
/** Wrong second factors before a pending sign-in ends (the first factor must be given again). */
export const MAX_SECOND_FACTOR_ATTEMPTS = 5;

export interface PendingSignIn {
  id: string;
  userId: string;
  amr: string[];
  requestId: string | null;
  attempts: number;
}

/** A change of a user's factors, for the audit trail and the mail. */
export interface FactorChange {
  /** mfa.passkey_added, mfa.passkey_removed, mfa.totp_enabled, mfa.totp_removed, mfa.recovery_codes_generated,
   * mfa.recovery_code_used, mfa.factors_reset (an operator) ... */
  type: string;
  /** What the mail says happened, e.g. 'a passkey named "Laptop" was added'. */
  description: string;
  /** The session that made it (it stays); every other session of the user ends. Absent: an operator. */
  keepSessionId?: string | undefined;
  /** An operator's name, when it was not the user. */
  actor?: string | null | undefined;
  ip?: string | null | undefined;
  detail?: Record<string, unknown>;
}

export function createFactorService(deps: { db: Db; config: Config; mailer: Mailer; sessions: SessionService }) {
  const { db, config } = deps;

  async function summary(userId: string, trx: Db = db): Promise<FactorSummary> {
    const counts = await factorCounts(trx, userId);
    return { passkeys: counts.passkeys, totp: counts.totp, recoveryCodes: counts.recovery_codes };
  }

  /**
   * Inside the transaction of a factor change: the audit event, every other session of the user ends (with its
   * access tokens; all of them for an operator's change), and every sign-in waiting for a second factor ends.
   * The mail goes after the commit: call `notify` with what this returns.
   */
  async function recordChange(trx: Tx, userId: string, change: FactorChange): Promise<() => Promise<void>> {
    const sessionIds = change.keepSessionId
      ? await revokeOtherUserSessions(trx, userId, change.keepSessionId)
      : await revokeUserSessions(trx, userId);
    await revokeSessionAccessTokens(trx, sessionIds);
    await deleteUserPendingSignIns(trx, userId);
    const common = { userId, actor: change.actor ?? null, ip: change.ip ?? null };
    for (const sessionId of sessionIds) {
      await appendAuditEvent(trx, { type: 'session.revoked', ...common, detail: { sessionId, reason: change.type } });
    }
    await appendAuditEvent(trx, {
      type: change.type,
      ...common,
      detail: { ...(change.detail ?? {}), sessionsRevoked: sessionIds.length },
    });
    return async () => {
      const user = await findUserById(db, userId);
      if (!user) return;
      const message = factorChangedMail(
        user.email,
        change.description,
        new Date(),
        `${config.loginUrl}/forgot-password`,
        {
          byOperator: !change.keepSessionId,
        },
      );
      deps.mailer.sendInBackground(message);
    };
  }

  return {
    summary,
    recordChange,

    /** Whether a sign-in of this user must give a second factor after its first (MFA not off, one enrolled). */
    async secondFactorDue(userId: string): Promise<boolean> {
      return config.mfa.mode !== 'off' && hasSecondFactor(await summary(userId));
    },

    /** Every factor of the user, as the account pages and the admin show them (never a secret). */
    async list(userId: string): Promise<Factor[]> {
      const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);
      const factors: Factor[] = (await listPasskeyRows(db, userId)).map((p) => ({
        id: p.id,
        kind: 'passkey',
        name: p.name,
        createdAt: iso(p.created_at)!,
        lastUsedAt: iso(p.last_used_at),
        backedUp: p.backed_up,
      }));
      const totp = await findTotpRow(db, userId);
      if (totp?.confirmed_at) {
        factors.push({
          id: 'totp',
          kind: 'totp',
          name: 'Authenticator app',
          createdAt: iso(totp.confirmed_at)!,
          lastUsedAt: iso(totp.last_used_at),
        });
      }
      const codes = await recoveryCodeSet(db, userId);
      if (codes) {
        factors.push({
          id: 'recovery-codes',
          kind: 'recovery_code',
          name: 'Recovery codes',
          createdAt: iso(codes.created_at)!,
          lastUsedAt: iso(codes.last_used_at),
          remaining: codes.remaining,
        });
      }
      return factors;
    },

    /** An operator's reset (a user who lost every factor): all of them go, every session ends, the user is told. */
    async resetAll(userId: string, operator: { actor: string; ip?: string | null }) {
      let notify: (() => Promise<void>) | undefined;
      const removed = await db.transaction().execute(async (trx) => {
        const gone = await deleteAllFactors(trx, userId);
        notify = await recordChange(trx, userId, {
          type: 'mfa.factors_reset',
          description: 'every second factor (passkeys, authenticator app, recovery codes) was removed',
          actor: operator.actor,
          ip: operator.ip,
          detail: gone,
        });
        return gone;
      });
      await notify?.();
      return removed;
    },

    /** An operator removes one factor: a passkey by id, 'totp' or 'recovery-codes' (./operator.ts). */
    removeOne: (userId: string, factorId: string, operator: Operator) =>
      removeFactor({ db, recordChange }, userId, factorId, operator),

    /** Whether the session authenticated recently enough to change factors (MFA_FRESHNESS). */
    isFresh(session: Pick<Session, 'auth_time'>, now = new Date()): boolean {
      return now.getTime() - new Date(session.auth_time).getTime() <= config.ttl.mfaFreshness * 1000;
    },

    /** A first factor passed: the sign-in now waits for a second; answers the cookie's secret. */
    async beginPending(
      userId: string,
      amr: string[],
      requestId: string | undefined,
      meta: { ip: string | null; userAgent: string | null },
    ): Promise<string> {
      const token = generateToken();
      await insertPendingSignIn(db, {
        id: randomUUID(),
        token_hash: hashToken(token),
        user_id: userId,
        amr,
        request_id: requestId ?? null,
        ip: meta.ip,
        user_agent: meta.userAgent?.slice(0, 512) ?? null,
        expires_at: new Date(Date.now() + PENDING_SIGN_IN_SECONDS * 1000),
      });
      return token;
    },

    /** The live pending sign-in of this cookie secret, if any. */
    async pending(token: string | undefined): Promise<PendingSignIn | undefined> {
      if (!token || token.length > 100) return undefined;
      const row = await findPendingSignIn(db, hashToken(token));
      return (
        row && { id: row.id, userId: row.user_id, amr: row.amr, requestId: row.request_id, attempts: row.attempts }
      );
    },

    /** The user gave up (the page's Cancel): the pending sign-in ends. */
    async cancelPending(pending: PendingSignIn): Promise<void> {
      await deletePendingSignIn(db, pending.id);
    },

    /** A wrong second factor: counted; answers true when that was the last attempt (the pending sign-in ended). */
    async failPending(pending: PendingSignIn, meta: { ip: string | null }): Promise<boolean> {
      const attempts = await countPendingFailure(db, pending.id);
      await appendAuditEvent(db, {
        type: 'user.sign_in_failed',
        userId: pending.userId,
        ip: meta.ip,
        detail: { step: 'second_factor' },
      });
      if (attempts === undefined || attempts >= MAX_SECOND_FACTOR_ATTEMPTS) {
        await deletePendingSignIn(db, pending.id);
        return true;
      }
      return false;
    },

    /**
     * The second factor given: the pending sign-in is consumed (once) and the session made, its amr the
     * pending one combined with `added`. Undefined when it was consumed or expired meanwhile.
     */
    async completePending(
      pending: PendingSignIn,
      added: string[],
      meta: { ip: string | null; userAgent: string | null },
    ): Promise<{ sessionToken: string; session: Session; userId: string; requestId: string | null } | undefined> {
      const row = await consumePendingSignIn(db, pending.id);
      if (!row) return undefined;
      const amr = combineAmr(row.amr, added);
      const { token, session } = await deps.sessions.signedIn(row.user_id, meta, amr);
      return { sessionToken: token, session, userId: row.user_id, requestId: row.request_id };
    },
  };
}

export type FactorService = ReturnType<typeof createFactorService>;
