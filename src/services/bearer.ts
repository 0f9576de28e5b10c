// Bearer tokens of /api/external/* and UserInfo (the spec's Authentication rules 2-3): the token is in
// the access-token store by hash, live (not expired or revoked, its grant not revoked, its browser
// session, if any, still live), of an enabled application and of a user who is not disabled. One round
// trip (a prepared statement on PostgreSQL) for token, session, user and application.
import type { Db } from '../../db/create-db.js';
import { findBearer } from '../../db/repositories/access-tokens.js';
import type { ClaimSource } from '../oauth/claims.js';
import { splitScope } from '../oauth/scope.js';
import { hashToken } from '../oauth/tokens.js';
import type { StaticApplications } from './applications.js';

/** The user a bearer token speaks for: the claims UserInfo and /api/external/me may serve. */
export type BearerUser = ClaimSource;

export interface BearerAuth {
  /** The token's hash: the key its rate limit counts under. */
  tokenHash: string;
  scopes: string[];
  clientId: string;
  userId: string;
  /** undefined when the user row vanished after the token was found (the handler answers 404). */
  user: BearerUser | undefined;
}

export function createBearerService(deps: {
  db: Db;
  sessionIdleSeconds: number;
  staticApplications: StaticApplications;
}) {
  return {
    /** The live token's authentication, or undefined (unknown, expired, revoked, disabled). */
    async authenticate(token: string): Promise<BearerAuth | undefined> {
      const tokenHash = hashToken(token);
      const found = await findBearer(deps.db, tokenHash, deps.sessionIdleSeconds);
      if (!found) return undefined;
      const { token: row, user } = found;
      // Static applications shadow database rows; otherwise the row's flag (absent row: deleted app).
      const fromStatic = deps.staticApplications.get(row.client_id);
      const enabled = fromStatic ? fromStatic.enabled : found.applicationEnabled === true;
      if (!enabled) return undefined;
      let bearerUser: BearerUser | undefined;
      if (user) {
        // A deleted user's tokens are deleted with it; a disabled user's tokens stop working.
        const { disabled, ...claims } = user;
        if (disabled) return undefined;
        bearerUser = claims;
      }
      return {
        tokenHash,
        scopes: splitScope(row.scope),
        clientId: row.client_id,
        userId: row.user_id,
        user: bearerUser,
      };
    },
  };
}

export type BearerService = ReturnType<typeof createBearerService>;
