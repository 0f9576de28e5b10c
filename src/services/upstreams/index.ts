// Sign-in with another provider (issue 35): the operator's upstream providers (providers.ts), the identities
// linked to users (identities.ts), and the round trip to an upstream and what its answer leads to (flow.ts:
// sign in a linked user, create an account just in time, or wait for an existing account's owner to prove it).
import type { Db } from '../../../db/create-db.js';
import type { Config } from '../../config.js';
import type { Mailer } from '../../mail/mailer.js';
import type { FactorService } from '../factors/index.js';
import type { SessionService } from '../sessions.js';
import { createUpstreamFlow, type UpstreamFlow } from './flow.js';
import { createUpstreamIdentityStore, type UpstreamIdentityStore } from './identities.js';
import { createUpstreamProviderStore, type UpstreamProviderStore } from './providers.js';

export interface UpstreamService {
  providers: UpstreamProviderStore;
  identities: UpstreamIdentityStore;
  /** The round trip to an upstream and what its answer leads to (sign-in, link, account, pending link). */
  flow: UpstreamFlow;
}

export function createUpstreamService(deps: {
  db: Db;
  config: Pick<Config, 'secretKey' | 'loginUrl'>;
  mailer: Pick<Mailer, 'sendInBackground'>;
  factors: Pick<FactorService, 'summary' | 'recordChange' | 'secondFactorDue'>;
  sessions: Pick<SessionService, 'signedIn'>;
}): UpstreamService {
  const providers = createUpstreamProviderStore(deps);
  const identities = createUpstreamIdentityStore(deps);
  return {
    providers,
    identities,
    flow: createUpstreamFlow({ ...deps, providers, identities }),
  };
}
