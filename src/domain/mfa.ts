// Second factors (issue 34): the authentication methods a session records (RFC 8176 amr values), the
// authentication context classes the provider offers (acr), and how they follow from each other.
//
// The two levels, advertised as acr_values_supported:
//   urn:idp:pwd  one factor: a password (or a passkey without user verification, never offered alone)
//   urn:idp:mfa  two factors: a password and a second factor (otp, hwk, swk), or a passkey with user
//                verification (possession of the key and the PIN or biometric that unlocks it)
// A session's amr only grows (a step-up adds methods, in place); its acr is derived from it, never stored.

/** RFC 8176 values this provider records. */
export type AmrValue = 'pwd' | 'fed' | 'otp' | 'hwk' | 'swk' | 'user' | 'pin' | 'mfa';

// The levels and acrOf/meetsAcr live in src/oauth/acr.ts (the authorize state machine and the ID token read them,
// and src/oauth imports nothing of src/domain); re-exported here.
export { ACR_MFA, ACR_PASSWORD, ACR_VALUES, type AcrValue, acrOf, meetsAcr } from '../oauth/acr.js';

/** MFA: off (no factor offered or asked), optional (asked once enrolled), required (every user enrols). */
export type MfaMode = 'off' | 'optional' | 'required';

/** The factor kinds a user may hold. */
export type FactorKind = 'passkey' | 'totp' | 'recovery_code';

/** Methods that prove possession of something: with a knowledge factor (pwd), two factors. */
const POSSESSION: readonly string[] = ['otp', 'hwk', 'swk'];

/**
 * The amr after adding `added` to `amr`: the union, in a stable order, with `mfa` when the methods now cover
 * two factors (a password and a possession factor), or the added methods say so themselves (a passkey with
 * user verification adds `mfa`).
 */
export function combineAmr(amr: readonly string[], added: readonly string[]): string[] {
  const all = new Set([...amr, ...added]);
  // A sign-in through an upstream provider (fed, issue 35) is one factor here, like a password: whatever the
  // upstream asked for is not seen; a second factor of this provider's makes two.
  if ((all.has('pwd') || all.has('fed')) && POSSESSION.some((m) => all.has(m))) all.add('mfa');
  const order: readonly string[] = ['pwd', 'fed', 'otp', 'hwk', 'swk', 'user', 'pin', 'mfa'];
  return [...all].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}

/** The amr a passkey adds: hwk for a device-bound key, swk for a synced one; user verification adds mfa. */
export function passkeyAmr(passkey: { backedUp: boolean; deviceType: string }, userVerified: boolean): string[] {
  const key = passkey.deviceType === 'multiDevice' || passkey.backedUp ? 'swk' : 'hwk';
  return userVerified ? [key, 'user', 'mfa'] : [key];
}

/** A factor as the account pages, the admin API and the admin web show it (never a secret). */
export interface Factor {
  id: string;
  kind: FactorKind;
  /** The passkey's name, "Authenticator app" for TOTP, "Recovery codes" for a set. */
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  /** Recovery codes: how many are left unused. */
  remaining?: number;
  /** Passkeys: synced (backed up) or bound to one device. */
  backedUp?: boolean;
}

/** What the sign-in needs to know of a user's factors. */
export interface FactorSummary {
  passkeys: number;
  totp: boolean;
  recoveryCodes: number;
}

/** A user who holds a factor that counts as second factor (recovery codes alone do not: they are a fallback). */
export const hasSecondFactor = (f: FactorSummary): boolean => f.passkeys > 0 || f.totp;
