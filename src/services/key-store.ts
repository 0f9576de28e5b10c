// The key store: signing keys shared by every instance through the database. Private parts are
// decrypted only for the current key; the published set is re-read at most every refreshSeconds.
import * as jose from 'jose';
import type { Db } from '../../db/create-db.js';
import { insertCurrentKeyIfNone, listPublishedKeys, type SigningKeyRow } from '../../db/repositories/signing-keys.js';
import {
  decryptPrivateJwk,
  encryptPrivateJwk,
  generateSigningKey,
  publicMembers,
  type SigningAlg,
} from '../oauth/keys.js';

export interface SigningKey {
  kid: string;
  alg: SigningAlg;
  key: jose.CryptoKey;
}

interface Snapshot {
  loadedAt: number;
  published: jose.JWK[];
  current: SigningKey;
}

export class KeyStore {
  #snapshot: Snapshot | undefined;
  #loading: Promise<Snapshot> | undefined;

  constructor(
    private readonly db: Db,
    private readonly secretKey: string,
    private readonly options: {
      refreshSeconds?: number;
      defaultAlg?: SigningAlg;
      onGenerated?: (kid: string) => void;
    } = {},
  ) {}

  /** Generates the first key when the database has none (safe when several instances start at once). */
  async init(): Promise<void> {
    const rows = await listPublishedKeys(this.db);
    if (!rows.some((r) => r.state === 'current')) {
      const generated = await generateSigningKey(this.options.defaultAlg ?? 'RS256');
      await insertCurrentKeyIfNone(this.db, {
        kid: generated.kid,
        alg: generated.alg,
        state: 'current',
        public_jwk: JSON.stringify(generated.publicJwk),
        private_jwk: encryptPrivateJwk(generated.privateJwk, generated.kid, this.secretKey),
      });
      this.options.onGenerated?.(generated.kid);
    }
    await this.#reload();
  }

  async #reload(): Promise<Snapshot> {
    this.#loading ??= (async () => {
      try {
        const rows = await listPublishedKeys(this.db);
        const currentRow = rows.find((r) => r.state === 'current');
        if (!currentRow) throw new Error('no current signing key in the database');
        const snapshot: Snapshot = {
          loadedAt: Date.now(),
          published: rows.map((r: SigningKeyRow) => publicMembers(r.public_jwk as jose.JWK)),
          current:
            this.#snapshot?.current.kid === currentRow.kid
              ? this.#snapshot.current
              : {
                  kid: currentRow.kid,
                  alg: currentRow.alg as SigningAlg,
                  key: (await jose.importJWK(
                    decryptPrivateJwk(currentRow.private_jwk, currentRow.kid, this.secretKey),
                    currentRow.alg,
                  )) as jose.CryptoKey,
                },
        };
        this.#snapshot = snapshot;
        return snapshot;
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  async #fresh(): Promise<Snapshot> {
    const s = this.#snapshot;
    if (s && Date.now() - s.loadedAt < (this.options.refreshSeconds ?? 60) * 1000) return s;
    return this.#reload();
  }

  /** Forget the cached set (after a rotation in this process); other instances refresh on their own. */
  invalidate(): void {
    if (this.#snapshot) this.#snapshot = { ...this.#snapshot, loadedAt: 0 };
  }

  async jwks(): Promise<{ keys: jose.JWK[] }> {
    return { keys: (await this.#fresh()).published };
  }

  async currentKey(): Promise<SigningKey> {
    return (await this.#fresh()).current;
  }
}
