// The one migration set for PGlite and PostgreSQL. Listed explicitly (no directory scan), so the same
// code runs from TypeScript sources and from dist/. Names sort in the order they apply.
import type { Migration, MigrationProvider } from 'kysely';
import * as m0001 from './0001-initial.js';
import * as m0002 from './0002-oidc.js';
import * as m0003 from './0003-token-lifecycle.js';
import * as m0004 from './0004-recovery.js';
import * as m0005 from './0005-admin.js';
import * as m0006 from './0006-request-binding.js';
import * as m0007 from './0007-verification-address.js';
import * as m0008 from './0008-invalidation-notices.js';
import * as m0009 from './0009-rate-limits.js';
import * as m0010 from './0010-key-notices.js';
import * as m0011 from './0011-email-changes.js';
import * as m0012 from './0012-sealed-codes.js';
import * as m0013 from './0013-sign-up-requests.js';
import * as m0015 from './0015-created-by.js';
import * as m0016 from './0016-sign-up-browser.js';
import * as m0017 from './0017-confidential-clients.js';
import * as m0018 from './0018-second-factors.js';
import * as m0019 from './0019-upstream-providers.js';
import * as m0020 from './0020-resource-servers.js';
import * as m0021 from './0021-self-registration.js';

export const migrations: Record<string, Migration> = {
  '0001-initial': m0001,
  '0002-oidc': m0002,
  '0003-token-lifecycle': m0003,
  '0004-recovery': m0004,
  '0005-admin': m0005,
  '0006-request-binding': m0006,
  '0007-verification-address': m0007,
  '0008-invalidation-notices': m0008,
  '0009-rate-limits': m0009,
  '0010-key-notices': m0010,
  '0011-email-changes': m0011,
  '0012-sealed-codes': m0012,
  '0013-sign-up-requests': m0013,
  '0015-created-by': m0015,
  '0016-sign-up-browser': m0016,
  '0017-confidential-clients': m0017,
  '0018-second-factors': m0018,
  '0019-upstream-providers': m0019,
  '0020-resource-servers': m0020,
  '0021-self-registration': m0021,
};

export const migrationProvider: MigrationProvider = {
  async getMigrations() {
    return migrations;
  },
};
