// Sign-up, sign-in and e-mail verification for the hosted login (pages and JSON endpoints alike).
// Sign-up proves mailbox control before an account exists (issue 31, item 3; see signUp, confirmSignUp).
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import { findUserByEmail, findUserById, insertUser, updateUserRow } from '../../db/repositories/users.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import {
  consumeEmailVerificationToken,
  findLiveEmailVerificationToken,
  insertEmailVerificationToken,
  markAddressVerified,
} from '../../db/repositories/email-verification.js';
import {
  consumeSignUpRequest,
  deleteSignUpRequest,
  deleteTakenOverUser,
  findLiveSignUpRequest,
  insertSignUpRequest,
  lockUserByEmail,
  reserveSignUpPasswordAttempt,
} from '../../db/repositories/sign-up-requests.js';
import type { UserRow } from '../../db/tables.js';
import type { Config } from '../config.js';
import { deviceAccount } from '../device-cookie.js';
import type { AccountUser } from '../domain/user.js';
import type { UpstreamProvider } from '../domain/upstream.js';
import { AppError } from '../errors.js';
import type { Mailer } from '../mail/mailer.js';
import type { MetricEvents } from '../metrics.js';
import { signUpAttemptMail, signUpConfirmMail, verificationMail } from '../mail/templates.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { newPasswordProblem, type PasswordHasher } from '../passwords.js';
import { isUniqueViolation } from './db-errors.js';
import { toAccountUser } from './rows.js';
import type { SessionService } from './sessions.js';
import { SsoRequiredError } from '../domain/sso.js';

export interface RequestMeta {
  ip: string | null;
  userAgent: string | null;
}

/** The same message whether the e-mail is unknown or the password wrong (no account enumeration). */
export const INVALID_CREDENTIALS = new AppError(
  401,
  'INVALID_CREDENTIALS',
  'The e-mail address or password is not correct',
);

/** The shape of an acceptable e-mail address (sign-up, e-mail change). */
export const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]+$/;

/** A sign-up link's shape (generateToken: 256 bits, base64url). */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{20,100}$/;

/**
 * An account that gives no claim to its address: made by sign-up, never verified, not an administrator.
 * A confirmed sign-up for the address replaces it; the clean-up job removes it after UNVERIFIED_ACCOUNT_TTL.
 */
function claimable(user: Pick<UserRow, 'self_registered' | 'email_verified' | 'role'>): boolean {
  return user.self_registered && !user.email_verified && user.role !== 'admin';
}

/**
 * Password checks a sign-up link allows from browsers other than the one that signed up: the pending
 * sign-up is deleted (its link dies) when the last one fails. A counter in the row (0016), reserved before
 * each check so that concurrent guesses cannot exceed it.
 */
export const SIGN_UP_PASSWORD_ATTEMPTS = 5;

export type SignUpConfirmation =
  | { outcome: 'invalid' }
  /** Another browser, no password given: nothing consumed, nothing counted. */
  | { outcome: 'password_required'; email: string }
  /** Another browser, a wrong password: nothing consumed, one check spent; `dead` when it was the last. */
  | { outcome: 'wrong_password'; email: string; dead: boolean }
  | { outcome: 'exists'; email: string }
  | {
      outcome: 'created';
      user: AccountUser;
      requestId: string | null;
      clientId: string | null;
      redirectUri: string | null;
    };

/** Whether the browser's sign-up secret is the one a pending sign-up was bound to. */
function boundTo(browserHash: string | null, browserSecret: string | undefined): boolean {
  return Boolean(browserHash && browserSecret && hashToken(browserSecret) === browserHash);
}

export function createAccountService(deps: {
  db: Db;
  config: Config;
  /** Hashes and verifies at the configured cost; rehashes on sign-in when the cost changed. */
  passwords: PasswordHasher;
  sessions: SessionService;
  mailer: Mailer;
  events: Pick<MetricEvents, 'signInFailed'>;
  /** E-mail changes (issue 17): their links are verification links too, confirmed here. */
  emailChanges?: {
    inspect(token: string): Promise<{ userId: string; email: string; previousEmail: string } | undefined>;
    confirm(token: string, userId: string | undefined): Promise<{ user: AccountUser } | undefined>;
  };
  /** The reset link of the "someone tried to sign up with your address" mail. */
  recovery?: { resetLinkFor(user: { id: string }, meta: RequestMeta): Promise<string> };
  /** Whether a sign-in must give a second factor after the password (issue 34); never, without it. */
  factors?: { secondFactorDue(userId: string): Promise<boolean> };
  /** Enterprise SSO by domain (issue 35, ./upstreams/sso.ts): the provider of an address's domain, the links. */
  upstreams?: {
    providers: { ssoFor(email: string): Promise<Pick<UpstreamProvider, 'id' | 'name'> | undefined> };
    identities: { isLinkedTo(userId: string, providerId: string): Promise<boolean> };
  };
}) {
  const { db, config, passwords } = deps;

  async function sendVerification(
    user: Pick<AccountUser, 'id' | 'email'>,
    pending: {
      requestId?: string | undefined;
      clientId?: string | undefined;
      clientName?: string | undefined;
      redirectUri?: string | undefined;
    },
  ) {
    const token = generateToken();
    await insertEmailVerificationToken(db, {
      token_hash: hashToken(token),
      user_id: user.id,
      // The link verifies this address only: after an e-mail change it is dead (issue 12, item 3).
      email: user.email,
      request_id: pending.requestId ?? null,
      client_id: pending.clientId ?? null,
      redirect_uri: pending.redirectUri ?? null,
      expires_at: new Date(Date.now() + config.ttl.emailVerification * 1000),
    });
    const link = `${config.loginUrl}/verify-email/confirm?token=${encodeURIComponent(token)}`;
    deps.mailer.sendInBackground(verificationMail(user.email, link, pending.clientName));
  }

  return {
    sendVerification,

    /**
     * A sign-up (issue 31, item 3): never an account or a session before the mailbox owner acts, and the
     * same answer whether the address is free or held. Input errors answer 400 VALIDATION_ERROR (they do
     * not depend on the address); otherwise the password is hashed in every case, then:
     *  - a free address, or one held only by a self-registered account that never verified it: a pending
     *    sign-up is stored and its link mailed ("confirm your e-mail address to create your account");
     *  - an address of any other account: nothing is stored but a reset token, and the owner is told
     *    someone tried, with a normal reset link (a disabled account gets nothing).
     */
    async signUp(
      input: { email: string; password: string; name?: string | undefined },
      meta: RequestMeta,
      pending: { requestId?: string; clientId?: string; clientName?: string; redirectUri?: string },
      /** The secret of the sign-up cookie this answer sets: the pending sign-up is bound to its browser. */
      browserSecret?: string,
    ): Promise<{ email: string }> {
      const problems: Array<{ field: string; message: string }> = [];
      const email = input.email.trim();
      if (!EMAIL.test(email) || email.length > 254)
        problems.push({ field: 'email', message: 'Enter a valid e-mail address' });
      // An address at an SSO domain (issue 35) gets no password: its organisation's provider signs it in (and
      // makes its account, if the provider may). Decided by the domain alone: the same answer whether or not
      // the address has an account.
      const sso = problems.length ? undefined : await deps.upstreams?.providers.ssoFor(email);
      if (sso) throw new SsoRequiredError(sso);
      const passwordProblem = newPasswordProblem(input.password);
      if (passwordProblem) problems.push({ field: 'password', message: passwordProblem.message });
      const name = input.name?.trim();
      if (name && name.length > 200) problems.push({ field: 'name', message: 'Use at most 200 characters' });
      if (problems.length) throw new AppError(400, 'VALIDATION_ERROR', problems[0]!.message, problems);
      // Hashed whatever the address: the answer takes as long for an address that has an account.
      const passwordHash = await passwords.hash(input.password);
      const holder = await findUserByEmail(db, email);
      if (holder && !claimable(holder)) {
        if (!holder.disabled && deps.recovery) {
          const resetLink = await deps.recovery.resetLinkFor(holder, meta);
          deps.mailer.sendInBackground(
            signUpAttemptMail(
              holder.email,
              resetLink,
              `${config.loginUrl}/sign-in`,
              Math.round(config.ttl.resetToken / 60),
            ),
          );
        }
        return { email };
      }
      const token = generateToken();
      await insertSignUpRequest(db, {
        token_hash: hashToken(token),
        email,
        password_hash: passwordHash,
        name: name || null,
        request_id: pending.requestId ?? null,
        client_id: pending.clientId ?? null,
        redirect_uri: pending.redirectUri ?? null,
        ip: meta.ip,
        expires_at: new Date(Date.now() + config.ttl.emailVerification * 1000),
        browser_hash: browserSecret ? hashToken(browserSecret) : null,
      });
      const link = `${config.loginUrl}/sign-up/confirm?token=${encodeURIComponent(token)}`;
      deps.mailer.sendInBackground(signUpConfirmMail(email, link, pending.clientName));
      return { email };
    },

    /**
     * The address a live sign-up link would create an account for, and whether this browser (its sign-up
     * cookie's secret) is the one that signed up (reads only: a GET of the link).
     */
    async pendingSignUp(
      token: string,
      browserSecret?: string,
    ): Promise<{ email: string; sameBrowser: boolean } | undefined> {
      if (!TOKEN_SHAPE.test(token)) return undefined;
      const row = await findLiveSignUpRequest(db, hashToken(token));
      return row && { email: row.email, sameBrowser: boundTo(row.browser_hash, browserSecret) };
    },

    /**
     * Confirms a sign-up link (a POST), in one transaction: consumes the pending sign-up; an account of an
     * operator or a verified one holding the address by now wins ('exists', nothing created); a
     * self-registered, never-verified holder is deleted (its sessions, grants, tokens and links with it;
     * audited user.address_taken_over); then the new account is created, its address verified.
     *
     * Only two people can confirm (the residual pre-registration risk, closed): the browser that signed
     * up (its sign-up cookie), or someone who gives the password chosen at sign-up. Anyone else who reads
     * the mailbox (another browser, a mail scanner pressing buttons) gets 'password_required'; a wrong
     * password spends one of SIGN_UP_PASSWORD_ATTEMPTS checks and consumes nothing else.
     */
    async confirmSignUp(
      token: string,
      meta: RequestMeta,
      proof: { browserSecret?: string | undefined; password?: string | undefined } = {},
    ): Promise<SignUpConfirmation> {
      if (!TOKEN_SHAPE.test(token)) return { outcome: 'invalid' };
      const tokenHash = hashToken(token);
      const live = await findLiveSignUpRequest(db, tokenHash);
      if (!live) return { outcome: 'invalid' };
      if (!boundTo(live.browser_hash, proof.browserSecret)) {
        if (!proof.password) return { outcome: 'password_required', email: live.email };
        const row = await reserveSignUpPasswordAttempt(db, tokenHash, SIGN_UP_PASSWORD_ATTEMPTS);
        if (!row) return { outcome: 'invalid' };
        if (!(await passwords.verify(row.password_hash, proof.password))) {
          const dead = row.password_attempts >= SIGN_UP_PASSWORD_ATTEMPTS;
          if (dead) await deleteSignUpRequest(db, tokenHash);
          return { outcome: 'wrong_password', email: row.email, dead };
        }
      }
      try {
        return await db.transaction().execute(async (trx): Promise<SignUpConfirmation> => {
          const row = await consumeSignUpRequest(trx, hashToken(token));
          if (!row) return { outcome: 'invalid' };
          const holder = await lockUserByEmail(trx, row.email);
          if (holder && !claimable(holder)) return { outcome: 'exists', email: holder.email };
          const removed = holder && { id: holder.id, rows: await deleteTakenOverUser(trx, holder.id) };
          const user = await insertUser(trx, {
            id: randomUUID(),
            email: row.email,
            password_hash: row.password_hash,
            name: row.name,
            given_name: null,
            family_name: null,
            picture: null,
            permissions: '[]',
            email_verified: true,
            self_registered: true,
          });
          if (removed) {
            await appendAuditEvent(trx, {
              type: 'user.address_taken_over',
              userId: user.id,
              ip: meta.ip,
              detail: { previousUserId: removed.id, ...removed.rows },
            });
          }
          await appendAuditEvent(trx, {
            type: 'user.signed_up',
            userId: user.id,
            clientId: row.client_id,
            ip: row.ip,
          });
          await appendAuditEvent(trx, {
            type: 'user.email_verified',
            userId: user.id,
            clientId: row.client_id,
            ip: meta.ip,
          });
          return {
            outcome: 'created',
            user: toAccountUser(user),
            requestId: row.request_id,
            clientId: row.client_id,
            redirectUri: row.redirect_uri,
          };
        });
      } catch (error) {
        // A concurrent confirmation for the same address won; this link stays usable (rolled back).
        if (isUniqueViolation(error)) return { outcome: 'exists', email: '' };
        throw error;
      }
    },

    async signIn(input: { email: string; password: string }, meta: RequestMeta) {
      const user =
        input.email.length <= 254 && input.password.length <= 1024
          ? await findUserByEmail(db, input.email.trim())
          : undefined;
      const ok =
        user?.password_hash && !user.disabled
          ? await passwords.verify(user.password_hash, input.password)
          : await passwords.verifyAgainstDummy(input.password);
      if (!ok || !user) {
        await appendAuditEvent(db, { type: 'user.sign_in_failed', userId: user?.id ?? null, ip: meta.ip });
        deps.events.signInFailed();
        throw INVALID_CREDENTIALS;
      }
      // Enterprise SSO (issue 35): an account at an SSO domain that is linked to that domain's provider signs in
      // there only. Before the link its password still works (it is how the owner proves the account to link
      // it). Checked after the password, so that the answer to a wrong password is the same, linked or not.
      const sso = await deps.upstreams?.providers.ssoFor(user.email);
      if (sso && (await deps.upstreams?.identities.isLinkedTo(user.id, sso.id))) {
        await appendAuditEvent(db, {
          type: 'user.sign_in_failed',
          userId: user.id,
          ip: meta.ip,
          detail: { reason: 'sso_required', provider: sso.id },
        });
        throw new SsoRequiredError(sso);
      }
      let passwordHash = user.password_hash!;
      if (passwords.needsRehash(passwordHash)) {
        passwordHash = await passwords.hash(input.password);
        await updateUserRow(db, user.id, { password_hash: passwordHash });
      }
      /** What a device cookie set now names (src/device-cookie.ts): this user under this password. */
      const device = deviceAccount(user.id, passwordHash);
      // A second factor is due (issue 34): no session yet; the caller starts a pending sign-in
      // (services.factors.beginPending) and sends the browser to the second-factor page.
      if (await deps.factors?.secondFactorDue(user.id)) {
        return { user: toAccountUser(user), secondFactor: true as const, deviceAccount: device };
      }
      const { token, session } = await deps.sessions.signedIn(user.id, meta, ['pwd']);
      return { user: toAccountUser(user), sessionToken: token, sessionId: session.id, deviceAccount: device };
    },

    /**
     * What a device cookie must name to be trusted for sign-ins to this address: the account's id and its
     * current password (hash), so a password change by anyone ends the trust of every earlier cookie.
     * Undefined for an address without an enabled account with a password.
     */
    async deviceAccount(email: string): Promise<string | undefined> {
      const user = email.length <= 254 ? await findUserByEmail(db, email.trim()) : undefined;
      return user?.password_hash && !user.disabled ? deviceAccount(user.id, user.password_hash) : undefined;
    },

    /**
     * What a verification link would do, read only (the page a GET or HEAD of the link shows; nothing is
     * consumed): verify `email` of the account `userId`, or move the account `userId` from `previousEmail`
     * to `email` (an e-mail change). Undefined for a link that does not work (unknown, used, expired or
     * superseded alike).
     */
    async inspectLink(
      token: string,
    ): Promise<
      | { kind: 'verification'; userId: string; email: string }
      | { kind: 'email-change'; userId: string; email: string; previousEmail: string }
      | undefined
    > {
      if (!token || token.length > 100) return undefined;
      const row = await findLiveEmailVerificationToken(db, hashToken(token));
      if (row) return { kind: 'verification', userId: row.user_id, email: row.email };
      const change = await deps.emailChanges?.inspect(token);
      return change && { kind: 'email-change', ...change };
    },

    /**
     * Consumes a verification link (a POST: opening the link only shows inspectLink's page): marks the
     * address verified; says where the user goes next. A link of an e-mail change applies the change
     * (emailChanged: true) only for the signed-in user `userId` who asked for it (401 UNAUTHENTICATED
     * without a session, 403 WRONG_ACCOUNT with another account's; the link stays usable); 409 EMAIL_TAKEN
     * when another account has the address by now (the link then stays usable).
     */
    async verifyEmail(token: string, userId: string | undefined) {
      if (!token || token.length > 100) return undefined;
      const verified = await db.transaction().execute(async (trx) => {
        const row = await consumeEmailVerificationToken(trx, hashToken(token));
        if (!row) return undefined;
        const user = await markAddressVerified(trx, row.user_id, row.email);
        if (!user) return undefined;
        await appendAuditEvent(trx, { type: 'user.email_verified', userId: user.id, clientId: row.client_id });
        const next = { requestId: row.request_id, clientId: row.client_id, redirectUri: row.redirect_uri };
        return { user: toAccountUser(user), ...next, emailChanged: false };
      });
      if (verified || !deps.emailChanges) return verified;
      const changed = await deps.emailChanges.confirm(token, userId);
      return changed && { user: changed.user, requestId: null, clientId: null, redirectUri: null, emailChanged: true };
    },

    findUser: async (id: string): Promise<AccountUser | undefined> => {
      const row = await findUserById(db, id);
      return row && toAccountUser(row);
    },
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
