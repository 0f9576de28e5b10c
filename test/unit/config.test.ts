import t from 'tap';
import { ConfigError, describeEnv, loadConfig } from '../../src/config.js';

const cwd = '/srv/idp';

t.test('defaults give a working development configuration', async (t) => {
  const config = loadConfig({}, cwd);
  t.equal(config.port, 3000);
  t.equal(config.host, '0.0.0.0');
  t.equal(config.baseUrl, 'http://localhost:3000');
  t.equal(config.issuer, 'http://localhost:3000/api/auth');
  t.equal(config.loginUrl, 'http://localhost:3000/login');
  t.equal(config.adminUrl, 'http://localhost:3000/admin');
  t.equal(config.dataDir, '/srv/idp/data');
  t.equal(config.databaseUrl, undefined);
  t.equal(config.adminApiToken, undefined);
  t.equal(config.cookieSecure, false);
  t.equal(config.cookieSameSite, 'lax');
  t.equal(config.trustProxy, false);
  t.same(config.ttl, {
    accessToken: 3600,
    idToken: 3600,
    authorizationCode: 60,
    refreshToken: 2592000,
    refreshTokenAbsolute: 7776000,
    refreshTokenGrace: 0,
    resetToken: 1800,
    consentRequest: 600,
    session: 604800,
    sessionIdle: 86400,
    emailVerification: 86400,
    adminSetup: 3600,
    adminFreshness: 600,
    mfaFreshness: 300,
    unverifiedAccount: 604800,
  });
  t.same(config.mfa, { mode: 'optional', admin: 'optional', rpId: 'localhost', origins: ['http://localhost:3000'] });
});

t.test('BASE_URL follows PORT by default and decides the issuer and cookie security', async (t) => {
  t.equal(loadConfig({ PORT: '8080' }, cwd).baseUrl, 'http://localhost:8080');
  const https = loadConfig({ BASE_URL: 'https://id.example.com/', LOGIN_URL: 'https://login.example.com/' }, cwd);
  t.equal(https.baseUrl, 'https://id.example.com', 'trailing slash removed');
  t.equal(https.issuer, 'https://id.example.com/api/auth');
  t.equal(https.loginUrl, 'https://login.example.com');
  t.equal(https.cookieSecure, true);
  t.equal(loadConfig({ BASE_URL: 'https://id.example.com/base' }, cwd).issuer, 'https://id.example.com/base/api/auth');
  t.equal(loadConfig({ BASE_URL: 'https://x.example', COOKIE_SECURE: 'false' }, cwd).cookieSecure, false);
});

t.test('values are converted: numbers, booleans, case of enums, trust proxy forms', async (t) => {
  const c = loadConfig(
    { ACCESS_TOKEN_TTL: '600', COOKIE_SECURE: 'yes', COOKIE_SAMESITE: 'Strict', LOG_LEVEL: 'DEBUG' },
    cwd,
  );
  t.equal(c.ttl.accessToken, 600);
  t.equal(c.cookieSecure, true);
  t.equal(c.cookieSameSite, 'strict');
  t.equal(c.logLevel, 'debug');
  t.equal(loadConfig({ TRUST_PROXY: '2' }, cwd).trustProxy, 2);
  t.equal(loadConfig({ TRUST_PROXY: '0' }, cwd).trustProxy, false, '0 hops: no proxy');
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }, cwd).trustProxy, ['10.0.0.0/8', '127.0.0.1']);
  t.same(loadConfig({ TRUST_PROXY: '2001:db8::/32,loopback' }, cwd).trustProxy, ['2001:db8::/32', 'loopback']);
});

t.test('TRUST_PROXY=true is refused with a pointer to the hop count (issue 31, 7c)', async (t) => {
  for (const value of ['true', 'TRUE', ' true ']) {
    const error = t.throws(() => loadConfig({ TRUST_PROXY: value }, cwd)) as ConfigError;
    t.ok(error instanceof ConfigError, value);
    t.same(
      error.problems.map((p) => p.name),
      ['TRUST_PROXY'],
    );
    t.match(
      error.message,
      /TRUST_PROXY: expected a hop count \(the number of proxies in front of this service, e\.g\. 1\)/,
    );
    t.match(error.message, /true is refused: it believed the leftmost X-Forwarded-For address/);
  }
  for (const bad of ['100', '10.0.0.0/33', '::1/129', '10.0.0.1/8/1', 'proxy.example.com', ',', '1.2.3']) {
    const error = t.throws(() => loadConfig({ TRUST_PROXY: bad }, cwd), bad) as ConfigError;
    t.same(
      error.problems.map((p) => p.name),
      ['TRUST_PROXY'],
      `${bad} is refused`,
    );
  }
});

t.test('empty strings count as unset', async (t) => {
  const c = loadConfig({ PORT: '', DATABASE_URL: '', ADMIN_API_TOKEN: '' }, cwd);
  t.equal(c.port, 3000);
  t.equal(c.databaseUrl, undefined);
  t.equal(c.adminApiToken, undefined);
});

t.test('every bad value is reported at once, with name, expectation and what was given', async (t) => {
  const error = t.throws(() =>
    loadConfig(
      {
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        ACCESS_TOKEN_TTL: '-5',
        BASE_URL: 'ftp://x',
        COOKIE_SECURE: 'maybe',
        TRUST_PROXY: 'not a proxy',
        DATABASE_URL: 'mysql://root@x/db',
      },
      cwd,
    ),
  ) as ConfigError;
  t.ok(error instanceof ConfigError);
  const names = error.problems.map((p) => p.name).sort();
  t.same(names, ['ACCESS_TOKEN_TTL', 'BASE_URL', 'COOKIE_SECURE', 'DATABASE_URL', 'LOG_LEVEL', 'PORT', 'TRUST_PROXY']);
  t.match(error.message, /Invalid configuration \(7 problems\)/);
  t.match(error.message, /PORT: expected a port number 0-65535; got "abc"/);
  t.match(error.message, /LOG_LEVEL: expected fatal, error, warn, info, debug, trace or silent; got "loud"/);
});

t.test('secrets are never echoed in configuration errors', async (t) => {
  const error = t.throws(() =>
    loadConfig(
      { SECRET_KEY: 'too-short-secret', ADMIN_API_TOKEN: 'short-admin', DATABASE_URL: 'mysql://u:hunter2@h/db' },
      cwd,
    ),
  ) as ConfigError;
  t.equal(error.problems.length, 3);
  t.notMatch(error.message, /too-short-secret|short-admin|hunter2/);
  t.match(error.message, /SECRET_KEY: expected at least 32 characters.*got "<16 characters, hidden>"/);
});

t.test('production requires SECRET_KEY and BASE_URL', async (t) => {
  const error = t.throws(() => loadConfig({ NODE_ENV: 'production' }, cwd)) as ConfigError;
  t.same(error.problems.map((p) => p.name).sort(), ['BASE_URL', 'SECRET_KEY']);
  const ok = loadConfig(
    { NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32), BASE_URL: 'https://id.example.com' },
    cwd,
  );
  t.equal(ok.env, 'production');
});

t.test('production: METRICS=on without METRICS_TOKEN is a start-up error (issue 31, item 6)', async (t) => {
  const production = { NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32), BASE_URL: 'https://id.example.com' };
  const error = t.throws(() => loadConfig({ ...production, METRICS: 'on' }, cwd)) as ConfigError;
  t.ok(error instanceof ConfigError);
  t.same(
    error.problems.map((p) => p.name),
    ['METRICS_TOKEN'],
  );
  t.match(error.message, /METRICS_TOKEN: expected a value when METRICS=on and NODE_ENV=production/);
  t.match(error.message, /or METRICS=off; got nothing/);
  const token = 'm'.repeat(32);
  t.same(loadConfig({ ...production, METRICS: 'on', METRICS_TOKEN: token }, cwd).metrics, { enabled: true, token });
  t.same(loadConfig({ ...production, METRICS: 'off' }, cwd).metrics, { enabled: false, token: undefined });
  t.same(loadConfig({ METRICS: 'on' }, cwd).metrics, { enabled: true, token: undefined }, 'development: allowed');
});

t.test('cross-field rules: SameSite=None needs Secure; absolute refresh lifetime >= sliding', async (t) => {
  const e1 = t.throws(() => loadConfig({ COOKIE_SAMESITE: 'none' }, cwd)) as ConfigError;
  t.same(
    e1.problems.map((p) => p.name),
    ['COOKIE_SAMESITE'],
  );
  t.ok(loadConfig({ COOKIE_SAMESITE: 'none', COOKIE_SECURE: 'true' }, cwd));
  const e2 = t.throws(() =>
    loadConfig({ REFRESH_TOKEN_TTL: '1000', REFRESH_TOKEN_ABSOLUTE_TTL: '10' }, cwd),
  ) as ConfigError;
  t.same(
    e2.problems.map((p) => p.name),
    ['REFRESH_TOKEN_ABSOLUTE_TTL'],
  );
});

t.test('describeEnv lists every variable with a description', async (t) => {
  const vars = describeEnv();
  for (const name of [
    'PORT',
    'HOST',
    'BASE_URL',
    'LOGIN_URL',
    'ADMIN_URL',
    'DATABASE_URL',
    'DATA_DIR',
    'SECRET_KEY',
    'ADMIN_API_TOKEN',
    'SMTP_URL',
    'MAIL_FROM',
    'COOKIE_SECURE',
    'COOKIE_SAMESITE',
    'TRUST_PROXY',
    'STATIC_APPLICATIONS_FILE',
    'LOG_LEVEL',
    'ACCESS_TOKEN_TTL',
    'ID_TOKEN_TTL',
    'AUTHORIZATION_CODE_TTL',
    'REFRESH_TOKEN_TTL',
    'REFRESH_TOKEN_ABSOLUTE_TTL',
    'RESET_TOKEN_TTL',
    'CONSENT_REQUEST_TTL',
  ]) {
    const v = vars.find((x) => x.name === name);
    t.ok(v && v.description.length > 0, `${name} is described`);
  }
});

t.test('mail retries, first-party origins and rate limits', async (t) => {
  const defaults = loadConfig({}, cwd);
  t.same(defaults.mailRetryDelaysMs, [5000, 30000, 120000]);
  t.same(defaults.firstPartyOrigins, []);
  t.equal(defaults.rateLimits.enabled, true);
  // Issue 12: failed sign-ins per e-mail (5 free per 15 minutes, then delays of 1 s doubling up to 60 s).
  t.same(defaults.rateLimits.rules.SIGN_IN_EMAIL, { limit: 5, windowSeconds: 900 });
  t.same(defaults.rateLimits.rules.RESET_PASSWORD_IP, { limit: 10, windowSeconds: 900 });
  t.same(defaults.rateLimits.rules.BEARER, { limit: 600, windowSeconds: 60 });

  const custom = loadConfig(
    {
      MAIL_RETRY_DELAYS: '0.05,1,2.5',
      FIRST_PARTY_ORIGINS: 'https://app.example.com, http://localhost:5173',
      RATE_LIMITS: 'OFF',
      RATE_LIMIT_TOKEN: '5/10',
    },
    cwd,
  );
  t.same(custom.mailRetryDelaysMs, [50, 1000, 2500]);
  t.same(custom.firstPartyOrigins, ['https://app.example.com', 'http://localhost:5173']);
  t.equal(custom.rateLimits.enabled, false);
  t.same(custom.rateLimits.rules.TOKEN, { limit: 5, windowSeconds: 10 });
  t.same(loadConfig({ MAIL_RETRY_DELAYS: 'none' }, cwd).mailRetryDelaysMs, []);
  t.equal(loadConfig({ RATE_LIMITS: 'false' }, cwd).rateLimits.enabled, false);

  const error = t.throws(() =>
    loadConfig(
      {
        MAIL_RETRY_DELAYS: '1,,2',
        FIRST_PARTY_ORIGINS: 'https://app.example.com/path',
        RATE_LIMITS: 'sometimes',
        RATE_LIMIT_SIGN_IN_IP: '0/60',
      },
      cwd,
    ),
  ) as ConfigError;
  t.same(error.problems.map((p) => p.name).sort(), [
    'FIRST_PARTY_ORIGINS',
    'MAIL_RETRY_DELAYS',
    'RATE_LIMITS',
    'RATE_LIMIT_SIGN_IN_IP',
  ]);
});

/** The names of the variables a configuration refuses, sorted (none when it loads). */
function names(env: Record<string, string>): string[] {
  try {
    loadConfig(env, cwd);
    return [];
  } catch (error) {
    return (error as ConfigError).problems.map((p) => p.name).sort();
  }
}

t.test('issue 12: sign-in delays, device budget, mail limits, token per IP, memory per rule', async (t) => {
  const defaults = loadConfig({}, cwd);
  t.same(defaults.rateLimits.signInDelay, { firstSeconds: 1, maxSeconds: 60 });
  t.equal(defaults.rateLimits.redisUrl, undefined, 'no Redis unless REDIS_URL is set');
  t.same(defaults.rateLimits.rules.SIGN_IN_DEVICE, { limit: 10, windowSeconds: 900 });
  t.same(defaults.rateLimits.rules.SIGN_UP_EMAIL, { limit: 3, windowSeconds: 3600 });
  t.same(defaults.rateLimits.rules.RESEND_IP, { limit: 10, windowSeconds: 900 });
  t.same(defaults.rateLimits.rules.RESEND_ACCOUNT, { limit: 3, windowSeconds: 900 });
  t.same(defaults.rateLimits.rules.TOKEN_IP, { limit: 300, windowSeconds: 60 });

  const custom = loadConfig(
    {
      SIGN_IN_DELAY_FIRST: '2',
      SIGN_IN_DELAY_MAX: '300',
      REDIS_URL: 'redis://127.0.0.1:6380/2',
      RATE_LIMIT_RESEND_ACCOUNT: '1/60',
      RATE_LIMIT_SIGN_IN_DEVICE: '20/600',
    },
    cwd,
  );
  t.same(custom.rateLimits.signInDelay, { firstSeconds: 2, maxSeconds: 300 });
  t.equal(custom.rateLimits.redisUrl, 'redis://127.0.0.1:6380/2');
  t.same(custom.rateLimits.rules.RESEND_ACCOUNT, { limit: 1, windowSeconds: 60 });
  t.same(custom.rateLimits.rules.SIGN_IN_DEVICE, { limit: 20, windowSeconds: 600 });

  t.same(
    names({ SIGN_IN_DELAY_FIRST: '10', SIGN_IN_DELAY_MAX: '5' }),
    ['SIGN_IN_DELAY_FIRST'],
    'the first delay may not exceed the longest',
  );
  t.same(names({ SIGN_IN_DELAY_FIRST: '0', SIGN_IN_DELAY_MAX: 'soon' }), ['SIGN_IN_DELAY_FIRST', 'SIGN_IN_DELAY_MAX']);
  t.same(names({ REDIS_URL: 'localhost:6379' }), ['REDIS_URL'], 'a redis:// or rediss:// URL');
  t.same(names({ RATE_LIMIT_RESEND_IP: '0/60', RATE_LIMIT_SIGN_UP_EMAIL: 'x' }), [
    'RATE_LIMIT_RESEND_IP',
    'RATE_LIMIT_SIGN_UP_EMAIL',
  ]);
});

t.test('PASSWORD_HASH_*: the argon2id cost, any in development; OWASP minimum in production', async (t) => {
  const production = { NODE_ENV: 'production', SECRET_KEY: 'x'.repeat(32), BASE_URL: 'https://id.example.com' };
  const cost = (env: Record<string, string>) => loadConfig(env, cwd).passwordHash;
  const cheap = { PASSWORD_HASH_MEMORY_KIB: '8', PASSWORD_HASH_ITERATIONS: '1', PASSWORD_HASH_PARALLELISM: '1' };
  t.same(cost({}), { memoryKib: 19456, iterations: 2, parallelism: 1 }, 'default: m=19456, t=2, p=1');
  t.same(cost(production), { memoryKib: 19456, iterations: 2, parallelism: 1 }, 'the same in production');
  t.same(cost(cheap), { memoryKib: 8, iterations: 1, parallelism: 1 }, 'the cheapest in development and tests');
  t.same(cost({ ...cheap, NODE_ENV: 'test' }), { memoryKib: 8, iterations: 1, parallelism: 1 });

  // Each of OWASP's pairs is accepted in production; one KiB less is refused, naming the variable.
  for (const [m, i] of [
    [47104, 1],
    [19456, 2],
    [12288, 3],
    [9216, 4],
    [7168, 5],
  ] as const) {
    const env = { ...production, PASSWORD_HASH_MEMORY_KIB: String(m), PASSWORD_HASH_ITERATIONS: String(i) };
    t.same(cost(env), { memoryKib: m, iterations: i, parallelism: 1 }, `m=${m}, t=${i} is accepted`);
    t.same(names({ ...env, PASSWORD_HASH_MEMORY_KIB: String(m - 1) }), ['PASSWORD_HASH_MEMORY_KIB'], `m=${m - 1}`);
  }
  t.same(
    cost({ ...production, PASSWORD_HASH_MEMORY_KIB: '7168', PASSWORD_HASH_ITERATIONS: '10' }).iterations,
    10,
    'more iterations than OWASP’s last pair: its memory suffices',
  );
  t.same(cost({ ...production, PASSWORD_HASH_MEMORY_KIB: '65536', PASSWORD_HASH_PARALLELISM: '4' }).parallelism, 4);
  const error = t.throws(() => loadConfig({ ...production, ...cheap }, cwd)) as ConfigError;
  t.same(
    error.problems.map((p) => p.name),
    ['PASSWORD_HASH_MEMORY_KIB'],
    'the tests’ cheap cost never reaches production',
  );
  t.match(
    error.message,
    new RegExp(
      'PASSWORD_HASH_MEMORY_KIB: expected at least 47104 KiB with PASSWORD_HASH_ITERATIONS=1 when ' +
        "NODE_ENV=production \\(OWASP's argon2id minimum: m=47104/t=1, m=19456/t=2, m=12288/t=3, m=9216/t=4, " +
        'm=7168/t=5\\).*; got "8"',
    ),
  );
  t.same(
    names({ ...production, PASSWORD_HASH_ITERATIONS: '1' }),
    ['PASSWORD_HASH_MEMORY_KIB'],
    'fewer iterations need more memory',
  );

  // argon2's own limits, in any environment.
  t.same(names({ PASSWORD_HASH_MEMORY_KIB: '7' }), ['PASSWORD_HASH_MEMORY_KIB'], 'argon2 needs 8 KiB at least');
  t.same(names({ PASSWORD_HASH_MEMORY_KIB: '16', PASSWORD_HASH_PARALLELISM: '4' }), ['PASSWORD_HASH_MEMORY_KIB']);
  t.same(names({ PASSWORD_HASH_MEMORY_KIB: '32', PASSWORD_HASH_PARALLELISM: '4' }), [], '8 KiB per lane');
  t.same(
    names({ PASSWORD_HASH_MEMORY_KIB: '19456.5', PASSWORD_HASH_ITERATIONS: '0', PASSWORD_HASH_PARALLELISM: '17' }),
    ['PASSWORD_HASH_ITERATIONS', 'PASSWORD_HASH_MEMORY_KIB', 'PASSWORD_HASH_PARALLELISM'],
  );
  t.same(names({ PASSWORD_HASH_MEMORY_KIB: '1048577' }), ['PASSWORD_HASH_MEMORY_KIB'], 'at most 1 GiB');
});
