// The one token issuer of every grant: records the access token, the refresh token (a new family
// member, or the successor of a rotated one with its bookkeeping) and the audit event in one statement
// (db/repositories/issuance.ts), inside the caller's transaction when it has one; answers with the ID
// token signed after that statement or transaction, so that no row lock or pooled connection waits on
// a signature.
import { hash, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Db, Tx } from '../../db/create-db.js';
import { type BearerRow, findAccessTokenByHash } from '../../db/repositories/access-tokens.js';
import { insertTokenSet, rotateCurrentRefreshToken, type TokenSet } from '../../db/repositories/issuance.js';
import { findRefreshTokenByHash } from '../../db/repositories/refresh-tokens.js';
import { type CodeTokens, exchangeAuthorizationCode } from '../../db/repositories/codes.js';
import { exchangeStoredAuthorizationCode } from '../../db/repositories/stored-codes.js';
import type { Config } from '../config.js';
import { signAccessTokenJwt } from '../oauth/access-token-jwt.js';
import type { CodeChecks, CodeExchange, CodeExchangeRequest } from '../oauth/grants/authorization-code.js';
import type { IssuedTokens, TokenResponse } from '../oauth/grants/grant.js';
import { signIdToken } from '../oauth/id-token.js';
import {
  type AccessTokenPlan,
  accessTokenPlan,
  chooseResource,
  type ResourceClient,
  type ResourceRegistry,
} from '../oauth/resource-indicators.js';
import { formatScope, splitScope } from '../oauth/scope.js';
import { seal, unseal } from '../oauth/seal.js';
import { openCode, redirectUriHash } from '../oauth/sealed-code.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import type { KeyStore } from './key-store.js';
import type { ResourceServerService } from './resource-servers.js';

const SEAL_PURPOSE = 'refresh successor';

/** Equality of two secrets whose comparison time says nothing of either (compared as SHA-256 digests). */
const sameSecret = (a: string, b: string) => timingSafeEqual(hashDigest(a), hashDigest(b));
const hashDigest = (value: string) => hash('sha256', value, 'buffer');

export interface IssueInput {
  grantId: string;
  clientId: string;
  userId: string;
  /** The grant's scope: what a refresh token keeps. */
  grantScope: string;
  /**
   * The scope asked (narrower on a refresh that asked for less): the access token's unless `access` narrows it to
   * its audience; whether an ID token is issued.
   */
  scope: string;
  /** The browser session an access token ends with; null when issued offline (by refresh). */
  sessionId: string | null;
  authTime: Date;
  /** The grant's amr (the ID token's amr and acr); null: an older grant, neither. */
  amr?: readonly string[] | null;
  nonce?: string | null;
  /** No refresh token; a new family member (code grant with offline_access); or a rotation. */
  refresh: { kind: 'none' } | { kind: 'new' } | { kind: 'rotate'; presentedHash: string; absoluteExpiresAt: Date };
  /** The access token made already (prepareAccess: its audience, lifetime, a signed JWT); absent: an opaque one. */
  access?: PreparedAccess;
}

/** An access token made before the statement that records it (a JWT is signed with no lock held). */
export interface PreparedAccess {
  token: string;
  expiresAt: Date;
  plan: AccessTokenPlan;
}

/** Who an access token speaks for (its JWT claims besides audience and scope). */
export interface AccessSubject {
  subject: string;
  clientId: string;
  authTime?: Date | null;
  amr?: readonly string[] | null;
}

/** Two plans for the same token (a JWT signed for one is good for the other). */
export const samePlan = (a: AccessTokenPlan, b: AccessTokenPlan) =>
  a.audience === b.audience &&
  a.ttl === b.ttl &&
  a.format === b.format &&
  formatScope(a.scope) === formatScope(b.scope);

/** The bearer cache, told about each access token issued outside a transaction (src/services/bearer.ts). */
export interface IssuedTokenSink {
  generation(): number;
  issued(token: string, found: BearerRow, started: number): void;
}

export function createTokenIssuer(deps: {
  config: Config;
  keys: KeyStore;
  bearers?: IssuedTokenSink;
  /** The resource servers (RFC 8707): read (cached) only for grants and requests that name a resource. */
  resourceServers?: Pick<ResourceServerService, 'list'>;
}) {
  const { config } = deps;

  /** The registry as resource indicators read it (cached by the service). */
  async function registry(): Promise<ResourceRegistry> {
    if (!deps.resourceServers) throw new Error('no resource server registry');
    const [builtIn, ...registered] = await deps.resourceServers.list();
    return { builtIn: builtIn!, registered };
  }

  /** The default plan: no audience, the given scope, ACCESS_TOKEN_TTL, opaque (every token before RFC 8707). */
  const plainPlan = (scope: string[]): AccessTokenPlan => ({
    audience: null,
    scope,
    ttl: config.ttl.accessToken,
    format: 'opaque',
  });

  /**
   * The access token for `audience` out of the granted scopes (accessTokenPlan); without an audience nor resources,
   * the granted scope as always, with no registry read.
   */
  async function planFor(
    grantedScopes: string[],
    audience: string | null,
    client: ResourceClient,
    grantResources: readonly string[],
    /** Read before a transaction opens (a registry load inside one could wait for its own connection). */
    snapshot?: ResourceRegistry,
  ): Promise<AccessTokenPlan> {
    if (audience === null && grantResources.length === 0) return plainPlan(grantedScopes);
    return accessTokenPlan(grantedScopes, audience, snapshot ?? (await registry()), client, config.ttl.accessToken);
  }

  /** Makes the access token of `plan`: an opaque one, or a JWT (RFC 9068) signed with the current key. */
  async function prepareAccess(plan: AccessTokenPlan, who: AccessSubject): Promise<PreparedAccess> {
    const expiresAt = new Date(Date.now() + plan.ttl * 1000);
    if (plan.format !== 'jwt' || plan.audience === null) return { token: generateToken(), expiresAt, plan };
    const token = await signAccessTokenJwt(
      {
        issuer: config.issuer,
        audience: plan.audience,
        subject: who.subject,
        clientId: who.clientId,
        scope: formatScope(plan.scope),
        authTime: who.authTime ?? null,
        amr: who.amr ?? null,
        expiresAt,
      },
      await deps.keys.currentKey(),
    );
    return { token, expiresAt, plan };
  }
  const secretKey = config.secretKey!;
  const grace = config.ttl.refreshTokenGrace > 0;
  /** With a grace window the successor pair is kept sealed, for a retry of the used token. */
  const sealSuccessor = (refreshToken: string, accessToken: string) => {
    if (!grace) return { sealed: null, accessSealed: null };
    const aad = hashToken(refreshToken);
    return {
      sealed: seal(refreshToken, { secretKey, purpose: SEAL_PURPOSE, aad }),
      accessSealed: seal(accessToken, { secretKey, purpose: SEAL_PURPOSE, aad: `${aad}:access` }),
    };
  };

  /** The tokens of a code exchange, drawn before its statement (recorded only if every check passes). */
  const newCodeTokens = (access?: PreparedAccess) => {
    const now = Date.now();
    const accessToken = access?.token ?? generateToken();
    const refreshToken = generateToken();
    const absolute = new Date(now + config.ttl.refreshTokenAbsolute * 1000);
    const rows: CodeTokens = {
      accessHash: hashToken(accessToken),
      accessExpiresAt: access?.expiresAt ?? new Date(now + config.ttl.accessToken * 1000),
      refreshId: randomUUID(),
      refreshHash: hashToken(refreshToken),
      // Sliding lifetime, never past the family's absolute cap.
      refreshExpiresAt: new Date(Math.min(now + config.ttl.refreshToken * 1000, absolute.getTime())),
      refreshAbsoluteExpiresAt: absolute,
    };
    return { accessToken, refreshToken, rows, plan: access?.plan, started: deps.bearers?.generation() ?? 0 };
  };

  /** A spent code's answer: its tokens when recorded (the new access token goes to the bearer cache). */
  const spentCode = (
    code: Omit<IssuedTokens, 'accessToken' | 'refreshToken' | 'expiresIn' | 'subject'> & { userId: string },
    checks: CodeChecks,
    issued: false | { refresh: boolean; bearer: BearerRow | undefined },
    tokens: ReturnType<typeof newCodeTokens>,
  ): CodeExchange => {
    if (!issued) return { kind: 'consumed', checks, issued: undefined };
    if (issued.bearer) deps.bearers?.issued(tokens.accessToken, issued.bearer, tokens.started);
    return {
      kind: 'consumed',
      checks,
      issued: {
        accessToken: tokens.accessToken,
        refreshToken: issued.refresh ? tokens.refreshToken : undefined,
        scope: tokens.plan ? formatScope(tokens.plan.scope) : code.scope,
        grantedScope: code.scope,
        audience: tokens.plan?.audience ?? null,
        expiresIn: tokens.plan?.ttl ?? config.ttl.accessToken,
        subject: code.userId,
        clientId: code.clientId,
        authTime: code.authTime,
        amr: code.amr ?? null,
        nonce: code.nonce,
        sessionId: code.sessionId,
      },
    };
  };

  /** A code stored by the earlier release (db/repositories/stored-codes.ts), redeemed as it was then. */
  async function exchangeStoredCode(db: Db, request: CodeExchangeRequest): Promise<CodeExchange> {
    // Codes of the earlier release named no resource: their grants have none (checked before the code is spent).
    chooseResource([], request.resource);
    const tokens = newCodeTokens();
    const result = await exchangeStoredAuthorizationCode(
      db,
      {
        codeHash: hashToken(request.code),
        clientId: request.clientId,
        redirectUri: request.redirectUri,
        // Codes of the earlier release always had a challenge: no verifier never matches one.
        codeChallenge: request.codeChallenge ?? '',
        ...tokens.rows,
      },
      config.ttl.sessionIdle,
    );
    if (result.kind !== 'consumed') return result;
    // Checked as the earlier release checked it (revocations deleted such codes).
    const checks = { ...result.checks, sessionLive: true, consented: true };
    return spentCode(result.code, checks, result.issued, tokens);
  }

  return {
    /** Records the tokens of one token response and their audit event in one statement (`db` or a transaction). */
    async issueTokens(db: Db, input: IssueInput): Promise<IssuedTokens> {
      const now = Date.now();
      const accessToken = input.access?.token ?? generateToken();
      const plan = input.access?.plan ?? plainPlan(splitScope(input.scope));
      const scope = formatScope(plan.scope);
      const refreshToken = input.refresh.kind === 'none' ? undefined : generateToken();
      let refresh: TokenSet['refresh'];
      if (refreshToken) {
        const successorHash = hashToken(refreshToken);
        const absolute =
          input.refresh.kind === 'rotate'
            ? input.refresh.absoluteExpiresAt
            : new Date(now + config.ttl.refreshTokenAbsolute * 1000);
        refresh = {
          id: randomUUID(),
          hash: successorHash,
          scope: input.grantScope,
          // Sliding lifetime, never past the family's absolute cap.
          expiresAt: new Date(Math.min(now + config.ttl.refreshToken * 1000, absolute.getTime())),
          absoluteExpiresAt: absolute,
          ...(input.refresh.kind === 'rotate' && {
            rotated: { presentedHash: input.refresh.presentedHash, ...sealSuccessor(refreshToken, accessToken) },
          }),
        };
      }
      const rotate = input.refresh.kind === 'rotate';
      // Inside a transaction the row may yet roll back: only a committed statement's answer is cached.
      const sink = db.isTransaction ? undefined : deps.bearers;
      const started = sink?.generation() ?? 0;
      const found = await insertTokenSet(
        db,
        {
          accessHash: hashToken(accessToken),
          grantId: input.grantId,
          clientId: input.clientId,
          userId: input.userId,
          scope,
          sessionId: input.sessionId,
          accessExpiresAt: input.access?.expiresAt ?? new Date(now + config.ttl.accessToken * 1000),
          audience: plan.audience,
          auditType: rotate ? 'refresh_token.rotated' : 'token.issued',
          auditDetail: rotate
            ? { grantId: input.grantId, scope }
            : { grantId: input.grantId, scope, refresh: Boolean(refreshToken) },
          refresh,
        },
        config.ttl.sessionIdle,
      );
      if (sink && found) sink.issued(accessToken, found, started);
      return {
        accessToken,
        refreshToken,
        scope,
        grantedScope: input.scope,
        audience: plan.audience,
        expiresIn: plan.ttl,
        subject: input.userId,
        clientId: input.clientId,
        authTime: input.authTime,
        amr: input.amr ?? null,
        nonce: input.nonce ?? null,
        sessionId: rotate ? null : input.sessionId,
      };
    },

    /**
     * The code exchange: the code opened (nothing else can be read from it), checked against the request, then
     * spent in one statement (see exchangeAuthorizationCode) that records its grant and tokens only when every
     * check passed. The new access token goes to the bearer cache.
     */
    async exchangeCode(db: Db, request: CodeExchangeRequest): Promise<CodeExchange> {
      if (!request.code.startsWith('v1.')) return exchangeStoredCode(db, request);
      const code = openCode(request.code, secretKey);
      if (!code) return { kind: 'unknown' };
      const checks = {
        sameClient: code.clientId === request.clientId,
        sameRedirectUri: code.redirectUriHash === redirectUriHash(request.redirectUri),
        pkce:
          code.codeChallenge === null || request.codeChallenge === null
            ? code.codeChallenge === request.codeChallenge
            : sameSecret(code.codeChallenge, request.codeChallenge),
      };
      const requestMatches = checks.sameClient && checks.sameRedirectUri && checks.pkce;
      // RFC 8707 §2.2, checked before the code is spent (and only for the client the code is for, with its proofs):
      // at most one resource, one of the grant's; the resource server still usable by the client.
      const resources = code.resources ?? [];
      let access: PreparedAccess | undefined;
      if (requestMatches && (resources.length > 0 || request.resource !== undefined)) {
        const audience = chooseResource(resources, request.resource);
        const client = { clientId: code.clientId, selfRegistered: request.selfRegistered ?? false };
        const plan = await planFor(splitScope(code.scope), audience, client, resources);
        access = await prepareAccess(plan, {
          subject: code.userId,
          clientId: code.clientId,
          authTime: code.authTime,
          amr: code.amr,
        });
      }
      const tokens = newCodeTokens(access);
      const result = await exchangeAuthorizationCode(
        db,
        {
          grantId: code.grantId,
          clientId: code.clientId,
          userId: code.userId,
          sessionId: code.sessionId,
          scope: code.scope,
          authTime: code.authTime,
          amr: code.amr,
          issuedAt: code.issuedAt,
          expiresAt: code.expiresAt,
          requestMatches,
          resources,
          accessScope: access ? formatScope(access.plan.scope) : code.scope,
          audience: access?.plan.audience ?? null,
          ...tokens.rows,
        },
        config.ttl.sessionIdle,
      );
      if (result.kind === 'unknown') return result;
      if (result.kind === 'replayed')
        return { kind: 'replayed', code: { grantId: code.grantId, clientId: code.clientId, userId: code.userId } };
      return spentCode(code, { ...checks, ...result.checks }, result.issued, tokens);
    },

    /**
     * The common refresh in one statement (see rotateCurrentRefreshToken): the successor pair keeps the
     * grant's scope and is issued offline; undefined when the presented token is not current.
     */
    async rotateCurrent(db: Db, presentedHash: string, clientId: string): Promise<IssuedTokens | undefined> {
      const now = Date.now();
      const accessToken = generateToken();
      const refreshToken = generateToken();
      const refreshHash = hashToken(refreshToken);
      const rotated = await rotateCurrentRefreshToken(db, {
        presentedHash,
        clientId,
        accessHash: hashToken(accessToken),
        accessExpiresAt: new Date(now + config.ttl.accessToken * 1000),
        refreshId: randomUUID(),
        refreshHash,
        refreshExpiresAt: new Date(now + config.ttl.refreshToken * 1000),
        ...sealSuccessor(refreshToken, accessToken),
      });
      if (!rotated) return undefined;
      return {
        accessToken,
        refreshToken,
        scope: rotated.scope,
        grantedScope: rotated.scope,
        audience: null,
        expiresIn: config.ttl.accessToken,
        subject: rotated.user_id,
        clientId,
        authTime: rotated.auth_time ? new Date(rotated.auth_time) : new Date(),
        amr: rotated.amr,
        nonce: null,
        sessionId: null,
      };
    },

    /**
     * Within the grace window, the successor a used refresh token was rotated to, if it is still
     * live: the same pair again, never a sibling.
     */
    async liveSuccessor(
      trx: Tx,
      used: {
        usedAt: Date;
        successorHash: string | null;
        successorSealed: string | null;
        successorAccessSealed: string | null;
        userId: string;
        clientId: string;
        authTime: Date | null;
        amr: string[] | null;
        /** The grant's scope (whether the retry's answer carries an ID token). */
        grantScope: string;
      },
    ): Promise<IssuedTokens | undefined> {
      if (!grace || Date.now() - used.usedAt.getTime() > config.ttl.refreshTokenGrace * 1000) return undefined;
      if (!used.successorHash || !used.successorSealed || !used.successorAccessSealed) return undefined;
      const successor = await findRefreshTokenByHash(trx, used.successorHash);
      const refreshToken = unseal(used.successorSealed, { secretKey, purpose: SEAL_PURPOSE, aad: used.successorHash });
      const accessToken = unseal(used.successorAccessSealed, {
        secretKey,
        purpose: SEAL_PURPOSE,
        aad: `${used.successorHash}:access`,
      });
      const access = accessToken ? await findAccessTokenByHash(trx, hashToken(accessToken)) : undefined;
      if (!successor || successor.used_at || successor.revoked_at || !refreshToken || !accessToken || !access)
        return undefined;
      return {
        accessToken,
        refreshToken,
        scope: access.scope,
        // Without an audience the access token's scope is what was asked (RFC 6749 §6 narrowing included).
        grantedScope: access.audience ? used.grantScope : access.scope,
        audience: access.audience,
        expiresIn: Math.max(0, Math.round((new Date(access.expires_at).getTime() - Date.now()) / 1000)),
        subject: used.userId,
        clientId: used.clientId,
        authTime: used.authTime ?? new Date(),
        amr: used.amr,
      };
    },

    /** The token response: the ID token (when openid was granted) is signed here, after the commit. */
    async respond(issued: IssuedTokens): Promise<TokenResponse> {
      // The ID token follows the grant (openid granted), whatever the access token's audience narrowed its scope to.
      const idToken = splitScope(issued.grantedScope ?? issued.scope).includes('openid')
        ? await signIdToken(
            {
              issuer: config.issuer,
              subject: issued.subject,
              clientId: issued.clientId,
              authTime: issued.authTime,
              amr: issued.amr ?? null,
              nonce: issued.nonce,
              accessToken: issued.accessToken,
              sessionId: issued.sessionId,
              lifetimeSeconds: config.ttl.idToken,
            },
            await deps.keys.currentKey(),
          )
        : undefined;
      return {
        access_token: issued.accessToken,
        token_type: 'Bearer',
        expires_in: issued.expiresIn,
        ...(idToken && { id_token: idToken }),
        ...(issued.refreshToken && { refresh_token: issued.refreshToken }),
        // The access token's scope (RFC 6749 §5.1); none when the resource's share of the grant is empty.
        ...((issued.scope !== '' || !issued.audience) && { scope: issued.scope }),
      };
    },

    planFor,
    prepareAccess,
    registry,
  };
}

export type TokenIssuer = ReturnType<typeof createTokenIssuer>;
