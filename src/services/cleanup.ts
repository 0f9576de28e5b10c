// The clean-up job: expired codes, tokens, sessions, pending requests, pending sign-ups and verification
// links, self-registered accounts that never verified their address (UNVERIFIED_ACCOUNT_TTL), plus
// retired signing keys past the longest ID-token lifetime, self-registered clients unused for
// SELF_REGISTERED_CLIENT_TTL days and dead initial access tokens. Small batches, a pause between them, so it
// never holds up requests.
import type { Db } from '../../db/create-db.js';
import { deleteExpiredBatch, expiryRules, wipeExpiredSuccessors } from '../../db/repositories/cleanup.js';
import { deleteExpiredRetiredKeys } from '../../db/repositories/signing-keys.js';
import { notifyApplicationsChanged } from '../../db/repositories/applications.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import {
  deleteDeadRegistrationTokens,
  deleteUnusedSelfRegistered,
  revokeClientGrants,
} from '../../db/repositories/self-registration.js';
import type { Config } from '../config.js';
import type { ServiceLog } from './log.js';

export function createCleanupJob(deps: {
  db: Db;
  config: Config;
  log: ServiceLog;
  batchSize?: number;
  jwksMaxAgeSeconds: number;
  /** A self-registered application was deleted for want of use (its cached copy goes). */
  onApplicationDeleted?: (clientId: string) => void;
}) {
  const batchSize = deps.batchSize ?? 500;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<Record<string, number>> | undefined;

  async function runOnce(): Promise<Record<string, number>> {
    const deleted: Record<string, number> = {};
    for (const rule of expiryRules({
      sessionIdleSeconds: deps.config.ttl.sessionIdle,
      unverifiedAccountSeconds: deps.config.ttl.unverifiedAccount,
    })) {
      let total = 0;
      for (;;) {
        const n = await deleteExpiredBatch(deps.db, rule, batchSize);
        total += n;
        if (n < batchSize) break;
        await new Promise((r) => setImmediate(r)); // let requests in between batches
      }
      deleted[rule.table] = total;
    }
    deleted.refresh_successors_wiped = await wipeExpiredSuccessors(deps.db, deps.config.ttl.refreshTokenGrace);
    // A retired key stays published while an ID token it signed may still be checked, plus a JWKS cache.
    deleted.signing_keys = await deleteExpiredRetiredKeys(deps.db, deps.config.ttl.idToken + deps.jwksMaxAgeSeconds);
    // Clients that registered themselves (dynamic, metadata documents) and have not been used for the configured
    // days (SELF_REGISTERED_CLIENT_TTL; 0 keeps them); initial access tokens expired or used up.
    const days = deps.config.registration.unusedClientDays;
    const unused =
      days > 0
        ? await deps.db.transaction().execute(async (trx) => {
            const ids = await deleteUnusedSelfRegistered(trx, days);
            for (const clientId of ids) {
              await revokeClientGrants(trx, clientId);
              await notifyApplicationsChanged(trx, clientId);
              await appendAuditEvent(trx, {
                type: 'application.deleted',
                actor: 'cleanup',
                clientId,
                detail: { reason: 'unused', days },
              });
            }
            return ids;
          })
        : [];
    for (const clientId of unused) deps.onApplicationDeleted?.(clientId);
    deleted.self_registered_applications = unused.length;
    deleted.registration_tokens = await deleteDeadRegistrationTokens(deps.db);
    const sum = Object.values(deleted).reduce((a, b) => a + b, 0);
    if (sum > 0) deps.log.info({ deleted }, 'clean-up removed expired rows');
    return deleted;
  }

  return {
    runOnce(): Promise<Record<string, number>> {
      running ??= runOnce().finally(() => (running = undefined));
      return running;
    },
    start(intervalSeconds: number) {
      if (intervalSeconds <= 0 || timer) return;
      timer = setInterval(() => {
        this.runOnce().catch((error: unknown) => deps.log.warn({ err: error }, 'clean-up failed; will retry'));
      }, intervalSeconds * 1000);
      timer.unref();
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => undefined);
    },
  };
}

export type CleanupJob = ReturnType<typeof createCleanupJob>;
