// Configuration: the checked environment (src/env-schema.ts) becomes a Config. Only entry points
// (app/cli.ts) read process.env; everything else receives a Config.
import type { TSchema } from 'typebox';
import Value from 'typebox/value';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';

import { EnvSchema, type Env, RATE_LIMIT_RULES, type RateLimitRule, type RateLimitSetting } from './env-schema.js';
import {
  ARGON2_MIN_MEMORY_KIB_PER_LANE,
  OWASP_ARGON2ID_MINIMUMS,
  owaspMinimumMemoryKib,
  type PasswordHashCost,
} from './passwords.js';

export { EnvSchema, RATE_LIMIT_RULES };
export type { Env, RateLimitRule, RateLimitSetting };

/**
 * TRUST_PROXY: false (the socket's address is the client), a hop count (the client is that many
 * addresses from the right of socket + X-Forwarded-For), or the proxies' addresses/CIDRs (the client is
 * the first address from the right that is not one of them). Never "trust everything".
 */
export type TrustProxy = false | number | string[];

export interface Config {
  env: Env['NODE_ENV'];
  port: number;
  host: string;
  baseUrl: string;
  issuer: string;
  loginUrl: string;
  adminUrl: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** PostgreSQL's statement_timeout in seconds (0: none); the client waits 5 s more (db/create-db.ts). */
  databaseStatementTimeout: number;
  /** Server processes sharing the port (node:cluster); more than 1 only on PostgreSQL. */
  workers: number;
  /** A directory, or IN_MEMORY (DATA_DIR=:memory:): the embedded database in memory, nothing on disk. */
  dataDir: string;
  /** undefined until resolved by resolveSecretKey() (generated in development). */
  secretKey: string | undefined;
  adminApiToken: string | undefined;
  smtpUrl: string | undefined;
  mailFrom: string;
  cookieSecure: boolean;
  cookieSameSite: 'lax' | 'strict' | 'none';
  trustProxy: TrustProxy;
  staticApplicationsFile: string | undefined;
  /** Applied by idp serve at start, after the migrations (src/seed.ts). */
  seedFile: string | undefined;
  /** The page at /: on (every link), public (no admin links) or off (404). */
  welcomePage: 'on' | 'public' | 'off';
  /** The demo relying party at /demo and its application "demo" (DEMO). */
  demo: boolean;
  logLevel: string;
  /** LOG_FORMAT: pretty lines (pino-pretty) or JSON lines; auto decides on a terminal (src/logger.ts). */
  logFormat: 'auto' | 'pretty' | 'json';
  /** METRICS and METRICS_TOKEN: Prometheus metrics at /metrics (src/metrics.ts), behind the token when set. */
  metrics: { enabled: boolean; token: string | undefined };
  /** PASSWORD_HASH_*: the argon2id cost of new password hashes (src/passwords.ts createPasswordHasher). */
  passwordHash: PasswordHashCost;
  shutdownTimeoutSeconds: number;
  cleanupIntervalSeconds: number;
  corsCacheSeconds: number;
  /** Seconds a bearer token's authentication is reused in this process (0: not cached). */
  bearerCacheSeconds: number;
  /** Origins besides the login origin that may call the cookie token endpoints. */
  firstPartyOrigins: string[];
  /**
   * Second factors (issue 34): MFA off|optional|required, ADMIN_MFA, and the WebAuthn relying party derived
   * from LOGIN_URL (its host is the RP ID; its origin the one origin a passkey ceremony may come from).
   */
  mfa: {
    mode: 'off' | 'optional' | 'required';
    admin: 'optional' | 'required';
    rpId: string;
    origins: string[];
  };
  /**
   * Clients registered without an operator (issue 36; decisions.md, Protocol): dynamic registration (RFC 7591) off,
   * with an initial access token, or open; whether it may create confidential clients; client ID metadata
   * documents; the file of extra CAs trusted for fetching those (PEM); days after which an unused one is deleted.
   */
  registration: {
    mode: 'off' | 'token' | 'open';
    confidential: boolean;
    metadataDocuments: boolean;
    metadataCaFile: string | undefined;
    unusedClientDays: number;
  };
  /** Waits before each retry of a failed mail, in milliseconds. */
  mailRetryDelaysMs: number[];
  rateLimits: {
    enabled: boolean;
    rules: Record<RateLimitRule, RateLimitSetting>;
    /** Where the counts live for every instance: Redis/Valkey (else PostgreSQL or memory, src/rate-limit.ts). */
    redisUrl: string | undefined;
    /** Per-account sign-in delays past SIGN_IN_EMAIL's free failures: first, doubling up to max. */
    signInDelay: { firstSeconds: number; maxSeconds: number };
  };
  ttl: {
    accessToken: number;
    idToken: number;
    authorizationCode: number;
    refreshToken: number;
    refreshTokenAbsolute: number;
    refreshTokenGrace: number;
    resetToken: number;
    consentRequest: number;
    session: number;
    sessionIdle: number;
    emailVerification: number;
    /** A self-registered account that never verified its address is deleted after this long (clean-up). */
    unverifiedAccount: number;
    adminSetup: number;
    adminFreshness: number;
    /** Adding or removing a factor needs an authentication this recent (MFA_FRESHNESS). */
    mfaFreshness: number;
  };
}

/** DATA_DIR=:memory:: the embedded database lives in the server's memory; nothing is written to disk. */
export const IN_MEMORY = ':memory:';
export const isInMemory = (config: Pick<Config, 'dataDir'>) => config.dataDir === IN_MEMORY;

export interface ConfigProblem {
  name: string;
  expected: string;
  given: string | undefined;
}

export class ConfigError extends Error {
  constructor(readonly problems: ConfigProblem[]) {
    super(
      `Invalid configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n` +
        problems
          .map(
            (p) =>
              `  - ${p.name}: expected ${p.expected}; ` +
              `got ${p.given === undefined ? 'nothing' : JSON.stringify(p.given)}`,
          )
          .join('\n'),
    );
    this.name = 'ConfigError';
  }
}

const SECRET_NAMES = new Set([
  'SECRET_KEY',
  'ADMIN_API_TOKEN',
  'DATABASE_URL',
  'SMTP_URL',
  'METRICS_TOKEN',
  'REDIS_URL',
]);

// Secrets are never echoed back, even in a configuration error.
function shown(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (SECRET_NAMES.has(name)) return `<${value.length} characters, hidden>`;
  return value.length > 200 ? `${value.slice(0, 200)}…` : value;
}

function stripSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** TRUST_PROXY=true believed the leftmost X-Forwarded-For, which the client writes (issue 31, 7c). */
const TRUST_PROXY_TRUE =
  "a hop count (the number of proxies in front of this service, e.g. 1) or the proxies' addresses/CIDRs; " +
  'true is refused: it believed the leftmost X-Forwarded-For address, which any client can write, ' +
  'so every per-IP rate limit could be escaped';

function parseTrustProxy(raw: string): TrustProxy | 'true' | undefined {
  const v = raw.trim().toLowerCase();
  if (v === 'true') return 'true';
  if (v === 'false' || v === '' || /^0+$/.test(v)) return false;
  if (/^\d{1,2}$/.test(v)) return Number(v);
  const list = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  // Each an address, an address/prefix length, or one of proxy-addr's names (what it compiles).
  const proxy = (s: string) => {
    const [address, bits, extra] = s.split('/');
    if (extra !== undefined || !isIP(address!)) return ['loopback', 'linklocal', 'uniquelocal'].includes(s);
    return bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (isIP(address!) === 4 ? 32 : 128));
  };
  return list.length > 0 && list.every(proxy) ? list : undefined;
}

function coerceBoolean(raw: string): boolean | string {
  const v = raw.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return raw;
}

/**
 * Parses the environment. Throws one ConfigError that lists every problem.
 * Empty strings count as unset, as most process managers cannot unset a variable.
 */
export function loadConfig(env: Record<string, string | undefined>, cwd = process.cwd()): Config {
  const properties = EnvSchema.properties as Record<string, TSchema & { description?: string }>;
  const raw: Record<string, unknown> = {};
  for (const name of Object.keys(properties)) {
    const value = env[name];
    if (value === undefined || value === '') continue;
    raw[name] = value;
  }
  const given = { ...raw } as Record<string, string>;
  if (typeof raw.COOKIE_SECURE === 'string') raw.COOKIE_SECURE = coerceBoolean(raw.COOKIE_SECURE);
  if (typeof raw.RATE_LIMITS === 'string') {
    const v = coerceBoolean(raw.RATE_LIMITS);
    raw.RATE_LIMITS = v === true ? 'on' : v === false ? 'off' : raw.RATE_LIMITS;
  }
  for (const name of ['DEMO', 'METRICS']) {
    if (typeof raw[name] !== 'string') continue;
    const v = coerceBoolean(raw[name] as string);
    raw[name] = v === true ? 'on' : v === false ? 'off' : raw[name];
  }
  for (const name of ['COOKIE_SAMESITE', 'LOG_LEVEL', 'LOG_FORMAT', 'WELCOME_PAGE']) {
    if (typeof raw[name] === 'string') raw[name] = (raw[name] as string).toLowerCase();
  }

  const withDefaults = Value.Convert(EnvSchema, Value.Default(EnvSchema, raw)) as Record<string, unknown>;
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  // Each variable on its own, so that every bad one is reported (not only the first of a kind).
  for (const [name, schema] of Object.entries(properties)) {
    const value = withDefaults[name];
    const wholeNumber = (schema as { type?: string }).type === 'integer';
    const bad =
      (value !== undefined && !Value.Check(schema, value)) ||
      (wholeNumber && typeof given[name] === 'string' && !/^\d+$/.test(given[name]!.trim()));
    if (bad) {
      seen.add(name);
      problems.push({ name, expected: schema.description ?? 'a valid value', given: shown(name, given[name]) });
    }
  }
  const parsed = withDefaults as Env;

  const problem = (name: string, expected: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    problems.push({ name, expected, given: shown(name, given[name]) });
  };

  const trustProxy = parseTrustProxy(String(parsed.TRUST_PROXY ?? 'false'));
  if (trustProxy === 'true') problem('TRUST_PROXY', TRUST_PROXY_TRUE);
  else if (trustProxy === undefined) problem('TRUST_PROXY', properties.TRUST_PROXY!.description!);

  for (const name of ['BASE_URL', 'LOGIN_URL', 'ADMIN_URL'] as const) {
    const value = parsed[name];
    if (value === undefined || seen.has(name)) continue;
    try {
      new URL(value);
    } catch {
      problem(name, properties[name]!.description!);
    }
  }

  const production = parsed.NODE_ENV === 'production';
  if (production && !parsed.SECRET_KEY) {
    problem('SECRET_KEY', 'a value when NODE_ENV=production (at least 32 characters; it encrypts the signing keys)');
  }
  if (production && !parsed.BASE_URL) {
    problem('BASE_URL', 'a value when NODE_ENV=production (the public https URL of this service)');
  }
  // Issue 31, item 6: open metrics count mail and sign-in failures for anyone who can reach them.
  if (production && parsed.METRICS === 'on' && !parsed.METRICS_TOKEN) {
    problem(
      'METRICS_TOKEN',
      'a value when METRICS=on and NODE_ENV=production (at least 32 characters, e.g. the output of ' +
        '`openssl rand -base64 32`; without it /metrics answers anyone), or METRICS=off',
    );
  }
  const passwordHash: PasswordHashCost = {
    memoryKib: parsed.PASSWORD_HASH_MEMORY_KIB,
    iterations: parsed.PASSWORD_HASH_ITERATIONS,
    parallelism: parsed.PASSWORD_HASH_PARALLELISM,
  };
  if (passwordHash.memoryKib < ARGON2_MIN_MEMORY_KIB_PER_LANE * passwordHash.parallelism) {
    problem(
      'PASSWORD_HASH_MEMORY_KIB',
      `at least ${ARGON2_MIN_MEMORY_KIB_PER_LANE} KiB per lane of PASSWORD_HASH_PARALLELISM ` +
        `(${ARGON2_MIN_MEMORY_KIB_PER_LANE * passwordHash.parallelism} KiB)`,
    );
  }
  // A test's cheap cost must never reach production: OWASP's argon2id minimum (src/passwords.ts).
  if (production && passwordHash.memoryKib < owaspMinimumMemoryKib(passwordHash.iterations)) {
    const pairs = OWASP_ARGON2ID_MINIMUMS.map((p) => `m=${p.memoryKib}/t=${p.iterations}`).join(', ');
    problem(
      'PASSWORD_HASH_MEMORY_KIB',
      `at least ${owaspMinimumMemoryKib(passwordHash.iterations)} KiB with PASSWORD_HASH_ITERATIONS=` +
        `${passwordHash.iterations} when NODE_ENV=production (OWASP's argon2id minimum: ${pairs}); ` +
        'unset, the default m=19456/t=2 meets it',
    );
  }
  if (parsed.REFRESH_TOKEN_ABSOLUTE_TTL < parsed.REFRESH_TOKEN_TTL && !seen.has('REFRESH_TOKEN_ABSOLUTE_TTL')) {
    problem('REFRESH_TOKEN_ABSOLUTE_TTL', `a value at least REFRESH_TOKEN_TTL (${parsed.REFRESH_TOKEN_TTL})`);
  }

  if (parsed.DATA_DIR === IN_MEMORY && parsed.DATABASE_URL && !parsed.SECRET_KEY) {
    problem(
      'SECRET_KEY',
      'a value when DATA_DIR=:memory: and DATABASE_URL are both set (a key generated per start ' +
        'could not decrypt the signing keys PostgreSQL keeps)',
    );
  }

  const firstPartyOrigins: string[] = [];
  for (const item of String(parsed.FIRST_PARTY_ORIGINS)
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean)) {
    let origin: string | undefined;
    try {
      const url = new URL(item);
      if ((url.protocol === 'http:' || url.protocol === 'https:') && url.origin === item.replace(/\/$/, ''))
        origin = url.origin;
    } catch {
      origin = undefined;
    }
    if (origin) firstPartyOrigins.push(origin);
    else problem('FIRST_PARTY_ORIGINS', properties.FIRST_PARTY_ORIGINS!.description!);
  }

  const rules = {} as Record<RateLimitRule, RateLimitSetting>;
  for (const name of Object.keys(RATE_LIMIT_RULES) as RateLimitRule[]) {
    const [limit, windowSeconds] = String((parsed as Record<string, unknown>)[`RATE_LIMIT_${name}`])
      .split('/')
      .map(Number);
    if (!limit || !windowSeconds)
      problem(`RATE_LIMIT_${name}`, 'a count and a window in seconds, both at least 1, e.g. 10/60');
    rules[name] = { limit: limit!, windowSeconds: windowSeconds! };
  }

  if (parsed.SIGN_IN_DELAY_FIRST > parsed.SIGN_IN_DELAY_MAX)
    problem('SIGN_IN_DELAY_FIRST', 'at most SIGN_IN_DELAY_MAX');
  // With MFA=off no sign-in ever gives a second factor: ADMIN_MFA=required would lock every administrator out.
  if (parsed.MFA === 'off' && parsed.ADMIN_MFA === 'required')
    problem('ADMIN_MFA', 'optional when MFA=off (no second factor is asked, so no administrator could get in)');

  const port = parsed.PORT;
  const baseUrl = stripSlash(parsed.BASE_URL ?? `http://localhost:${port}`);
  const cookieSecure = parsed.COOKIE_SECURE ?? baseUrl.startsWith('https://');
  if (parsed.COOKIE_SAMESITE === 'none' && !cookieSecure) {
    problem(
      'COOKIE_SAMESITE',
      'lax or strict unless cookies are secure (browsers drop SameSite=None cookies without Secure)',
    );
  }

  if (problems.length > 0) throw new ConfigError(problems);
  const loginUrl = stripSlash(parsed.LOGIN_URL ?? `${baseUrl}/login`);

  return {
    env: parsed.NODE_ENV,
    port,
    host: parsed.HOST,
    baseUrl,
    issuer: `${baseUrl}/api/auth`,
    loginUrl,
    adminUrl: stripSlash(parsed.ADMIN_URL ?? `${baseUrl}/admin`),
    databaseUrl: parsed.DATABASE_URL,
    databasePoolSize: parsed.DATABASE_POOL_SIZE,
    databaseStatementTimeout: parsed.DATABASE_STATEMENT_TIMEOUT,
    workers: parsed.WORKERS,
    dataDir:
      parsed.DATA_DIR === IN_MEMORY || isAbsolute(parsed.DATA_DIR) ? parsed.DATA_DIR : resolve(cwd, parsed.DATA_DIR),
    secretKey: parsed.SECRET_KEY,
    adminApiToken: parsed.ADMIN_API_TOKEN,
    smtpUrl: parsed.SMTP_URL,
    mailFrom: parsed.MAIL_FROM,
    cookieSecure,
    cookieSameSite: parsed.COOKIE_SAMESITE,
    trustProxy: trustProxy as TrustProxy,
    staticApplicationsFile: parsed.STATIC_APPLICATIONS_FILE ? resolve(cwd, parsed.STATIC_APPLICATIONS_FILE) : undefined,
    seedFile: parsed.SEED_FILE ? resolve(cwd, parsed.SEED_FILE) : undefined,
    welcomePage: parsed.WELCOME_PAGE ?? (production ? 'public' : 'on'),
    demo: (parsed.DEMO ?? (parsed.NODE_ENV === 'development' ? 'on' : 'off')) === 'on',
    logLevel: parsed.LOG_LEVEL,
    logFormat: parsed.LOG_FORMAT,
    metrics: { enabled: parsed.METRICS === 'on', token: parsed.METRICS_TOKEN },
    passwordHash,
    shutdownTimeoutSeconds: parsed.SHUTDOWN_TIMEOUT,
    cleanupIntervalSeconds: parsed.CLEANUP_INTERVAL,
    corsCacheSeconds: parsed.CORS_CACHE_TTL,
    bearerCacheSeconds: parsed.BEARER_CACHE_SECONDS,
    firstPartyOrigins,
    mfa: {
      mode: parsed.MFA,
      admin: parsed.ADMIN_MFA,
      rpId: new URL(loginUrl).hostname,
      origins: [new URL(loginUrl).origin],
    },
    registration: {
      mode: parsed.REGISTRATION,
      confidential: parsed.REGISTRATION_CONFIDENTIAL === 'on',
      metadataDocuments: parsed.CLIENT_ID_METADATA_DOCUMENTS === 'on',
      metadataCaFile: parsed.CLIENT_METADATA_CA_FILE ? resolve(cwd, parsed.CLIENT_METADATA_CA_FILE) : undefined,
      unusedClientDays: parsed.SELF_REGISTERED_CLIENT_TTL,
    },
    mailRetryDelaysMs:
      parsed.MAIL_RETRY_DELAYS === 'none'
        ? []
        : parsed.MAIL_RETRY_DELAYS.split(',').map((s) => Math.round(Number(s) * 1000)),
    rateLimits: {
      enabled: parsed.RATE_LIMITS === 'on',
      rules,
      redisUrl: parsed.REDIS_URL,
      signInDelay: { firstSeconds: parsed.SIGN_IN_DELAY_FIRST, maxSeconds: parsed.SIGN_IN_DELAY_MAX },
    },
    ttl: {
      accessToken: parsed.ACCESS_TOKEN_TTL,
      idToken: parsed.ID_TOKEN_TTL,
      authorizationCode: parsed.AUTHORIZATION_CODE_TTL,
      refreshToken: parsed.REFRESH_TOKEN_TTL,
      refreshTokenAbsolute: parsed.REFRESH_TOKEN_ABSOLUTE_TTL,
      refreshTokenGrace: parsed.REFRESH_TOKEN_GRACE,
      resetToken: parsed.RESET_TOKEN_TTL,
      consentRequest: parsed.CONSENT_REQUEST_TTL,
      session: parsed.SESSION_TTL,
      sessionIdle: parsed.SESSION_IDLE_TTL,
      emailVerification: parsed.EMAIL_VERIFICATION_TTL,
      unverifiedAccount: parsed.UNVERIFIED_ACCOUNT_TTL,
      adminSetup: parsed.ADMIN_SETUP_TTL,
      adminFreshness: parsed.ADMIN_FRESHNESS,
      mfaFreshness: parsed.MFA_FRESHNESS,
    },
  };
}

/** Every variable with its default and description, for the README and `idp --help`. */
export function describeEnv(): Array<{ name: string; default: unknown; description: string }> {
  return Object.entries(
    EnvSchema.properties as Record<string, TSchema & { default?: unknown; description?: string }>,
  ).map(([name, schema]) => ({ name, default: schema.default, description: schema.description ?? '' }));
}
