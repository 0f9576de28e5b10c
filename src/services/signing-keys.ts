// Signing-key rotation without downtime. States: next (published, not signing), current (signing),
// retired (published until every ID token it signed has expired, then removed by the clean-up job).
// A rotation promotes next to current and current to retired, and publishes a new next; since the
// promoted key was in the JWKS long before it signs, verifiers with a cached JWKS already know it.
import type { Db } from '../../db/create-db.js';
import * as repo from '../../db/repositories/signing-keys.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { AppError, conflict, notFound } from '../errors.js';
import { encryptPrivateJwk, generateSigningKey, type SigningAlg } from '../oauth/keys.js';
import type { ActorContext } from './applications.js';

/** JWKS responses may be cached this long; every instance's key store re-reads the database this often. */
export const JWKS_MAX_AGE_SECONDS = 300;
export const KEYS_REFRESH_SECONDS = 60;

export interface KeyInfo {
  kid: string;
  alg: string;
  state: 'next' | 'current' | 'retired';
  createdAt: string;
  activatedAt: string | null;
  retiredAt: string | null;
}

const toInfo = (r: repo.SigningKeyRow): KeyInfo => ({
  kid: r.kid,
  alg: r.alg,
  state: r.state,
  createdAt: new Date(r.created_at).toISOString(),
  activatedAt: r.activated_at ? new Date(r.activated_at).toISOString() : null,
  retiredAt: r.retired_at ? new Date(r.retired_at).toISOString() : null,
});

export function createSigningKeyService(deps: {
  db: Db;
  secretKey: string;
  jwksMaxAgeSeconds: number;
  refreshSeconds: number;
}) {
  const { db } = deps;

  async function newKey(state: 'next' | 'current', alg: SigningAlg) {
    const generated = await generateSigningKey(alg);
    return {
      kid: generated.kid,
      alg: generated.alg,
      state,
      public_jwk: JSON.stringify(generated.publicJwk),
      private_jwk: encryptPrivateJwk(generated.privateJwk, generated.kid, deps.secretKey),
    };
  }

  return {
    async list(): Promise<KeyInfo[]> {
      const order = { current: 0, next: 1, retired: 2 };
      return (await repo.listPublishedKeys(db)).map(toInfo).sort((a, b) => order[a.state] - order[b.state]);
    },

    /** Publishes a next key when there is none (first start, or after one was retired). */
    async ensureNext(alg: SigningAlg = 'RS256'): Promise<void> {
      // Usual case: a next key exists, and no key pair needs generating at start.
      if ((await repo.listPublishedKeys(db)).some((k) => k.state === 'next')) return;
      const pending = await newKey('next', alg);
      await db.transaction().execute(async (trx) => {
        const keys = await repo.lockAllKeys(trx);
        if (!keys.some((k) => k.state === 'next')) await repo.insertKey(trx, pending);
      });
    },

    /**
     * next → current, current → retired, and a new next. Refused while the next key is younger than a
     * JWKS cache lifetime plus the instances' refresh interval (verifiers might not know it yet),
     * unless forced.
     */
    async rotate(context: ActorContext, options: { force?: boolean; alg?: SigningAlg } = {}): Promise<KeyInfo[]> {
      const pending = await newKey('next', options.alg ?? 'RS256');
      const minAgeSeconds = deps.jwksMaxAgeSeconds + deps.refreshSeconds;
      await db.transaction().execute(async (trx) => {
        const keys = await repo.lockAllKeys(trx);
        const next = keys.find((k) => k.state === 'next');
        const current = keys.find((k) => k.state === 'current');
        if (!next) throw conflict('NO_NEXT_KEY', 'There is no next key to promote; one is published at start');
        const age = (Date.now() - new Date(next.created_at).getTime()) / 1000;
        if (age < minAgeSeconds && !options.force) {
          throw new AppError(
            409,
            'NEXT_KEY_TOO_NEW',
            `The next key ${next.kid} was published ${Math.floor(age)} s ago; ` +
              `relying parties may cache the JWKS for ${deps.jwksMaxAgeSeconds} s. ` +
              `Rotate after ${Math.ceil(minAgeSeconds - age)} s, or force it.`,
          );
        }
        if (current) await repo.setKeyState(trx, current.kid, 'retired');
        await repo.setKeyState(trx, next.kid, 'current');
        await repo.insertKey(trx, pending);
        await appendAuditEvent(trx, {
          type: 'signing_key.rotated',
          actor: context.actor,
          ip: context.ip,
          detail: { current: next.kid, retired: current?.kid ?? null, next: pending.kid },
        });
      });
      return this.list();
    },

    /** Stops publishing a next or retired key now (for a compromised key). The current key must be rotated first. */
    async retire(kid: string, context: ActorContext): Promise<KeyInfo[]> {
      await db.transaction().execute(async (trx) => {
        const keys = await repo.lockAllKeys(trx);
        const key = keys.find((k) => k.kid === kid);
        if (!key) throw notFound('KEY_NOT_FOUND', `No published key ${kid}`);
        if (key.state === 'current')
          throw conflict('KEY_IS_CURRENT', `${kid} is signing; rotate first, then retire it`);
        await repo.deleteKey(trx, kid);
        await appendAuditEvent(trx, {
          type: 'signing_key.rotated',
          actor: context.actor,
          ip: context.ip,
          detail: { removed: kid, state: key.state },
        });
      });
      return this.list();
    },
  };
}

export type SigningKeyService = ReturnType<typeof createSigningKeyService>;
