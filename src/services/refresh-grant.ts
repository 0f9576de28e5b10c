// grant_type=refresh_token (RFC 6749 §6) with rotation on every use and reuse detection (RFC 9700
// §4.14): one transaction locks the presented token row; a token presented after it was used revokes
// its whole family (the grant) and every access token issued from it. An optional grace window lets a
// client that lost the response retry once and get the same successor, never a sibling.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import * as authz from '../../db/repositories/authorization.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { findUserById } from '../../db/repositories/users.js';
import type { Application } from '../../schemas/admin.js';
import type { Config } from '../config.js';
import { OAuthError } from '../oauth/errors.js';
import { signIdToken } from '../oauth/id-token.js';
import { formatScope, splitScope } from '../oauth/scope.js';
import { seal, unseal } from '../oauth/seal.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import type { RawParams, TokenResponse } from './authorization.js';
import type { KeyStore } from './key-store.js';

const SEAL_PURPOSE = 'refresh successor';

type Outcome =
  | { kind: 'issued'; response: TokenResponse }
  | { kind: 'reuse'; grantId: string }
  | { kind: 'error'; error: OAuthError };

export function createRefreshGrant(deps: { db: Db; config: Config; keys: KeyStore }) {
  const { db, config } = deps;
  const secretKey = config.secretKey!;
  const invalid = (why: string) => new OAuthError('invalid_grant', why);

  return async function refresh(body: RawParams, app: Application): Promise<TokenResponse> {
    const presented = body.refresh_token as string | undefined;
    if (!presented) throw new OAuthError('invalid_request', 'refresh_token is required');
    if (presented.length > 256) throw invalid('the refresh token is invalid, expired or revoked');
    const requestedScope = body.scope as string | undefined;
    const presentedHash = hashToken(presented);
    // Signing happens outside the transaction; the key is fetched first so no lock waits on it.
    const key = await deps.keys.currentKey();

    const outcome: Outcome = await db.transaction().execute(async (trx): Promise<Outcome> => {
      const row = await authz.lockRefreshToken(trx, presentedHash);
      if (!row || row.client_id !== app.clientId) return { kind: 'error', error: invalid('the refresh token is invalid, expired or revoked') };
      if (row.revoked_at || row.grant_revoked_at) return { kind: 'error', error: invalid('the refresh token is invalid, expired or revoked') };

      const now = Date.now();
      if (row.used_at) {
        // Within the grace window, the immediately previous token gets the successor it was given.
        const graceOk = config.ttl.refreshTokenGrace > 0 && now - new Date(row.used_at).getTime() <= config.ttl.refreshTokenGrace * 1000;
        if (graceOk && row.successor_sealed && row.successor_access_sealed && row.successor_hash) {
          const successor = await authz.findRefreshTokenByHash(trx, row.successor_hash);
          const refreshToken = unseal(row.successor_sealed, { secretKey, purpose: SEAL_PURPOSE, aad: row.successor_hash });
          const accessToken = unseal(row.successor_access_sealed, { secretKey, purpose: SEAL_PURPOSE, aad: `${row.successor_hash}:access` });
          const access = accessToken ? await authz.findAccessTokenByHash(trx, hashToken(accessToken)) : undefined;
          if (successor && !successor.used_at && !successor.revoked_at && refreshToken && accessToken && access) {
            // A retry returns tokens too: the same checks as a rotation (application, user).
            if (!app.enabled) return { kind: 'error', error: invalid('the application is disabled') };
            const user = await findUserById(trx, row.user_id);
            if (!user || user.disabled) return { kind: 'error', error: invalid('the user is not available') };
            const response = await respond({ accessToken, refreshToken, scope: access.scope, userId: row.user_id, authTime: row.grant_auth_time, expiresAt: new Date(access.expires_at) });
            return { kind: 'issued', response };
          }
        }
        await authz.revokeGrant(trx, row.grant_id);
        await appendAuditEvent(trx, { type: 'refresh_token.reuse_detected', userId: row.user_id, clientId: row.client_id, detail: { grantId: row.grant_id } });
        return { kind: 'reuse', grantId: row.grant_id };
      }
      if (new Date(row.expires_at).getTime() <= now || new Date(row.absolute_expires_at).getTime() <= now) {
        return { kind: 'error', error: invalid('the refresh token has expired') };
      }
      if (!app.enabled) return { kind: 'error', error: invalid('the application is disabled') };
      const user = await findUserById(trx, row.user_id);
      if (!user || user.disabled) return { kind: 'error', error: invalid('the user is not available') };

      // RFC 6749 §6: the scope may only narrow; the refresh token keeps the grant's scope.
      const grantScopes = splitScope(row.scope);
      let scopes = grantScopes;
      if (requestedScope !== undefined) {
        const requested = splitScope(requestedScope);
        const wider = requested.filter((s) => !grantScopes.includes(s));
        if (wider.length) return { kind: 'error', error: new OAuthError('invalid_scope', `scope exceeds the original grant: ${wider.join(' ')}`) };
        if (requested.length === 0) return { kind: 'error', error: new OAuthError('invalid_scope', 'scope must not be empty') };
        scopes = grantScopes.filter((s) => requested.includes(s));
      }

      const accessToken = generateToken();
      const refreshToken = generateToken();
      const successorHash = hashToken(refreshToken);
      const grace = config.ttl.refreshTokenGrace > 0;
      await authz.insertRefreshToken(trx, {
        id: randomUUID(),
        token_hash: successorHash,
        grant_id: row.grant_id,
        client_id: row.client_id,
        user_id: row.user_id,
        scope: row.scope,
        // Sliding lifetime, never past the family's absolute cap.
        expires_at: new Date(Math.min(now + config.ttl.refreshToken * 1000, new Date(row.absolute_expires_at).getTime())),
        absolute_expires_at: new Date(row.absolute_expires_at),
      });
      const expiresAt = new Date(now + config.ttl.accessToken * 1000);
      await authz.insertAccessToken(trx, {
        token_hash: hashToken(accessToken),
        grant_id: row.grant_id,
        client_id: row.client_id,
        user_id: row.user_id,
        scope: formatScope(scopes),
        // Issued offline: not tied to a browser session, so sign-out does not end it.
        session_id: null,
        expires_at: expiresAt,
      });
      await authz.markRefreshTokenUsed(trx, presentedHash, {
        hash: successorHash,
        sealed: grace ? seal(refreshToken, { secretKey, purpose: SEAL_PURPOSE, aad: successorHash }) : null,
        accessSealed: grace ? seal(accessToken, { secretKey, purpose: SEAL_PURPOSE, aad: `${successorHash}:access` }) : null,
      });
      await appendAuditEvent(trx, { type: 'refresh_token.rotated', userId: row.user_id, clientId: row.client_id, detail: { grantId: row.grant_id, scope: formatScope(scopes) } });
      const response = await respond({ accessToken, refreshToken, scope: formatScope(scopes), userId: row.user_id, authTime: row.grant_auth_time, expiresAt });
      return { kind: 'issued', response };
    });

    if (outcome.kind === 'issued') return outcome.response;
    if (outcome.kind === 'reuse') throw invalid('the refresh token was already used; the whole grant is revoked');
    throw outcome.error;

    async function respond(o: { accessToken: string; refreshToken: string; scope: string; userId: string; authTime: Date | null; expiresAt: Date }): Promise<TokenResponse> {
      const scopes = splitScope(o.scope);
      const idToken = scopes.includes('openid')
        ? await signIdToken(
            { issuer: config.issuer, subject: o.userId, clientId: app.clientId, authTime: o.authTime ? new Date(o.authTime) : new Date(), accessToken: o.accessToken, lifetimeSeconds: config.ttl.idToken },
            key,
          )
        : undefined;
      return {
        access_token: o.accessToken,
        token_type: 'Bearer',
        expires_in: Math.max(0, Math.round((o.expiresAt.getTime() - Date.now()) / 1000)),
        ...(idToken && { id_token: idToken }),
        refresh_token: o.refreshToken,
        scope: o.scope,
      } as TokenResponse;
    }
  };
}
