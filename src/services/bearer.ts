// Bearer access tokens (RFC 6750 §2.1): Authorization header only, looked up by hash; live, of an
// existing enabled user and an enabled application.
import type { Db } from '../../db/create-db.js';
import { findLiveAccessToken, type AccessTokenRow } from '../../db/repositories/authorization.js';
import { findUserById } from '../../db/repositories/users.js';
import type { UserRow } from '../../db/tables.js';
import { OAuthError } from '../oauth/errors.js';
import { splitScope } from '../oauth/scope.js';
import { hashToken } from '../oauth/tokens.js';
import type { ApplicationService } from './applications.js';

export interface BearerContext {
  token: AccessTokenRow;
  scopes: string[];
  user: UserRow;
}

export class BearerError extends OAuthError {
  constructor(
    readonly tokenSent: boolean,
    description: string,
  ) {
    super('invalid_token', description);
  }
}

export function createBearerAuthenticator(deps: { db: Db; applications: ApplicationService; sessionIdleSeconds: number }) {
  return async function authenticate(header: string | undefined): Promise<BearerContext> {
    if (!header) throw new BearerError(false, 'an access token is required');
    const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
    if (!match) throw new BearerError(true, 'the Authorization header must use the Bearer scheme');
    const token = match[1]!;
    if (token.length > 256) throw new BearerError(true, 'the access token is invalid');
    const row = await findLiveAccessToken(deps.db, hashToken(token), deps.sessionIdleSeconds);
    if (!row) throw new BearerError(true, 'the access token is invalid, expired or revoked');
    const [user, app] = await Promise.all([findUserById(deps.db, row.user_id), deps.applications.find(row.client_id)]);
    if (!user || user.disabled) throw new BearerError(true, 'the access token is not tied to an active user');
    if (!app || !app.enabled) throw new BearerError(true, 'the application of this access token is disabled');
    return { token: row, scopes: splitScope(row.scope), user };
  };
}

export function wwwAuthenticate(error: OAuthError, tokenSent: boolean, scope?: string): string {
  if (!tokenSent) return 'Bearer';
  const parts = [`error="${error.error}"`, `error_description="${error.description.replace(/["\\]/g, '')}"`];
  if (scope) parts.push(`scope="${scope}"`);
  return `Bearer ${parts.join(', ')}`;
}
