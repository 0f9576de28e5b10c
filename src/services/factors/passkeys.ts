// Passkeys (issue 34; WebAuthn Level 3 through @simplewebauthn/server): registration from the account page,
// sign-in with a passkey alone (discoverable credentials, user verification required), and a passkey as the
// second factor after a password (user verification preferred).
//
// Who may move each ceremony on, and what binds it:
//   options ─▶ a challenge that is its own record (nothing written): sealed with SECRET_KEY for ONE purpose
//              (register, authenticate, second-factor), bound to the browser (the SHA-256 of its browser-binding
//              cookie secret), for a registration or a second factor to the user, 5 minutes, with a nonce;
//   verify  ─▶ the challenge named by the response's clientDataJSON must open for this purpose, browser and
//              user and be live; its nonce is then claimed by one INSERT (webauthn_challenges): used once.
//              Then the origin (config.mfa.origins), the RP ID hash (config.mfa.rpId), the signature over the
//              stored public key, user presence (and verification where required) are checked by SimpleWebAuthn.
// The signature counter: when either the stored or the new counter is non-zero, the new one must be greater;
// a regression (a cloned authenticator, a replay) is refused and audited (mfa.passkey_counter_regression). The
// update itself is conditional on the counter, so two concurrent uses of one assertion cannot both pass.
// user.id (the user handle the authenticator keeps) is an opaque SHA-256 of the user id, never the address; a
// passkey-only sign-in checks that the handle returned is the one of the credential's owner.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  type AuthenticationResponseJSON,
  generateAuthenticationOptions,
  generateRegistrationOptions,
  type RegistrationResponseJSON,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
} from '@simplewebauthn/server';
import type { Db } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  claimChallenge,
  deletePasskey,
  findPasskeyByCredentialId,
  insertPasskey,
  listUserPasskeys,
  type PasskeyRow,
  recordPasskeyUse,
  renamePasskey,
} from '../../../db/repositories/passkeys.js';
import type { Config } from '../../config.js';
import { passkeyAmr } from '../../domain/mfa.js';
import { AppError } from '../../errors.js';
import { seal, unseal } from '../../oauth/seal.js';
import { hashToken } from '../../oauth/tokens.js';
import { isUniqueViolation } from '../db-errors.js';
import type { FactorService } from './index.js';

/** How long a ceremony's challenge lives (and the timeout the browser is given). */
export const CHALLENGE_SECONDS = 300;
/** The longest name a passkey may have. */
export const PASSKEY_NAME_MAX = 64;

export type PasskeyPurpose = 'register' | 'authenticate' | 'second-factor';

/** A passkey as the account page shows it. */
export interface Passkey {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  backedUp: boolean;
  deviceType: string;
}

/** Names of well-known authenticators by AAGUID (the default name of a new passkey). */
const AUTHENTICATOR_NAMES: Record<string, string> = {
  'fbfc3007-154e-4ecc-8c0b-6e020557d7bd': 'iCloud Keychain',
  'ea9b8d66-4d01-1d21-3ce4-b6b48cb575d4': 'Google Password Manager',
  'adce0002-35bc-c60a-648b-0b25f1f05503': 'Chrome on Mac',
  '08987058-cadc-4b81-b6e1-30de50dcbe96': 'Windows Hello',
  '9ddd1817-af5a-4672-a2b9-3e3dd95000a9': 'Windows Hello',
  '6028b017-b1d4-4c02-b4b3-afcdafc96bb2': 'Windows Hello',
  'bada5566-a7aa-401f-bd96-45619a55120d': '1Password',
  'd548826e-79b4-db40-a3d8-11116f7e8349': 'Bitwarden',
  '531126d6-e717-415c-9320-3d9aa6981045': 'Dashlane',
};

const refused = (message = 'This passkey could not be verified') => new AppError(401, 'PASSKEY_REFUSED', message);
const badResponse = (message = 'This is not a passkey response') =>
  new AppError(400, 'INVALID_PASSKEY_RESPONSE', message);
const staleChallenge = () =>
  new AppError(
    400,
    'PASSKEY_CHALLENGE_INVALID',
    'This passkey request has expired, was already used or was started elsewhere; try again',
  );
const notFound = () => new AppError(404, 'PASSKEY_NOT_FOUND', 'There is no such passkey');

/** The opaque, stable user handle of a user: never the address, never the user id itself. */
export function userHandle(userId: string): string {
  return createHash('sha256').update(`idp webauthn user handle\0${userId}`).digest('base64url');
}

/** A passkey name as stored: trimmed, control characters out, at most PASSKEY_NAME_MAX characters. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
const CONTROL = /[\u0000-\u001f\u007f]/g;
export function cleanPasskeyName(name: string | undefined): string {
  return (name ?? '').replace(CONTROL, ' ').replace(/\s+/g, ' ').trim().slice(0, PASSKEY_NAME_MAX);
}

/** The challenge a response answers (from its clientDataJSON), or a 400. */
function challengeOf(response: { response?: { clientDataJSON?: unknown } }): string {
  const encoded = response?.response?.clientDataJSON;
  if (typeof encoded !== 'string' || encoded.length > 8192) throw badResponse();
  try {
    const data = JSON.parse(Buffer.from(encoded, 'base64url').toString('utf8')) as { challenge?: unknown };
    if (typeof data.challenge === 'string' && /^[A-Za-z0-9_-]{16,1024}$/.test(data.challenge)) return data.challenge;
  } catch {
    // falls through
  }
  throw badResponse();
}

const iso = (d: Date | string | null) => (d ? new Date(d).toISOString() : null);
const toPasskey = (row: PasskeyRow): Passkey => ({
  id: row.id,
  name: row.name,
  createdAt: iso(row.created_at)!,
  lastUsedAt: iso(row.last_used_at),
  backedUp: row.backed_up,
  deviceType: row.device_type,
});

export function createPasskeyService(deps: { db: Db; config: Config; factors: FactorService }) {
  const { db, config, factors } = deps;
  const rpID = config.mfa.rpId;
  const expectedOrigin = config.mfa.origins;

  // A challenge is stateless until it is used: the options carry it sealed (AES-GCM with SECRET_KEY, its purpose
  // as associated data) with what it is bound to: the browser (hash of its binding cookie), the user (a
  // registration or a second factor), an expiry and a nonce. Making one writes nothing (the sign-in page offers
  // its autofill request with every GET); using one claims its nonce once (an INSERT that a replay cannot repeat).
  const secretKey = config.secretKey as string;
  const sealOptions = (purpose: PasskeyPurpose) => ({ secretKey, purpose: 'webauthn challenge', aad: purpose });
  function makeChallenge(purpose: PasskeyPurpose, userId: string | null, browser: string): string {
    const payload = {
      b: hashToken(browser),
      u: userId,
      e: Date.now() + CHALLENGE_SECONDS * 1000,
      n: randomBytes(16).toString('base64url'),
    };
    return seal(JSON.stringify(payload), sealOptions(purpose));
  }

  /** Claims the response's challenge for this purpose, browser and user, once; or throws (400). */
  async function takeChallenge(
    purpose: PasskeyPurpose,
    response: { response?: { clientDataJSON?: unknown } },
    userId: string | null,
    browser: string | undefined,
  ): Promise<string> {
    const challenge = challengeOf(response);
    if (!browser) throw staleChallenge();
    const opened = unseal(Buffer.from(challenge, 'base64url').toString('utf8'), sealOptions(purpose));
    if (!opened) throw staleChallenge();
    const payload = JSON.parse(opened) as { b: string; u: string | null; e: number; n: string };
    if (payload.b !== hashToken(browser) || payload.u !== userId || payload.e <= Date.now()) throw staleChallenge();
    const claimed = await claimChallenge(db, {
      id: payload.n,
      challenge: hashToken(challenge),
      purpose,
      user_id: userId,
      browser_hash: payload.b,
      expires_at: new Date(payload.e),
    });
    if (!claimed) throw staleChallenge();
    return challenge;
  }

  /**
   * Verifies an assertion against a stored passkey (the signature, origin, RP ID, user presence and, when
   * asked, verification), then the counter; records the use. Answers the updated passkey and whether the user
   * was verified.
   */
  async function verifyAssertion(
    passkey: PasskeyRow,
    response: AuthenticationResponseJSON,
    expectedChallenge: string,
    requireUserVerification: boolean,
    meta: { ip: string | null },
  ): Promise<{ passkey: PasskeyRow; userVerified: boolean }> {
    let info: Awaited<ReturnType<typeof verifyAuthenticationResponse>>['authenticationInfo'];
    try {
      const result = await verifyAuthenticationResponse({
        response,
        expectedChallenge,
        expectedOrigin,
        expectedRPID: rpID,
        // The counter is judged below, after the signature is known to be good (0: the library does not).
        credential: {
          id: passkey.credential_id,
          publicKey: Buffer.from(passkey.public_key, 'base64url'),
          counter: 0,
          transports: passkey.transports as never,
        },
        requireUserVerification,
      });
      if (!result.verified) throw refused();
      info = result.authenticationInfo;
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw refused(`This passkey could not be verified: ${(error as Error).message}`);
    }
    const stored = Number(passkey.counter);
    const counter = info.newCounter;
    const regression = (counter > 0 || stored > 0) && counter <= stored;
    const updated = regression
      ? undefined
      : await recordPasskeyUse(db, passkey.id, { counter, backedUp: info.credentialBackedUp });
    if (!updated) {
      await appendAuditEvent(db, {
        type: 'mfa.passkey_counter_regression',
        userId: passkey.user_id,
        ip: meta.ip,
        detail: { passkeyId: passkey.id, storedCounter: stored, counter },
      });
      throw refused('This passkey reported a signature counter that went backwards; it may be a copy');
    }
    return { passkey: updated, userVerified: info.userVerified };
  }

  /** The response's credential id, or a 400. */
  function credentialIdOf(response: AuthenticationResponseJSON): string {
    const id = response?.id;
    if (typeof id !== 'string' || !/^[A-Za-z0-9_-]{1,1366}$/.test(id) || response.rawId !== id) throw badResponse();
    return id;
  }

  return {
    async list(userId: string): Promise<Passkey[]> {
      return (await listUserPasskeys(db, userId)).map(toPasskey);
    },

    /** Registration options for a signed-in user, bound to this browser and user. */
    async registrationOptions(user: { id: string; email: string; name: string | null }, browser: string) {
      const existing = await listUserPasskeys(db, user.id);
      const options = await generateRegistrationOptions({
        challenge: makeChallenge('register', user.id, browser),
        rpName: rpID,
        rpID,
        userName: user.email,
        userDisplayName: user.name || user.email,
        userID: Buffer.from(userHandle(user.id), 'base64url'),
        timeout: CHALLENGE_SECONDS * 1000,
        attestationType: 'none',
        excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
        authenticatorSelection: { residentKey: 'required', requireResidentKey: true, userVerification: 'preferred' },
      });
      return options;
    },

    /**
     * Verifies a registration of `userId` from this browser and stores the passkey (named `name`, else after
     * its authenticator, else "Passkey N"). Inside its transaction the change is recorded (the user's other
     * sessions end); the mail goes after the commit.
     */
    async register(
      userId: string,
      browser: string | undefined,
      response: RegistrationResponseJSON,
      o: { name?: string | undefined; keepSessionId: string; ip: string | null },
    ): Promise<Passkey & { userVerified: boolean }> {
      const expectedChallenge = await takeChallenge('register', response, userId, browser);
      let info: NonNullable<Awaited<ReturnType<typeof verifyRegistrationResponse>>['registrationInfo']>;
      try {
        const result = await verifyRegistrationResponse({
          response,
          expectedChallenge,
          expectedOrigin,
          expectedRPID: rpID,
          requireUserVerification: false,
        });
        if (!result.verified) throw refused();
        info = result.registrationInfo;
      } catch (error) {
        if (error instanceof AppError) throw error;
        throw refused(`This passkey could not be verified: ${(error as Error).message}`);
      }
      const existing = await listUserPasskeys(db, userId);
      const aaguid = info.aaguid && info.aaguid !== '00000000-0000-0000-0000-000000000000' ? info.aaguid : null;
      const name =
        cleanPasskeyName(o.name) || (aaguid && AUTHENTICATOR_NAMES[aaguid]) || `Passkey ${existing.length + 1}`;
      let notify: (() => Promise<void>) | undefined;
      let row: PasskeyRow;
      try {
        row = await db.transaction().execute(async (trx) => {
          const inserted = await insertPasskey(trx, {
            id: randomUUID(),
            user_id: userId,
            credential_id: info.credential.id,
            public_key: Buffer.from(info.credential.publicKey).toString('base64url'),
            counter: info.credential.counter,
            transports: (info.credential.transports ?? response.response.transports ?? []).slice(0, 10),
            device_type: info.credentialDeviceType,
            backed_up: info.credentialBackedUp,
            aaguid,
            name,
          });
          notify = await factors.recordChange(trx, userId, {
            type: 'mfa.passkey_added',
            description: `a passkey named "${name}" was added`,
            keepSessionId: o.keepSessionId,
            ip: o.ip,
            detail: { passkeyId: inserted.id, name, deviceType: inserted.device_type, aaguid },
          });
          return inserted;
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw new AppError(409, 'PASSKEY_EXISTS', 'This passkey is registered already');
        throw error;
      }
      await notify?.();
      return { ...toPasskey(row), userVerified: info.userVerified };
    },

    async rename(userId: string, id: string, name: string, meta: { ip: string | null }): Promise<Passkey> {
      const clean = cleanPasskeyName(name);
      if (!clean) {
        throw new AppError(400, 'VALIDATION_ERROR', 'Give the passkey a name', [
          { field: 'name', message: 'Give the passkey a name' },
        ]);
      }
      const row = /^[0-9a-f-]{36}$/.test(id) ? await renamePasskey(db, userId, id, clean) : undefined;
      if (!row) throw notFound();
      await appendAuditEvent(db, { type: 'mfa.passkey_renamed', userId, ip: meta.ip, detail: { passkeyId: id } });
      return (await listUserPasskeys(db, userId)).map(toPasskey).find((p) => p.id === id)!;
    },

    /** Removes a passkey of the user; the change is recorded (other sessions end) and the user mailed. */
    async remove(userId: string, id: string, o: { keepSessionId: string; ip: string | null }): Promise<void> {
      if (!/^[0-9a-f-]{36}$/.test(id)) throw notFound();
      let notify: (() => Promise<void>) | undefined;
      await db.transaction().execute(async (trx) => {
        const gone = await deletePasskey(trx, userId, id);
        if (!gone) throw notFound();
        notify = await factors.recordChange(trx, userId, {
          type: 'mfa.passkey_removed',
          description: `the passkey named "${gone.name}" was removed`,
          keepSessionId: o.keepSessionId,
          ip: o.ip,
          detail: { passkeyId: id, name: gone.name },
        });
      });
      await notify?.();
    },

    /** Options for a sign-in with a passkey alone (any discoverable passkey; user verification required). */
    async signInOptions(browser: string) {
      const options = await generateAuthenticationOptions({
        challenge: makeChallenge('authenticate', null, browser),
        rpID,
        timeout: CHALLENGE_SECONDS * 1000,
        userVerification: 'required',
      });
      return options;
    },

    /**
     * A sign-in with a passkey alone: the challenge of this browser, a passkey of an enabled user whose handle
     * the authenticator returned, verified with user verification. Answers the user and the session's amr.
     */
    async signIn(
      browser: string | undefined,
      response: AuthenticationResponseJSON,
      meta: { ip: string | null },
    ): Promise<{ userId: string; amr: string[]; passkeyId: string }> {
      const expectedChallenge = await takeChallenge('authenticate', response, null, browser);
      const passkey = await findPasskeyByCredentialId(db, credentialIdOf(response));
      // A refused passkey sign-in is a failed sign-in (audited as the password's are).
      const failed = async (error: AppError) => {
        const detail = { method: 'passkey', reason: error.code };
        await appendAuditEvent(db, {
          type: 'user.sign_in_failed',
          userId: passkey?.user_id ?? null,
          ip: meta.ip,
          detail,
        });
        return error;
      };
      if (!passkey) throw await failed(refused('This passkey is not registered here (it may have been removed)'));
      const handle = response.response?.userHandle;
      if (typeof handle !== 'string' || handle !== userHandle(passkey.user_id)) throw await failed(refused());
      let verified: Awaited<ReturnType<typeof verifyAssertion>>;
      try {
        verified = await verifyAssertion(passkey, response, expectedChallenge, true, meta);
      } catch (error) {
        throw error instanceof AppError ? await failed(error) : error;
      }
      const { passkey: used, userVerified } = verified;
      return {
        userId: used.user_id,
        amr: passkeyAmr({ backedUp: used.backed_up, deviceType: used.device_type }, userVerified),
        passkeyId: used.id,
      };
    },

    /** Options for a passkey as the second factor of `userId`: only that user's passkeys are allowed. */
    async secondFactorOptions(userId: string, browser: string) {
      const existing = await listUserPasskeys(db, userId);
      const options = await generateAuthenticationOptions({
        challenge: makeChallenge('second-factor', userId, browser),
        rpID,
        timeout: CHALLENGE_SECONDS * 1000,
        userVerification: 'preferred',
        allowCredentials: existing.map((p) => ({ id: p.credential_id, transports: p.transports })),
      });
      return options;
    },

    /**
     * A passkey as the second factor of `userId`: the challenge made for this user and browser, a passkey of
     * THIS user, verified (user verification preferred). Answers the methods it adds (passkeyAmr).
     */
    async verifySecondFactor(
      userId: string,
      browser: string | undefined,
      response: AuthenticationResponseJSON,
      meta: { ip: string | null },
    ): Promise<{ amr: string[]; passkeyId: string }> {
      const expectedChallenge = await takeChallenge('second-factor', response, userId, browser);
      const passkey = await findPasskeyByCredentialId(db, credentialIdOf(response));
      if (!passkey || passkey.user_id !== userId) throw refused('This passkey is not one of this account');
      const { passkey: used, userVerified } = await verifyAssertion(passkey, response, expectedChallenge, false, meta);
      return {
        amr: passkeyAmr({ backedUp: used.backed_up, deviceType: used.device_type }, userVerified),
        passkeyId: used.id,
      };
    },
  };
}

export type PasskeyService = ReturnType<typeof createPasskeyService>;
