// Table types. Row types are derived with Selectable/Insertable/Updateable where they are used.
import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json<T> = ColumnType<T, string, string>;

export interface UsersTable {
  id: string;
  email: string;
  password_hash: string | null;
  name: string | null;
  given_name: string | null;
  family_name: string | null;
  picture: string | null;
  email_verified: Generated<boolean>;
  permissions: Json<string[]>;
  disabled: Generated<boolean>;
  role: ColumnType<'user' | 'admin', 'user' | 'admin' | undefined, 'user' | 'admin'>;
  /** Sealed authorization codes issued before this are dead (0012-sealed-codes). */
  codes_revoked_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** Made by sign-up (not by an operator): unverified, it gives no claim to its address (0013-sign-up-requests). */
  self_registered: Generated<boolean>;
  /** The built-in writer that created the row: 'seed', or null (0015-created-by). */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ApplicationsTable {
  client_id: string;
  name: string;
  description: string | null;
  logo_url: string | null;
  redirect_uris: Json<string[]>;
  allowed_web_origins: Json<string[]>;
  post_verification_redirect_path: string | null;
  allowed_scopes: Json<string[]>;
  post_logout_redirect_uris: ColumnType<string[], string | undefined, string>;
  enabled: Generated<boolean>;
  /** The built-in writer that created the row: 'seed', 'demo', or null (0015-created-by). */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** RFC 7591 token_endpoint_auth_method (0017-confidential-clients): 'none' is a public PKCE client. */
  token_endpoint_auth_method: Generated<string>;
  /** 'required' or 'optional' (confidential clients only). */
  pkce: Generated<string>;
  grant_types: ColumnType<string[], string | undefined, string>;
  /** private_key_jwt: the client's keys inline (a JWK Set), or */
  jwks: ColumnType<{ keys: object[] } | null, string | null | undefined, string | null>;
  /** where they are published. */
  jwks_uri: ColumnType<string | null, string | null | undefined, string | null>;
  /** Only sessions with a second factor may sign in to this application (0018-second-factors). */
  require_mfa: Generated<boolean>;
  /** 'operator', 'dynamic' (RFC 7591) or 'metadata_document' (0020-resource-servers). */
  registration: Generated<string>;
  /** RFC 7592: SHA-256 of the registration access token of a dynamically registered client (0021). */
  registration_access_token_hash: ColumnType<string | null, string | null | undefined, string | null>;
  /** When the client last came to authorize or the token endpoint (hourly at most; 0021). */
  last_used_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** A client ID metadata document's last fetch, and until when it is fresh (0021). */
  metadata_fetched_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  metadata_expires_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Initial access tokens for REGISTRATION=token (RFC 7591 §3; 0021): hashes, expiry, registrations left. */
export interface RegistrationTokensTable {
  id: string;
  token_hash: string;
  description: string | null;
  /** null: any number until it expires. */
  uses_left: number | null;
  expires_at: ColumnType<Date, Date | string, Date | string>;
  created_by: string;
  created_at: Timestamp;
}

/** Client secrets (0017): SHA-256 hashes of server-generated secrets; expires_at set on the old one of a rotation. */
export interface ClientSecretsTable {
  id: string;
  client_id: string;
  secret_hash: string;
  created_at: Timestamp;
  expires_at: Date | null;
}

/** jti values of private_key_jwt assertions seen, until the assertion expires (RFC 7523 §3 replay). */
export interface ClientAssertionJtisTable {
  client_id: string;
  jti: string;
  expires_at: Date;
}

/** client_credentials access tokens (0017): no user, no grant. */
export interface ClientAccessTokensTable {
  token_hash: string;
  client_id: string;
  scope: string;
  created_at: Timestamp;
  expires_at: Date;
  revoked_at: Date | null;
  /** The one resource (RFC 8707) the token is for; null: none named (0020-resource-servers). */
  audience: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface AuditEventsTable {
  id: Generated<string>;
  type: string;
  actor: string | null;
  user_id: string | null;
  client_id: string | null;
  ip: string | null;
  detail: Json<Record<string, unknown>>;
  created_at: Timestamp;
}

export interface SigningKeysTable {
  kid: string;
  alg: string;
  state: 'next' | 'current' | 'retired';
  public_jwk: Json<Record<string, unknown>>;
  private_jwk: string;
  created_at: Timestamp;
  activated_at: Date | null;
  retired_at: Date | null;
}

export interface SessionsTable {
  id: string;
  token_hash: string;
  user_id: string;
  auth_time: Date;
  created_at: Timestamp;
  last_seen_at: Timestamp;
  expires_at: Date;
  revoked_at: Date | null;
  ip: string | null;
  user_agent: string | null;
  /** RFC 8176 authentication methods of this session (migration 0018); a step-up adds to them. */
  amr: ColumnType<string[], string | undefined, string>;
}

export interface AuthorizationRequestParams {
  client_id: string;
  redirect_uri: string;
  scope: string[];
  state?: string;
  nonce?: string;
  /** Absent: no PKCE (an application whose PKCE the operator made optional). */
  code_challenge?: string;
  prompt: string[];
  max_age?: number;
  login_hint?: string;
  /** Absent: query. */
  response_mode?: 'form_post';
  /** acr_values (OpenID Connect Core §3.1.2.1), space-separated values in order of preference; absent: none. */
  acr_values?: string[];
  /** RFC 8707 resource indicators, in the order sent (identifiers of enabled resource servers); absent: none. */
  resource?: string[];
  /** The `claims` parameter (OpenID Connect Core §5.5), parsed. */
  claims?: {
    userinfo?: Record<string, { essential?: boolean; value?: unknown; values?: unknown[] } | null>;
    id_token?: Record<string, { essential?: boolean; value?: unknown; values?: unknown[] } | null>;
  };
}

export interface AuthorizationRequestsTable {
  id: string;
  client_id: string;
  params: Json<AuthorizationRequestParams>;
  created_at: Timestamp;
  expires_at: Date;
  login_completed_at: Date | null;
  consent_given_at: Date | null;
  completed_at: Date | null;
  /** SHA-256 of the browser-binding cookie set by authorize; null only on rows from before 0006. */
  browser_hash: string | null;
  /** Who completed sign-in on this request (and in which session); set with login_completed_at. */
  login_user_id: string | null;
  login_session_id: string | null;
  /** Who consented on this request, and to which scopes; set with consent_given_at. */
  consent_user_id: string | null;
  consent_scopes: Json<string[]> | null;
}

export interface ConsentsTable {
  user_id: string;
  client_id: string;
  scopes: Json<string[]>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface GrantsTable {
  id: string;
  user_id: string;
  client_id: string;
  scope: string;
  session_id: string | null;
  created_at: Timestamp;
  revoked_at: Date | null;
  auth_time: Date | null;
  /** The session's amr when the grant was made; null for grants older than migration 0018. */
  amr: ColumnType<string[] | null, string | null | undefined, string | null>;
  /** The resources (RFC 8707) the grant covers; [] for none named (0020-resource-servers). JSON text on write. */
  resources: ColumnType<string[], string | undefined, string>;
}

/** Codes stored by the releases before sealed codes (0012-sealed-codes): redeemed until they expire. */
export interface AuthorizationCodesTable {
  code_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  code_challenge: string;
  nonce: string | null;
  scope: string;
  auth_time: Date;
  session_id: string | null;
  created_at: Timestamp;
  expires_at: Date;
  consumed_at: Date | null;
}

export interface AccessTokensTable {
  token_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  session_id: string | null;
  created_at: Timestamp;
  expires_at: Date;
  revoked_at: Date | null;
  /** The one resource (RFC 8707) the token is for; null: none named (0020-resource-servers). */
  audience: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface RefreshTokensTable {
  token_hash: string;
  grant_id: string;
  client_id: string;
  user_id: string;
  scope: string;
  created_at: Timestamp;
  expires_at: Date;
  absolute_expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
  id: string | null;
  session_id: string | null;
  successor_hash: string | null;
  successor_sealed: string | null;
  successor_access_sealed: string | null;
}

export interface EmailVerificationTokensTable {
  token_hash: string;
  user_id: string;
  request_id: string | null;
  client_id: string | null;
  redirect_uri: string | null;
  /** The address the link was mailed to; the link verifies only while it is still the user's address. */
  email: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
}

export interface PasswordResetTokensTable {
  token_hash: string;
  user_id: string;
  redirect_to: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
  revoked_at: Date | null;
}

/** A requested e-mail change (issue 17): the link mailed to the new address applies it. */
export interface EmailChangeTokensTable {
  token_hash: string;
  user_id: string;
  /** The new address, where the link was mailed. */
  email: string;
  /** The address when the change was requested: the link works only while it is still the user's. */
  previous_email: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
}

/** A sign-up waiting for its mailbox owner (0013-sign-up-requests): no account exists before the link is confirmed. */
export interface SignUpRequestsTable {
  token_hash: string;
  email: string;
  password_hash: string;
  name: string | null;
  request_id: string | null;
  client_id: string | null;
  redirect_uri: string | null;
  ip: string | null;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
  /** SHA-256 of the sign-up cookie of the browser that signed up (0016); null: every browser gives the password. */
  browser_hash: string | null;
  /** Password checks reserved by confirmations from other browsers (0016). */
  password_attempts: Generated<number>;
}

export interface AdminSetupTokensTable {
  token_hash: string;
  created_at: Timestamp;
  expires_at: Date;
  used_at: Date | null;
}

export interface Database {
  users: UsersTable;
  applications: ApplicationsTable;
  client_secrets: ClientSecretsTable;
  client_assertion_jtis: ClientAssertionJtisTable;
  client_access_tokens: ClientAccessTokensTable;
  audit_events: AuditEventsTable;
  signing_keys: SigningKeysTable;
  sessions: SessionsTable;
  authorization_requests: AuthorizationRequestsTable;
  consents: ConsentsTable;
  grants: GrantsTable;
  authorization_codes: AuthorizationCodesTable;
  access_tokens: AccessTokensTable;
  refresh_tokens: RefreshTokensTable;
  email_verification_tokens: EmailVerificationTokensTable;
  password_reset_tokens: PasswordResetTokensTable;
  email_change_tokens: EmailChangeTokensTable;
  admin_setup_tokens: AdminSetupTokensTable;
  sign_up_requests: SignUpRequestsTable;
  webauthn_credentials: WebauthnCredentialsTable;
  totp_factors: TotpFactorsTable;
  recovery_codes: RecoveryCodesTable;
  webauthn_challenges: WebauthnChallengesTable;
  pending_sign_ins: PendingSignInsTable;
  upstream_providers: UpstreamProvidersTable;
  resource_servers: ResourceServersTable;
  registration_tokens: RegistrationTokensTable;
  upstream_identities: UpstreamIdentitiesTable;
  upstream_flows: UpstreamFlowsTable;
  upstream_pending_links: UpstreamPendingLinksTable;
}

/** A passkey (migration 0018): the public key only, base64url. */
export interface WebauthnCredentialsTable {
  id: string;
  user_id: string;
  /** base64url, as the browser reports it. */
  credential_id: string;
  /** The COSE public key, base64url. */
  public_key: string;
  /** The signature counter (0 for authenticators that do not count); pg returns bigint as a string. */
  counter: ColumnType<string, number | string | undefined, number | string>;
  transports: ColumnType<string[], string | undefined, string>;
  /** singleDevice or multiDevice (backup eligible). */
  device_type: string;
  backed_up: boolean;
  aaguid: string | null;
  name: string;
  created_at: Timestamp;
  last_used_at: Date | null;
}

/** A user's TOTP secret (migration 0018), sealed with SECRET_KEY; unconfirmed until a first code. */
export interface TotpFactorsTable {
  user_id: string;
  secret: string;
  confirmed_at: Date | null;
  /** The last time step (unix time / 30) accepted: a code of that step or an earlier one is refused. */
  last_step: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  created_at: Timestamp;
  last_used_at: Date | null;
}

export interface RecoveryCodesTable {
  id: string;
  user_id: string;
  code_hash: string;
  created_at: Timestamp;
  used_at: Date | null;
}

export interface WebauthnChallengesTable {
  id: string;
  challenge: string;
  /** register | authenticate (passkey sign-in) | second-factor */
  purpose: string;
  user_id: string | null;
  browser_hash: string;
  created_at: Timestamp;
  expires_at: Date;
}

/** A first factor passed, the second not yet (migration 0018). */
export interface PendingSignInsTable {
  id: string;
  token_hash: string;
  user_id: string;
  amr: ColumnType<string[], string, string>;
  request_id: string | null;
  attempts: ColumnType<number, number | undefined, number>;
  ip: string | null;
  user_agent: string | null;
  created_at: Timestamp;
  expires_at: Date;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserRowUpdate = Updateable<UsersTable>;
/** Old name of UserRowUpdate (db/repositories use it); not the domain's UserUpdate. */
export type UserUpdate = UserRowUpdate;
export type ApplicationRow = Selectable<ApplicationsTable>;
export type NewApplicationRow = Insertable<ApplicationsTable>;
export type ApplicationRowUpdate = Updateable<ApplicationsTable>;
/** Old name of ApplicationRowUpdate (db/repositories use it); not the domain's ApplicationUpdate. */
export type ApplicationUpdate = ApplicationRowUpdate;
export type SessionRow = Selectable<SessionsTable>;

/** A registered resource server (migration 0020). JSON columns are written as JSON text. */
export interface ResourceServersTable {
  identifier: string;
  name: string;
  description: string | null;
  scopes: ColumnType<ResourceScopeRow[], string | undefined, string>;
  /** 'opaque' or 'jwt'. */
  access_token_format: ColumnType<string, string | undefined, string>;
  /** Seconds; null: ACCESS_TOKEN_TTL. */
  access_token_ttl: number | null;
  allowed_clients: ColumnType<string[], string | undefined, string>;
  allow_self_registered: ColumnType<boolean, boolean | undefined, boolean>;
  introspection_clients: ColumnType<string[], string | undefined, string>;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface ResourceScopeRow {
  name: string;
  label: string;
  consentDescription: string;
}

/** An upstream identity provider (migration 0019). JSON columns are written as JSON text. */
export interface UpstreamProvidersTable {
  id: string;
  /** 'oidc' or 'oauth2'. */
  kind: string;
  name: string;
  logo_url: string | null;
  issuer: string | null;
  authorization_endpoint: string | null;
  token_endpoint: string | null;
  userinfo_endpoint: string | null;
  emails_endpoint: string | null;
  client_id: string;
  /** Sealed with SECRET_KEY (purpose "upstream client secret", the provider id as associated data). */
  client_secret: string | null;
  /** client_secret_basic, client_secret_post or private_key_jwt. */
  client_auth: string;
  /** Sealed private JWK for private_key_jwt (purpose "upstream private key"). */
  private_jwk: string | null;
  scopes: ColumnType<string[], string, string>;
  mapping: ColumnType<Record<string, string>, string | undefined, string>;
  allow_sign_up: ColumnType<boolean, boolean | undefined, boolean>;
  allowed_domains: ColumnType<string[], string | undefined, string>;
  trust_email_verified: ColumnType<boolean, boolean | undefined, boolean>;
  sso_domains: ColumnType<string[], string | undefined, string>;
  store_tokens: ColumnType<boolean, boolean | undefined, boolean>;
  enabled: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

/** A user's link to an upstream identity (migration 0019). */
export interface UpstreamIdentitiesTable {
  id: string;
  user_id: string;
  provider_id: string;
  subject: string;
  /** The address the upstream gave when it was linked (shown on the account page). */
  email: string | null;
  /** Sealed (purpose "upstream token", the identity id as associated data), only with store_tokens. */
  access_token: string | null;
  refresh_token: string | null;
  token_expires_at: Date | null;
  created_at: Timestamp;
  last_used_at: Date | null;
}

/** A round trip to an upstream in flight (migration 0019); id is the SHA-256 of its `state`. */
export interface UpstreamFlowsTable {
  id: string;
  provider_id: string;
  browser_hash: string;
  nonce: string;
  code_verifier: string;
  /** 'sign_in' or 'link' (a signed-in user adds an identity: user_id). */
  purpose: string;
  user_id: string | null;
  request_id: string | null;
  return_to: string | null;
  created_at: Timestamp;
  expires_at: Date;
}

/** An upstream identity waiting for the existing account's owner to prove it (migration 0019). */
export interface UpstreamPendingLinksTable {
  id: string;
  token_hash: string;
  provider_id: string;
  subject: string;
  email: string;
  user_id: string;
  profile: ColumnType<Record<string, string>, string | undefined, string>;
  request_id: string | null;
  created_at: Timestamp;
  expires_at: Date;
}
