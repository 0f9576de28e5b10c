// The admin web under ADMIN_URL's path: applications, users, sign-in providers, APIs, signing keys, audit log, and
// the first-admin setup link. Server-rendered, no JavaScript, CSRF on every form, the hosted pages' security headers.
// Access: a hosted-login session of a user with the admin role (signed-out visitors go to sign-in and
// come back; others get 403). Dangerous actions (delete, rotate) need a password entered within
// ADMIN_FRESHNESS, else the admin signs in again first. Every change goes through the same services as
// the admin API and the CLI (audit events and CORS cache invalidation included).
// Each area's routes live in a module of their own, registered here, inside this plugin (so the hook and
// the error handler below apply to all of them), with one shared context (context.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../src/config.js';
import { securityHeaders, sendStylesheet } from '../pages/kit.js';
import { adminPageErrors } from '../infra/error-handlers.js';
import { registerApplicationRoutes } from './applications.js';
import { registerAuditRoutes } from './audit.js';
import { registerFactorRoutes } from './factors.js';
import { createAdminContext, first, Form } from './context.js';
import { registerKeyRoutes } from './keys.js';
import { registerResourceServerRoutes } from './resource-servers.js';
import { registerSetupRoutes } from './setup.js';
import { registerUpstreamRoutes } from './upstreams.js';
import { registerUserRoutes } from './users.js';
import * as views from './views.js';

const adminWeb: FastifyPluginAsyncTypebox<{ config: Config; adminPath: string }> = async (
  app,
  { config, adminPath },
) => {
  const context = createAdminContext(app, config, adminPath);
  const { csrf, signIn, abs, see, requireAdmin } = context;

  app.addHook('onRequest', async (_request, reply) => {
    securityHeaders(reply);
  });

  const back = { href: `${adminPath}/`, text: 'Back to the admin' };
  const errorPage = (title: string, message: string, link?: boolean) =>
    views.messagePage(adminPath, { title, message, ...(link && { link: back }) });
  app.setErrorHandler(adminPageErrors(errorPage));

  app.get('/assets/admin.css', async (_request, reply) => sendStylesheet(reply, views.ADMIN_STYLESHEET));

  app.get('/', async (request, reply) => {
    const admin = await requireAdmin(request, reply, { returnPath: '/applications' });
    if (!admin) return reply;
    return see(reply, `${adminPath}/applications`);
  });

  app.post('/sign-out', { schema: { body: Form } }, async (request, reply) => {
    csrf.check(request, first(request.body.csrf));
    await app.signOut(request, reply);
    return see(reply, signIn(abs('/applications')));
  });

  registerSetupRoutes(context);
  registerApplicationRoutes(context);
  registerUserRoutes(context);
  registerFactorRoutes(context);
  registerUpstreamRoutes(context);
  registerResourceServerRoutes(context);
  registerKeyRoutes(context);
  registerAuditRoutes(context);
};

export default adminWeb;
