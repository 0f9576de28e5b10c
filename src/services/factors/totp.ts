// TOTP (RFC 6238, issue 34): an authenticator app as second factor. SHA-1, 6 digits, 30-second steps (what
// every app understands), a code accepted in the step before, the current one and the one after (clock drift).
//
// Enrolment: start() makes a 160-bit secret (RFC 4226 §4 recommends 160 bits), stores it unconfirmed, sealed
// with SECRET_KEY (AES-256-GCM, HKDF purpose "totp secret", the user id as associated data: a sealed secret
// copied to another user's row does not open), and answers the otpauth:// URI, the secret as base32 text and
// the QR code as inline SVG. confirm() with a first right code makes it the user's factor. Starting again
// replaces an unconfirmed secret; a confirmed one must be removed first (409 TOTP_ALREADY_ENABLED).
//
// A code is accepted once: the time step of every accepted code is kept (last_step), and a code is accepted
// only for a later step, by one conditional UPDATE (acceptTotpStep). The same code again, or a code of an
// earlier step, is refused, also when two requests carry it at the same moment (RFC 6238 §5.2).
import { Secret, TOTP } from 'otpauth';
import QRCode from 'qrcode';
import type { Db } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import { findTotpRow } from '../../../db/repositories/factors.js';
import { countUnusedRecoveryCodes } from '../../../db/repositories/recovery-codes.js';
import { acceptTotpStep, confirmTotp, deleteTotp, putUnconfirmedTotp } from '../../../db/repositories/totp.js';
import type { Config } from '../../config.js';
import { AppError, conflict, notFound } from '../../errors.js';
import { seal, unseal } from '../../oauth/seal.js';
import type { FactorService } from './index.js';
import type { FactorActor, RecoveryCodeService } from './recovery-codes.js';

export const TOTP_PERIOD = 30;
export const TOTP_DIGITS = 6;
export const TOTP_ALGORITHM = 'SHA1';
/** Steps accepted either side of the current one. */
export const TOTP_WINDOW = 1;
/** 160 bits. */
const SECRET_BYTES = 20;
const SEAL_PURPOSE = 'totp secret';

/** What the enrolment shows: the URI (in the QR code), the same secret as text, the QR code (SVG markup). */
export interface TotpEnrolment {
  uri: string;
  /** Base32, in groups of four for reading (apps ignore the spaces). */
  secret: string;
  qrSvg: string;
}

export const wrongTotpCode = () => new AppError(400, 'INVALID_TOTP_CODE', 'That code is not correct');

/** A typed code as six digits (spaces and dashes dropped), or undefined when it cannot be one. */
export function normalizeTotpCode(input: string): string | undefined {
  const digits = input.replace(/[\s-]/g, '');
  return /^\d{6}$/.test(digits) ? digits : undefined;
}

export function createTotpService(deps: {
  db: Db;
  config: Pick<Config, 'secretKey' | 'loginUrl'>;
  factors: FactorService;
  recoveryCodes: RecoveryCodeService;
  /** Milliseconds since the epoch (tests fix it). */
  clock?: () => number;
}) {
  const { db, config, factors } = deps;
  const clock = deps.clock ?? Date.now;
  const secretKey = () => config.secretKey as string;
  // The issuer apps show above the code: this provider's host name (LOGIN_URL's; no port: a colon would
  // read as the separator of the label's issuer and account in some apps).
  const issuer = new URL(config.loginUrl).hostname;

  const sealSecret = (userId: string, base32: string) =>
    seal(base32, { secretKey: secretKey(), purpose: SEAL_PURPOSE, aad: userId });
  const unsealSecret = (userId: string, sealed: string) =>
    unseal(sealed, { secretKey: secretKey(), purpose: SEAL_PURPOSE, aad: userId });

  const totpOf = (base32: string, label = '') =>
    new TOTP({
      issuer,
      label,
      algorithm: TOTP_ALGORITHM,
      digits: TOTP_DIGITS,
      period: TOTP_PERIOD,
      secret: Secret.fromBase32(base32),
    });

  async function enrolment(base32: string, email: string): Promise<TotpEnrolment> {
    const uri = totpOf(base32, email).toString();
    const qrSvg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2, width: 200 });
    return { uri, secret: base32.replace(/(.{4})(?=.)/g, '$1 '), qrSvg };
  }

  /** The time step a right code belongs to (within the window around now), or undefined. */
  function stepOf(base32: string, input: string): number | undefined {
    const code = normalizeTotpCode(input);
    if (!code) return undefined;
    const timestamp = clock();
    const delta = totpOf(base32).validate({ token: code, timestamp, window: TOTP_WINDOW });
    return delta === null ? undefined : TOTP.counter({ period: TOTP_PERIOD, timestamp }) + delta;
  }

  /** The user's row with its secret opened; undefined when there is none or it does not open (another key). */
  async function load(userId: string) {
    const row = await findTotpRow(db, userId);
    const base32 = row && unsealSecret(userId, row.secret);
    return row && base32 ? { row, base32 } : undefined;
  }

  return {
    /** Whether the user has a confirmed TOTP factor, and whether an enrolment waits for its first code. */
    async status(userId: string): Promise<{ enabled: boolean; pending: boolean }> {
      const row = await findTotpRow(db, userId);
      return { enabled: Boolean(row?.confirmed_at), pending: Boolean(row && !row.confirmed_at) };
    },

    /** A new secret for the user, unconfirmed (replacing an unconfirmed one); 409 when one is confirmed. */
    async start(user: { id: string; email: string }): Promise<TotpEnrolment> {
      const base32 = new Secret({ size: SECRET_BYTES }).base32;
      if (!(await putUnconfirmedTotp(db, user.id, sealSecret(user.id, base32)))) {
        throw conflict('TOTP_ALREADY_ENABLED', 'An authenticator app is already set up: remove it first');
      }
      return enrolment(base32, user.email);
    },

    /** The enrolment waiting for its first code, shown again (after a wrong code); undefined when none waits. */
    async pendingEnrolment(user: { id: string; email: string }): Promise<TotpEnrolment | undefined> {
      const found = await load(user.id);
      return found && !found.row.confirmed_at ? enrolment(found.base32, user.email) : undefined;
    },

    /**
     * The first code of an enrolment: the factor is the user's from now on (the code's step counts as used),
     * every other session ends and the user is mailed. A user without recovery codes gets a set now, answered
     * here (shown once). Errors: 404 TOTP_NOT_STARTED, 400 INVALID_TOTP_CODE.
     */
    async confirm(userId: string, code: string, by: FactorActor): Promise<{ recoveryCodes: string[] | undefined }> {
      const found = await load(userId);
      if (!found || found.row.confirmed_at) {
        throw notFound('TOTP_NOT_STARTED', 'Start setting up an authenticator app first');
      }
      const step = stepOf(found.base32, code);
      if (step === undefined) throw wrongTotpCode();
      let notify: (() => Promise<void>) | undefined;
      const recoveryCodes = await db.transaction().execute(async (trx) => {
        // The secret the code was checked against, still unconfirmed (not replaced or confirmed meanwhile).
        if (!(await confirmTotp(trx, userId, found.row.secret, step))) {
          throw notFound('TOTP_NOT_STARTED', 'Start setting up an authenticator app first');
        }
        let made: string[] | undefined;
        if ((await countUnusedRecoveryCodes(trx, userId)) === 0) {
          made = await deps.recoveryCodes.replaceSet(trx, userId);
          await appendAuditEvent(trx, {
            type: 'mfa.recovery_codes_generated',
            userId,
            ip: by.ip,
            detail: { with: 'mfa.totp_enabled' },
          });
        }
        notify = await factors.recordChange(trx, userId, {
          type: 'mfa.totp_enabled',
          description: made
            ? 'an authenticator app was set up, and ten recovery codes were made'
            : 'an authenticator app was set up',
          keepSessionId: by.keepSessionId,
          ip: by.ip,
        });
        return made;
      });
      await notify?.();
      return { recoveryCodes };
    },

    /**
     * A code at sign-in (or step-up): true when it is right for the user's confirmed factor and its step is
     * later than every step accepted before (then it counts as used). False for anything else.
     */
    async verify(userId: string, code: string): Promise<boolean> {
      const found = await load(userId);
      if (!found?.row.confirmed_at) return false;
      const step = stepOf(found.base32, code);
      if (step === undefined) return false;
      return acceptTotpStep(db, userId, found.row.secret, step);
    },

    /**
     * Removes the user's authenticator app (404 TOTP_NOT_FOUND without one): every other session ends and the
     * user is mailed. An enrolment still waiting for its first code is only dropped (it was never a factor).
     */
    async remove(userId: string, by: FactorActor): Promise<{ wasEnabled: boolean }> {
      let notify: (() => Promise<void>) | undefined;
      const wasEnabled = await db.transaction().execute(async (trx) => {
        const gone = await deleteTotp(trx, userId);
        if (!gone) throw notFound('TOTP_NOT_FOUND', 'No authenticator app is set up');
        if (!gone.confirmed) return false;
        notify = await factors.recordChange(trx, userId, {
          type: 'mfa.totp_removed',
          description: 'the authenticator app was removed',
          keepSessionId: by.keepSessionId,
          ip: by.ip,
        });
        return true;
      });
      await notify?.();
      return { wasEnabled };
    },
  };
}

export type TotpService = ReturnType<typeof createTotpService>;
