// Domain services, built once per app over the database. Routes call these; they never write SQL.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import {
  createApplicationService,
  type ApplicationService,
  type StaticApplications,
} from '../../src/services/applications.js';
import { createUserService, type UserService } from '../../src/services/users.js';
import { createUserAccessService, type UserAccessService } from '../../src/services/user-access.js';
import { createAuditService, type AuditService } from '../../src/services/audit.js';

/**
 * The one namespace of the domain services on the instance (`app.services.*`). Plugins that build more
 * services add them here (interface merging: `declare module '../infra/services.js'`).
 */
export interface AppServices {
  applications: ApplicationService;
  users: UserService;
  access: UserAccessService;
  audit: AuditService;
}

declare module 'fastify' {
  interface FastifyInstance {
    services: AppServices;
    staticApplications: StaticApplications;
  }
}

export interface ServicesPluginOptions {
  staticApplications: StaticApplications;
}

export default fp(
  async function servicesPlugin(app: FastifyInstance, options: ServicesPluginOptions) {
    app.decorate('staticApplications', options.staticApplications);
    const users = createUserService({ db: app.db });
    // The sign-in services join this object in oidc-services.
    const services = {
      applications: createApplicationService({ db: app.db, staticApplications: options.staticApplications }),
      users,
      access: createUserAccessService({ db: app.db, users }),
      audit: createAuditService({ db: app.db }),
    } as AppServices;
    app.decorate('services', services);
  },
  { name: 'services', dependencies: ['db'] },
);
