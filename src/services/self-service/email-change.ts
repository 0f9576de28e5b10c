// E-mail changes (issue 17). A request stores the new address with a single-use token and mails the
// link to the NEW address (proof that the user holds it); nothing changes until the link is opened.
// A request for an address another account has answers the same (issue 31: no account oracle): the
// holder gets a notice instead, and the stored request has a token nobody was sent.
// The link is the verification link (`${LOGIN_URL}/verify-email/confirm?token=`): accounts.verifyEmail
// hands tokens it does not know to confirm(). Opening the link (GET or HEAD, which a mail scanner does
// too) changes nothing: inspect() reads the request and the page asks for a POST (issue 31). Only a
// signed-in session of the account that asked may confirm (confirm() checks the user id; anyone else is
// refused and the link stays usable). Confirming, in one transaction: consumes the token, sets
// the address and email_verified, kills every other verification, reset and change link
// (decisions.md: an e-mail change kills reset and verification tokens); then a notice goes to the OLD
// address. The unique index on lower(email) decides a race for the address: the transaction rolls back,
// so the link stays usable (409 EMAIL_TAKEN) until the address is free again or the link expires.
import type { Db } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  consumeEmailChangeToken,
  deleteUserEmailChangeTokens,
  findLiveEmailChangeToken,
  replaceEmailChangeToken,
} from '../../../db/repositories/email-changes.js';
import { deleteUserEmailVerificationTokens } from '../../../db/repositories/email-verification.js';
import { revokeUserPasswordResetTokens } from '../../../db/repositories/password-reset.js';
import { findUserByEmail, updateUserRow } from '../../../db/repositories/users.js';
import type { Config } from '../../config.js';
import type { AccountUser } from '../../domain/user.js';
import { AppError } from '../../errors.js';
import type { Mailer } from '../../mail/mailer.js';
import { emailChangeAttemptMail, emailChangedMail, emailChangeMail } from '../../mail/templates.js';
import { generateToken, hashToken } from '../../oauth/tokens.js';
import { isUniqueViolation } from '../db-errors.js';
import { toAccountUser } from '../rows.js';
import type { RequestMeta } from './types.js';

export const emailTaken = () =>
  new AppError(409, 'EMAIL_TAKEN', 'Another account uses this e-mail address', [
    { field: 'newEmail', message: 'Another account uses this e-mail address' },
  ]);

const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,100}$/;

/** Thrown inside the confirming transaction to roll the consumed token back. */
class Unusable extends Error {}
/** Thrown inside the confirming transaction: the session is not the account that asked (rolled back). */
class NotTheAsker extends Error {}

/** The link was opened without a session, or with another account's: refused, nothing consumed. */
export const signInToConfirm = (signedIn: boolean) =>
  signedIn
    ? new AppError(403, 'WRONG_ACCOUNT', 'Only the account that asked for this change can confirm it')
    : new AppError(401, 'UNAUTHENTICATED', 'Sign in to the account that asked for this change');

export function createEmailChangeService(deps: { db: Db; config: Config; mailer: Mailer }) {
  const { db, config } = deps;
  return {
    /**
     * Stores the request (killing older ones) and mails the link to the new address. When another account
     * has the address (issue 31: the request is no account oracle), the asker sees exactly what a free
     * address gives (the same answer, a pending address, the same audit event in the export): the request
     * is stored the same way but its token is mailed to nobody, so it can never be confirmed; the holder
     * gets a notice with no link that acts (none to a disabled account).
     */
    async request(user: { id: string; email: string }, newEmail: string, meta: RequestMeta): Promise<void> {
      const token = generateToken();
      const holder = await findUserByEmail(db, newEmail);
      await db.transaction().execute(async (trx) => {
        const superseded = await replaceEmailChangeToken(trx, {
          token_hash: hashToken(token),
          user_id: user.id,
          email: newEmail,
          previous_email: user.email,
          expires_at: new Date(Date.now() + config.ttl.emailVerification * 1000),
        });
        await appendAuditEvent(trx, {
          type: 'email_change.requested',
          actor: 'self',
          userId: user.id,
          ip: meta.ip,
          detail: { newEmail, superseded },
        });
        // For the operator, under the holder (never in the asker's export). The asker is not named here: the
        // holder's export shows this event, and the asker's own email_change.requested (same time, same
        // address) already tells the operator who asked.
        if (holder)
          await appendAuditEvent(trx, {
            type: 'email_change.address_taken',
            userId: holder.id,
            ip: meta.ip,
            detail: { notified: !holder.disabled },
          });
      });
      if (holder) {
        if (!holder.disabled) deps.mailer.sendInBackground(emailChangeAttemptMail(holder.email));
        return;
      }
      const link = `${config.loginUrl}/verify-email/confirm?token=${encodeURIComponent(token)}`;
      const minutes = Math.round(config.ttl.emailVerification / 60);
      deps.mailer.sendInBackground(emailChangeMail(newEmail, link, user.email, minutes));
    },

    /**
     * What a live link would do, read only (nothing consumed): the account that asked and both addresses;
     * undefined for a link confirm() would not apply.
     */
    async inspect(token: string): Promise<{ userId: string; email: string; previousEmail: string } | undefined> {
      if (!TOKEN_SHAPE.test(token)) return undefined;
      const row = await findLiveEmailChangeToken(db, hashToken(token));
      return row && { userId: row.user_id, email: row.email, previousEmail: row.previous_email };
    },

    /**
     * Applies the change of a live link for the signed-in user `userId`: the user with the new address, or
     * undefined for a link that is unknown, used, expired, superseded or requested from an address the
     * user no longer has. 401 UNAUTHENTICATED (no session) or 403 WRONG_ACCOUNT (another account's
     * session) for a live link of someone else, which stays usable; 409 EMAIL_TAKEN (the link stays
     * usable) when another account has the address now.
     */
    async confirm(
      token: string,
      userId: string | undefined,
    ): Promise<{ user: AccountUser; previousEmail: string } | undefined> {
      if (!TOKEN_SHAPE.test(token)) return undefined;
      let done: { user: AccountUser; previousEmail: string };
      try {
        done = await db.transaction().execute(async (trx) => {
          const row = await consumeEmailChangeToken(trx, hashToken(token));
          if (!row) throw new Unusable();
          if (row.user_id !== userId) throw new NotTheAsker();
          const user = await updateUserRow(trx, row.user_id, { email: row.email, email_verified: true });
          if (!user || user.disabled) throw new Unusable();
          // Links mailed before the change (to either address) must not act on the account any more.
          await deleteUserEmailVerificationTokens(trx, user.id);
          await revokeUserPasswordResetTokens(trx, user.id);
          await deleteUserEmailChangeTokens(trx, user.id);
          await appendAuditEvent(trx, {
            type: 'user.email_changed',
            actor: 'self',
            userId: user.id,
            detail: { previousEmail: row.previous_email, newEmail: row.email },
          });
          return { user: toAccountUser(user), previousEmail: row.previous_email };
        });
      } catch (error) {
        if (error instanceof Unusable) return undefined;
        if (error instanceof NotTheAsker) throw signInToConfirm(userId !== undefined);
        if (isUniqueViolation(error)) throw emailTaken();
        throw error;
      }
      deps.mailer.sendInBackground(emailChangedMail(done.previousEmail, done.user.email, new Date()));
      return done;
    },
  };
}

export type EmailChangeService = ReturnType<typeof createEmailChangeService>;
