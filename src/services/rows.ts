// Rows to domain types: the one place where db/ row types become what services hand out. Secret
// columns (password_hash, token_hash) stop here.
import type { AccountUserColumns } from '../../db/repositories/sessions.js';
import type { ApplicationRow, SessionRow, UserRow } from '../../db/tables.js';
import {
  type Application,
  clientTypeOf,
  type GrantType,
  type PkcePolicy,
  type ApplicationRegistration,
  type TokenEndpointAuthMethod,
} from '../domain/application.js';
import type { Session } from '../domain/session.js';
import type { AccountUser, User } from '../domain/user.js';

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    givenName: row.given_name,
    familyName: row.family_name,
    picture: row.picture,
    emailVerified: row.email_verified,
    permissions: row.permissions,
    disabled: row.disabled,
    role: row.role,
    hasPassword: row.password_hash !== null,
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** The columns an AccountUser is made of (the session lookup reads only these). */
export type AccountUserRow = AccountUserColumns;

export function toAccountUser(row: AccountUserRow): AccountUser {
  return {
    id: row.id,
    email: row.email,
    email_verified: row.email_verified,
    name: row.name,
    given_name: row.given_name,
    family_name: row.family_name,
    picture: row.picture,
    permissions: row.permissions,
    disabled: row.disabled,
    role: row.role,
  };
}

export function toSession(row: Pick<SessionRow, 'id' | 'auth_time' | 'amr'>): Session {
  return { id: row.id, auth_time: row.auth_time, amr: row.amr };
}

export function toApplication(row: ApplicationRow): Application {
  return {
    clientId: row.client_id,
    clientName: row.name,
    clientDescription: row.description,
    clientLogoUrl: row.logo_url,
    redirectUris: row.redirect_uris,
    allowedWebOrigins: row.allowed_web_origins,
    postLogoutRedirectUris: row.post_logout_redirect_uris,
    postVerificationRedirectPath: row.post_verification_redirect_path,
    allowedScopes: row.allowed_scopes,
    enabled: row.enabled,
    requireMfa: row.require_mfa,
    tokenEndpointAuthMethod: row.token_endpoint_auth_method as TokenEndpointAuthMethod,
    clientType: clientTypeOf(row.token_endpoint_auth_method as TokenEndpointAuthMethod),
    pkce: row.pkce as PkcePolicy,
    grantTypes: row.grant_types as GrantType[],
    jwks: row.jwks,
    jwksUri: row.jwks_uri,
    registration: row.registration as ApplicationRegistration,
    source: 'database',
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}
