// Account recovery (spec: request-password-reset, reset-password; decisions.md, Recovery).
//  - Reset links stay first-party: redirectTo must be on the login origin (a path is taken there) or one
//    of FIRST_PARTY_ORIGINS. A registered application's origins are NOT trusted: whoever registered an
//    application could otherwise have a victim's genuine mail deliver the token to its own page.
//  - A request answers the same way, at the same speed, whether or not the account exists: after the
//    redirect target is checked, everything that depends on the account runs in the background.
//  - Reset tokens: 256-bit, only the SHA-256 stored, RESET_TOKEN_TTL (30 min), single use, and a newer
//    request supersedes the older link.
//  - A reset sets the new hash and revokes every session, grant, access and refresh token (offline ones
//    too) and every outstanding code in one transaction; the user is not signed in.
import type { Db } from '../../db/create-db.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import * as resets from '../../db/repositories/password-reset.js';
import { findUserByEmail, findUserById, updateUserRow } from '../../db/repositories/users.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Mailer, MailMessage } from '../mail/mailer.js';
import { passwordChangedMail, passwordResetMail } from '../mail/templates.js';
import { originOf } from '../oauth/redirect-uri.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { newPasswordProblem, type PasswordHasher } from '../passwords.js';
import type { RequestMeta } from './accounts.js';
import { revokeUserAccess } from './revocation.js';
import type { ServiceLog } from './log.js';

export const GENERIC_RESET_RESPONSE = {
  status: true as const,
  message: 'If this email exists in our system, check your email for the reset link',
};

/** The "your password was changed" mail: after a reset and after an operator's change alike. */
export function passwordChangedNotice(
  config: Pick<Config, 'loginUrl'>,
  email: string,
  options: { keptSession?: boolean } = {},
): MailMessage {
  return passwordChangedMail(email, new Date(), `${config.loginUrl}/forgot-password`, options);
}

export const invalidResetToken = () =>
  new AppError(400, 'INVALID_TOKEN', 'The reset link is invalid, expired or was used already; ask for a new one');
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,100}$/;

export function createRecoveryService(deps: {
  db: Db;
  config: Config;
  mailer: Mailer;
  log: ServiceLog;
  passwords: Pick<PasswordHasher, 'hash'>;
  /** Enterprise SSO by domain (issue 35): an address at an SSO domain gets no reset link. */
  upstreams?: { providers: { ssoFor(email: string): Promise<unknown> } };
}) {
  const { db, config, log, passwords } = deps;
  const background = new Set<Promise<void>>();
  /** The hosted reset page: where links go when the caller's target is not usable. */
  const resetPage = `${config.loginUrl}/reset-password`;

  /** The origins a reset link may lead to: the login origin and FIRST_PARTY_ORIGINS, nothing else. */
  const firstParty = new Set([originOf(config.loginUrl), ...config.firstPartyOrigins].filter(Boolean) as string[]);

  /**
   * An absolute http(s) URL on a first-party origin (the login origin or FIRST_PARTY_ORIGINS); a path
   * is taken relative to the login origin. Application origins are never trusted (decisions.md, Recovery).
   */
  function trustedTarget(redirectTo: string): string | undefined {
    if (redirectTo.length > 2048 || /[\s\\]/.test(redirectTo)) return undefined;
    let url: URL;
    try {
      url = /^\/(?!\/)/.test(redirectTo) ? new URL(redirectTo, config.loginUrl) : new URL(redirectTo);
    } catch {
      return undefined;
    }
    if (
      (url.protocol !== 'https:' && url.protocol !== 'http:') ||
      url.username ||
      url.password ||
      url.href.length > 2048
    )
      return undefined;
    if (!firstParty.has(url.origin)) return undefined;
    return url.href;
  }

  function withParam(target: string, name: string, value: string): string {
    const url = new URL(target);
    url.searchParams.set(name, value);
    return url.href;
  }

  function inBackground(task: () => Promise<void>) {
    const p = task()
      .catch((error: unknown) => log.error({ err: error }, 'password reset request failed in the background'))
      .finally(() => background.delete(p));
    background.add(p);
  }

  async function issue(email: string, target: string, meta: RequestMeta) {
    // Issue 35: an address at an SSO domain signs in with its organisation's provider, not a password: no reset
    // link (the hosted page sends the person to the provider; the JSON answer stays the spec's, the same for
    // every address).
    if (await deps.upstreams?.providers.ssoFor(email)) {
      log.info('password reset requested for an address at an SSO domain; nothing sent');
      return;
    }
    const user = await findUserByEmail(db, email);
    if (!user || user.disabled) {
      log.info('password reset requested for an address without an active account; nothing sent');
      return;
    }
    const link = await newResetLink(user, target, meta);
    deps.mailer.sendInBackground(passwordResetMail(user.email, link, Math.round(config.ttl.resetToken / 60)));
  }

  /**
   * Stores a fresh reset token for the user (superseding older links, audited as password_reset.requested)
   * and returns its mailed link: single use, RESET_TOKEN_TTL, to `target` (checked by the caller).
   */
  async function newResetLink(user: { id: string }, target: string, meta: RequestMeta): Promise<string> {
    const token = generateToken();
    await db.transaction().execute(async (trx) => {
      const superseded = await resets.replacePasswordResetToken(trx, {
        token_hash: hashToken(token),
        user_id: user.id,
        redirect_to: target,
        expires_at: new Date(Date.now() + config.ttl.resetToken * 1000),
      });
      await appendAuditEvent(trx, {
        type: 'password_reset.requested',
        userId: user.id,
        ip: meta.ip,
        detail: { superseded },
      });
    });
    // The link carries the checked target, so an unusable link can still send the browser back there.
    return `${config.issuer}/reset-password/${token}?redirectTo=${encodeURIComponent(target)}`;
  }

  return {
    trustedTarget,
    resetPage,

    /**
     * A normal reset link to the hosted reset page, for a mail that is not a reset request (a sign-up
     * with the address of an existing account: "if it was you, reset your password").
     */
    resetLinkFor: (user: { id: string }, meta: RequestMeta) => newResetLink(user, resetPage, meta),

    /** Checks the target (400 INVALID_REDIRECT) and returns at once; the rest happens in the background. */
    async requestReset(
      input: { email: string; redirectTo: string },
      meta: RequestMeta,
    ): Promise<typeof GENERIC_RESET_RESPONSE> {
      const target = trustedTarget(input.redirectTo);
      if (!target) {
        throw new AppError(
          400,
          'INVALID_REDIRECT',
          'redirectTo must be a URL on the login origin or on one of the FIRST_PARTY_ORIGINS',
        );
      }
      const email = input.email.trim();
      if (email.length >= 3 && email.length <= 254 && email.includes('@'))
        inBackground(() => issue(email, target, meta));
      return GENERIC_RESET_RESPONSE;
    },

    /** Where the mailed link sends the browser: the stored target with ?token, or an error target. */
    async linkTarget(token: string, redirectTo: string | undefined): Promise<string> {
      const row = TOKEN_SHAPE.test(token) ? await resets.findLivePasswordResetToken(db, hashToken(token)) : undefined;
      // A row stored before targets were first-party only may name an application origin: the token
      // never goes there; the hosted reset page gets it instead.
      if (row) return withParam(trustedTarget(row.redirect_to) ?? resetPage, 'token', token);
      // An invalid link goes back only to a first-party target (the link's, if it is one), never elsewhere.
      const fallback = (redirectTo && trustedTarget(redirectTo)) || resetPage;
      return withParam(fallback, 'error', 'INVALID_TOKEN');
    },

    /** True while the token can still be used (the hosted page checks before asking for a password). */
    async isLive(token: string): Promise<boolean> {
      return TOKEN_SHAPE.test(token) && Boolean(await resets.findLivePasswordResetToken(db, hashToken(token)));
    },

    async resetPassword(input: { token: string; newPassword: string }, meta: RequestMeta): Promise<void> {
      const problem = newPasswordProblem(input.newPassword);
      if (problem)
        throw new AppError(400, problem.code, problem.message, [{ field: 'newPassword', message: problem.message }]);
      if (!TOKEN_SHAPE.test(input.token)) throw invalidResetToken();
      const tokenHash = hashToken(input.token);
      // A cheap check first, so that a dead link costs no password hash.
      if (!(await resets.findLivePasswordResetToken(db, tokenHash))) throw invalidResetToken();
      const passwordHash = await passwords.hash(input.newPassword);
      const user = await db.transaction().execute(async (trx) => {
        const row = await resets.consumePasswordResetToken(trx, tokenHash);
        if (!row) return undefined;
        const current = await findUserById(trx, row.user_id);
        if (!current || current.disabled) return undefined;
        // Following a link mailed to the address proves the address too.
        const updated = await updateUserRow(trx, row.user_id, { password_hash: passwordHash, email_verified: true });
        // The same revocation as an operator's password change (src/services/revocation.ts).
        const { sessionIds, grants } = await revokeUserAccess(trx, row.user_id, {
          reason: 'password_reset',
          ip: meta.ip,
        });
        await appendAuditEvent(trx, {
          type: 'password_reset.completed',
          userId: row.user_id,
          ip: meta.ip,
          detail: { sessionsRevoked: sessionIds.length, grantsRevoked: grants },
        });
        return updated;
      });
      if (!user) throw invalidResetToken();
      deps.mailer.sendInBackground(passwordChangedNotice(config, user.email));
    },

    /** Waits for background requests (tests, shutdown). */
    async drain(): Promise<void> {
      await Promise.allSettled([...background]);
    },
  };
}

export type RecoveryService = ReturnType<typeof createRecoveryService>;
