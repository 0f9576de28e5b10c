// Domain services, built once per app over the database. Routes call these; they never write SQL.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { createApplicationService, type ApplicationService, type StaticApplications } from '../../src/services/applications.js';
import { createUserService, type UserService } from '../../src/services/users.js';
import { createUserAccessService, type UserAccessService } from '../../src/services/user-access.js';
import { createAuditService, type AuditService } from '../../src/services/audit.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: { applications: ApplicationService; users: UserService; access: UserAccessService; audit: AuditService };
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
    app.decorate('services', {
      applications: createApplicationService({ db: app.db, staticApplications: options.staticApplications }),
      users,
      access: createUserAccessService({ db: app.db, users }),
      audit: createAuditService({ db: app.db }),
    });
  },
  { name: 'services', dependencies: ['db'] },
);
