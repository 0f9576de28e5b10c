// Upstream identity providers (issue 35): sign-in with another provider. What a provider is as the services
// hand it out (never its secrets), the GitHub preset, and how an upstream's claims become an identity.
//
// An upstream identity is (provider, subject), never an e-mail address: the address only finds an existing
// account to offer linking to, after its owner proves the account (decisions.md, "Mailed links and sign-up").

/** 'oidc': discovery from the issuer and an ID token; 'oauth2': no ID token (GitHub), endpoints and a mapping. */
export type UpstreamKind = 'oidc' | 'oauth2';
export const UPSTREAM_KINDS: readonly UpstreamKind[] = ['oidc', 'oauth2'];

export type UpstreamClientAuth = 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt';
export const UPSTREAM_CLIENT_AUTH: readonly UpstreamClientAuth[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
];

/**
 * Which upstream claim (a top-level member of the ID token's claims or of the user endpoint's JSON) fills which
 * field. Absent members take the defaults of the kind (DEFAULT_MAPPING).
 */
export interface UpstreamMapping {
  subject: string;
  email: string;
  emailVerified: string;
  name: string;
  givenName: string;
  familyName: string;
  picture: string;
}
export const MAPPING_FIELDS: ReadonlyArray<keyof UpstreamMapping> = [
  'subject',
  'email',
  'emailVerified',
  'name',
  'givenName',
  'familyName',
  'picture',
];

/** The standard claims (OpenID Connect Core §5.1): what an OpenID provider and most OAuth user endpoints say. */
export const DEFAULT_MAPPING: UpstreamMapping = {
  subject: 'sub',
  email: 'email',
  emailVerified: 'email_verified',
  name: 'name',
  givenName: 'given_name',
  familyName: 'family_name',
  picture: 'picture',
};

/** An upstream provider as the admin API, the admin web, the CLI and the login pages see it: no secret. */
export interface UpstreamProvider {
  /** The provider's slug ([a-z0-9-], up to 32): in its callback address and its button. */
  id: string;
  kind: UpstreamKind;
  /** The button's text: "Continue with {name}". */
  name: string;
  logoUrl: string | null;
  /** oidc: the issuer (discovery at {issuer}/.well-known/openid-configuration). */
  issuer: string | null;
  /** oauth2 (or to override discovery): the endpoints. */
  authorizationEndpoint: string | null;
  tokenEndpoint: string | null;
  userinfoEndpoint: string | null;
  /** oauth2: a GitHub-style list of the user's addresses ([{email, primary, verified}]), for the verified one. */
  emailsEndpoint: string | null;
  clientId: string;
  clientAuth: UpstreamClientAuth;
  hasClientSecret: boolean;
  /** private_key_jwt: the public half of the key this provider's client signs its assertions with. */
  publicJwk: Record<string, unknown> | null;
  scopes: string[];
  /** Only the members the operator set (the rest are DEFAULT_MAPPING's). */
  mapping: Partial<UpstreamMapping>;
  /** A first sign-in with an unknown address creates an account (just in time). */
  allowSignUp: boolean;
  /** The e-mail domains this provider may sign in or create (empty: any). */
  allowedDomains: string[];
  /** The upstream's email_verified (or a verified address from the emails endpoint) is believed. */
  trustEmailVerified: boolean;
  /** Addresses at these domains sign in with this provider (home-realm discovery). */
  ssoDomains: string[];
  /** Keep the upstream's access and refresh tokens (sealed), refreshed, deleted with the link. */
  storeTokens: boolean;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** GitHub as a ready preset (kind oauth2): its endpoints, scopes and mapping. */
export const GITHUB_PRESET = {
  kind: 'oauth2' as const,
  name: 'GitHub',
  authorizationEndpoint: 'https://github.com/login/oauth/authorize',
  tokenEndpoint: 'https://github.com/login/oauth/access_token',
  userinfoEndpoint: 'https://api.github.com/user',
  emailsEndpoint: 'https://api.github.com/user/emails',
  clientAuth: 'client_secret_post' as const,
  scopes: ['read:user', 'user:email'],
  mapping: { subject: 'id', email: 'email', name: 'name', picture: 'avatar_url' } satisfies Partial<UpstreamMapping>,
  // GitHub's emails endpoint says which addresses it verified.
  trustEmailVerified: true,
};
export const UPSTREAM_PRESETS = { github: GITHUB_PRESET } as const;

/** The profile fields an upstream fills (claim names, as a user's profile holds them). */
export interface UpstreamProfile {
  name?: string;
  given_name?: string;
  family_name?: string;
  picture?: string;
}

/** What an upstream sign-in proved, after the protocol's checks: who, per this provider. */
export interface UpstreamIdentity {
  providerId: string;
  /** The upstream's subject, as text (GitHub's numeric ids included). */
  subject: string;
  /** Lower-cased; null when the upstream gave none. */
  email: string | null;
  /** The upstream said this address is verified, and the provider is trusted to say so. */
  emailVerified: boolean;
  profile: UpstreamProfile;
  /** The upstream's tokens (kept only with storeTokens). */
  tokens?: { accessToken: string; refreshToken: string | null; expiresAt: Date | null };
}

export function effectiveMapping(provider: Pick<UpstreamProvider, 'mapping'>): UpstreamMapping {
  return { ...DEFAULT_MAPPING, ...provider.mapping };
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.trim() !== ''
    ? value.trim()
    : typeof value === 'number' && Number.isSafeInteger(value)
      ? String(value)
      : undefined;

/**
 * The identity in an upstream's claims (the ID token's claims merged with the user endpoint's answer), by the
 * provider's mapping. `verifiedEmail`: an address the emails endpoint says is verified (oauth2), preferred.
 * Undefined when there is no subject.
 */
export function identityFromClaims(
  provider: Pick<UpstreamProvider, 'id' | 'mapping' | 'trustEmailVerified'>,
  claims: Record<string, unknown>,
  verifiedEmail?: string,
): UpstreamIdentity | undefined {
  const m = effectiveMapping(provider);
  const subject = text(claims[m.subject]);
  if (!subject || subject.length > 255) return undefined;
  const claimed = text(claims[m.email])?.toLowerCase();
  const email = verifiedEmail?.toLowerCase() ?? claimed ?? null;
  const saysVerified = verifiedEmail !== undefined || claims[m.emailVerified] === true;
  const profile: UpstreamProfile = {};
  const set = (key: keyof UpstreamProfile, value: unknown) => {
    const v = text(value);
    if (v && v.length <= (key === 'picture' ? 2048 : 200)) profile[key] = v;
  };
  set('name', claims[m.name]);
  set('given_name', claims[m.givenName]);
  set('family_name', claims[m.familyName]);
  set('picture', claims[m.picture]);
  return {
    providerId: provider.id,
    subject,
    email,
    emailVerified: Boolean(email) && saysVerified && provider.trustEmailVerified,
    profile,
  };
}

/** The domain of an address (lower case), or '' when it has none. */
export function emailDomain(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? '' : email.slice(at + 1).toLowerCase();
}

/** Whether the provider may sign in (or create) this address: its allowed domains, when it lists any. */
export function domainAllowed(provider: Pick<UpstreamProvider, 'allowedDomains'>, email: string): boolean {
  return provider.allowedDomains.length === 0 || provider.allowedDomains.includes(emailDomain(email));
}
