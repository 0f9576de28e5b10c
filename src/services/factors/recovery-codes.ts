// Recovery codes (issue 34): the way back in for a user who lost their second factor. Ten per set, each used
// once, shown once (only their hashes are stored), and regenerable (a new set replaces the old one entirely).
//
// A code is 10 characters of the RFC 4648 base32 alphabet (50 random bits), shown as `xxxxx-xxxxx`. What is
// stored is HMAC-SHA-256 of the user id and the code under a key derived from SECRET_KEY: the database alone
// (a backup, a dump) lets nobody test guesses offline, and a code is bound to its user. Input is forgiving:
// case, dashes and spaces do not matter, and the digits 0, 1 and 8 (not in the alphabet) read as O, I and B.
//
// A code counts as a second factor only for a user who holds a real one (a passkey or an authenticator app):
// recovery codes are a fallback, never a factor of their own (hasSecondFactor).
import { createHmac, hkdfSync, randomUUID } from 'node:crypto';
import type { Db, Tx } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  countUnusedRecoveryCodes,
  replaceRecoveryCodes,
  useRecoveryCode,
} from '../../../db/repositories/recovery-codes.js';
import { findUserById } from '../../../db/repositories/users.js';
import type { Config } from '../../config.js';
import { hasSecondFactor } from '../../domain/mfa.js';
import { conflict } from '../../errors.js';
import type { Mailer } from '../../mail/mailer.js';
import { recoveryCodeUsedMail } from '../../mail/templates.js';
import { randomBuffer } from '../../random.js';
import type { FactorService } from './index.js';

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const CODE_LENGTH = 10;

/** A fresh code as shown: `xxxxx-xxxxx` (lower case, easier to read and type). */
export function newRecoveryCode(): string {
  // 256 is a multiple of 32: each byte's low five bits are uniform.
  const chars = [...randomBuffer(CODE_LENGTH)].map((b) => ALPHABET[b & 31]!);
  const code = chars.join('').toLowerCase();
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

/** A typed code in its canonical form (10 upper-case base32 characters), or undefined when it cannot be one. */
export function normalizeRecoveryCode(input: string): string | undefined {
  const canonical = input
    .replace(/[\s\-_.]/g, '')
    .toUpperCase()
    .replace(/0/g, 'O')
    .replace(/1/g, 'I')
    .replace(/8/g, 'B');
  return canonical.length === CODE_LENGTH && /^[A-Z2-7]+$/.test(canonical) ? canonical : undefined;
}

/** Who made a change, for the audit trail and the sessions that stay. */
export interface FactorActor {
  /** The session that made the change: it stays, every other session of the user ends. */
  keepSessionId: string;
  ip: string | null;
}

export function createRecoveryCodeService(deps: {
  db: Db;
  config: Pick<Config, 'secretKey' | 'loginUrl'>;
  factors: FactorService;
  mailer: Mailer;
}) {
  const { db, config, factors } = deps;
  let key: Buffer | undefined;
  const hashOf = (userId: string, canonical: string) => {
    key ??= Buffer.from(
      hkdfSync('sha256', Buffer.from(config.secretKey as string, 'utf8'), Buffer.alloc(0), 'idp recovery codes v1', 32),
    );
    return createHmac('sha256', key).update(`${userId}\u0000${canonical}`).digest('base64url');
  };

  /**
   * Inside a transaction: a new set replaces the user's codes (every old one stops working); answers the codes
   * as shown, the only time they exist in clear. The caller records the change.
   */
  async function replaceSet(trx: Tx, userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await replaceRecoveryCodes(
      trx,
      userId,
      codes.map((code) => ({ id: randomUUID(), code_hash: hashOf(userId, normalizeRecoveryCode(code)!) })),
    );
    return codes;
  }

  return {
    replaceSet,

    /**
     * A new set for the user, shown once: the old codes stop working, every other session ends and the user is
     * mailed. Refused (409 NO_SECOND_FACTOR) without a second factor the codes would stand in for.
     */
    async generate(userId: string, by: FactorActor): Promise<string[]> {
      if (!hasSecondFactor(await factors.summary(userId))) {
        throw conflict('NO_SECOND_FACTOR', 'Set up an authenticator app or a passkey first');
      }
      let notify: (() => Promise<void>) | undefined;
      const codes = await db.transaction().execute(async (trx) => {
        const made = await replaceSet(trx, userId);
        notify = await factors.recordChange(trx, userId, {
          type: 'mfa.recovery_codes_generated',
          description: 'a new set of ten recovery codes was made (the old codes no longer work)',
          keepSessionId: by.keepSessionId,
          ip: by.ip,
        });
        return made;
      });
      await notify?.();
      return codes;
    },

    /**
     * A sign-in (or step-up) with a recovery code: the unused code of this user is used up, atomically, and
     * the use is audited and mailed to the user with the number of codes left. Undefined: not a code of the
     * user's, already used, or the user holds no second factor.
     *
     * It does not end the user's other sessions: it is a sign-in, not a change of factors, and the sessions
     * that exist were made with the user's own factors. A user who lost a device goes on to remove the lost
     * factor (or regenerate the codes), and that change ends every other session (recordChange); a user who
     * did not use the code learns of it from the mail, which says how to take the account back.
     */
    async use(userId: string, input: string, meta: { ip: string | null }): Promise<{ remaining: number } | undefined> {
      const canonical = normalizeRecoveryCode(input);
      if (!canonical) return undefined;
      if (!hasSecondFactor(await factors.summary(userId))) return undefined;
      const remaining = await db.transaction().execute(async (trx) => {
        if (!(await useRecoveryCode(trx, userId, hashOf(userId, canonical)))) return undefined;
        const left = await countUnusedRecoveryCodes(trx, userId);
        await appendAuditEvent(trx, {
          type: 'mfa.recovery_code_used',
          userId,
          ip: meta.ip,
          detail: { remaining: left },
        });
        return left;
      });
      if (remaining === undefined) return undefined;
      const user = await findUserById(db, userId);
      if (user) {
        deps.mailer.sendInBackground(
          recoveryCodeUsedMail(user.email, new Date(), remaining, {
            methodsLink: `${config.loginUrl}/account/sign-in-methods`,
            resetLink: `${config.loginUrl}/forgot-password`,
          }),
        );
      }
      return { remaining };
    },

    /** How many unused codes the user has. */
    async remaining(userId: string): Promise<number> {
      return countUnusedRecoveryCodes(db, userId);
    },
  };
}

export type RecoveryCodeService = ReturnType<typeof createRecoveryCodeService>;
