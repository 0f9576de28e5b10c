// Authentication context classes (OpenID Connect Core §2 `acr`, §3.1.2.1 `acr_values`) as this provider offers
// them, and how they follow from a session's RFC 8176 methods (`amr`). Protocol logic, pure: src/domain/mfa.ts
// re-exports it beside the methods a session records.
//
// The two levels, advertised as acr_values_supported:
//   urn:idp:pwd  one factor: a password (or a passkey without user verification, never offered alone)
//   urn:idp:mfa  two factors: a password and a second factor (otp, hwk, swk), or a passkey with user
//                verification (possession of the key and the PIN or biometric that unlocks it)

export const ACR_PASSWORD = 'urn:idp:pwd';
export const ACR_MFA = 'urn:idp:mfa';
/** In order of strength: the discovery document's acr_values_supported. */
export const ACR_VALUES = [ACR_PASSWORD, ACR_MFA] as const;
export type AcrValue = (typeof ACR_VALUES)[number];

/** The acr of a session with these methods. */
export function acrOf(amr: readonly string[]): AcrValue {
  return amr.includes('mfa') ? ACR_MFA : ACR_PASSWORD;
}

/** Whether a session with these methods meets the level `acr` (an unknown value is never met). */
export function meetsAcr(amr: readonly string[], acr: string): boolean {
  const have = ACR_VALUES.indexOf(acrOf(amr));
  const want = ACR_VALUES.indexOf(acr as AcrValue);
  return want !== -1 && have >= want;
}
