// Shared by bench/flow.js, bench/refresh.js and bench/external.js: option parsing, the loopback-only
// DATABASE_URL, the build-if-stale check, a fresh idp_bench_<random> database (dropped at the end), the
// server processes (own process group, SIGTERM then SIGKILL, log lines by level), HTTP on loopback with a
// cookie-jar browser, the hosted sign-in pages, CPU shares, Ctrl-C handling and the cleanup.
// One benchmark per process: the state below (`run`) belongs to the script that imported this module.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { arch, cpus, loadavg, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';

export const root = join(fileURLToPath(import.meta.url), '..', '..');

/** The state of this run: what cleanup() and the signal handlers act on. */
export const run = {
  script: 'bench', // the name in messages: flow.js, refresh.js, external.js
  interrupted: false, // Ctrl-C or SIGTERM
  onInterrupt: undefined, // called on the first signal
  processes: {}, // name → { child, log, label }, in start order
  agents: [],
  dbName: undefined,
  dataDir: undefined,
};

// ---------------------------------------------------------------------------------------------- options
/** parseArgs with --pool, --no-build and --help added; exits 2 on a bad option, 0 after --help. */
export function parseOptions(script, options, usage) {
  run.script = script;
  let values;
  try {
    values = parseArgs({
      options: {
        ...options,
        pool: { type: 'string' },
        'no-build': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (error) {
    console.error(`${script}: ${error.message}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(usage);
    process.exit(0);
  }
  return values;
}

/** Prints `script: message` and exits 2 (a usage error). */
export function usageError(message) {
  console.error(`${run.script}: ${message}`);
  process.exit(2);
}

export function wholeNumber(name, value, min, max) {
  const n = Number(value);
  if (!/^\d+$/.test(String(value)) || n < min || n > max)
    usageError(`--${name} must be a whole number from ${min} to ${max}`);
  return n;
}

export const poolOption = (opts) => (opts.pool !== undefined ? wholeNumber('pool', opts.pool, 1, 200) : undefined);

// --------------------------------------------------------------------------------------------- database
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

async function dropDatabase() {
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

/** The environment of `node dist/src/cli.js serve` on the run's database and DATA_DIR. */
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
  // Load tests drive thousands of requests from one IP and one token: the limits would answer 429.
  RATE_LIMITS: 'off',
});

// ---------------------------------------------------------------------------------------------- helpers
export const now = () => performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const b64url = (buf) => Buffer.from(buf).toString('base64url');
export const fmtLoad = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
export const percentile = (sorted, p) => (sorted.length ? sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] : NaN);

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function newestSourceMtime() {
  let newest = 0;
  const walk = (dir) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      const st = statSync(full);
      if (st.isDirectory()) walk(full);
      else if (name.endsWith('.ts')) newest = Math.max(newest, st.mtimeMs);
    }
  };
  for (const dir of ['src', 'plugins', 'schemas', 'db']) if (existsSync(join(root, dir))) walk(join(root, dir));
  return newest;
}

/** Runs `npm run build` when dist/ is missing or older than the sources (unless --no-build). */
export function buildIfStale(noBuild) {
  const cliJs = join(root, 'dist', 'src', 'cli.js');
  if (!noBuild && (!existsSync(cliJs) || statSync(cliJs).mtimeMs < newestSourceMtime())) {
    console.log('building (dist/ is missing or older than the sources): npm run build');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`npm run build failed (exit ${r.status ?? r.signal})`);
  }
}

/** CPU seconds (user + system) of a process so far, from /proc; undefined elsewhere. */
export function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

/** Starts counting CPU seconds of process `pid` and of this driver; the result reads both (NaN where unknown). */
export function cpuMeter(pid) {
  const server0 = cpuSeconds(pid);
  const client0 = process.cpuUsage();
  return () => {
    const server = cpuSeconds(pid) - server0;
    const usage = process.cpuUsage(client0);
    return { server, client: (usage.user + usage.system) / 1e6 };
  };
}

/** "42%" of one core over `seconds` of wall time; "?" for NaN. */
export const shareOver = (seconds) => (cpu) => (Number.isNaN(cpu) ? '?' : `${((cpu / seconds) * 100).toFixed(0)}%`);

function git(...args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** The first lines of every report: node, machine, load average at start, commit. */
export function printMachine(loadStart) {
  const commit = git('rev-parse', '--short', 'HEAD');
  const dirty = git('status', '--porcelain', '--', 'src', 'plugins', 'schemas', 'db');
  const cpu = cpus();
  console.log(
    `node ${process.version}, ${platform()} ${arch()}, ${cpu.length} CPUs (${cpu[0]?.model.trim() ?? 'unknown'})`,
  );
  console.log(`load average at start: ${loadStart}`);
  console.log(`commit ${commit ?? 'unknown'}${dirty ? ' with uncommitted changes in src/plugins/schemas/db' : ''}`);
}

export class StepError extends Error {
  constructor(step, message, status) {
    super(message);
    this.step = step;
    this.status = status;
  }
}

class Interrupted extends Error {}
/** Throws when a signal came in (between setup steps). */
export const checkpoint = () => {
  if (run.interrupted) throw new Interrupted('interrupted during setup');
};

// ------------------------------------------------------------------------------------ HTTP (loopback)
/**
 * requests to `client.origin` only (set it once the port is known); `countStatuses` keeps a count per
 * HTTP status in `client.statusCounts` (which the caller may replace with a new Map).
 */
export function createHttpClient({ maxSockets, userAgent, countStatuses = false, timeoutMs = 30_000 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  run.agents.push(agent);
  const client = { origin: undefined, agent, userAgent, statusCounts: new Map() };
  client.request = (url, { method = 'GET', headers = {}, body } = {}) => {
    const u = new URL(url);
    if (u.origin !== client.origin)
      return Promise.reject(new Error(`refusing a request outside the server under test: ${u.origin}`));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method,
          headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            if (countStatuses)
              client.statusCounts.set(res.statusCode, (client.statusCounts.get(res.statusCode) ?? 0) + 1);
            resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
          });
        },
      );
      req.setTimeout(timeoutMs, () =>
        req.destroy(new Error(`no answer within ${timeoutMs} ms: ${method} ${u.pathname}`)),
      );
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  };
  return client;
}

/** A cookie jar and manual redirects, as in test/helpers/browser-client.ts. */
export class Browser {
  cookies = new Map();

  constructor(client) {
    this.client = client;
  }

  async fetch(url, { form, headers: extra } = {}) {
    const headers = { accept: 'text/html', 'user-agent': this.client.userAgent, ...extra };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await this.client.request(url, { method: form ? 'POST' : 'GET', headers, body });
    for (const line of res.headers['set-cookie'] ?? []) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const location = res.headers.location;
    return { ...res, url, location: location ? new URL(location, url).toString() : undefined };
  }

  /** Hidden inputs of the first form whose action ends with `action`. */
  static hiddenFields(html, action) {
    const form = new RegExp(
      `<form[^>]*action="[^"]*${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>([\\s\\S]*?)</form>`,
    ).exec(html);
    if (!form) return undefined;
    const fields = {};
    for (const m of form[1].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[m[1]] = m[2]
        .replace(/&amp;/g, '&')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>');
    }
    return fields;
  }
}

export const snippet = (res) =>
  res.body
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 160);

export function expectStatus(step, res, status) {
  if (res.status !== status) {
    throw new StepError(
      step,
      `expected ${status}, got ${res.status}${res.location ? ` → ${res.location}` : ''}: ${snippet(res)}`,
      res.status,
    );
  }
}

export function expectRedirect(step, res, prefix) {
  if (res.status !== 303 && res.status !== 302) expectStatus(step, res, 303);
  if (!res.location?.startsWith(prefix)) {
    throw new StepError(step, `expected a redirect to ${prefix}…, got ${res.status} → ${res.location}`, res.status);
  }
}

/**
 * Picks the server's port and a callback port (closed again: nothing listens there, and nothing fetches
 * it); sets `client.origin` and oidc's issuer, loginUrl and redirectUri. Returns { port, origin, adminToken }.
 */
export async function setupEndpoints(client, oidc) {
  const port = await freePort();
  const callbackPort = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  client.origin = origin;
  oidc.issuer = `${origin}/api/auth`;
  oidc.loginUrl = `${origin}/login`;
  oidc.redirectUri = `http://127.0.0.1:${callbackPort}/cb`;
  return { port, origin, adminToken: b64url(randomBytes(32)) };
}

// ------------------------------------------------------------------------------- the hosted sign-in
/**
 * The OIDC side of a run: `{ client, issuer, loginUrl, redirectUri, clientId, scope }` (clientId once the
 * application exists).
 */
export function newAuthorization(oidc) {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  const state = b64url(randomBytes(12));
  const nonce = b64url(randomBytes(12));
  const url = new URL(`${oidc.issuer}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: oidc.redirectUri,
    scope: oidc.scope,
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  return { url: url.toString(), verifier, state, nonce };
}

/** The callback redirect: checks state and iss (RFC 9207), returns the code. */
export function codeFrom(oidc, step, res, auth) {
  expectRedirect(step, res, `${oidc.redirectUri}?`);
  const params = new URL(res.location).searchParams;
  if (params.get('error'))
    throw new StepError(step, `error redirect: ${params.get('error')}: ${params.get('error_description')}`, res.status);
  if (params.get('state') !== auth.state) throw new StepError(step, 'state on the callback does not match', res.status);
  if (params.get('iss') !== oidc.issuer)
    throw new StepError(step, `iss on the callback is ${params.get('iss')}`, res.status);
  const code = params.get('code');
  if (!code) throw new StepError(step, 'no code on the callback', res.status);
  return code;
}

/**
 * authorize → sign-in page → sign-in POST → continue (→ consent page → allow, when `consent`) → code
 * redirect; returns the code. `times` gets the milliseconds of authorize, sign-in and continue.
 */
export async function signInPages(
  oidc,
  browser,
  auth,
  user,
  { consent = true, codeStep = 'consent', times = {} } = {},
) {
  let t = now();
  let res = await browser.fetch(auth.url);
  expectRedirect('authorize', res, `${oidc.loginUrl}/sign-in?request=`);
  res = await browser.fetch(res.location);
  expectStatus('authorize', res, 200);
  const signInFields = Browser.hiddenFields(res.body, '/sign-in');
  if (!signInFields?.csrf || !signInFields.request)
    throw new StepError('authorize', 'the sign-in page has no csrf or request field', res.status);
  times.authorize = now() - t;

  t = now();
  res = await browser.fetch(`${oidc.loginUrl}/sign-in`, {
    form: { ...signInFields, email: user.email, password: user.password },
  });
  expectRedirect('sign-in', res, `${oidc.issuer}/oauth2/authorize/continue?request=`);
  times['sign-in'] = now() - t;

  t = now();
  res = await browser.fetch(res.location);
  if (consent) {
    expectRedirect('consent', res, `${oidc.loginUrl}/consent?request=`);
    res = await browser.fetch(res.location);
    expectStatus('consent', res, 200);
    const fields = Browser.hiddenFields(res.body, '/consent');
    if (!fields?.csrf) throw new StepError('consent', 'the consent page has no csrf field', res.status);
    res = await browser.fetch(`${oidc.loginUrl}/consent`, { form: { ...fields, decision: 'allow' } });
  }
  const code = codeFrom(oidc, codeStep, res, auth);
  times.continue = now() - t;
  return code;
}

/** grant_type=authorization_code with the PKCE verifier; a 200 or a StepError of `step`. Returns { res, tokens }. */
export async function exchangeCode(oidc, auth, code, step) {
  const res = await oidc.client.request(`${oidc.issuer}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: oidc.redirectUri,
      client_id: oidc.clientId,
      code_verifier: auth.verifier,
    }).toString(),
  });
  expectStatus(step, res, 200);
  return { res, tokens: JSON.parse(res.body) };
}

const adminHeaders = (adminToken) => ({
  authorization: `Bearer ${adminToken}`,
  'content-type': 'application/json',
  accept: 'application/json',
});

/** POST /api/admin/applications; returns the client_id. */
export async function createApplication(client, adminToken, { clientName, redirectUri, scope }) {
  const res = await client.request(`${client.origin}/api/admin/applications`, {
    method: 'POST',
    headers: adminHeaders(adminToken),
    body: JSON.stringify({ clientName, redirectUris: [redirectUri], allowedScopes: scope.split(' ') }),
  });
  if (res.status !== 201) throw new Error(`creating the application: ${res.status} ${res.body}`);
  return JSON.parse(res.body).clientId;
}

/** POST /api/admin/users (email verified); returns the user's id. */
export async function createUser(client, adminToken, { email, password, name }) {
  const r = await client.request(`${client.origin}/api/admin/users`, {
    method: 'POST',
    headers: adminHeaders(adminToken),
    body: JSON.stringify({ email, password, name, emailVerified: true }),
  });
  if (r.status !== 201) throw new Error(`creating user ${email}: ${r.status} ${r.body}`);
  return JSON.parse(r.body).id;
}

// ------------------------------------------------------------------------------------------ processes
export const exited = (child) => child.exitCode !== null || child.signalCode !== null;

function collectLines(stream, source, log) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      if (!line.trim()) continue;
      log.tail.push(`${source}: ${line}`);
      if (log.tail.length > 40) log.tail.shift();
      let level = 'text';
      try {
        const n = JSON.parse(line).level;
        level = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }[n] ?? String(n);
      } catch {
        // not a pino line (a crash trace, a warning from node)
      }
      log.levels.set(level, (log.levels.get(level) ?? 0) + 1);
      if (level !== 'trace' && level !== 'debug' && level !== 'info' && log.warnOrAbove.length < 1000)
        log.warnOrAbove.push(line);
    }
  });
}

/** GET `readyUrl` on a fresh connection: its status, undefined when nothing answers within 2 s. */
function probeStatus(readyUrl) {
  const u = new URL(readyUrl);
  return new Promise((resolve) => {
    const req = http.get({ host: u.hostname, port: u.port, path: u.pathname, agent: false, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

/**
 * Spawns `node args` in its own process group as run.processes[name] and waits for a 200 on `readyUrl`
 * (asked by `probe`, by default on a fresh connection); returns the milliseconds that took. `label` names
 * the process in messages; `exitedText` and `timeoutPrefix` start the error when it exits or stays silent.
 */
export async function startProcess({
  name,
  args,
  env,
  readyUrl,
  probe = () => probeStatus(readyUrl),
  label = name,
  exitedText = `${name}: exited`,
  timeoutPrefix = `${name}: `,
}) {
  const started = now();
  const log = { warnOrAbove: [], tail: [], levels: new Map() };
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  run.processes[name] = { child, log, label };
  collectLines(child.stdout, 'stdout', log);
  collectLines(child.stderr, 'stderr', log);
  for (;;) {
    if (exited(child))
      throw new Error(
        `${exitedText} (${child.exitCode ?? child.signalCode}) before answering:\n${log.tail.join('\n')}`,
      );
    let status;
    try {
      status = await probe();
    } catch {
      // not listening yet
    }
    if (status === 200) break;
    if (now() - started > 60_000)
      throw new Error(`${timeoutPrefix}no 200 on ${new URL(readyUrl).pathname} within 60 s:\n${log.tail.join('\n')}`);
    await sleep(25);
  }
  return now() - started;
}

/** `node dist/src/cli.js serve` as run.processes.server ("the server"), /healthz polled through `client`. */
export function startServer(client, env) {
  const readyUrl = `${client.origin}/healthz`;
  return startProcess({
    name: 'server',
    label: 'the server',
    args: ['dist/src/cli.js', 'serve'],
    env,
    readyUrl,
    probe: async () => (await client.request(readyUrl)).status,
    exitedText: 'the server exited',
    timeoutPrefix: '',
  });
}

/** SIGTERM to the process group, SIGKILL after 15 s. */
async function stopProcess(name) {
  const { child, label } = run.processes[name] ?? {};
  if (!child || exited(child)) return;
  const gone = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const timedOut = await Promise.race([gone.then(() => false), sleep(15_000).then(() => true)]);
  if (timedOut) {
    console.error(`${run.script}: ${label} did not stop within 15 s of SIGTERM; killing it`);
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    await gone;
  }
}

/** "\n<name> log lines at warn or above: …" and the first ten of them, for every process. */
export function printLogs() {
  for (const [name, { log }] of Object.entries(run.processes)) {
    console.log(
      `\n${name} log lines at warn or above: ${log.warnOrAbove.length}` +
        ` (by level: ${[...log.levels].map(([l, n]) => `${l} ${n}`).join(', ') || 'none'})`,
    );
    for (const line of log.warnOrAbove.slice(0, 10)) console.log(`  ${line.slice(0, 400)}`);
  }
}

// -------------------------------------------------------------------------------------------- cleanup
let cleaning;

/** Stops the processes (last started first), closes the HTTP agents, drops the database, removes DATA_DIR. Once. */
export function cleanup() {
  cleaning ??= (async () => {
    for (const name of Object.keys(run.processes).reverse()) {
      try {
        await stopProcess(name);
      } catch (error) {
        console.error(`${run.script}: stopping ${run.processes[name].label}: ${error.message}`);
      }
    }
    for (const agent of run.agents) agent.destroy();
    if (run.dbName) await dropDatabase();
    if (run.dataDir) rmSync(run.dataDir, { recursive: true, force: true });
  })();
  return cleaning;
}

/**
 * First SIGINT/SIGTERM: run.interrupted, `message`, run.onInterrupt; the script winds down and its finally
 * block cleans up (or, if that takes more than 10 s, the timer does). A second signal kills the processes
 * at once, drops the database and exits 130.
 */
export function handleSignals(message) {
  let signals = 0;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      signals++;
      run.interrupted = true;
      if (signals === 1) {
        console.error(`\n${run.script}: ${signal}: ${message}`);
        run.onInterrupt?.();
        setTimeout(() => cleanup().finally(() => process.exit(130)), 10_000).unref();
        return;
      }
      for (const { child } of Object.values(run.processes)) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      cleanup().finally(() => process.exit(130));
    });
  }
}

/**
 * Runs `main`; on an error prints it and the processes' last output; exit code 1 (130 if interrupted);
 * always cleans up.
 */
export async function runMain(main) {
  try {
    await main();
  } catch (error) {
    if (run.interrupted) console.error(`${run.script}: interrupted (${error.message})`);
    else console.error(`${run.script}: ${error.stack ?? error}`);
    for (const [name, { log }] of Object.entries(run.processes))
      if (log.tail.length) console.error(`last ${name} output:\n${log.tail.join('\n')}`);
    process.exitCode = run.interrupted ? 130 : 1;
  } finally {
    await cleanup();
  }
}
