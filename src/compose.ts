// The composition root of the domain services: createServices is the one place they are built, for the
// server (plugins/infra/services.ts decorates app.services with its result) and for the CLI commands
// (src/cli/context.ts withServices). What only the HTTP side has (the rate limits, the metrics, the logger)
// comes in through ServiceOptions as plain functions and objects: nothing here knows Fastify.
import type { Db } from '../db/create-db.js';
import type { Config } from './config.js';
import { createMailer, type Mailer, type MailerOptions, withRecipientCap } from './mail/mailer.js';
import { type MetricEvents, NO_METRIC_EVENTS } from './metrics.js';
import { type AccountService, createAccountService } from './services/accounts.js';
import { type AdminSetupService, createAdminSetupService } from './services/admin-setup.js';
import { type ApplicationService, createApplicationService, type StaticApplications } from './services/applications.js';
import { type AuditService, createAuditService } from './services/audit.js';
import { type AuthorizationService, createAuthorizationService } from './services/authorization.js';
import { type BearerService, createBearerService } from './services/bearer.js';
import { type ClientAssertionService, createClientAssertionService } from './services/client-assertions.js';
import { type CleanupJob, createCleanupJob } from './services/cleanup.js';
import { createEndSessionService, type EndSessionService } from './services/end-session.js';
import { createGrants, type Grant } from './services/grants.js';
import { createInvalidationBus, type InvalidationBus, observeWrites } from './services/invalidation.js';
import { KeyStore } from './services/key-store.js';
import { createSelfRegistrationService, type SelfRegistrationService } from './services/self-registration.js';
import { createRecoveryService, passwordChangedNotice, type RecoveryService } from './services/recovery.js';
import {
  createEmailChangeService,
  createSelfService,
  type SelfService,
  type SelfServiceGuards,
} from './services/self-service/index.js';
import { createSessionService, type SessionService } from './services/sessions.js';
import { createFactorService, type FactorService } from './services/factors/index.js';
import { createPasskeyService, type PasskeyService } from './services/factors/passkeys.js';
import { createRecoveryCodeService, type RecoveryCodeService } from './services/factors/recovery-codes.js';
import { createTotpService, type TotpService } from './services/factors/totp.js';
import { createUpstreamService, type UpstreamService } from './services/upstreams/index.js';
import { createResourceServerService, type ResourceServerService } from './services/resource-servers.js';
import {
  createSigningKeyService,
  JWKS_MAX_AGE_SECONDS,
  KEYS_REFRESH_SECONDS,
  type SigningKeyService,
} from './services/signing-keys.js';
import { createIntrospectionService, type IntrospectionService } from './services/introspection.js';
import { createTokenIssuer } from './services/token-issuer.js';
import { createTokenService, type TokenService } from './services/tokens.js';
import { createUserAccessService, type UserAccessService } from './services/user-access.js';
import { createUserService, type UserService } from './services/users.js';
import { createPasswordHasher, type PasswordHasher } from './passwords.js';

/** The domain services (`app.services.*` in the server). Routes and commands call these; they never write SQL. */
export interface Services {
  applications: ApplicationService;
  /** private_key_jwt: client assertions verified against the application's keys, each jti once. */
  clientAssertions: ClientAssertionService;
  users: UserService;
  access: UserAccessService;
  audit: AuditService;
  /** Notices that cached applications, origins and bearer authentications may be stale. */
  invalidation: InvalidationBus;
  /** argon2id at the configured cost (PASSWORD_HASH_*), for every service that hashes or verifies. */
  passwords: PasswordHasher;
  keys: KeyStore;
  sessions: SessionService;
  accounts: AccountService;
  /** Second factors (issue 34): what a user holds, pending second-factor sign-ins, factor changes. */
  factors: FactorService;
  /** Passkeys (issue 34): registration, sign-in with a passkey alone, a passkey as second factor. */
  passkeys: PasskeyService;
  /** TOTP (an authenticator app): enrolment, removal, the codes of a sign-in. */
  totp: TotpService;
  /** Recovery codes: a set shown once, each code used once. */
  recoveryCodes: RecoveryCodeService;
  /** Upstream identity providers (issue 35): the operator's providers, linked identities, the round trip. */
  upstreams: UpstreamService;
  /** Registered resource servers and the built-in `/api/external` (issue 36). */
  resourceServers: ResourceServerService;
  recovery: RecoveryService;
  /** Clients that register themselves (issue 36): RFC 7591/7592, initial access tokens, metadata documents. */
  selfRegistration: SelfRegistrationService;
  adminSetup: AdminSetupService;
  authorization: AuthorizationService;
  /** The token endpoint's grants, by grant_type. */
  grants: Map<string, Grant>;
  tokens: TokenService;
  /** Token introspection (RFC 7662). */
  introspection: IntrospectionService;
  bearers: BearerService;
  signingKeys: SigningKeyService;
  cleanup: CleanupJob;
  mailer: Mailer;
  /** The signed-in user's own account (issue 17): /api/me/* and the /account pages. */
  me: SelfService;
  endSession: EndSessionService;
}

/** The limits the services count against; the server's come from its rate limiter. */
export interface ServiceLimits {
  /**
   * The per-recipient mail cap (MAIL_RECIPIENT): whether one more account mail to this address may go.
   * Every mail of the services' mailer passes it.
   */
  mailRecipientCap(address: string): Promise<boolean>;
  /** The self-service's password confirmations and e-mail change requests (sign-in and resend limits). */
  selfService: SelfServiceGuards;
}

/**
 * No limits: for the commands an operator runs (src/cli/), which reach neither the self-service nor the
 * account mail that the rate limits guard.
 */
export const OPERATOR_LIMITS: ServiceLimits = {
  mailRecipientCap: async () => true,
  selfService: {
    confirmPassword: (_email, run) => run(),
    countEmailChange: async () => {},
    forgetAccount: async () => {},
  },
};

export interface ServiceOptions {
  /** The read-only applications of STATIC_APPLICATIONS_FILE. */
  staticApplications: StaticApplications;
  /** Where the services and their mailer log (the server's logger; the CLI's stderr). */
  log: MailerOptions['log'];
  limits: ServiceLimits;
  /** What the services report to the metrics; nothing by default (METRICS=off, the CLI). */
  events?: MetricEvents;
  /** Instead of the mailer SMTP_URL configures (the CLI's one-attempt mailer). */
  mailer?: Mailer;
  /** The clock of the time-based codes (TOTP), in milliseconds since the epoch; tests fix it. */
  clock?: () => number;
}

/**
 * Builds every domain service over one database. Building does no I/O: the server then calls
 * prepareSigningKeys before it listens and closeServices when it closes.
 *
 * `db` is the plain handle; the services write through observeWrites(db, invalidation), so that their
 * committed writes tell `invalidation` (src/services/invalidation.ts); the key store, the bearer cache and
 * the clean-up job read and write the plain one, as they always did.
 */
export function createServices(config: Config, db: Db, options: ServiceOptions): Services {
  const { log, staticApplications, limits } = options;
  const events = options.events ?? NO_METRIC_EVENTS;
  // Resolved by the server (resolveSecretKey before buildApp) and by `idp keys`; the other commands never
  // sign or seal, and what would fails at its first use (seal.ts), never with another key.
  const secretKey = config.secretKey as string;

  const invalidation = createInvalidationBus();
  const writes = observeWrites(db, invalidation);

  const passwords = createPasswordHasher(config.passwordHash);
  const users = createUserService({ db: writes, passwords });
  const applications = createApplicationService({ db: writes, staticApplications });
  applications.onChange((clientId) => invalidation.emit({ kind: 'application', clientId }));
  // A changed application's keys (jwks, jwks_uri) are read again: its key set goes with its cache entry.
  const clientAssertions = createClientAssertionService({
    db, // its one write (a jti) concerns no cache
    issuer: config.issuer,
    providerOnHttp: config.baseUrl.startsWith('http://'),
  });
  invalidation.on((event) => {
    if (event.kind === 'application') {
      applications.forget(event.clientId);
      clientAssertions.forget(event.clientId);
    } else if (event.kind === 'reset') {
      applications.forget();
      clientAssertions.forget();
    }
  });

  const selfRegistration = createSelfRegistrationService({ db: writes, touchDb: db, config, applications });

  const resourceServers = createResourceServerService({
    db: writes,
    baseUrl: config.baseUrl,
    accessTokenTtl: config.ttl.accessToken,
    onChange: () => invalidation.emit({ kind: 'resources' }),
  });
  invalidation.on((event) => {
    if (event.kind === 'resources' || event.kind === 'reset') resourceServers.forget();
  });

  const keys = new KeyStore(db, secretKey, {
    refreshSeconds: KEYS_REFRESH_SECONDS,
    onGenerated: (kid) => log.info({ kid }, 'generated the first signing key'),
  });
  const signingKeys = createSigningKeyService({
    db,
    secretKey,
    jwksMaxAgeSeconds: JWKS_MAX_AGE_SECONDS,
    refreshSeconds: KEYS_REFRESH_SECONDS,
  });
  // Every account mail passes the per-recipient cap (MAIL_RECIPIENT) before it is sent.
  const mailer = withRecipientCap(
    options.mailer ??
      createMailer({
        smtpUrl: config.smtpUrl,
        from: config.mailFrom,
        dataDir: config.dataDir,
        log,
        retryDelaysMs: config.mailRetryDelaysMs,
        logLinks: config.env !== 'production',
      }),
    (to) => limits.mailRecipientCap(to),
    log,
  );
  const sessions = createSessionService({
    db: writes,
    ttlSeconds: config.ttl.session,
    idleSeconds: config.ttl.sessionIdle,
  });
  const factors = createFactorService({ db: writes, config, mailer, sessions });
  const recoveryCodes = createRecoveryCodeService({ db: writes, config, factors, mailer });
  const totp = createTotpService({ db: writes, config, factors, recoveryCodes, clock: options.clock });
  const emailChanges = createEmailChangeService({ db: writes, config, mailer });
  // Issue 35: sign-in with another provider; the accounts and the recovery read its SSO domains.
  const upstreams = createUpstreamService({ db: writes, config, mailer, factors, sessions });
  const recovery = createRecoveryService({ db: writes, config, mailer, log, passwords, upstreams });
  const accounts = createAccountService({
    db: writes,
    config,
    sessions,
    mailer,
    events,
    emailChanges,
    recovery,
    passwords,
    factors,
    upstreams,
  });
  // A password set by an operator (admin API, admin web, CLI) is announced like a completed reset.
  users.onPasswordChanged((email) => mailer.sendInBackground(passwordChangedNotice(config, email)));
  // Bearer authentications (UserInfo, /api/external/*), cached; the token issuer seeds the cache.
  const bearers = createBearerService({
    db,
    sessionIdleSeconds: config.ttl.sessionIdle,
    staticApplications,
    cacheSeconds: config.bearerCacheSeconds,
  });
  // Any revocation, user or application change, here or (by NOTIFY) elsewhere: drop every cached answer.
  invalidation.on(() => bearers.invalidate());
  // A rotation on another instance (NOTIFY, migration 0010), or notices missed: reload the signing keys.
  invalidation.on((event) => {
    if (event.kind === 'keys' || event.kind === 'reset') keys.invalidate();
  });

  return {
    applications,
    clientAssertions,
    users,
    access: createUserAccessService({ db: writes, users }),
    audit: createAuditService({ db: writes }),
    invalidation,
    passwords,
    keys,
    sessions,
    accounts,
    factors,
    passkeys: createPasskeyService({ db: writes, config, factors }),
    totp,
    recoveryCodes,
    upstreams,
    resourceServers,
    recovery,
    adminSetup: createAdminSetupService({ db: writes, config, sessions, passwords }),
    selfRegistration,
    authorization: createAuthorizationService({
      db: writes,
      config,
      applications,
      keys,
      factors,
      resourceServers,
      selfRegistration,
    }),
    grants: createGrants({
      db: writes,
      issuer: createTokenIssuer({ config, keys, bearers, resourceServers }),
      accessTokenSeconds: config.ttl.accessToken,
      events,
    }),
    tokens: createTokenService({ db: writes }),
    introspection: createIntrospectionService({ db, issuer: config.issuer, bearers, applications, resourceServers }),
    bearers,
    signingKeys,
    cleanup: createCleanupJob({
      db,
      config,
      log,
      jwksMaxAgeSeconds: JWKS_MAX_AGE_SECONDS,
      onApplicationDeleted: (clientId) => applications.forget(clientId),
    }),
    mailer,
    me: createSelfService({
      db: writes,
      config,
      mailer,
      applications,
      emailChanges,
      guards: limits.selfService,
      passwords,
    }),
    endSession: createEndSessionService({ issuer: config.issuer, keys, applications }),
  };
}

/**
 * Before the server answers: the first signing key (generated on the first start of a new database) and a
 * next one published ahead of its use, so that a rotation never surprises a verifier.
 */
export async function prepareSigningKeys(config: Config, services: Pick<Services, 'keys' | 'signingKeys'>) {
  if (!config.secretKey) throw new Error('SECRET_KEY is not resolved (call resolveSecretKey before buildApp)');
  await services.keys.init();
  await services.signingKeys.ensureNext();
  services.keys.invalidate();
}

/**
 * Stops what the services run in the background, before the database closes: the clean-up job, then the
 * reset requests still looking up their account, then the mail queue's last try.
 */
export async function closeServices(services: Pick<Services, 'cleanup' | 'recovery' | 'mailer'>) {
  await services.cleanup.stop();
  await services.recovery.drain();
  await services.mailer.close();
}
