// The loopback-only DATABASE_URL, the throw-away idp_bench_<random> database, DATA_DIR and the server's
// environment. Imports core.js only.
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { b64url, run, usageError } from './core.js';

const DEFAULT_DB = 'postgres://postgres@127.0.0.1:5432/test';
let dbBase;

/** Reads DATABASE_URL (default DEFAULT_DB); exits 2 unless it is a postgres:// URL on loopback. */
export function checkDatabaseUrl() {
  dbBase = new URL(process.env.DATABASE_URL || DEFAULT_DB);
  if (!/^postgres(ql)?:$/.test(dbBase.protocol)) usageError('DATABASE_URL must be a postgres:// URL');
  // Only loopback traffic: refuse a database elsewhere (a Unix socket in ?host=/path counts as local).
  const socketHost = dbBase.searchParams.get('host');
  if (!(socketHost?.startsWith('/') || ['127.0.0.1', 'localhost', '[::1]', ''].includes(dbBase.hostname))) {
    usageError(`DATABASE_URL points at ${dbBase.hostname}; this benchmark only talks to loopback`);
  }
}

export function dbUrlFor(name) {
  const u = new URL(dbBase);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Creates a fresh idp_bench_<random> database (cleanup() drops it from then on); returns the server version. */
export async function createDatabase() {
  const name = `idp_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: dbUrlFor('postgres'), connectionTimeoutMillis: 10_000 });
  try {
    await admin.connect();
    const pgVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
    await admin.query(`CREATE DATABASE "${name}"`);
    run.dbName = name; // from here on, cleanup drops it
    return pgVersion;
  } finally {
    await admin.end().catch(() => {});
  }
}

/** Drops the run's database (cleanup() calls it); prints, not throws, when that fails. */
export async function dropDatabase() {
  const admin = new pg.Client({ connectionString: dbUrlFor('postgres'), connectionTimeoutMillis: 10_000 });
  try {
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${run.dbName}" WITH (FORCE)`);
  } catch (error) {
    console.error(`${run.script}: could not drop database ${run.dbName}: ${error.message} (drop it by hand)`);
  } finally {
    await admin.end().catch(() => {});
  }
}

/** The "  database: …" line of the configuration. */
export const databaseLine = (pgVersion) =>
  `  database: PostgreSQL ${pgVersion} at ${dbBase.hostname || 'local socket'}:${dbBase.port || 5432}, ` +
  `fresh database ${run.dbName} (dropped at the end)`;

/** A new DATA_DIR under the system temporary directory, removed by cleanup(). */
export function makeDataDir(prefix) {
  run.dataDir = mkdtempSync(join(tmpdir(), prefix));
  return run.dataDir;
}

/** Only these variables: nothing from the caller's shell changes a server's configuration. */
export const baseEnv = () => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  ...(process.env.HOME && { HOME: process.env.HOME }),
  NODE_ENV: 'production',
});

/** The METRICS_TOKEN of a run's server with BENCH_METRICS set (bench/soak.js scrapes with it). */
export const BENCH_METRICS_TOKEN = 'bench-metrics-token-0123456789abcdefghijkl';

/** The environment of `node dist/app/cli.js serve` on the run's database and DATA_DIR. */
export const serverEnv = ({ port, origin, pool, adminToken }) => ({
  ...baseEnv(),
  HOST: '127.0.0.1',
  PORT: String(port),
  BASE_URL: origin,
  DATABASE_URL: dbUrlFor(run.dbName),
  ...(pool && { DATABASE_POOL_SIZE: String(pool) }),
  DATA_DIR: run.dataDir,
  SECRET_KEY: b64url(randomBytes(32)),
  ADMIN_API_TOKEN: adminToken,
  LOG_LEVEL: 'warn',
  // BENCH_WORKERS=N: our server as N processes (WORKERS, PostgreSQL only); CPU and RSS then sum the tree.
  ...(process.env.BENCH_WORKERS && { WORKERS: process.env.BENCH_WORKERS }),
  // BENCH_METRICS=on: the Prometheus metrics on (METRICS), to measure what they cost; behind a token, which
  // NODE_ENV=production requires with METRICS=on.
  ...(process.env.BENCH_METRICS && { METRICS: process.env.BENCH_METRICS, METRICS_TOKEN: BENCH_METRICS_TOKEN }),
  // Load tests drive thousands of requests from one IP and one token: the limits would answer 429.
  RATE_LIMITS: 'off',
  // BENCH_RATE_LIMITS=on: every rule counts (in PostgreSQL, or REDIS_URL's store when BENCH_REDIS_URL is
  // set) with limits too high to refuse anything, to measure what counting costs.
  ...(process.env.BENCH_RATE_LIMITS === 'on' && benchRateLimits()),
  ...(process.env.BENCH_REDIS_URL && { REDIS_URL: process.env.BENCH_REDIS_URL }),
});

const RATE_LIMIT_RULE_NAMES = [
  'TOKEN',
  'TOKEN_IP',
  'AUTHORIZE',
  'SIGN_IN_IP',
  'SIGN_IN_IP48',
  'SIGN_IN_EMAIL',
  'SIGN_IN_DEVICE',
].concat(
  ['SIGN_UP_IP', 'SIGN_UP_EMAIL', 'RESEND_IP', 'RESEND_ACCOUNT', 'RESET_REQUEST_IP', 'RESET_REQUEST_EMAIL'],
  ['SIGN_UP_IP48', 'RESEND_IP48', 'RESET_REQUEST_IP48'],
  ['RESET_REQUEST_EMAIL_DAY', 'RESET_PASSWORD_IP', 'BEARER', 'RESEND_EMAIL', 'MAIL_RECIPIENT'],
);
function benchRateLimits() {
  return {
    RATE_LIMITS: 'on',
    ...Object.fromEntries(RATE_LIMIT_RULE_NAMES.map((rule) => [`RATE_LIMIT_${rule}`, '9999999/60'])),
  };
}
