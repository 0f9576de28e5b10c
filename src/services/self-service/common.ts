// Checks shared by the self-service methods.
import { findUserById } from '../../../db/repositories/users.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import type { Db } from '../../../db/create-db.js';
import type { UserRow } from '../../../db/tables.js';
import { AppError } from '../../errors.js';
import type { PasswordHasher } from '../../passwords.js';
import type { RequestMeta, SelfServiceGuards } from './types.js';

/** The session's user is gone (deleted or disabled meanwhile): for the client, signed out. */
export const signedOut = () => new AppError(401, 'UNAUTHENTICATED', 'Sign in first');

/** 400, not 401: a client takes 401 for "signed out". */
export const invalidPassword = (field: string) =>
  new AppError(400, 'INVALID_PASSWORD', 'The password is not correct', [
    { field, message: 'The password is not correct' },
  ]);

export async function currentUser(db: Db, userId: string): Promise<UserRow> {
  const user = await findUserById(db, userId);
  if (!user || user.disabled) throw signedOut();
  return user;
}

/**
 * The user's password, confirmed under the account's sign-in limits (a stolen session cookie must not
 * make guessing cheaper than the sign-in form); a failure is audited as password.confirmation_failed.
 */
export async function confirmPassword(
  deps: { db: Db; guards: SelfServiceGuards; passwords: Pick<PasswordHasher, 'verify' | 'verifyAgainstDummy'> },
  userId: string,
  password: string,
  o: { field: string; purpose: string; meta: RequestMeta },
): Promise<UserRow> {
  const user = await currentUser(deps.db, userId);
  return deps.guards.confirmPassword(user.email, async () => {
    const ok =
      user.password_hash && password.length <= 1024
        ? await deps.passwords.verify(user.password_hash, password)
        : await deps.passwords.verifyAgainstDummy(password);
    if (!ok) {
      await appendAuditEvent(deps.db, {
        type: 'password.confirmation_failed',
        actor: 'self',
        userId,
        ip: o.meta.ip,
        detail: { purpose: o.purpose },
      });
      throw invalidPassword(o.field);
    }
    return user;
  });
}
