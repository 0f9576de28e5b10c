// The services of the sign-in flow: keys, sessions, accounts, authorization, mail. Signing keys are
// ensured at start (generated on the first start of a new database).
import fp from 'fastify-plugin';
import '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../src/config.js';
import { generateToken } from '../../src/oauth/tokens.js';
import { KeyStore } from '../../src/services/key-store.js';
import { createSessionService, type SessionService } from '../../src/services/sessions.js';
import type { SessionContext } from '../../src/domain/session.js';
import { createAccountService, type AccountService } from '../../src/services/accounts.js';
import { createAuthorizationService, type AuthorizationService } from '../../src/services/authorization.js';
import { createMailer, type Mailer, withRecipientCap } from '../../src/mail/mailer.js';
import { createGrants, type Grant } from '../../src/services/grants.js';
import { createTokenIssuer } from '../../src/services/token-issuer.js';
import { type BearerService, createBearerService } from '../../src/services/bearer.js';
import { createTokenService, type TokenService } from '../../src/services/tokens.js';
import {
  createSigningKeyService,
  JWKS_MAX_AGE_SECONDS,
  KEYS_REFRESH_SECONDS,
  type SigningKeyService,
} from '../../src/services/signing-keys.js';
import { createCleanupJob, type CleanupJob } from '../../src/services/cleanup.js';
import { createRecoveryService, passwordChangedNotice, type RecoveryService } from '../../src/services/recovery.js';
import { createAdminSetupService, type AdminSetupService } from '../../src/services/admin-setup.js';
import { createEndSessionService, type EndSessionService } from '../../src/services/end-session.js';
import {
  createEmailChangeService,
  createSelfService,
  type SelfService,
  type SelfServiceGuards,
} from '../../src/services/self-service/index.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';

export { JWKS_MAX_AGE_SECONDS, KEYS_REFRESH_SECONDS };

interface SignInServices {
  keys: KeyStore;
  sessions: SessionService;
  accounts: AccountService;
  recovery: RecoveryService;
  adminSetup: AdminSetupService;
  authorization: AuthorizationService;
  /** The token endpoint's grants, by grant_type. */
  grants: Map<string, Grant>;
  tokens: TokenService;
  bearers: BearerService;
  signingKeys: SigningKeyService;
  cleanup: CleanupJob;
  mailer: Mailer;
  /** The signed-in user's own account (issue 17): /api/me/* and the /account pages. */
  me: SelfService;
}

declare module './services.js' {
  interface AppServices extends SignInServices {
    endSession: EndSessionService;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The session of the hosted-login cookie, if any (resolved once per request). */
    currentSession(request: FastifyRequest): Promise<SessionContext | undefined>;
    sessionCookieName: string;
    /**
     * Sets the hosted-login session cookie (the one place its attributes are written): it lasts SESSION_TTL,
     * or until `expiresAt` for a session that already has one.
     */
    setSessionCookie(reply: FastifyReply, token: string, expiresAt?: Date): FastifyReply;
    /** Signs this browser out: revokes its session, if any, and clears the cookie. */
    signOut(request: FastifyRequest, reply: FastifyReply): Promise<void>;
    /** The browser-binding secret of pending authorization requests (cookie), if this browser has one. */
    browserBinding(request: FastifyRequest): string | undefined;
    /**
     * The browser-binding secret, (re)set as a cookie lasting CONSENT_REQUEST_TTL: authorize calls it when it
     * stores a pending request, so that the cookie outlives the request.
     */
    bindBrowser(request: FastifyRequest, reply: FastifyReply): string;
    /** The secret of this browser's sign-up cookie, if it has one (issue 31: the browser that signed up). */
    signUpBrowser(request: FastifyRequest): string | undefined;
    /**
     * The sign-up cookie's secret, (re)set on every sign-up answer (whatever the address: the answers stay
     * alike) and lasting as long as a sign-up link; the pending sign-up stores only its hash.
     */
    bindSignUpBrowser(request: FastifyRequest, reply: FastifyReply): string;
  }
}

export interface OidcServicesOptions {
  config: Config;
  mailer?: Mailer;
}

export default fp(
  async function oidcServices(app: FastifyInstance, { config, mailer: givenMailer }: OidcServicesOptions) {
    if (!config.secretKey) throw new Error('SECRET_KEY is not resolved (call resolveSecretKey before buildApp)');
    const keys = new KeyStore(app.db, config.secretKey, {
      refreshSeconds: KEYS_REFRESH_SECONDS,
      onGenerated: (kid) => app.log.info({ kid }, 'generated the first signing key'),
    });
    await keys.init();
    const signingKeys = createSigningKeyService({
      db: app.db,
      secretKey: config.secretKey,
      jwksMaxAgeSeconds: JWKS_MAX_AGE_SECONDS,
      refreshSeconds: KEYS_REFRESH_SECONDS,
    });
    // A next key is always published ahead of its use, so that a rotation never surprises a verifier.
    await signingKeys.ensureNext();
    keys.invalidate();
    // Every account mail passes the per-recipient cap (MAIL_RECIPIENT) before it is sent.
    const mailer = withRecipientCap(
      givenMailer ??
        createMailer({
          smtpUrl: config.smtpUrl,
          from: config.mailFrom,
          dataDir: config.dataDir,
          log: app.log,
          retryDelaysMs: config.mailRetryDelaysMs,
          logLinks: config.env !== 'production',
        }),
      (to) => app.mailRecipientCap(to),
      app.log,
    );
    // The services write through servicesDb: their revocations reach the caches (src/services/invalidation.ts).
    const db = app.servicesDb;
    const sessions = createSessionService({
      db,
      ttlSeconds: config.ttl.session,
      idleSeconds: config.ttl.sessionIdle,
    });
    const emailChanges = createEmailChangeService({ db, config, mailer });
    const authorization = createAuthorizationService({ db, config, applications: app.services.applications });
    const cookieName = config.cookieSecure ? '__Host-idp.session' : 'idp.session';
    const resolved = new WeakMap<FastifyRequest, Promise<SessionContext | undefined>>();

    const { passwords } = app.services;
    const recovery = createRecoveryService({ db, config, mailer, log: app.log, passwords });
    const accounts = createAccountService({
      db,
      config,
      passwords,
      sessions,
      mailer,
      events: app.metricEvents,
      emailChanges,
      recovery,
    });
    // Device cookies name the account under its current password (issue 31 item 7b).
    app.signInLimits.useDeviceAccounts((email) => accounts.deviceAccount(email));
    // A password set by an operator (admin API, admin web) is announced like a completed reset.
    app.services.users.onPasswordChanged((email) => mailer.sendInBackground(passwordChangedNotice(config, email)));
    // Bearer authentications (UserInfo, /api/external/*), cached; the token issuer seeds the cache.
    const bearers = createBearerService({
      db: app.db,
      sessionIdleSeconds: config.ttl.sessionIdle,
      staticApplications: app.staticApplications,
      cacheSeconds: config.bearerCacheSeconds,
    });
    // Any revocation, user or application change, here or (by NOTIFY) elsewhere: drop every cached answer.
    app.services.invalidation.on(() => bearers.invalidate());
    // A rotation on another instance (NOTIFY, migration 0010), or notices missed: reload the signing keys.
    app.services.invalidation.on((event) => {
      if (event.kind === 'keys' || event.kind === 'reset') keys.invalidate();
    });
    // The self-service counts against the same limits as the sign-in and the verification resends.
    const guards: SelfServiceGuards = {
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
    const cleanup = createCleanupJob({ db: app.db, config, log: app.log, jwksMaxAgeSeconds: JWKS_MAX_AGE_SECONDS });
    const added: SignInServices = {
      keys,
      sessions,
      accounts,
      recovery,
      adminSetup: createAdminSetupService({ db, config, sessions, passwords }),
      authorization,
      grants: createGrants({ db, issuer: createTokenIssuer({ config, keys, bearers }), events: app.metricEvents }),
      bearers,
      tokens: createTokenService({ db }),
      signingKeys,
      cleanup,
      mailer,
      me: createSelfService({
        db,
        config,
        mailer,
        applications: app.services.applications,
        emailChanges,
        guards,
        passwords,
      }),
    };
    const endSession = createEndSessionService({
      issuer: config.issuer,
      keys,
      applications: app.services.applications,
    });
    Object.assign(app.services, added, { endSession });

    app.decorate('sessionCookieName', cookieName);
    const sameSite = config.cookieSameSite;
    const sessionCookie = { path: '/', httpOnly: true, secure: config.cookieSecure, sameSite } as const;
    app.decorate('setSessionCookie', (reply: FastifyReply, token: string, expiresAt?: Date) => {
      // A renewed secret of an existing session (a password change) ends with the session, not SESSION_TTL
      // from now. At least one second: the session was live a moment ago.
      const maxAge = expiresAt
        ? Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))
        : config.ttl.session;
      return reply.setCookie(cookieName, token, { ...sessionCookie, maxAge });
    });
    app.decorate('signOut', async (request: FastifyRequest, reply: FastifyReply) => {
      const token = request.cookies[cookieName];
      if (token) await sessions.revoke(token, { ip: request.ip });
      reply.clearCookie(cookieName, sessionCookie);
    });
    app.decorate('currentSession', (request: FastifyRequest) => {
      let p = resolved.get(request);
      if (!p) {
        p = sessions.resolve(request.cookies?.[cookieName]);
        resolved.set(request, p);
      }
      return p;
    });
    // Pending authorization requests are bound to the browser that started them (see
    // src/services/authorization.ts): a random secret in an HttpOnly cookie, its hash on each request.
    // One secret serves every tab; it is renewed by each authorize that stores a request, so it lasts at least
    // as long as every pending request of the browser. An authorize that issues a code at once (single
    // sign-on) or answers with an error stores nothing and sets no cookie. SameSite=Lax at most, so that it
    // is sent on the top-level navigation back from the application's site (None when configured).
    const bindingCookie = config.cookieSecure ? '__Host-idp.authz' : 'idp.authz';
    const bindingAttributes = {
      path: '/',
      httpOnly: true,
      secure: config.cookieSecure,
      sameSite: config.cookieSameSite === 'none' ? 'none' : 'lax',
      maxAge: config.ttl.consentRequest,
    } as const;
    /** A browser-binding cookie: a random secret of 43 base64url characters, read back only in that shape. */
    const browserCookie = (name: string, attributes: typeof bindingAttributes) => {
      const read = (request: FastifyRequest) => {
        const value = request.cookies?.[name];
        return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
      };
      const bind = (request: FastifyRequest, reply: FastifyReply) => {
        const value = read(request) ?? generateToken();
        reply.setCookie(name, value, attributes);
        return value;
      };
      return { read, bind };
    };
    const authzBrowser = browserCookie(bindingCookie, bindingAttributes);
    app.decorate('browserBinding', authzBrowser.read);
    app.decorate('bindBrowser', authzBrowser.bind);
    // A pending sign-up is bound to the browser that made it (issue 31): its link confirms without the
    // password only where this cookie is. One secret per browser, its hash in each sign-up request row.
    const signUpBrowser = browserCookie(config.cookieSecure ? '__Host-idp.signup' : 'idp.signup', {
      ...bindingAttributes,
      maxAge: config.ttl.emailVerification,
    });
    app.decorate('signUpBrowser', signUpBrowser.read);
    app.decorate('bindSignUpBrowser', signUpBrowser.bind);
    app.addHook('onReady', async () => cleanup.start(config.cleanupIntervalSeconds));
    // Stop the job before the database closes (onClose hooks run in reverse registration order).
    app.addHook('onClose', async () => {
      await cleanup.stop();
      // Reset requests still looking up their account finish first, then the mail queue gets its last try.
      await recovery.drain();
      await mailer.close();
    });
  },
  { name: 'oidc-services', dependencies: ['db', 'services', 'metrics', 'rate-limit'] },
);
