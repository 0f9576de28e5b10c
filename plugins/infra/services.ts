// The domain services on the instance (app.services.*), built once by createServices (src/compose.ts)
// over the database, with the rate limiter's and the metrics' parts handed in. Routes call these; they never
// write SQL. Signing keys are ensured before the app is ready (generated on the first start of a new database).
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import type { Db } from '../../src/database.js';
import type { Mailer } from '../../src/mail/mailer.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import type { StaticApplications } from '../../src/services/applications.js';
import { closeServices, createServices, prepareSigningKeys, type Services } from '../../src/compose.js';
import { connectInvalidationListener, observeWrites } from '../../src/services/invalidation.js';
import type { SelfServiceGuards } from '../../src/services/self-service/index.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
    staticApplications: StaticApplications;
    /** app.db for the services: their committed writes tell app.services.invalidation (see invalidation.ts). */
    servicesDb: Db;
  }
}

export interface ServicesPluginOptions {
  config: Config;
  staticApplications: StaticApplications;
  /** Instead of the mailer SMTP_URL configures. */
  mailer?: Mailer;
  /** The clock of the time-based codes (TOTP); tests fix it. */
  clock?: () => number;
}

export default fp(
  async function servicesPlugin(
    app: FastifyInstance,
    { config, staticApplications, mailer, clock }: ServicesPluginOptions,
  ) {
    // The self-service counts against the same limits as the sign-in and the verification resends.
    const selfService: SelfServiceGuards = {
      confirmPassword: (email, run) => app.signInLimits.confirmPassword(email, run),
      async countEmailChange(userId, ip, newEmail) {
        if (ip) await app.rateLimit(null, 'RESEND_IP', ipKey(ip));
        await app.rateLimit(null, 'RESEND_ACCOUNT', userId);
        // Per recipient too: many accounts (or one account deleted and made again) asking for one address.
        await app.rateLimit(null, 'RESEND_EMAIL', emailKey(newEmail));
      },
      // Only the counts about the account itself go. The limits on mail to its address (SIGN_UP_EMAIL,
      // RESEND_EMAIL, RESET_REQUEST_EMAIL*, MAIL_RECIPIENT) are keyed by the address and outlive the account:
      // deleting and re-creating an account must not renew the budget of mail to an inbox (issue 31 item 5).
      async forgetAccount({ id, email }) {
        await app.signInLimits.forgetAccount(email);
        await app.rateLimiters.RESEND_ACCOUNT.delete(id);
      },
    };
    const services = createServices(config, app.db, {
      staticApplications,
      log: app.log,
      events: app.metricEvents,
      limits: { mailRecipientCap: (to) => app.mailRecipientCap(to), selfService },
      ...(mailer ? { mailer } : {}),
      ...(clock ? { clock } : {}),
    });
    await prepareSigningKeys(config, services);
    app.decorate('services', services);
    app.decorate('staticApplications', staticApplications);
    app.decorate('servicesDb', observeWrites(app.db, services.invalidation));
    // Device cookies name the account under its current password (issue 31 item 7b).
    app.signInLimits.useDeviceAccounts((email) => services.accounts.deviceAccount(email));
    // One LISTEN connection for every cache (PostgreSQL): notices of other instances' changes.
    const listener = await connectInvalidationListener(app.database, services.invalidation, app.log);
    app.addHook('onReady', async () => services.cleanup.start(config.cleanupIntervalSeconds));
    // Before the database closes (onClose hooks run in reverse registration order).
    app.addHook('onClose', async () => {
      await closeServices(services);
      await listener?.stop();
    });
  },
  { name: 'services', dependencies: ['db', 'metrics', 'rate-limit'] },
);
