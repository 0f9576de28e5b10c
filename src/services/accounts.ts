// Sign-up, sign-in and e-mail verification for the hosted login (pages and JSON endpoints alike).
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
import type { Config } from '../config.js';
import { deviceAccount } from '../device-cookie.js';
import type { AccountUser } from '../domain/user.js';
import { AppError } from '../errors.js';
import type { Mailer } from '../mail/mailer.js';
import type { MetricEvents } from '../metrics.js';
import { verificationMail } from '../mail/templates.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import { hashPassword, needsRehash, newPasswordProblem, verifyAgainstDummy, verifyPassword } from '../passwords.js';
import { isUniqueViolation } from './db-errors.js';
import { toAccountUser } from './rows.js';
import type { SessionService } from './sessions.js';

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

export function createAccountService(deps: {
  db: Db;
  config: Config;
  sessions: SessionService;
  mailer: Mailer;
  events: Pick<MetricEvents, 'signInFailed'>;
  /** E-mail changes (issue 17): their links are verification links too, confirmed here. */
  emailChanges?: {
    inspect(token: string): Promise<{ userId: string; email: string; previousEmail: string } | undefined>;
    confirm(token: string, userId: string | undefined): Promise<{ user: AccountUser } | undefined>;
  };
}) {
  const { db, config } = deps;

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

    async signUp(
      input: { email: string; password: string; name?: string | undefined },
      meta: RequestMeta,
      pending: { requestId?: string; clientId?: string; clientName?: string; redirectUri?: string },
    ) {
      const problems: Array<{ field: string; message: string }> = [];
      const email = input.email.trim();
      if (!EMAIL.test(email) || email.length > 254)
        problems.push({ field: 'email', message: 'Enter a valid e-mail address' });
      const passwordProblem = newPasswordProblem(input.password);
      if (passwordProblem) problems.push({ field: 'password', message: passwordProblem.message });
      const name = input.name?.trim();
      if (name && name.length > 200) problems.push({ field: 'name', message: 'Use at most 200 characters' });
      if (problems.length) throw new AppError(400, 'VALIDATION_ERROR', problems[0]!.message, problems);
      const passwordHash = await hashPassword(input.password);
      try {
        const { user, token, sessionId } = await db.transaction().execute(async (trx) => {
          const user = await insertUser(trx, {
            id: randomUUID(),
            email,
            password_hash: passwordHash,
            name: name || null,
            given_name: null,
            family_name: null,
            picture: null,
            permissions: '[]',
          });
          const { token, session } = await deps.sessions.create(user.id, meta, trx);
          await appendAuditEvent(trx, {
            type: 'user.signed_up',
            userId: user.id,
            clientId: pending.clientId ?? null,
            ip: meta.ip,
          });
          return { user, token, sessionId: session.id };
        });
        await sendVerification(user, pending);
        return { user: toAccountUser(user), sessionToken: token, sessionId };
      } catch (error) {
        if (isUniqueViolation(error)) {
          throw new AppError(
            409,
            'EMAIL_TAKEN',
            'An account with this e-mail address exists already; sign in instead',
            [{ field: 'email', message: 'An account with this e-mail address exists already; sign in instead' }],
          );
        }
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
          ? await verifyPassword(user.password_hash, input.password)
          : await verifyAgainstDummy(input.password);
      if (!ok || !user) {
        await appendAuditEvent(db, { type: 'user.sign_in_failed', userId: user?.id ?? null, ip: meta.ip });
        deps.events.signInFailed();
        throw INVALID_CREDENTIALS;
      }
      let passwordHash = user.password_hash!;
      if (needsRehash(passwordHash)) {
        passwordHash = await hashPassword(input.password);
        await updateUserRow(db, user.id, { password_hash: passwordHash });
      }
      const { token, session } = await deps.sessions.signedIn(user.id, meta);
      return {
        user: toAccountUser(user),
        sessionToken: token,
        sessionId: session.id,
        /** What a device cookie set now names (src/device-cookie.ts): this user under this password. */
        deviceAccount: deviceAccount(user.id, passwordHash),
      };
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
