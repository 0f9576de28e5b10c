// Domain services, built once per app over the database. Routes call these; they never write SQL.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Db } from '../../src/database.js';
import { createPasswordHasher, type PasswordHashCost, type PasswordHasher } from '../../src/passwords.js';
import {
  createApplicationService,
  type ApplicationService,
  type StaticApplications,
} from '../../src/services/applications.js';
import { createUserService, type UserService } from '../../src/services/users.js';
import { createUserAccessService, type UserAccessService } from '../../src/services/user-access.js';
import { createAuditService, type AuditService } from '../../src/services/audit.js';
import {
  connectInvalidationListener,
  createInvalidationBus,
  observeWrites,
  type InvalidationBus,
} from '../../src/services/invalidation.js';

/**
 * The one namespace of the domain services on the instance (`app.services.*`). Plugins that build more
 * services add them here (interface merging: `declare module '../infra/services.js'`).
 */
export interface AppServices {
  applications: ApplicationService;
  users: UserService;
  access: UserAccessService;
  audit: AuditService;
  /** argon2id at the configured cost (PASSWORD_HASH_*), for every service that hashes or verifies. */
  passwords: PasswordHasher;
  /** Notices that cached applications, origins and bearer authentications may be stale. */
  invalidation: InvalidationBus;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices;
    staticApplications: StaticApplications;
    /** app.db for the services: their committed writes tell app.services.invalidation (see invalidation.ts). */
    servicesDb: Db;
  }
}

export interface ServicesPluginOptions {
  staticApplications: StaticApplications;
  passwordHash: PasswordHashCost;
}

export default fp(
  async function servicesPlugin(app: FastifyInstance, options: ServicesPluginOptions) {
    app.decorate('staticApplications', options.staticApplications);
    const invalidation = createInvalidationBus();
    const db = observeWrites(app.db, invalidation);
    app.decorate('servicesDb', db);
    const passwords = createPasswordHasher(options.passwordHash);
    const users = createUserService({ db, passwords });
    const applications = createApplicationService({ db, staticApplications: options.staticApplications });
    applications.onChange((clientId) => invalidation.emit({ kind: 'application', clientId }));
    invalidation.on((event) => {
      if (event.kind === 'application') applications.forget(event.clientId);
      else if (event.kind === 'reset') applications.forget();
    });
    // The sign-in services join this object in oidc-services.
    const services = {
      applications,
      users,
      access: createUserAccessService({ db, users }),
      audit: createAuditService({ db }),
      passwords,
      invalidation,
    } as AppServices;
    app.decorate('services', services);
    // One LISTEN connection for every cache (PostgreSQL): notices of other instances' changes.
    const listener = await connectInvalidationListener(app.database, invalidation, app.log);
    if (listener) app.addHook('onClose', async () => listener.stop());
  },
  { name: 'services', dependencies: ['db'] },
);
