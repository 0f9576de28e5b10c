// Token introspection (RFC 7662): what a caller may learn about a token it presents. Every token this server issues
// to clients is introspectable: user access tokens (access_tokens), client_credentials tokens (client_access_tokens)
// and refresh tokens. Whether a token is live is never restated here: an access token is live when the bearer check
// of UserInfo and /api/external/* would accept it (BearerService.liveToken: findBearer and its user and application
// checks), a refresh token when every rule of db/repositories/refresh-rules.ts holds (the rules the rotation runs),
// a client_credentials token when findLiveClientAccessToken finds it; besides, its application must exist and be
// enabled. Anything else, and anything the caller may not see (mayIntrospect), is `{ active: false }` alone
// (RFC 7662 §2.2: nothing more is said about an inactive token).
import type { Db } from '../../db/create-db.js';
import { findLiveClientAccessToken } from '../../db/repositories/client-access-tokens.js';
import { refreshChecks } from '../../db/repositories/refresh-rules.js';
import { findRefreshTokenState } from '../../db/repositories/refresh-tokens.js';
import type { Application } from '../domain/application.js';
import { hashToken } from '../oauth/tokens.js';
import type { BearerService } from './bearer.js';

/** RFC 7662 §2.2, the members this server fills. */
export type Introspection =
  | { active: false }
  | {
      active: true;
      /** Absent when the token has no scope (a client_credentials token asked for none). */
      scope?: string;
      client_id: string;
      /** RFC 7662: the token type of RFC 6749 §5.1; refresh tokens have none (node-oidc-provider leaves it out too). */
      token_type?: 'Bearer';
      exp: number;
      iat: number;
      /** The user (the ID token's sub); absent for client_credentials tokens, which have none. */
      sub?: string;
      iss: string;
    };

/** A token found live, before the caller's right to see it is decided. */
export interface LiveToken {
  kind: 'access_token' | 'client_credentials' | 'refresh_token';
  clientId: string;
  userId: string | null;
  scope: string;
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * May this caller see this token? Today: only the token's own client (node-oidc-provider's default allowedPolicy
 * lets any confidential client see every token; here a client learns nothing about another client's tokens). The
 * seam for registered resource servers (issue 36): they will be allowed the tokens whose audience they are.
 */
export function mayIntrospect(caller: Pick<Application, 'clientId'>, token: LiveToken): boolean {
  return token.clientId === caller.clientId;
}

const INACTIVE = { active: false } as const;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

export function createIntrospectionService(deps: {
  db: Db;
  issuer: string;
  bearers: Pick<BearerService, 'liveToken'>;
  applications: { find(clientId: string): Promise<Application | undefined> };
}) {
  const { db, bearers, applications } = deps;

  const enabled = async (clientId: string) => (await applications.find(clientId))?.enabled === true;

  const accessToken = async (tokenHash: string): Promise<LiveToken | undefined> => {
    // The application (static ones first) and the user are checked by the bearer service itself.
    const live = await bearers.liveToken(tokenHash);
    if (!live) return undefined;
    const { row } = live;
    return {
      kind: 'access_token',
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      issuedAt: new Date(row.created_at),
      expiresAt: new Date(row.expires_at),
    };
  };

  const clientToken = async (tokenHash: string): Promise<LiveToken | undefined> => {
    const row = await findLiveClientAccessToken(db, tokenHash);
    if (!row || !(await enabled(row.client_id))) return undefined;
    return {
      kind: 'client_credentials',
      clientId: row.client_id,
      userId: null,
      scope: row.scope,
      issuedAt: new Date(row.created_at),
      expiresAt: new Date(row.expires_at),
    };
  };

  const refreshToken = async (tokenHash: string): Promise<LiveToken | undefined> => {
    const row = await findRefreshTokenState(db, tokenHash);
    if (!row) return undefined;
    // Every rule the rotation checks, read for the token's own client (who may see it is mayIntrospect's question).
    const checks = refreshChecks(row, { clientId: row.client_id, now: Date.now() });
    if (!Object.values(checks).every(Boolean) || !(await enabled(row.client_id))) return undefined;
    const expiresAt = Math.min(new Date(row.expires_at).getTime(), new Date(row.absolute_expires_at).getTime());
    return {
      kind: 'refresh_token',
      clientId: row.client_id,
      userId: row.user_id,
      scope: row.scope,
      issuedAt: new Date(row.created_at),
      expiresAt: new Date(expiresAt),
    };
  };

  return {
    /**
     * RFC 7662 §2.1-2.2. The hint only orders the lookups (RFC 7662: the server MUST extend its search across
     * the types it supports); an unknown hint is ignored, as node-oidc-provider does.
     */
    async introspect(caller: Pick<Application, 'clientId'>, token: string, hint?: string): Promise<Introspection> {
      if (token.length === 0 || token.length > 8192) return INACTIVE;
      const tokenHash = hashToken(token);
      const order =
        hint === 'refresh_token' ? [refreshToken, accessToken, clientToken] : [accessToken, clientToken, refreshToken];
      let found: LiveToken | undefined;
      for (const lookup of order) {
        found = await lookup(tokenHash);
        if (found) break;
      }
      if (!found || !mayIntrospect(caller, found)) return INACTIVE;
      return {
        active: true,
        ...(found.scope && { scope: found.scope }),
        client_id: found.clientId,
        ...(found.kind !== 'refresh_token' && { token_type: 'Bearer' as const }),
        exp: seconds(found.expiresAt),
        iat: seconds(found.issuedAt),
        ...(found.userId !== null && { sub: found.userId }),
        iss: deps.issuer,
      };
    },
  };
}

export type IntrospectionService = ReturnType<typeof createIntrospectionService>;
