#!/usr/bin/env node
// External API benchmark: GET /api/external/me with valid bearer tokens, driven by autocannon (programmatic
// API) over loopback, against `node dist/src/cli.js serve` on a fresh PostgreSQL database that is dropped at
// the end; and, in the same run, a bare Fastify route in a second process on this machine, driven with the
// same settings, for the ratio /me ÷ bare.
// Setup (unmeasured): --tokens users each sign in once through the hosted pages (authorize → sign-in →
// continue → consent → code → token, scope "openid profile email", PKCE S256); every access token is checked
// once on /me (200, its own sub and email). The requests spread the tokens: every connection cycles through
// all of them, each connection starting at a different one.
// Measured: warm-up (--warmup seconds per target, not reported), then --rounds rounds of bare, me (one target
// at a time, never both at once), --duration seconds each, --connections connections, no pipelining.
// The bare server answers GET /api/external/me with the body /me gave for the first token and the same
// cache-control header, so both targets get the same requests (Authorization header included) and send
// bodies of the same size; it checks nothing and touches no database.
// Usage: node bench/external.js [--duration 15] [--connections 50] [--tokens 20] [--rounds 2] [--warmup 2]
//                               [--pool N] [--no-build]
//   DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the server, user and password;
//   the run creates idp_bench_<random> next to it (via the "postgres" database) and drops it afterwards.
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { arch, cpus, loadavg, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';

const root = join(fileURLToPath(import.meta.url), '..', '..');

// ---------------------------------------------------------------------------------------------- options
let opts;
try {
  opts = parseArgs({
    options: {
      duration: { type: 'string', default: '15' },
      connections: { type: 'string', default: '50' },
      tokens: { type: 'string', default: '20' },
      rounds: { type: 'string', default: '2' },
      warmup: { type: 'string', default: '2' },
      pool: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
} catch (error) {
  console.error(`external.js: ${error.message}`);
  process.exit(2);
}
if (opts.help) {
  console.log(
    'Usage: node bench/external.js [--duration S per target and round (default 15)] [--connections N (default 50)]\n' +
      '                             [--tokens N access tokens (default 20)] [--rounds N of bare, me (default 2)]\n' +
      '                             [--warmup S per target, unmeasured (default 2; 0: none)] [--pool DATABASE_POOL_SIZE] [--no-build]',
  );
  process.exit(0);
}
const wholeNumber = (name, value, min, max) => {
  const n = Number(value);
  if (!/^\d+$/.test(String(value)) || n < min || n > max) {
    console.error(`external.js: --${name} must be a whole number from ${min} to ${max}`);
    process.exit(2);
  }
  return n;
};
const DURATION_S = wholeNumber('duration', opts.duration, 1, 3600);
const CONNECTIONS = wholeNumber('connections', opts.connections, 1, 1000);
const TOKENS = wholeNumber('tokens', opts.tokens, 1, 200);
const ROUNDS = wholeNumber('rounds', opts.rounds, 1, 20);
const WARMUP_S = wholeNumber('warmup', opts.warmup, 0, 60);
const POOL = opts.pool !== undefined ? wholeNumber('pool', opts.pool, 1, 200) : undefined;
const REQUEST_TIMEOUT_MS = 30_000;
const AUTOCANNON_TIMEOUT_S = 10; // a request without an answer for this long counts as a timeout
const SIGN_IN_CONCURRENCY = 5;
const SCOPE = 'openid profile email';
const PATH = '/api/external/me';

const DEFAULT_DB = 'postgres://postgres@127.0.0.1:5432/test';
const dbBase = new URL(process.env.DATABASE_URL || DEFAULT_DB);
if (!/^postgres(ql)?:$/.test(dbBase.protocol)) {
  console.error('external.js: DATABASE_URL must be a postgres:// URL');
  process.exit(2);
}
// Only loopback traffic: refuse a database elsewhere (a Unix socket in ?host=/path counts as local).
const socketHost = dbBase.searchParams.get('host');
if (!(socketHost?.startsWith('/') || ['127.0.0.1', 'localhost', '[::1]', ''].includes(dbBase.hostname))) {
  console.error(`external.js: DATABASE_URL points at ${dbBase.hostname}; this benchmark only talks to loopback`);
  process.exit(2);
}
const dbUrlFor = (name) => {
  const u = new URL(dbBase);
  u.pathname = `/${name}`;
  return u.toString();
};

// ---------------------------------------------------------------------------------------------- helpers
const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const b64url = (buf) => Buffer.from(buf).toString('base64url');
const fmtLoad = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const percentile = (sorted, p) => (sorted.length ? sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)] : NaN);
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function freePort() {
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

/** CPU seconds (user + system) of a process so far, from /proc; undefined elsewhere. */
function cpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return undefined;
  }
}

function git(...args) {
  const r = spawnSync('git', args, { cwd: root, encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

class StepError extends Error {
  constructor(step, message, status) {
    super(message);
    this.step = step;
    this.status = status;
  }
}

// ------------------------------------------------------------------------------------ HTTP (loopback)
let origin; // http://127.0.0.1:<port>, the server under test: the only place setup requests go
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function request(url, { method = 'GET', headers = {}, body } = {}) {
  const u = new URL(url);
  if (u.origin !== origin) return Promise.reject(new Error(`refusing a request outside the server under test: ${u.origin}`));
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
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms: ${method} ${u.pathname}`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** A cookie jar and manual redirects, as in test/helpers/browser-client.ts (and bench/flow.js). */
class Browser {
  cookies = new Map();

  async fetch(url, { form, headers: extra } = {}) {
    const headers = { accept: 'text/html', 'user-agent': 'idp-bench-external', ...extra };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await request(url, { method: form ? 'POST' : 'GET', headers, body });
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
    const form = new RegExp(`<form[^>]*action="[^"]*${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>([\\s\\S]*?)</form>`).exec(html);
    if (!form) return undefined;
    const fields = {};
    for (const m of form[1].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[m[1]] = m[2].replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
    }
    return fields;
  }
}

const snippet = (res) => res.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 160);

function expectStatus(step, res, status) {
  if (res.status !== status) {
    throw new StepError(step, `expected ${status}, got ${res.status}${res.location ? ` → ${res.location}` : ''}: ${snippet(res)}`, res.status);
  }
}

function expectRedirect(step, res, prefix) {
  if (res.status !== 303 && res.status !== 302) expectStatus(step, res, 303);
  if (!res.location?.startsWith(prefix)) {
    throw new StepError(step, `expected a redirect to ${prefix}…, got ${res.status} → ${res.location}`, res.status);
  }
}

// ---------------------------------------------------------------------------- sign-in (token source)
let issuer;
let loginUrl;
let redirectUri;
let clientId;

function newAuthorization() {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  const state = b64url(randomBytes(12));
  const nonce = b64url(randomBytes(12));
  const url = new URL(`${issuer}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: SCOPE,
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  return { url: url.toString(), verifier, state, nonce };
}

/** The callback redirect: checks state and iss (RFC 9207), returns the code. */
function codeFrom(step, res, auth) {
  expectRedirect(step, res, `${redirectUri}?`);
  const params = new URL(res.location).searchParams;
  if (params.get('error')) throw new StepError(step, `error redirect: ${params.get('error')}: ${params.get('error_description')}`, res.status);
  if (params.get('state') !== auth.state) throw new StepError(step, 'state on the callback does not match', res.status);
  if (params.get('iss') !== issuer) throw new StepError(step, `iss on the callback is ${params.get('iss')}`, res.status);
  const code = params.get('code');
  if (!code) throw new StepError(step, 'no code on the callback', res.status);
  return code;
}

/** A new browser: authorize → sign-in page → sign-in POST → continue → consent → code → token. */
async function signIn(user) {
  const browser = new Browser();
  const auth = newAuthorization();
  let res = await browser.fetch(auth.url);
  expectRedirect('authorize', res, `${loginUrl}/sign-in?request=`);
  res = await browser.fetch(res.location);
  expectStatus('authorize', res, 200);
  const signInFields = Browser.hiddenFields(res.body, '/sign-in');
  if (!signInFields?.csrf || !signInFields.request) throw new StepError('authorize', 'the sign-in page has no csrf or request field', res.status);
  res = await browser.fetch(`${loginUrl}/sign-in`, { form: { ...signInFields, email: user.email, password: user.password } });
  expectRedirect('sign-in', res, `${issuer}/oauth2/authorize/continue?request=`);
  res = await browser.fetch(res.location);
  expectRedirect('consent', res, `${loginUrl}/consent?request=`);
  res = await browser.fetch(res.location);
  expectStatus('consent', res, 200);
  const fields = Browser.hiddenFields(res.body, '/consent');
  if (!fields?.csrf) throw new StepError('consent', 'the consent page has no csrf field', res.status);
  res = await browser.fetch(`${loginUrl}/consent`, { form: { ...fields, decision: 'allow' } });
  const code = codeFrom('consent', res, auth);

  res = await request(`${issuer}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: auth.verifier }).toString(),
  });
  expectStatus('token', res, 200);
  const tokens = JSON.parse(res.body);
  if (tokens.token_type !== 'Bearer' || !tokens.access_token) throw new StepError('token', `unexpected token response: ${res.body.slice(0, 160)}`, 200);
  if (tokens.scope !== undefined && tokens.scope.split(' ').sort().join(' ') !== SCOPE.split(' ').sort().join(' ')) {
    throw new StepError('token', `granted scope "${tokens.scope}", asked for "${SCOPE}"`, 200);
  }
  return tokens.access_token;
}

/** One unmeasured GET /me per token: 200, the claims of its own user. Returns the body. */
async function checkMe(user, token) {
  const res = await request(`${origin}${PATH}`, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
  expectStatus('me', res, 200);
  const body = JSON.parse(res.body);
  if (body.sub !== user.id || body.email !== user.email || body.email_verified !== true || body.name !== user.name) {
    throw new StepError('me', `claims of another user or incomplete: ${res.body.slice(0, 200)}`, 200);
  }
  return res;
}

// -------------------------------------------------------------------------------------------- processes
let interrupted = false; // Ctrl-C or SIGTERM
const processes = {}; // name → { child, log }

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
      if (level !== 'trace' && level !== 'debug' && level !== 'info' && log.warnOrAbove.length < 1000) log.warnOrAbove.push(line);
    }
  });
}

const exited = (child) => child.exitCode !== null || child.signalCode !== null;

/** Spawns `node args` in its own process group and waits for a 200 on `readyPath`. */
async function startProcess(name, args, env, readyUrl) {
  const started = now();
  const log = { warnOrAbove: [], tail: [], levels: new Map() };
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  processes[name] = { child, log };
  collectLines(child.stdout, 'stdout', log);
  collectLines(child.stderr, 'stderr', log);
  const u = new URL(readyUrl);
  for (;;) {
    if (exited(child)) throw new Error(`${name}: exited (${child.exitCode ?? child.signalCode}) before answering:\n${log.tail.join('\n')}`);
    const status = await new Promise((resolve) => {
      const req = http.get({ host: u.hostname, port: u.port, path: u.pathname, agent: false, timeout: 2000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
    });
    if (status === 200) break;
    if (now() - started > 60_000) throw new Error(`${name}: no 200 on ${u.pathname} within 60 s:\n${log.tail.join('\n')}`);
    await sleep(25);
  }
  return now() - started;
}

async function stopProcess(name) {
  const child = processes[name]?.child;
  if (!child || exited(child)) return;
  const gone = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const timedOut = await Promise.race([gone.then(() => false), sleep(15_000).then(() => true)]);
  if (timedOut) {
    console.error(`external.js: ${name} did not stop within 15 s of SIGTERM; killing it`);
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    await gone;
  }
}

// The bare server: one Fastify route, no logger, no plugins, no database. CommonJS under `node -e`, so
// require() resolves fastify from the repository's node_modules (cwd).
const BARE_SCRIPT = `
const app = require('fastify')({ logger: false });
const body = JSON.parse(process.env.BARE_BODY);
app.get('/healthz', async () => ({ ok: true }));
app.get(${JSON.stringify(PATH)}, async (request, reply) => {
  reply.header('cache-control', 'no-store');
  return body;
});
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) }).catch((error) => { console.error(error); process.exit(1); });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => app.close().then(() => process.exit(0)));
`;

// -------------------------------------------------------------------------------------------- cleanup
let dbName;
let dataDir;
let cleaning;
let currentRun; // the autocannon instance running now, stopped on Ctrl-C

function cleanup() {
  cleaning ??= (async () => {
    for (const name of ['bare', 'server']) {
      try {
        await stopProcess(name);
      } catch (error) {
        console.error(`external.js: stopping ${name}: ${error.message}`);
      }
    }
    agent.destroy();
    if (dbName) {
      const admin = new pg.Client({ connectionString: dbUrlFor('postgres'), connectionTimeoutMillis: 10_000 });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      } catch (error) {
        console.error(`external.js: could not drop database ${dbName}: ${error.message} (drop it by hand)`);
      } finally {
        await admin.end().catch(() => {});
      }
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  })();
  return cleaning;
}

// First signal: the running measurement stops, then the finally block cleans up (or, if that takes more
// than 10 s, the timer does). A second signal kills both servers at once, drops the database and exits.
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    signals++;
    interrupted = true;
    if (signals === 1) {
      console.error(`\nexternal.js: ${signal}: stopping the measurement, then the servers, and dropping the database (again to stop at once)`);
      currentRun?.stop();
      setTimeout(() => cleanup().finally(() => process.exit(130)), 10_000).unref();
      return;
    }
    for (const { child } of Object.values(processes)) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    cleanup().finally(() => process.exit(130));
  });
}

// ----------------------------------------------------------------------------------------- measuring
/** The same requests for both targets: GET PATH, one token each; connection i starts at token i. */
function requestsFor(tokens) {
  return tokens.map((token) => ({ method: 'GET', path: PATH, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } }));
}

/**
 * One autocannon run against `target` for `seconds`. Per-second samples are autocannon's own (its
 * 'tick' events carry the count it records in its requests histogram); latencies are those of the 2xx
 * responses from its 'response' events (what its latency histogram records, unrounded).
 */
async function measure(target, seconds, tokens) {
  const base = requestsFor(tokens);
  let clientIndex = 0;
  const ticks = [];
  const latencies = [];
  const proc = processes[target.process].child;
  const cpu0 = cpuSeconds(proc.pid);
  const driver0 = process.cpuUsage();
  const load1 = loadavg()[0];
  const t0 = now();
  const instance = autocannon({
    url: target.origin,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
    timeout: AUTOCANNON_TIMEOUT_S,
    bailout: 1000, // a dead server: stop after this many socket errors instead of spinning
    requests: base,
    setupClient(client) {
      const k = clientIndex++ % base.length;
      client.setRequests(base.slice(k).concat(base.slice(0, k)).map((r) => ({ ...r, headers: { ...r.headers } })));
    },
  });
  currentRun = instance;
  instance.on('tick', ({ counter }) => ticks.push(counter));
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  currentRun = undefined;
  const wall = (now() - t0) / 1000;
  const cpu = cpuSeconds(proc.pid);
  const driver = process.cpuUsage(driver0);
  // The last tick comes after the stop with a zero count; autocannon records `samples` values.
  const samples = ticks.slice(0, result.samples);
  const counted = samples.reduce((a, b) => a + b, 0);
  const responses = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  if (counted !== responses) console.log(`  (note: per-second samples add up to ${counted}, autocannon counted ${responses} responses)`);
  return {
    target: target.name,
    samples,
    latencies,
    load1,
    total: responses,
    sent: result.requests.sent,
    acMean: result.requests.average,
    acMedian: result.requests.p50,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
    statuses: Object.entries(result.statusCodeStats).map(([s, { count }]) => [Number(s), count]),
    bytesPerResponse: result['2xx'] ? result.throughput.total / result['2xx'] : NaN, // bytes are counted for 2xx only
    serverCpu: cpu0 === undefined || cpu === undefined ? undefined : (cpu - cpu0) / wall,
    driverCpu: (driver.user + driver.system) / 1e6 / wall,
    exited: exited(proc),
  };
}

const pct = (share) => (share === undefined ? '?' : `${(share * 100).toFixed(0)}%`);
const fmtStatuses = (statuses) => statuses.sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(', ') || 'none';

function describe(label, m) {
  const sorted = [...m.latencies].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(12)} req/s mean ${mean(m.samples).toFixed(0)} median ${median(m.samples).toFixed(0)}` +
      ` (${m.samples.length} samples, min ${Math.min(...m.samples)} max ${Math.max(...m.samples)})` +
      ` | latency p50 ${percentile(sorted, 0.5).toFixed(2)} ms p99 ${percentile(sorted, 0.99).toFixed(2)} ms` +
      ` | ${m.total} responses, non-2xx ${m.non2xx}, errors ${m.errors}, timeouts ${m.timeouts}` +
      ` | statuses ${fmtStatuses(m.statuses)}, ${m.bytesPerResponse.toFixed(0)} B/response` +
      ` | CPU: ${m.target === 'me' ? 'server' : 'bare'} ${pct(m.serverCpu)}, driver ${pct(m.driverCpu)} | load1 ${m.load1.toFixed(2)}`,
  );
}

// ----------------------------------------------------------------------------------------------- main
async function main() {
  const cliJs = join(root, 'dist', 'src', 'cli.js');
  if (!opts['no-build'] && (!existsSync(cliJs) || statSync(cliJs).mtimeMs < newestSourceMtime())) {
    console.log('building (dist/ is missing or older than the sources): npm run build');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`npm run build failed (exit ${r.status ?? r.signal})`);
  }
  if (interrupted) return;

  const loadStart = fmtLoad();
  const port = await freePort();
  const barePort = await freePort();
  const callbackPort = await freePort(); // closed again: nothing listens there, and nothing fetches it
  origin = `http://127.0.0.1:${port}`;
  const bareOrigin = `http://127.0.0.1:${barePort}`;
  issuer = `${origin}/api/auth`;
  loginUrl = `${origin}/login`;
  redirectUri = `http://127.0.0.1:${callbackPort}/cb`;
  const adminToken = b64url(randomBytes(32));

  // A fresh database for this run.
  const name = `idp_bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: dbUrlFor('postgres'), connectionTimeoutMillis: 10_000 });
  let pgVersion;
  try {
    await admin.connect();
    pgVersion = (await admin.query('SHOW server_version')).rows[0].server_version;
    await admin.query(`CREATE DATABASE "${name}"`);
    dbName = name; // from here on, cleanup drops it
  } finally {
    await admin.end().catch(() => {});
  }
  if (interrupted) return;
  dataDir = mkdtempSync(join(tmpdir(), 'idp-bench-external-'));

  // Only these variables: nothing from the caller's shell changes the server's configuration.
  const baseEnv = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...(process.env.HOME && { HOME: process.env.HOME }),
    NODE_ENV: 'production',
  };
  const env = {
    ...baseEnv,
    HOST: '127.0.0.1',
    PORT: String(port),
    BASE_URL: origin,
    DATABASE_URL: dbUrlFor(dbName),
    ...(POOL && { DATABASE_POOL_SIZE: String(POOL) }),
    DATA_DIR: dataDir,
    SECRET_KEY: b64url(randomBytes(32)),
    ADMIN_API_TOKEN: adminToken,
    LOG_LEVEL: 'warn',
  };

  const commit = git('rev-parse', '--short', 'HEAD');
  const dirty = git('status', '--porcelain', '--', 'src', 'plugins', 'schemas', 'db');
  const cpu = cpus();
  const fastifyVersion = JSON.parse(readFileSync(join(root, 'node_modules', 'fastify', 'package.json'), 'utf8')).version;
  const autocannonVersion = JSON.parse(readFileSync(join(root, 'node_modules', 'autocannon', 'package.json'), 'utf8')).version;
  console.log(`node ${process.version}, ${platform()} ${arch()}, ${cpu.length} CPUs (${cpu[0]?.model.trim() ?? 'unknown'})`);
  console.log(`load average at start: ${loadStart}`);
  console.log(`commit ${commit ?? 'unknown'}${dirty ? ' with uncommitted changes in src/plugins/schemas/db' : ''}`);
  console.log(
    `configuration: autocannon ${autocannonVersion}, ${CONNECTIONS} connections, pipelining 1, ${DURATION_S} s per target and round, ` +
      `${ROUNDS} round(s) of bare then me, ${WARMUP_S ? `${WARMUP_S} s unmeasured warm-up per target` : 'no warm-up'}, ` +
      `${TOKENS} access tokens (scope "${SCOPE}", one user each) spread over the requests\n` +
      `  me:   GET ${PATH} with Authorization: Bearer, node dist/src/cli.js serve on ${origin}, NODE_ENV=production, LOG_LEVEL=warn, ` +
      `DATABASE_POOL_SIZE=${POOL ?? '10 (default)'}\n` +
      `  bare: GET ${PATH}, the same requests, Fastify ${fastifyVersion} (no logger, no plugins) in node -e on ${bareOrigin}, NODE_ENV=production\n` +
      `  database: PostgreSQL ${pgVersion} at ${dbBase.hostname || 'local socket'}:${dbBase.port || 5432}, fresh database ${dbName} (dropped at the end)\n` +
      '  driver, both servers and PostgreSQL share this machine',
  );

  const ready = await startProcess('server', ['dist/src/cli.js', 'serve'], env, `${origin}/healthz`);
  console.log(`setup: server answered /healthz ${ready.toFixed(0)} ms after launch (migrations on an empty database included)`);
  if (interrupted) return;

  const adminHeaders = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', accept: 'application/json' };
  let res = await request(`${origin}/api/admin/applications`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify({ clientName: 'External API benchmark', redirectUris: [redirectUri], allowedScopes: SCOPE.split(' ') }),
  });
  if (res.status !== 201) throw new Error(`creating the application: ${res.status} ${res.body}`);
  clientId = JSON.parse(res.body).clientId;

  let t = now();
  const users = [];
  for (let i = 0; i < TOKENS; i++) {
    const user = { email: `bench-user-${i}@example.com`, password: b64url(randomBytes(18)), name: `Bench User ${i}` };
    const r = await request(`${origin}/api/admin/users`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ email: user.email, password: user.password, name: user.name, emailVerified: true }),
    });
    if (r.status !== 201) throw new Error(`creating user ${user.email}: ${r.status} ${r.body}`);
    users.push({ ...user, id: JSON.parse(r.body).id });
  }
  console.log(`setup: application and ${users.length} users created in ${(now() - t).toFixed(0)} ms`);
  if (interrupted) return;

  // One sign-in flow (with consent) per user, a few at a time; then one checked /me per token.
  t = now();
  const tokens = new Array(users.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(SIGN_IN_CONCURRENCY, users.length) }, async () => {
      while (next < users.length && !interrupted) {
        const i = next++;
        try {
          tokens[i] = await signIn(users[i]);
        } catch (error) {
          throw new Error(`sign-in of ${users[i].email}, step ${error.step ?? 'network'}: ${error.message}`);
        }
      }
    }),
  );
  if (interrupted) return;
  let meBody;
  for (let i = 0; i < users.length; i++) {
    const r = await checkMe(users[i], tokens[i]);
    if (i === 0) meBody = r.body;
  }
  console.log(`setup: ${tokens.length} sign-in flows (authorize → sign-in → consent → token) in ${(now() - t).toFixed(0)} ms; every token answered 200 on /me with its own claims`);
  agent.destroy(); // no setup connections left open during the measurement

  t = now();
  const bareReady = await startProcess('bare', ['-e', BARE_SCRIPT], { ...baseEnv, PORT: String(barePort), BARE_BODY: meBody }, `${bareOrigin}/healthz`);
  console.log(`setup: bare Fastify server answered ${bareReady.toFixed(0)} ms after launch; it returns /me's body for the first token (${Buffer.byteLength(meBody)} B)`);
  if (interrupted) return;

  const targets = { bare: { name: 'bare', origin: bareOrigin, process: 'bare' }, me: { name: 'me', origin, process: 'server' } };
  const order = ['bare', 'me'];
  const serverProblem = () => Object.entries(processes).find(([, { child }]) => exited(child));

  if (WARMUP_S) {
    t = now();
    const warm = [];
    for (const key of order) {
      if (interrupted || serverProblem()) break;
      warm.push(await measure(targets[key], WARMUP_S, tokens));
    }
    console.log(
      `setup: warm-up ${warm.map((m) => `${m.target} ${m.total} responses (non-2xx ${m.non2xx}, errors ${m.errors})`).join(', ')} in ${((now() - t) / 1000).toFixed(1)} s, not counted`,
    );
  }

  console.log('\nrounds (req/s: per-second samples; latency: 2xx responses; CPU: share of one core; load1: 1-minute load average at the start):');
  const runs = { bare: [], me: [] };
  for (let round = 1; round <= ROUNDS && !interrupted; round++) {
    for (const key of order) {
      if (interrupted) break;
      const problem = serverProblem();
      if (problem) throw new Error(`${problem[0]} exited (${problem[1].child.exitCode ?? problem[1].child.signalCode}):\n${problem[1].log.tail.join('\n')}`);
      const m = await measure(targets[key], DURATION_S, tokens);
      runs[key].push(m);
      describe(`${round} ${key}`, m);
    }
  }

  // Summary over all rounds: all per-second samples of a target together, all 2xx latencies together.
  const combined = {};
  for (const key of order) {
    const ms = runs[key];
    if (!ms.length) continue;
    const samples = ms.flatMap((m) => m.samples);
    const latencies = ms.flatMap((m) => m.latencies).sort((a, b) => a - b);
    const sum = (f) => ms.reduce((a, m) => a + f(m), 0);
    combined[key] = {
      mean: mean(samples),
      median: median(samples),
      n: samples.length,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      responses: sum((m) => m.total),
      non2xx: sum((m) => m.non2xx),
      errors: sum((m) => m.errors),
      timeouts: sum((m) => m.timeouts),
      statuses: [...ms.flatMap((m) => m.statuses).reduce((acc, [s, n]) => acc.set(s, (acc.get(s) ?? 0) + n), new Map())],
      cpu: mean(ms.map((m) => m.serverCpu ?? NaN)),
      driver: mean(ms.map((m) => m.driverCpu)),
    };
  }
  console.log(`\nsummary over ${runs.me.length} round(s) of ${DURATION_S} s per target, ${CONNECTIONS} connections:`);
  const rows = [['target', 'samples', 'req/s mean', 'req/s median', 'p50 ms', 'p99 ms', 'responses', 'non-2xx', 'errors', 'timeouts', 'CPU', 'driver CPU']];
  for (const [key, c] of Object.entries(combined)) {
    rows.push([
      key === 'me' ? `GET ${PATH}` : 'bare Fastify',
      String(c.n),
      c.mean.toFixed(0),
      c.median.toFixed(0),
      c.p50.toFixed(2),
      c.p99.toFixed(2),
      String(c.responses),
      String(c.non2xx),
      String(c.errors),
      String(c.timeouts),
      Number.isNaN(c.cpu) ? '?' : pct(c.cpu),
      pct(c.driver),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`);
  for (const [key, c] of Object.entries(combined)) console.log(`  ${key} HTTP statuses: ${fmtStatuses(c.statuses)}`);
  if (combined.me && combined.bare) {
    const perRound = runs.me.map((m, i) => (runs.bare[i] ? (mean(m.samples) / mean(runs.bare[i].samples)).toFixed(3) : '?'));
    console.log(
      `  ratio /me ÷ bare: req/s mean ${(combined.me.mean / combined.bare.mean).toFixed(3)}, median ${(combined.me.median / combined.bare.median).toFixed(3)}` +
        ` (per round, means: ${perRound.join(', ')}); latency p50 ${(combined.me.p50 / combined.bare.p50).toFixed(2)}×, p99 ${(combined.me.p99 / combined.bare.p99).toFixed(2)}×`,
    );
  }

  for (const [procName, { log }] of Object.entries(processes)) {
    console.log(`\n${procName} log lines at warn or above: ${log.warnOrAbove.length}` +
      ` (by level: ${[...log.levels].map(([l, n]) => `${l} ${n}`).join(', ') || 'none'})`);
    for (const line of log.warnOrAbove.slice(0, 10)) console.log(`  ${line.slice(0, 400)}`);
  }
  console.log(`load average at end: ${fmtLoad()}`);
  const problem = serverProblem();
  if (problem) console.log(`${problem[0]} exited during the run (${problem[1].child.exitCode ?? problem[1].child.signalCode})`);
  const bad = Object.values(combined).some((c) => c.non2xx || c.errors || c.timeouts);
  if (bad || problem) process.exitCode = 1;
  if (interrupted) process.exitCode = 130;
}

try {
  await main();
  if (interrupted) console.error('external.js: interrupted');
} catch (error) {
  if (interrupted) console.error(`external.js: interrupted (${error.message})`);
  else console.error(`external.js: ${error.stack ?? error}`);
  for (const [name, { log }] of Object.entries(processes)) if (log.tail.length) console.error(`last ${name} output:\n${log.tail.join('\n')}`);
  process.exitCode = interrupted ? 130 : 1;
} finally {
  await cleanup();
}
