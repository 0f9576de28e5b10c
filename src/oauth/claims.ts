// Scope-gated claims from the one scope table. Absent values are omitted, never null or "".
import { SCOPES } from './scopes.js';

export interface ClaimSource {
  id: string;
  email: string;
  email_verified: boolean;
  name: string | null;
  given_name: string | null;
  family_name: string | null;
  picture: string | null;
  permissions: string[];
}

export function claimsFor(user: ClaimSource, scopes: readonly string[]): Record<string, unknown> {
  const values: Record<string, unknown> = {
    sub: user.id,
    email: user.email,
    email_verified: user.email_verified,
    name: user.name,
    given_name: user.given_name,
    family_name: user.family_name,
    picture: user.picture,
    permissions: user.permissions,
  };
  const claims: Record<string, unknown> = { sub: user.id };
  for (const scope of SCOPES) {
    if (!scopes.includes(scope.name)) continue;
    for (const claim of scope.claims) {
      const value = values[claim];
      if (value !== null && value !== undefined && value !== '') claims[claim] = value;
    }
  }
  return claims;
}

export const CLAIMS_SUPPORTED = [
  ...new Set([
    'sub',
    'iss',
    'aud',
    'exp',
    'iat',
    'auth_time',
    'nonce',
    'azp',
    'at_hash',
    'sid',
    'acr',
    'amr',
    ...SCOPES.flatMap((s) => s.claims),
  ]),
];
