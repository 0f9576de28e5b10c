// The environment the provider reads: one TypeBox schema that is both the runtime check and the
// type, with every variable's default and description (`idp env` prints them). src/config.ts turns
// a checked environment into a Config.
import Type, { type Static } from 'typebox';

const Seconds = (def: number, what: string) =>
  Type.Integer({
    minimum: 1,
    maximum: 10 * 365 * 24 * 3600,
    default: def,
    description: `a whole number of seconds from 1 up to ten years (${what})`,
  });

const Url = (description: string) =>
  Type.Optional(Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s#?]+$', description }));

/** Rate-limit rules (decisions.md, Limits): the default count per window and what it is keyed by. */
export const RATE_LIMIT_RULES = {
  TOKEN: { limit: 60, windowSeconds: 60, what: 'token and cookie token endpoints, per known client_id and IP' },
  TOKEN_IP: {
    limit: 300,
    windowSeconds: 60,
    what: 'token and cookie token endpoints, per IP, before the client is looked up',
  },
  AUTHORIZE: { limit: 60, windowSeconds: 60, what: 'authorize endpoint, per IP' },
  SIGN_IN_IP: { limit: 10, windowSeconds: 60, what: 'sign-in, per IP' },
  SIGN_IN_IP48: {
    limit: 100,
    windowSeconds: 60,
    what: 'sign-in, per IPv6 /48 (all its /64s together; on top of SIGN_IN_IP)',
  },
  SIGN_IN_EMAIL: {
    limit: 5,
    windowSeconds: 900,
    what: 'failed sign-ins per e-mail address before growing delays, and how long failures count',
  },
  SIGN_IN_DEVICE: {
    limit: 10,
    windowSeconds: 900,
    what: 'failed sign-ins per trusted browser (device cookie) and account before it loses its trust',
  },
  SIGN_UP_IP: { limit: 10, windowSeconds: 60, what: 'sign-up, per IP' },
  SIGN_UP_IP48: { limit: 30, windowSeconds: 60, what: 'sign-up, per IPv6 /48 (on top of SIGN_UP_IP)' },
  SIGN_UP_EMAIL: { limit: 3, windowSeconds: 3600, what: 'sign-up (and its mail), per target e-mail address' },
  RESEND_IP: { limit: 10, windowSeconds: 900, what: 'verification mail resends, per IP' },
  RESEND_IP48: {
    limit: 30,
    windowSeconds: 900,
    what: 'verification mail resends and e-mail change requests, per IPv6 /48 (on top of RESEND_IP)',
  },
  RESEND_ACCOUNT: { limit: 3, windowSeconds: 900, what: 'verification mail resends, per account' },
  RESEND_EMAIL: {
    limit: 3,
    windowSeconds: 900,
    what: 'verification mail resends and e-mail change requests, per target address (outlives the account)',
  },
  RESET_REQUEST_IP: { limit: 3, windowSeconds: 60, what: 'request-password-reset, per IP' },
  RESET_REQUEST_IP48: {
    limit: 10,
    windowSeconds: 60,
    what: 'request-password-reset, per IPv6 /48 (on top of RESET_REQUEST_IP)',
  },
  RESET_REQUEST_EMAIL: { limit: 3, windowSeconds: 60, what: 'request-password-reset, per e-mail address' },
  RESET_REQUEST_EMAIL_DAY: {
    limit: 10,
    windowSeconds: 86400,
    what: 'request-password-reset, per e-mail address and day (a cap on reset mail to one inbox)',
  },
  RESET_PASSWORD_IP: { limit: 10, windowSeconds: 900, what: 'reset-password, per IP' },
  BEARER: { limit: 600, windowSeconds: 60, what: '/api/external/* and UserInfo, per access token' },
  REGISTRATION_IP: {
    limit: 10,
    windowSeconds: 3600,
    what: 'dynamic client registrations (REGISTRATION=open or token), per IP',
  },
  REGISTRATION_MANAGE: {
    limit: 60,
    windowSeconds: 60,
    what: 'reads, updates and deletions of a registered client (RFC 7592), per IP',
  },
  METADATA_FETCH_IP: {
    limit: 30,
    windowSeconds: 60,
    what: 'client ID metadata document fetches an authorize request causes, per IP',
  },
  MAIL_RECIPIENT: {
    limit: 10,
    windowSeconds: 3600,
    what: 'account mail (verification, e-mail change, reset, notices) per recipient address; past it none is sent',
  },
} as const;
export type RateLimitRule = keyof typeof RATE_LIMIT_RULES;
export interface RateLimitSetting {
  limit: number;
  windowSeconds: number;
}

function rateLimitVariables() {
  return Object.fromEntries(
    Object.entries(RATE_LIMIT_RULES).map(([name, rule]) => [
      `RATE_LIMIT_${name}`,
      Type.String({
        default: `${rule.limit}/${rule.windowSeconds}`,
        pattern: '^\\d{1,7}/\\d{1,6}$',
        description: `requests/seconds for the ${rule.what} (e.g. ${rule.limit}/${rule.windowSeconds})`,
      }),
    ]),
  ) as Record<`RATE_LIMIT_${RateLimitRule}`, ReturnType<typeof Type.String>>;
}

// The keys are the environment variable names, so every error names the variable to fix.
export const EnvSchema = Type.Object({
  NODE_ENV: Type.Union([Type.Literal('development'), Type.Literal('production'), Type.Literal('test')], {
    default: 'development',
    description: 'development, production or test',
  }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 3000, description: 'a port number 0-65535' }),
  HOST: Type.String({ minLength: 1, default: '0.0.0.0', description: 'an interface address to listen on' }),
  BASE_URL: Url('an http(s) URL without query or fragment, e.g. https://id.example.com'),
  LOGIN_URL: Url('an http(s) URL without query or fragment'),
  ADMIN_URL: Url('an http(s) URL without query or fragment'),
  DATABASE_URL: Type.Optional(
    Type.String({
      pattern: '^postgres(ql)?://',
      description: 'a postgres:// connection URL (unset: embedded database)',
    }),
  ),
  DATABASE_POOL_SIZE: Type.Integer({ minimum: 1, maximum: 200, default: 10, description: 'an integer 1-200' }),
  DATABASE_STATEMENT_TIMEOUT: Type.Integer({
    minimum: 0,
    maximum: 86400,
    default: 30,
    description: 'a whole number of seconds from 0 to 86400 after which PostgreSQL cancels a statement (0: never)',
  }),
  WORKERS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 1,
    description: 'a number of server processes from 1 to 64 (more than 1 needs DATABASE_URL)',
  }),
  DATA_DIR: Type.String({
    minLength: 1,
    default: './data',
    description: 'a directory path, or :memory: (idp serve only: a throw-away database, lost at exit)',
  }),
  SECRET_KEY: Type.Optional(
    Type.String({ minLength: 32, description: 'at least 32 characters, e.g. the output of `openssl rand -base64 32`' }),
  ),
  ADMIN_API_TOKEN: Type.Optional(
    Type.String({ minLength: 32, description: 'at least 32 characters, e.g. the output of `openssl rand -base64 32`' }),
  ),
  SMTP_URL: Type.Optional(
    Type.String({ pattern: '^smtps?://', description: 'an smtp:// or smtps:// URL (unset: local outbox file)' }),
  ),
  MAIL_FROM: Type.String({
    minLength: 3,
    default: 'Identity Provider <no-reply@localhost>',
    description: 'a From address',
  }),
  COOKIE_SECURE: Type.Optional(Type.Boolean({ description: 'true or false (default: true when BASE_URL is https)' })),
  COOKIE_SAMESITE: Type.Union([Type.Literal('lax'), Type.Literal('strict'), Type.Literal('none')], {
    default: 'lax',
    description: 'lax, strict or none',
  }),
  TRUST_PROXY: Type.String({
    default: 'false',
    description:
      'false, a hop count (how many proxies stand in front, e.g. 1), or a comma-separated list of ' +
      'proxy addresses/CIDRs',
  }),
  STATIC_APPLICATIONS_FILE: Type.Optional(Type.String({ minLength: 1, description: 'a path to a JSON file' })),
  SEED_FILE: Type.Optional(
    Type.String({ minLength: 1, description: 'a path to a JSON seed file that idp serve applies at start' }),
  ),
  WELCOME_PAGE: Type.Optional(
    Type.Union([Type.Literal('on'), Type.Literal('public'), Type.Literal('off')], {
      description:
        'on, public or off: the welcome page at / (public: without the admin links; ' +
        'default on, public when NODE_ENV=production)',
    }),
  ),
  DEMO: Type.Optional(
    Type.Union([Type.Literal('on'), Type.Literal('off')], {
      description:
        'on or off: the demo relying party at /demo and its application "demo" ' +
        '(default on when NODE_ENV=development; off disables the application)',
    }),
  ),
  LOG_LEVEL: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    { default: 'info', description: 'fatal, error, warn, info, debug, trace or silent' },
  ),
  LOG_FORMAT: Type.Union([Type.Literal('auto'), Type.Literal('pretty'), Type.Literal('json')], {
    default: 'auto',
    description:
      'auto, pretty or json: the log lines (auto: pretty on a terminal when NODE_ENV=development, else JSON lines)',
  }),
  METRICS: Type.Union([Type.Literal('on'), Type.Literal('off')], {
    default: 'off',
    description: 'on or off: Prometheus metrics at /metrics (off: /metrics is an unknown route)',
  }),
  METRICS_TOKEN: Type.Optional(
    Type.String({
      minLength: 32,
      description: 'at least 32 characters: /metrics then asks for Authorization: Bearer <METRICS_TOKEN>',
    }),
  ),
  PASSWORD_HASH_MEMORY_KIB: Type.Integer({
    minimum: 8,
    maximum: 1048576,
    default: 19456,
    description:
      'a whole number of KiB from 8 to 1048576: the memory of one argon2id password hash (m); ' +
      "NODE_ENV=production refuses less than OWASP's minimum for PASSWORD_HASH_ITERATIONS",
  }),
  PASSWORD_HASH_ITERATIONS: Type.Integer({
    minimum: 1,
    maximum: 64,
    default: 2,
    description: 'a whole number from 1 to 64: the iterations of one argon2id password hash (t)',
  }),
  PASSWORD_HASH_PARALLELISM: Type.Integer({
    minimum: 1,
    maximum: 16,
    default: 1,
    description: 'a whole number from 1 to 16: the lanes of one argon2id password hash (p)',
  }),
  SHUTDOWN_TIMEOUT: Seconds(10, 'seconds to wait for in-flight requests on shutdown'),
  ACCESS_TOKEN_TTL: Seconds(3600, 'access token lifetime in seconds'),
  ID_TOKEN_TTL: Seconds(3600, 'ID token lifetime in seconds'),
  AUTHORIZATION_CODE_TTL: Seconds(60, 'authorization code lifetime in seconds'),
  REFRESH_TOKEN_TTL: Seconds(30 * 24 * 3600, 'refresh token sliding lifetime in seconds'),
  REFRESH_TOKEN_ABSOLUTE_TTL: Seconds(90 * 24 * 3600, 'refresh token absolute lifetime in seconds'),
  RESET_TOKEN_TTL: Seconds(1800, 'password reset token lifetime in seconds'),
  CONSENT_REQUEST_TTL: Seconds(600, 'pending authorization request lifetime in seconds'),
  REFRESH_TOKEN_GRACE: Type.Integer({
    minimum: 0,
    maximum: 300,
    default: 0,
    description:
      'a whole number of seconds from 0 to 300 ' +
      '(a retry of a just-rotated refresh token within it gets the same successor)',
  }),
  CLEANUP_INTERVAL: Type.Integer({
    minimum: 0,
    maximum: 86400,
    default: 60,
    description: 'a whole number of seconds from 0 to 86400 between clean-up runs (0 turns the job off)',
  }),
  CORS_CACHE_TTL: Seconds(
    60,
    'how long the registered-origin list is cached; changes made through this service apply at once',
  ),
  BEARER_CACHE_SECONDS: Type.Integer({
    minimum: 0,
    maximum: 60,
    default: 5,
    description:
      'a whole number of seconds from 0 to 60 a bearer token check is reused in this process (0: off); ' +
      'the longest a revocation on another instance can take to apply here when notices are lost',
  }),
  SESSION_TTL: Seconds(7 * 24 * 3600, 'absolute lifetime of a hosted-login session'),
  SESSION_IDLE_TTL: Seconds(24 * 3600, 'a hosted-login session ends after this long without use'),
  EMAIL_VERIFICATION_TTL: Seconds(24 * 3600, 'lifetime of an e-mail verification link'),
  UNVERIFIED_ACCOUNT_TTL: Seconds(
    7 * 24 * 3600,
    'a self-registered account that never verified its address is deleted by the clean-up job after this long',
  ),
  ADMIN_SETUP_TTL: Seconds(3600, 'lifetime of the one-time link that creates the first admin'),
  ADMIN_FRESHNESS: Seconds(
    600,
    'an admin must have entered their password within this many seconds for dangerous actions (delete, rotate)',
  ),
  MFA: Type.Union([Type.Literal('off'), Type.Literal('optional'), Type.Literal('required')], {
    default: 'optional',
    description:
      'off, optional or required: second factors (passkeys, TOTP, recovery codes). optional: users may enrol one ' +
      'and are then always asked for it; required: every user must enrol one at sign-in; off: none offered or asked',
  }),
  ADMIN_MFA: Type.Union([Type.Literal('optional'), Type.Literal('required')], {
    default: 'optional',
    description: 'optional or required: required refuses the admin web to an administrator without a second factor',
  }),
  MFA_FRESHNESS: Seconds(
    300,
    'adding or removing a second factor needs an authentication (password or factor) within this many seconds',
  ),
  FIRST_PARTY_ORIGINS: Type.String({
    default: '',
    description:
      'a comma-separated list of origins (scheme://host[:port]) besides the login origin ' +
      'that may call the cookie token endpoints and be the target of password-reset links',
  }),
  MAIL_RETRY_DELAYS: Type.String({
    default: '5,30,120',
    pattern: '^(none|\\d+(\\.\\d+)?(,\\d+(\\.\\d+)?){0,9})$',
    description:
      'a comma-separated list of up to 10 waits in seconds before each retry of a failed mail (e.g. 5,30,120), or none',
  }),
  RATE_LIMITS: Type.Union([Type.Literal('on'), Type.Literal('off')], {
    default: 'on',
    description: 'on or off (off switches every rate limit off, for load tests and conformance runs)',
  }),
  ...rateLimitVariables(),
  REDIS_URL: Type.Optional(
    Type.String({
      pattern: '^rediss?://',
      description:
        'a redis:// or rediss:// URL of a Redis or Valkey server that keeps the rate limits of every instance ' +
        '(unset: in PostgreSQL with DATABASE_URL, else in memory)',
    }),
  ),
  REGISTRATION: Type.Union([Type.Literal('off'), Type.Literal('token'), Type.Literal('open')], {
    default: 'off',
    description:
      'off, token or open: dynamic client registration (RFC 7591) at {issuer}/register. token: with an ' +
      'initial access token an operator issues (idp registration-tokens create); open: anyone, under ' +
      'RATE_LIMIT_REGISTRATION_IP',
  }),
  REGISTRATION_CONFIDENTIAL: Type.Union([Type.Literal('off'), Type.Literal('on')], {
    default: 'off',
    description:
      'off or on: whether dynamic registration may create confidential clients (client_secret_basic or ' +
      'client_secret_post); off: only public PKCE clients (token_endpoint_auth_method none)',
  }),
  CLIENT_ID_METADATA_DOCUMENTS: Type.Union([Type.Literal('off'), Type.Literal('on')], {
    default: 'off',
    description:
      'off or on: a client_id that is an https URL names a client ID metadata document, fetched at authorize ' +
      '(public PKCE clients, always asked for consent)',
  }),
  CLIENT_METADATA_CA_FILE: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'a path to a PEM file of certificate authorities trusted, besides the usual ones, for fetching client ID ' +
        'metadata documents only (a private CA; the tests)',
    }),
  ),
  SELF_REGISTERED_CLIENT_TTL: Type.Integer({
    minimum: 0,
    maximum: 3650,
    default: 90,
    description:
      'a whole number of days from 0 to 3650: the clean-up job deletes a self-registered client (dynamic or ' +
      'metadata document) unused for this long (0: never)',
  }),
  SIGN_IN_DELAY_FIRST: Seconds(1, 'the first delay after the free failed sign-ins of an account'),
  SIGN_IN_DELAY_MAX: Seconds(60, 'the longest delay between failed sign-ins of an account'),
});

export type Env = Static<typeof EnvSchema>;
