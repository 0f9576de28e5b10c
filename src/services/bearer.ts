// Bearer tokens of /api/external/* and UserInfo (the spec's Authentication rules 2-3): the token is in
// the access-token store by hash, live (not expired or revoked, its grant not revoked, its browser
// session, if any, still live), of an enabled application and of a user who is not disabled. One round
// trip (a prepared statement on PostgreSQL) for token, session, user and application.
//
// Answers are cached in this process by token hash for BEARER_CACHE_SECONDS (default 5), and never
// past the token's expiry, its session's absolute expiry or its session's idle deadline (computed by
// the database, from the same row). invalidate() drops every entry: the bearer-auth plugin calls it on
// every notice of the invalidation bus (src/services/invalidation.ts), i.e. at once in this process
// after any committed write that revokes a token, grant or session or changes a user or application,
// and on other instances when their NOTIFY arrives. Whole-cache drops keep this simple and correct:
// such changes are rare next to bearer checks, and the claims served come from the cached user (an
// e-mail or profile change drops them as well). The TTL bounds the delay when notices are lost (the
// listener is down); see README, BEARER_CACHE_SECONDS.
// Failures are not cached: a token that fails keeps failing for a reason the database still holds. A token
// is cached from the statement that issues it (issued()), read with the same joins and conditions as
// findBearer, so the first UserInfo call after a token response costs no round trip.
import type { Db } from '../../db/create-db.js';
import { type BearerRow, findBearer } from '../../db/repositories/access-tokens.js';
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
  /** The resource (RFC 8707) the token is for; null: none named (accepted by /api/external and UserInfo). */
  audience: string | null;
  /** undefined when the user row vanished after the token was found (the handler answers 404). */
  user: BearerUser | undefined;
}

/** Cached authentications kept at most; past it the oldest go first. */
const CACHE_MAX_ENTRIES = 50_000;

export function createBearerService(deps: {
  db: Db;
  sessionIdleSeconds: number;
  staticApplications: StaticApplications;
  /** Seconds a successful authentication is reused at most (0: every request asks the database). */
  cacheSeconds?: number;
}) {
  const cacheMs = (deps.cacheSeconds ?? 0) * 1000;
  const cache = new Map<string, { until: number; auth: BearerAuth }>();
  // Bumped by invalidate(): a lookup under way across a drop may have read the old rows; it is not kept.
  let generation = 0;

  async function lookup(tokenHash: string): Promise<BearerAuth | undefined> {
    const started = generation;
    const found = await findBearer(deps.db, tokenHash, deps.sessionIdleSeconds);
    return found && remember(tokenHash, found, started);
  }

  /** Caches what a statement begun at generation `started` read, unless something changed since. */
  function remember(tokenHash: string, found: BearerRow, started: number): BearerAuth | undefined {
    const auth = toAuth(tokenHash, found);
    if (auth && cacheMs > 0 && started === generation && found.liveForMs > 0) {
      const now = Date.now();
      sweep(now);
      if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
      // Deleted first, so that the entry moves to the end: the map stays in order of insertion, which is
      // about the order of expiry (every entry lives cacheMs or less).
      cache.delete(tokenHash);
      cache.set(tokenHash, { until: now + Math.min(cacheMs, found.liveForMs), auth });
    }
    return auth;
  }

  /**
   * Drops expired entries from the oldest end, stopping at the first live one. Without it an entry that is
   * never asked for again (most tokens: a refresh chain's, a client's that stopped) stayed until the size cap
   * pushed it out: 50,000 answers with their users' claims held for nothing, and kept alive through every
   * garbage collection. Amortized, each entry is looked at once more when it goes.
   */
  function sweep(now: number): void {
    for (const [key, entry] of cache) {
      if (entry.until > now) return;
      cache.delete(key);
    }
  }

  function toAuth(tokenHash: string, found: BearerRow): BearerAuth | undefined {
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
      audience: row.audience ?? null,
      user: bearerUser,
    };
  }

  return {
    /** The live token's authentication, or undefined (unknown, expired, revoked, disabled). */
    authenticate(token: string): Promise<BearerAuth | undefined> | BearerAuth {
      const tokenHash = hashToken(token);
      const hit = cache.get(tokenHash);
      if (hit) {
        if (hit.until > Date.now()) return hit.auth;
        cache.delete(tokenHash);
      }
      return lookup(tokenHash);
    },
    /**
     * The live token with its row, by the same rules as authenticate() but never from the cache (introspection,
     * RFC 7662, reports the token's times as stored); undefined as for authenticate().
     */
    async liveToken(tokenHash: string): Promise<{ auth: BearerAuth; row: BearerRow['token'] } | undefined> {
      const found = await findBearer(deps.db, tokenHash, deps.sessionIdleSeconds);
      const auth = found && toAuth(tokenHash, found);
      return auth && found && { auth, row: found.token };
    },
    /** The cache's generation now: take it before a statement whose answer is given to issued(). */
    generation: () => generation,
    /**
     * A token just issued, as the issuing statement read it (committed, not inside a transaction): its
     * first use needs no lookup. `started` is generation() from before that statement: a drop since then
     * (a revocation that statement may not have seen) keeps it out.
     */
    issued(token: string, found: BearerRow, started: number): void {
      remember(hashToken(token), found, started);
    },
    /** Authentications held now, expired ones not yet swept included. */
    size: () => cache.size,
    /** Drops every cached authentication (something was revoked or changed). */
    invalidate() {
      generation++;
      cache.clear();
    },
  };
}

export type BearerService = ReturnType<typeof createBearerService>;
