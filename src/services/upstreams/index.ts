// Sign-in with another provider (issue 35): the operator's upstream providers (providers.ts), the identities
// linked to users (identities.ts), and the round trip to an upstream and what its answer leads to (flow.ts:
// sign in a linked user, create an account just in time, or wait for an existing account's owner to prove it).
import type { Db } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import type { FactorService } from '../factors/index.js';
import { createUpstreamIdentityStore, type UpstreamIdentityStore } from './identities.js';
import { createUpstreamProviderStore, type UpstreamProviderStore } from './providers.js';

export interface UpstreamService {
  providers: UpstreamProviderStore;
  identities: UpstreamIdentityStore;
}

export function createUpstreamService(deps: {
  db: Db;
  config: Pick<Config, 'secretKey' | 'loginUrl'>;
  factors: Pick<FactorService, 'summary'>;
}): UpstreamService {
  return {
    providers: createUpstreamProviderStore(deps),
    identities: createUpstreamIdentityStore(deps),
  };
}
