// The changes that need the current password (e-mail, password, deletion) and the data export.
//  - Password confirmation counts failures against the account's sign-in limits (guards).
//  - Password change: revokeUserAccess keeping the current session: every other session, every grant
//    with its access and refresh tokens (the current session's too: decisions.md says every token),
//    unexchanged codes, reset and e-mail change links; then the "password changed" mail. The kept session
//    gets a new cookie secret in the same transaction, so a copy of the old cookie (the reason a user may
//    change a password) is signed out too; the caller sets the new cookie.
//  - Deletion: one transaction deletes the user and every row that references it, except the user's
//    audit events, which stay under a pseudonym without personal data (issue 31 item 7a), then records
//    one user.deleted event with the pseudonym and the request's IP. The bearer cache learns of it from
//    the delete of the users row (src/services/invalidation.ts), so the user's tokens answer 401 at once.
//    The last enabled administrator cannot delete themselves (409 LAST_ADMIN).
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import { listUserEmailChanges } from '../../../db/repositories/email-changes.js';
import {
  anotherActiveAdmin,
  deleteUserEverywhere,
  exportRows,
  renewSessionSecret,
} from '../../../db/repositories/self-service.js';
import { lockUserById, updateUserRow } from '../../../db/repositories/users.js';
import { AppError, validationError } from '../../errors.js';
import { generateToken, hashToken } from '../../oauth/tokens.js';
import { newPasswordProblem } from '../../passwords.js';
import { EMAIL } from '../accounts.js';
import { auditPseudonym } from '../audit.js';
import { passwordChangedNotice } from '../recovery.js';
import { revokeUserAccess } from '../revocation.js';
import { confirmPassword, currentUser, signedOut } from './common.js';
import { toProfile } from './profile.js';
import { iso, isoOrNull, type RequestMeta, type SelfServiceDeps } from './types.js';

type Dated = Record<string, unknown>;
/** Row columns to the export's camelCase, timestamps as ISO strings. */
function exported<T extends Dated>(rows: T[]): Dated[] {
  return rows.map((row) =>
    Object.fromEntries(
      Object.entries(row).map(([k, v]) => [
        k.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()),
        v instanceof Date ? v.toISOString() : v,
      ]),
    ),
  );
}

export function createAccountMethods(
  deps: SelfServiceDeps,
  access: { listApplications(userId: string): Promise<unknown[]> },
) {
  const { db, config } = deps;

  async function requestEmailChange(
    userId: string,
    input: { newEmail: string; password: string },
    meta: RequestMeta,
  ): Promise<void> {
    const newEmail = typeof input.newEmail === 'string' ? input.newEmail.trim() : '';
    if (!EMAIL.test(newEmail) || newEmail.length > 254)
      throw validationError([{ field: 'newEmail', message: 'Enter a valid e-mail address' }]);
    const user = await confirmPassword(deps, userId, String(input.password ?? ''), {
      field: 'password',
      purpose: 'email_change',
      meta,
    });
    if (newEmail.toLowerCase() === user.email.toLowerCase())
      throw validationError([{ field: 'newEmail', message: 'This is your address already' }]);
    // Counted once the password is right: only the account's owner can spend the budget.
    await deps.guards.countEmailChange(userId, meta.ip, newEmail);
    // Whether another account has the address is not told here (issue 31): request() answers the same.
    await deps.emailChanges.request(user, newEmail, meta);
  }

  /**
   * Changes the password; answers with the current session's new cookie secret (the old one is dead) and the
   * session's unchanged expiry, which the new cookie must not outlive.
   */
  async function changePassword(
    userId: string,
    currentSessionId: string,
    input: { currentPassword: string; newPassword: string },
    meta: RequestMeta,
  ): Promise<{ sessionToken: string; sessionExpiresAt: Date }> {
    const newPassword = String(input.newPassword ?? '');
    const problem = newPasswordProblem(newPassword);
    if (problem)
      throw new AppError(400, problem.code, problem.message, [{ field: 'newPassword', message: problem.message }]);
    const before = await confirmPassword(deps, userId, String(input.currentPassword ?? ''), {
      field: 'currentPassword',
      purpose: 'password_change',
      meta,
    });
    // Hashed outside the transaction: ~10 ms of CPU must not hold a connection.
    const passwordHash = await deps.passwords.hash(newPassword);
    const sessionToken = generateToken();
    const { email, sessionExpiresAt } = await db.transaction().execute(async (trx) => {
      const locked = await lockUserById(trx, userId);
      // Changed meanwhile (another password change, a reset, an operator): this one is stale.
      if (!locked || locked.disabled || locked.password_hash !== before.password_hash) throw signedOut();
      await updateUserRow(trx, userId, { password_hash: passwordHash });
      const { sessionIds, grants } = await revokeUserAccess(trx, userId, {
        reason: 'password_changed',
        actor: 'self',
        ip: meta.ip,
        keepSessionId: currentSessionId,
      });
      // Ended meanwhile (signed out in another tab, revoked): nothing changes, as for a stale password.
      const expiresAt = await renewSessionSecret(trx, currentSessionId, hashToken(sessionToken));
      if (!expiresAt) throw signedOut();
      await appendAuditEvent(trx, {
        type: 'password.changed',
        actor: 'self',
        userId,
        ip: meta.ip,
        detail: { sessionsRevoked: sessionIds.length, grantsRevoked: grants },
      });
      return { email: locked.email, sessionExpiresAt: expiresAt };
    });
    deps.mailer.sendInBackground(passwordChangedNotice(config, email, { keptSession: true }));
    return { sessionToken, sessionExpiresAt };
  }

  async function exportData(userId: string): Promise<Record<string, unknown>> {
    const user = await currentUser(db, userId);
    const [rows, applications, emailChanges] = await Promise.all([
      exportRows(db, userId),
      access.listApplications(userId),
      listUserEmailChanges(db, userId),
    ]);
    const pending = emailChanges.find((c) => !c.used_at && new Date(c.expires_at) > new Date());
    await appendAuditEvent(db, { type: 'user.data_exported', actor: 'self', userId });
    return {
      exportedAt: iso(new Date()),
      profile: {
        ...toProfile(user, pending?.email ?? null),
        permissions: user.permissions,
        role: user.role,
        hasPassword: user.password_hash !== null,
        updatedAt: isoOrNull(user.updated_at),
      },
      applications,
      grants: exported(rows.grants),
      sessions: exported(rows.sessions),
      accessTokens: exported(rows.accessTokens),
      refreshTokens: exported(rows.refreshTokens),
      emailVerifications: exported(rows.verifications),
      passwordResets: exported(rows.resets),
      emailChanges: exported(emailChanges),
      auditEvents: exported(rows.audit),
      linkedIdentities: exported(rows.identities),
    };
  }

  /**
   * Deletes the account after its password; an account without one (made by a sign-in through an upstream
   * provider, issue 35) proves itself by a recent sign-in instead (`freshSession`: within MFA_FRESHNESS), else
   * 401 REAUTHENTICATION_REQUIRED.
   */
  async function deleteAccount(
    userId: string,
    input: { password?: string | undefined; freshSession?: boolean },
    meta: RequestMeta,
  ): Promise<void> {
    const current = await currentUser(db, userId);
    let user = current;
    if (current.password_hash === null) {
      if (!input.freshSession) {
        throw new AppError(401, 'REAUTHENTICATION_REQUIRED', 'Sign in again to delete your account');
      }
    } else {
      if (!input.password) throw validationError([{ field: 'password', message: 'Enter your current password' }]);
      user = await confirmPassword(deps, userId, input.password, {
        field: 'password',
        purpose: 'account_deletion',
        meta,
      });
    }
    await db.transaction().execute(async (trx) => {
      const locked = await lockUserById(trx, userId);
      if (!locked) throw signedOut();
      // The last administrator would leave the admin web to whoever next finds the setup token.
      if (locked.role === 'admin' && !(await anotherActiveAdmin(trx, userId))) {
        throw new AppError(
          409,
          'LAST_ADMIN',
          'You are the only administrator: make another user an administrator before deleting your account',
        );
      }
      // The person is gone from every table; their security events stay under a pseudonym, and so does
      // this record of the deletion, with the deleting request's address.
      const pseudonym = auditPseudonym();
      const counts = await deleteUserEverywhere(trx, userId, locked.email, pseudonym);
      await appendAuditEvent(trx, {
        type: 'user.deleted',
        actor: 'self',
        userId: pseudonym,
        ip: meta.ip,
        detail: { rows: counts },
      });
    });
    await deps.guards.forgetAccount({ id: userId, email: user.email });
  }

  return { requestEmailChange, changePassword, exportData, deleteAccount };
}
