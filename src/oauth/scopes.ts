// The one scope table: it feeds consent, UserInfo, /api/external/me, discovery and /api/public/oidc/scopes.
export interface ScopeDefinition {
  name: string;
  label: string;
  consentDescription: string;
  developerDescription: string;
  claims: readonly string[];
}

export const SCOPES = [
  {
    name: 'openid',
    label: 'Sign in',
    consentDescription: 'Sign you in and know who you are',
    developerDescription: 'Required for OpenID Connect. Issues an ID token whose sub identifies the user.',
    claims: ['sub'],
  },
  {
    name: 'profile',
    label: 'Profile',
    consentDescription: 'See your name and profile picture',
    developerDescription: 'Adds name, given_name, family_name and picture to UserInfo and /api/external/me.',
    claims: ['name', 'given_name', 'family_name', 'picture'],
  },
  {
    name: 'email',
    label: 'E-mail address',
    consentDescription: 'See your e-mail address and whether it is verified',
    developerDescription: 'Adds email and email_verified to UserInfo and /api/external/me.',
    claims: ['email', 'email_verified'],
  },
  {
    name: 'offline_access',
    label: 'Stay signed in',
    consentDescription: 'Keep access to this information while you are not using the application',
    developerDescription: 'Issues a refresh token (rotated on every use). Yields no claims.',
    claims: [],
  },
  {
    name: 'permissions',
    label: 'Permissions',
    consentDescription: 'See the permissions you have been granted',
    developerDescription: 'Adds the permissions claim (an array of strings) to UserInfo and /api/external/me.',
    claims: ['permissions'],
  },
] as const satisfies readonly ScopeDefinition[];

export type ScopeName = (typeof SCOPES)[number]['name'];

export const SCOPE_NAMES: readonly ScopeName[] = SCOPES.map((s) => s.name);

export function isScopeName(value: string): value is ScopeName {
  return (SCOPE_NAMES as readonly string[]).includes(value);
}

/** Scopes an application may request when it is created without a list. */
export const DEFAULT_ALLOWED_SCOPES: readonly ScopeName[] = ['openid', 'profile', 'email', 'offline_access'];
