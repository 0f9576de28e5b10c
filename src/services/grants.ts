// The grants the token endpoint offers, each handler of src/oauth/grants bound to its storage over
// the repositories, its answer (what was issued) signed and formatted by the token issuer. The token
// endpoint asks `grants.get(grant_type)`; adding a grant is a handler file and a line here.
import type { Db } from '../../db/create-db.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { insertClientAccessToken } from '../../db/repositories/client-access-tokens.js';
import { revokeGrant } from '../../db/repositories/grants.js';
import { refreshChecks } from '../../db/repositories/refresh-rules.js';
import { lockRefreshToken } from '../../db/repositories/refresh-tokens.js';
import { authorizationCodeGrant, type AuthorizationCodeStore } from '../oauth/grants/authorization-code.js';
import {
  clientCredentialsGrant,
  type ClientCredentialsClient,
  type ClientCredentialsStore,
  type ClientTokens,
} from '../oauth/grants/client-credentials.js';
import type { GrantClient, GrantHandler, IssuedTokens, TokenParams, TokenResponse } from '../oauth/grants/grant.js';
import { refreshTokenGrant, type LockedRefreshToken, type RefreshTokenStore } from '../oauth/grants/refresh-token.js';
import type { MetricEvents } from '../metrics.js';
import { formatScope } from '../oauth/scope.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import type { TokenIssuer } from './token-issuer.js';

/** The authenticated client a grant answers (an Application is one). */
export type Grant = (params: TokenParams, client: ClientCredentialsClient) => Promise<TokenResponse>;

export function createGrants(deps: {
  db: Db;
  issuer: TokenIssuer;
  /** ACCESS_TOKEN_TTL: the lifetime of client_credentials tokens too. */
  accessTokenSeconds: number;
  /** Told of each token response and each detected reuse (after its revocation committed). */
  events: Pick<MetricEvents, 'tokensIssued' | 'reuseDetected'>;
}): Map<string, Grant> {
  const { db, issuer, events, accessTokenSeconds } = deps;
  // The code exchange is one statement (token-issuer.ts exchangeCode): the code's consumption, its checks and its
  // tokens are all or nothing, so a database lost mid-exchange leaves the code unconsumed (the client's retry
  // works), never consumed without tokens; a code that fails a check is spent by that same statement. A replay's
  // revocation and its audit event are one transaction of their own. The ID token is signed afterwards.
  const codeStore: AuthorizationCodeStore = {
    consumeAndIssue: (request) => issuer.exchangeCode(db, request),
    async revokeReplayedGrant(code) {
      await db.transaction().execute(async (trx) => {
        await revokeGrant(trx, code.grantId);
        await appendAuditEvent(trx, {
          type: 'code.reuse_detected',
          userId: code.userId,
          clientId: code.clientId,
          detail: { grantId: code.grantId },
        });
      });
      events.reuseDetected('authorization_code');
    },
  };

  const refreshStore: RefreshTokenStore = {
    rotateIfCurrent: (tokenHash, clientId) => issuer.rotateCurrent(db, tokenHash, clientId),
    withLockedToken: async (tokenHash, clientId, work) => {
      let reused = false;
      // The registry (cached) is read before the transaction: a load inside it would need a second connection.
      const registry = await issuer.registry();
      const result = await db.transaction().execute(async (trx) => {
        const row = await lockRefreshToken(trx, tokenHash);
        const token: LockedRefreshToken | undefined = row && {
          grantId: row.grant_id,
          clientId: row.client_id,
          userId: row.user_id,
          scope: row.scope,
          usedAt: row.used_at ? new Date(row.used_at) : null,
          absoluteExpiresAt: new Date(row.absolute_expires_at),
          authTime: row.grant_auth_time ? new Date(row.grant_auth_time) : null,
          amr: row.grant_amr,
          resources: row.grant_resources ?? [],
          // The rules whose SQL rotateIfCurrent ran, read over the locked row: which one failed.
          checks: refreshChecks(row, { clientId, now: Date.now() }),
        };
        return work(token, {
          liveSuccessor: (t) =>
            issuer.liveSuccessor(trx, {
              usedAt: t.usedAt!,
              successorHash: row!.successor_hash,
              successorSealed: row!.successor_sealed,
              successorAccessSealed: row!.successor_access_sealed,
              userId: t.userId,
              clientId: t.clientId,
              authTime: t.authTime,
              amr: t.amr,
              grantScope: t.scope,
            }),
          plan: (t, scopes, audience, selfRegistered) =>
            issuer.planFor(scopes, audience, { clientId: t.clientId, selfRegistered }, t.resources, registry),
          async revokeFamily(t) {
            reused = true;
            await revokeGrant(trx, t.grantId);
            await appendAuditEvent(trx, {
              type: 'refresh_token.reuse_detected',
              userId: t.userId,
              clientId: t.clientId,
              detail: { grantId: t.grantId },
            });
          },
          rotate: async (t, { scopes, plan, prepared }) =>
            issuer.issueTokens(trx, {
              grantId: t.grantId,
              clientId: t.clientId,
              userId: t.userId,
              grantScope: t.scope,
              scope: formatScope(scopes),
              // An opaque token is made here; a JWT was signed before the transaction.
              access: prepared ?? (await issuer.prepareAccess(plan, { subject: t.userId, clientId: t.clientId })),
              // Issued offline: not tied to a browser session, so sign-out does not end it.
              sessionId: null,
              authTime: t.authTime ?? new Date(),
              amr: t.amr,
              refresh: { kind: 'rotate', presentedHash: tokenHash, absoluteExpiresAt: t.absoluteExpiresAt },
            }),
        });
      });
      if (reused) events.reuseDetected('refresh_token');
      return result;
    },
    prepare: (t, plan) =>
      issuer.prepareAccess(plan, { subject: t.userId, clientId: t.clientId, authTime: t.authTime, amr: t.amr }),
  };

  // client_credentials: a token of the client's own (no user, no grant, no refresh token) and its token.issued, in
  // one transaction. Kept in client_access_tokens, where the bearer lookup never looks.
  const clientStore: ClientCredentialsStore = {
    async issue(clientId, scope, plan) {
      // A JWT (RFC 9068 §2.2: sub is the client) is signed here, before the transaction.
      const prepared = plan && (await issuer.prepareAccess(plan, { subject: clientId, clientId }));
      const accessToken = prepared?.token ?? generateToken();
      const expiresIn = plan?.ttl ?? accessTokenSeconds;
      await db.transaction().execute(async (trx) => {
        await insertClientAccessToken(trx, {
          tokenHash: hashToken(accessToken),
          clientId,
          scope,
          expiresAt: prepared?.expiresAt ?? new Date(Date.now() + expiresIn * 1000),
          audience: plan?.audience ?? null,
        });
        await appendAuditEvent(trx, {
          type: 'token.issued',
          clientId,
          detail: {
            grantType: 'client_credentials',
            scope,
            refresh: false,
            ...(plan?.audience && { resource: plan.audience }),
          },
        });
      });
      return { accessToken, scope, expiresIn };
    },
    registry: () => issuer.registry(),
  };
  const clientResponse = async (issued: ClientTokens): Promise<TokenResponse> => ({
    access_token: issued.accessToken,
    token_type: 'Bearer',
    expires_in: issued.expiresIn,
    ...(issued.scope && { scope: issued.scope }),
  });

  const bind = <S, C extends GrantClient, I>(
    handler: GrantHandler<S, C, I>,
    store: S,
    respond: (issued: I) => Promise<TokenResponse>,
  ): [string, Grant] => [
    handler.grantType,
    async (params, client) => {
      // The handler returns what it recorded; the ID token is signed here, after the tokens' statement or
      // transaction committed (so no row lock waits on a signature).
      const response = await respond(await handler.handle(params, client as GrantClient as C, store));
      events.tokensIssued(handler.grantType);
      return response;
    },
  ];
  const signed = (issued: IssuedTokens) => issuer.respond(issued);
  return new Map([
    bind(authorizationCodeGrant, codeStore, signed),
    bind(refreshTokenGrant, refreshStore, signed),
    bind(clientCredentialsGrant, clientStore, clientResponse),
  ]);
}
