// Domain services, built once per app over the database. Routes call these; they never write SQL.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { createApplicationService, type ApplicationService, type StaticApplications } from '../../src/services/applications.js';
import { createUserService, type UserService } from '../../src/services/users.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: { applications: ApplicationService; users: UserService };
    staticApplications: StaticApplications;
  }
}

export interface ServicesPluginOptions {
  staticApplications: StaticApplications;
}

export default fp(
  async function servicesPlugin(app: FastifyInstance, options: ServicesPluginOptions) {
    app.decorate('staticApplications', options.staticApplications);
    app.decorate('services', {
      applications: createApplicationService({ db: app.db, staticApplications: options.staticApplications }),
      users: createUserService({ db: app.db }),
    });
  },
  { name: 'services', dependencies: ['db'] },
);
