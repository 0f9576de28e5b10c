// An operator removes one second factor of a user (issue 34): a passkey by its id, `totp` (the authenticator
// app) or `recovery-codes` (the whole set). The admin API, the admin web and the CLI call it through
// services.factors.removeOne; the reset of every factor is services.factors.resetAll.
// As every change of factors: in one transaction the factor goes, every session of the user ends (an operator
// keeps none), sign-ins waiting for a second factor end, and mfa.factor_removed is audited with the operator as
// actor; the user is mailed after the commit.
import type { Db } from '../../../db/create-db.js';
import {
  deleteUserPasskey,
  deleteUserRecoveryCodes,
  deleteUserTotp,
} from '../../../db/repositories/operator-factors.js';
import type { FactorKind } from '../../domain/mfa.js';
import { notFound } from '../../errors.js';
import type { FactorService } from './index.js';

/** The ids of the factors that are not passkeys (services.factors.list gives the same). */
export const TOTP_FACTOR_ID = 'totp';
export const RECOVERY_CODES_FACTOR_ID = 'recovery-codes';

export interface Operator {
  actor: string;
  ip?: string | null | undefined;
}

/** Removes the factor `factorId` of the user `userId`; 404 FACTOR_NOT_FOUND when the user holds no such factor. */
export async function removeFactor(
  deps: { db: Db; recordChange: FactorService['recordChange'] },
  userId: string,
  factorId: string,
  operator: Operator,
): Promise<{ id: string; kind: FactorKind }> {
  let notify: (() => Promise<void>) | undefined;
  const removed = await deps.db.transaction().execute(async (trx) => {
    let kind: FactorKind;
    let description: string;
    const detail: Record<string, unknown> = { factorId };
    if (factorId === TOTP_FACTOR_ID) {
      if (!(await deleteUserTotp(trx, userId))) throw missing(factorId);
      kind = 'totp';
      description = 'the authenticator app (one-time codes) was removed';
    } else if (factorId === RECOVERY_CODES_FACTOR_ID) {
      const count = await deleteUserRecoveryCodes(trx, userId);
      if (count === 0) throw missing(factorId);
      kind = 'recovery_code';
      description = 'the recovery codes were removed';
      detail.codes = count;
    } else {
      const passkey = await deleteUserPasskey(trx, userId, factorId);
      if (!passkey) throw missing(factorId);
      kind = 'passkey';
      description = `the passkey named "${passkey.name}" was removed`;
      detail.name = passkey.name;
    }
    notify = await deps.recordChange(trx, userId, {
      type: 'mfa.factor_removed',
      description,
      actor: operator.actor,
      ip: operator.ip,
      detail: { kind, ...detail },
    });
    return { id: factorId, kind };
  });
  await notify?.();
  return removed;
}

const missing = (factorId: string) => notFound('FACTOR_NOT_FOUND', `This user has no second factor ${factorId}`);
