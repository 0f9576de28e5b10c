// Token introspection (RFC 7662): what a caller may learn about a token it presents. Every token this server issues
// to clients is introspectable: user access tokens (access_tokens), client_credentials tokens (client_access_tokens)
// and refresh tokens. Whether a token is live is never restated here: an access token is live when the bearer check
// of UserInfo and /api/external/* would accept it (BearerService.liveToken: findBearer and its user and application
// checks), a refresh token when every rule of db/repositories/refresh-rules.ts holds (the rules the rotation runs),
// a client_credentials token when findLiveClientAccessToken finds it; besides, its application must exist and be
// enabled. Anything else, and anything the caller may not see (mayIntrospect), is `{ active: false }` alone
// (RFC 7662 §2.2: nothing more is said about an inactive token).
//
// Who may see a token (mayIntrospect): its own client, and, for an access token whose audience (RFC 8707) is a
// registered resource server, the confidential applications that resource server lists as its
// `introspectionClients` (the API's own credentials: issue 36). The answer then names the audience as `aud`.
import type { Db } from '../../db/create-db.js';
import { findLiveClientAccessToken } from '../../db/repositories/client-access-tokens.js';
import { refreshChecks } from '../../db/repositories/refresh-rules.js';
import { findRefreshTokenState } from '../../db/repositories/refresh-tokens.js';
import type { Application } from '../domain/application.js';
import type { ResourceServer } from '../domain/resource-server.js';
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
      /** The resource the access token is for (RFC 8707, RFC 7662 §2.2 `aud`); absent when it names none. */
      aud?: string;
    };

/** A token found live, before the caller's right to see it is decided. */
export interface LiveToken {
  kind: 'access_token' | 'client_credentials' | 'refresh_token';
  clientId: string;
  userId: string | null;
  scope: string;
  issuedAt: Date;
  expiresAt: Date;
  /** The access token's resource (RFC 8707); null: none named. Refresh tokens have none. */
  audience: string | null;
}

/** The caller as introspection knows it: the application that authenticated at the endpoint. */
export type IntrospectionCaller = Pick<Application, 'clientId' | 'enabled' | 'tokenEndpointAuthMethod'>;

/**
 * May this caller see this token? Its own client always (node-oidc-provider's default allowedPolicy lets any
 * confidential client see every token; here a client learns nothing about another client's tokens). Besides, the
 * resource server an access token is for (`audience`, a registered one: the built-in /api/external has no
 * introspection clients) may let its API introspect it: the caller must be listed in its `introspectionClients`,
 * enabled, and confidential (a public client proves nothing but its client_id, which anybody can send). Whether
 * the resource server is enabled does not matter: a disabled one gets no new tokens, but those it has stay live
 * until they expire, and its API must still be able to check them. A deleted one has no introspection clients.
 */
export function mayIntrospect(
  caller: IntrospectionCaller,
  token: LiveToken,
  resource: Pick<ResourceServer, 'identifier' | 'introspectionClients'> | undefined,
): boolean {
  if (token.clientId === caller.clientId) return true;
  if (token.kind === 'refresh_token' || token.audience === null || resource?.identifier !== token.audience)
    return false;
  return (
    caller.enabled &&
    caller.tokenEndpointAuthMethod !== 'none' &&
    resource.introspectionClients.includes(caller.clientId)
  );
}

const INACTIVE = { active: false } as const;
const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

export function createIntrospectionService(deps: {
  db: Db;
  issuer: string;
  bearers: Pick<BearerService, 'liveToken'>;
  applications: { find(clientId: string): Promise<Application | undefined> };
  resourceServers: { find(identifier: string): Promise<ResourceServer | undefined> };
}) {
  const { db, bearers, applications, resourceServers } = deps;

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
      audience: row.audience ?? null,
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
      audience: row.audience ?? null,
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
      audience: null,
    };
  };

  return {
    /**
     * RFC 7662 §2.1-2.2. The hint only orders the lookups (RFC 7662: the server MUST extend its search across
     * the types it supports); an unknown hint is ignored, as node-oidc-provider does.
     */
    async introspect(caller: IntrospectionCaller, token: string, hint?: string): Promise<Introspection> {
      if (token.length === 0 || token.length > 8192) return INACTIVE;
      const tokenHash = hashToken(token);
      const order =
        hint === 'refresh_token' ? [refreshToken, accessToken, clientToken] : [accessToken, clientToken, refreshToken];
      let found: LiveToken | undefined;
      for (const lookup of order) {
        found = await lookup(tokenHash);
        if (found) break;
      }
      if (!found) return INACTIVE;
      // The resource server is looked up only when the caller is not the token's client (a cached list).
      const resource =
        found.clientId !== caller.clientId && found.audience !== null
          ? await resourceServers.find(found.audience)
          : undefined;
      if (!mayIntrospect(caller, found, resource)) return INACTIVE;
      return {
        active: true,
        ...(found.scope && { scope: found.scope }),
        client_id: found.clientId,
        ...(found.kind !== 'refresh_token' && { token_type: 'Bearer' as const }),
        exp: seconds(found.expiresAt),
        iat: seconds(found.issuedAt),
        ...(found.userId !== null && { sub: found.userId }),
        iss: deps.issuer,
        ...(found.audience !== null && { aud: found.audience }),
      };
    },
  };
}

export type IntrospectionService = ReturnType<typeof createIntrospectionService>;
