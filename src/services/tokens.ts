// Token administration: revocation (RFC 7009), session sign-out propagation, admin views.
import type { Db } from '../../db/create-db.js';
import { findAccessTokenByHash, revokeAccessToken } from '../../db/repositories/access-tokens.js';
import { revokeRefreshFamily, revokeRefreshFamilyByHash } from '../../db/repositories/refresh-tokens.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { revokeClientAccessToken } from '../../db/repositories/client-access-tokens.js';

export function createTokenService(deps: { db: Db }) {
  const { db } = deps;
  return {
    /** The cookie logout: the refresh token's whole family, whichever client it belongs to. */
    async revokeRefreshFamily(refreshHash: string, ip: string | null): Promise<boolean> {
      return db.transaction().execute(async (trx) => {
        const family = await revokeRefreshFamilyByHash(trx, refreshHash);
        if (family) {
          await appendAuditEvent(trx, {
            type: 'token.revoked',
            userId: family.userId,
            clientId: family.clientId,
            ip,
            detail: { kind: 'refresh_token', grantId: family.grantId, reason: 'cookie-logout' },
          });
        }
        return Boolean(family);
      });
    },

    /** Revokes a token of this client, whichever kind it is; the hint only decides which is tried first. */
    async revoke(
      tokenHash: string,
      clientId: string,
      hint: 'access_token' | 'refresh_token',
      ip: string | null,
    ): Promise<void> {
      await db.transaction().execute(async (trx) => {
        const tryRefresh = async () => {
          const family = await revokeRefreshFamily(trx, tokenHash, clientId);
          if (family)
            await appendAuditEvent(trx, {
              type: 'token.revoked',
              userId: family.userId,
              clientId,
              ip,
              detail: { kind: 'refresh_token', grantId: family.grantId },
            });
          return Boolean(family);
        };
        const tryAccess = async () => {
          const row = await findAccessTokenByHash(trx, tokenHash);
          if (!row || row.client_id !== clientId) return false;
          await revokeAccessToken(trx, tokenHash);
          await appendAuditEvent(trx, {
            type: 'token.revoked',
            userId: row.user_id,
            clientId,
            ip,
            detail: { kind: 'access_token', grantId: row.grant_id },
          });
          return true;
        };
        // A client_credentials token (client_access_tokens): an access token without a user or a grant.
        const tryClientToken = async () => {
          if (!(await revokeClientAccessToken(trx, tokenHash, clientId))) return false;
          await appendAuditEvent(trx, {
            type: 'token.revoked',
            clientId,
            ip,
            detail: { kind: 'access_token', grantType: 'client_credentials' },
          });
          return true;
        };
        const order =
          hint === 'access_token' ? [tryAccess, tryClientToken, tryRefresh] : [tryRefresh, tryAccess, tryClientToken];
        for (const attempt of order) if (await attempt()) break;
      });
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
