// User management: the one implementation behind the admin API, the admin web and the CLI.
// Account changes revoke (decisions.md, "Pending authorization requests and account changes"), in the
// transaction of the change:
//  - a new password ends every session and revokes every token, code and reset link, as a completed
//    reset does (revokeUserAccess), and a "your password was changed" mail goes to the address the
//    account had before the change (onPasswordChanged listeners, after the commit);
//  - disabling does the same revocation, so that enabling again brings nothing back;
//  - a new e-mail address kills the reset and verification links (bound to the old address anyway)
//    and clears email_verified, unless the same change sets emailVerified.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import type { UserRow } from '../../db/tables.js';
import * as repo from '../../db/repositories/users.js';
import { appendAuditEvent, pseudonymiseUserAuditEvents } from '../../db/repositories/audit.js';
import { deleteUserEmailVerificationTokens } from '../../db/repositories/email-verification.js';
import { revokeUserPasswordResetTokens } from '../../db/repositories/password-reset.js';
import {
  UserCreateSchema,
  UserUpdateSchema,
  userProblems,
  type User,
  type UserCreate,
  type UserUpdate,
} from '../domain/user.js';
import { conflict, notFound, validationError } from '../errors.js';
import type { PasswordHasher } from '../passwords.js';
import { assertSchema } from '../validate.js';
import { isUniqueViolation } from './db-errors.js';
import type { ActorContext, Page } from './applications.js';
import { auditPseudonym } from './audit.js';
import { revokeUserAccess } from './revocation.js';
import { toUser } from './rows.js';

export interface UserServiceDeps {
  db: Db;
  /** Hashes the passwords the admin API, admin web, CLI and seed set (at the configured cost). */
  passwords: Pick<PasswordHasher, 'hash'>;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const emailTaken = (email: string) => conflict('EMAIL_TAKEN', `A user with the e-mail address ${email} already exists`);

export function createUserService(deps: UserServiceDeps) {
  const { db, passwords } = deps;
  /** Told (after the commit) the address a password was changed for: the mail goes out from there. */
  const passwordListeners: Array<(email: string) => void> = [];

  /** By id, or by e-mail address when the reference contains an @ (handy in the CLI). */
  async function findRow(ref: string): Promise<UserRow | undefined> {
    if (ref.includes('@')) return repo.findUserByEmail(db, ref);
    if (!UUID.test(ref)) return undefined;
    return repo.findUserById(db, ref);
  }

  async function resolveId(ref: string): Promise<string> {
    const row = await findRow(ref);
    if (!row) throw notFound('USER_NOT_FOUND', `No user ${ref}`);
    return row.id;
  }

  async function get(ref: string): Promise<User> {
    const row = await findRow(ref);
    if (!row) throw notFound('USER_NOT_FOUND', `No user ${ref}`);
    return toUser(row);
  }

  /** Id → e-mail address of the users that exist among `ids` (one query; for lists that name users). */
  async function emailsOf(ids: string[]): Promise<Map<string, string>> {
    const valid = [...new Set(ids)].filter((id) => UUID.test(id));
    return new Map((await repo.findUserEmails(db, valid)).map((r) => [r.id, r.email]));
  }

  async function list(
    options: { q?: string | undefined; limit?: number | undefined; cursor?: string | undefined } = {},
  ): Promise<Page<User>> {
    const limit = options.limit ?? 50;
    let after: string | undefined;
    if (options.cursor !== undefined) {
      after = Buffer.from(options.cursor, 'base64url').toString('utf8');
      if (!after) throw validationError([{ field: 'cursor', message: 'is not a cursor this API returned' }]);
    }
    const rows = await repo.listUserRows(db, { q: options.q, after, limit: limit + 1 });
    const items = rows.slice(0, limit).map(toUser);
    return rows.length > limit
      ? { items, nextCursor: Buffer.from(items[items.length - 1]!.email, 'utf8').toString('base64url') }
      : { items };
  }

  /** `createdBy`: the built-in writer creating it (the seed), recorded on the row (0015-created-by). */
  async function create(input: UserCreate, context: ActorContext, options: { createdBy?: 'seed' } = {}): Promise<User> {
    assertSchema(UserCreateSchema, input);
    const problems = userProblems(input);
    if (problems.length) throw validationError(problems);
    // Hash outside the transaction: it takes ~10 ms of CPU and must not hold a connection.
    const passwordHash = input.password ? await passwords.hash(input.password) : null;
    try {
      return await db.transaction().execute(async (trx) => {
        const row = await repo.insertUser(trx, {
          id: randomUUID(),
          email: input.email,
          password_hash: passwordHash,
          name: input.name ?? null,
          given_name: input.givenName ?? null,
          family_name: input.familyName ?? null,
          picture: input.picture ?? null,
          email_verified: input.emailVerified ?? false,
          permissions: JSON.stringify(input.permissions ?? []),
          disabled: input.disabled ?? false,
          role: input.role ?? 'user',
          created_by: options.createdBy ?? null,
        });
        await appendAuditEvent(trx, { type: 'user.created', actor: context.actor, ip: context.ip, userId: row.id });
        return toUser(row);
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw emailTaken(input.email);
      throw error;
    }
  }

  /** `createdBy`: the row becomes that writer's (the seed taking an account over, "replace": true). */
  async function update(
    ref: string,
    input: UserUpdate,
    context: ActorContext,
    options: { createdBy?: 'seed' } = {},
  ): Promise<User> {
    assertSchema(UserUpdateSchema, input);
    const problems = userProblems(input);
    if (problems.length) throw validationError(problems);
    const id = await resolveId(ref);
    const passwordHash = input.password ? await passwords.hash(input.password) : undefined;
    try {
      const { user, previousEmail } = await db.transaction().execute(async (trx) => {
        // Locked, so that what changed is judged against the row this change replaces.
        const before = await repo.lockUserById(trx, id);
        if (!before) throw notFound('USER_NOT_FOUND', `No user ${ref}`);
        const emailChanged = input.email !== undefined && input.email !== before.email;
        const row = await repo.updateUserRow(trx, id, {
          ...(input.email !== undefined && { email: input.email }),
          // A new address is not verified, unless this same change says it is.
          ...(emailChanged && input.emailVerified === undefined && { email_verified: false }),
          ...(passwordHash !== undefined && { password_hash: passwordHash }),
          ...(input.name !== undefined && { name: input.name }),
          ...(input.givenName !== undefined && { given_name: input.givenName }),
          ...(input.familyName !== undefined && { family_name: input.familyName }),
          ...(input.picture !== undefined && { picture: input.picture }),
          ...(input.emailVerified !== undefined && { email_verified: input.emailVerified }),
          ...(input.permissions !== undefined && { permissions: JSON.stringify(input.permissions) }),
          ...(input.disabled !== undefined && { disabled: input.disabled }),
          ...(input.role !== undefined && { role: input.role }),
          ...(options.createdBy !== undefined && { created_by: options.createdBy }),
        });
        if (!row) throw notFound('USER_NOT_FOUND', `No user ${ref}`);
        // The audit trail names the fields, never their values (a password above all).
        await appendAuditEvent(trx, {
          type: 'user.updated',
          actor: context.actor,
          ip: context.ip,
          userId: id,
          detail: { fields: Object.keys(input) },
        });
        if (passwordHash !== undefined || input.disabled === true) {
          await revokeUserAccess(trx, id, {
            reason: passwordHash !== undefined ? 'password_changed' : 'user_disabled',
            actor: context.actor,
            ip: context.ip,
          });
        }
        if (emailChanged) {
          // Links mailed to the old address must not reset or verify the account at the new one.
          await revokeUserPasswordResetTokens(trx, id);
          await deleteUserEmailVerificationTokens(trx, id);
        }
        return { user: toUser(row), previousEmail: before.email };
      });
      if (passwordHash !== undefined) for (const listener of passwordListeners) listener(previousEmail);
      return user;
    } catch (error) {
      if (isUniqueViolation(error)) throw emailTaken(input.email ?? '');
      throw error;
    }
  }

  /**
   * Deletes the user (its rows go by the foreign keys' cascades). As with self-deletion, the user's audit
   * events stay under a pseudonym without personal data (issue 31 item 7a), and user.deleted names it.
   */
  async function remove(ref: string, context: ActorContext): Promise<void> {
    const id = await resolveId(ref);
    await db.transaction().execute(async (trx) => {
      const row = await repo.lockUserById(trx, id);
      if (!row) throw notFound('USER_NOT_FOUND', `No user ${ref}`);
      const pseudonym = auditPseudonym();
      await pseudonymiseUserAuditEvents(trx, id, row.email, pseudonym);
      await repo.deleteUserRow(trx, id);
      await appendAuditEvent(trx, { type: 'user.deleted', actor: context.actor, ip: context.ip, userId: pseudonym });
    });
  }

  return {
    /** Called after a committed password change with the account's address before the change. */
    onPasswordChanged(listener: (email: string) => void) {
      passwordListeners.push(listener);
    },
    get,
    emailsOf,
    list,
    create,
    update,
    setDisabled: (ref: string, disabled: boolean, context: ActorContext) => update(ref, { disabled }, context),
    remove,
  };
}

export type UserService = ReturnType<typeof createUserService>;
