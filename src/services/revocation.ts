// Ending everything a user holds, one implementation for every path that must (decisions.md,
// "Pending authorization requests and account changes"): a completed password reset, a password set
// by an operator (admin API, admin web, CLI), disabling a user and the seed taking an account over
// ("replace": true, services/seed.ts). Call it inside the transaction of
// the change it follows, so that the change and the revocation commit together.
//  - every browser session ends (session.revoked, one per session, with the reason);
//  - every grant is revoked with its access and refresh tokens, offline ones included, and every code
//    not yet exchanged is deleted (token.revoked, one per live grant, with its application);
//  - every outstanding password-reset link dies (a link mailed before the change must not undo it),
//    and so does a requested e-mail change (whoever asked for it may have been the intruder);
//  - a password change by the user (issue 17) keeps the session that made it (keepSessionId); its
//    tokens are revoked all the same.
// Nothing of this comes back later: re-enabling a user gives them no session and no token.
import type { Tx } from '../../db/create-db.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { listUserGrants, revokeAllUserTokens } from '../../db/repositories/grants.js';
import { revokeUserPasswordResetTokens } from '../../db/repositories/password-reset.js';
import { revokeUserSessions } from '../../db/repositories/sessions.js';
import { deleteUserEmailChangeTokens } from '../../db/repositories/email-changes.js';
import { revokeOtherUserSessions } from '../../db/repositories/self-service.js';
import { deleteUserPendingSignIns } from '../../db/repositories/pending-sign-ins.js';

export type RevocationReason = 'password_reset' | 'password_changed' | 'user_disabled' | 'replaced_by_seed';

export interface RevocationContext {
  reason: RevocationReason;
  /** Who made the change (an operator), when it was not the user. */
  actor?: string | null | undefined;
  ip?: string | null | undefined;
  /** The session that stays signed in (the user's own password change); every other one ends. */
  keepSessionId?: string | undefined;
}

export async function revokeUserAccess(
  trx: Tx,
  userId: string,
  context: RevocationContext,
): Promise<{ sessionIds: string[]; grants: number }> {
  const sessionIds = context.keepSessionId
    ? await revokeOtherUserSessions(trx, userId, context.keepSessionId)
    : await revokeUserSessions(trx, userId);
  const liveGrants = (await listUserGrants(trx, userId)).filter((g) => !g.revoked_at);
  const grants = await revokeAllUserTokens(trx, userId);
  await revokeUserPasswordResetTokens(trx, userId);
  await deleteUserEmailChangeTokens(trx, userId);
  // A sign-in waiting for its second factor proved the password before the change: it ends too (issue 34).
  await deleteUserPendingSignIns(trx, userId);
  const common = { actor: context.actor ?? null, ip: context.ip ?? null, userId };
  for (const sessionId of sessionIds) {
    await appendAuditEvent(trx, { type: 'session.revoked', ...common, detail: { sessionId, reason: context.reason } });
  }
  for (const grant of liveGrants) {
    await appendAuditEvent(trx, {
      type: 'token.revoked',
      ...common,
      clientId: grant.client_id,
      detail: { grantId: grant.id, reason: context.reason },
    });
  }
  return { sessionIds, grants };
}
