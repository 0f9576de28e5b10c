#!/usr/bin/env node
// Refresh benchmark: grant_type=refresh_token with rotation, over real HTTP on loopback, against
// `node dist/src/cli.js serve` on a fresh PostgreSQL database that is dropped at the end.
// Setup (unmeasured): one user per chain signs in through the hosted pages (authorize → sign-in → continue
// → consent → code → token, scope "openid offline_access", PKCE S256) and gets a refresh token.
// Measured: every chain loops for --duration seconds: POST /api/auth/oauth2/token grant_type=refresh_token
// with its latest refresh token, and carries on with the one in the response. The server rotates the token
// on every use and revokes the whole family when an old one is presented, so a chain never sends a token
// twice: any non-200 is an error, and an invalid_grant ends the chain (its family is gone) and is reported.
// Usage: node bench/refresh.js [--duration 20] [--chains 10] [--pool N] [--no-build]
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
import pg from 'pg';

const root = join(fileURLToPath(import.meta.url), '..', '..');

// ---------------------------------------------------------------------------------------------- options
let opts;
try {
  opts = parseArgs({
    options: {
      duration: { type: 'string', default: '20' },
      chains: { type: 'string', default: '10' },
      pool: { type: 'string' },
      'no-build': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  }).values;
} catch (error) {
  console.error(`refresh.js: ${error.message}`);
  process.exit(2);
}
if (opts.help) {
  console.log('Usage: node bench/refresh.js [--duration S (default 20)] [--chains N (default 10)] [--pool DATABASE_POOL_SIZE] [--no-build]');
  process.exit(0);
}
const wholeNumber = (name, value, min, max) => {
  const n = Number(value);
  if (!/^\d+$/.test(String(value)) || n < min || n > max) {
    console.error(`refresh.js: --${name} must be a whole number from ${min} to ${max}`);
    process.exit(2);
  }
  return n;
};
const DURATION_S = wholeNumber('duration', opts.duration, 1, 3600);
const CHAINS = wholeNumber('chains', opts.chains, 1, 200);
const POOL = opts.pool !== undefined ? wholeNumber('pool', opts.pool, 1, 200) : undefined;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_ERRORS = 100; // beyond this the run stops early
const SCOPE = 'openid offline_access';

const DEFAULT_DB = 'postgres://postgres@127.0.0.1:5432/test';
const dbBase = new URL(process.env.DATABASE_URL || DEFAULT_DB);
if (!/^postgres(ql)?:$/.test(dbBase.protocol)) {
  console.error('refresh.js: DATABASE_URL must be a postgres:// URL');
  process.exit(2);
}
// Only loopback traffic: refuse a database elsewhere (a Unix socket in ?host=/path counts as local).
const socketHost = dbBase.searchParams.get('host');
if (!(socketHost?.startsWith('/') || ['127.0.0.1', 'localhost', '[::1]', ''].includes(dbBase.hostname))) {
  console.error(`refresh.js: DATABASE_URL points at ${dbBase.hostname}; this benchmark only talks to loopback`);
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
const median = (xs) => percentile([...xs].sort((a, b) => a - b), 0.5);

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
let origin; // http://127.0.0.1:<port>, the only place requests go
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
let statusCounts = new Map();

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
        res.on('end', () => {
          statusCounts.set(res.statusCode, (statusCounts.get(res.statusCode) ?? 0) + 1);
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms: ${method} ${u.pathname}`)));
    req.on('error', reject);
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** A cookie jar and manual redirects, as in test/helpers/browser-client.ts. */
class Browser {
  cookies = new Map();

  async fetch(url, { form, headers: extra } = {}) {
    const headers = { accept: 'text/html', 'user-agent': 'idp-bench-refresh', ...extra };
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

const idTokenClaims = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

// ---------------------------------------------------------------------------- sign-in (setup, unmeasured)
let issuer;
let loginUrl;
let redirectUri;
let clientId;
let tokenUrl;

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

  res = await request(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: auth.verifier }).toString(),
  });
  expectStatus('code token', res, 200);
  const tokens = JSON.parse(res.body);
  if (!tokens.refresh_token) throw new StepError('code token', `no refresh_token for scope "${SCOPE}": ${res.body.slice(0, 200)}`, 200);
  const claims = idTokenClaims(tokens.id_token);
  if (claims.sub !== user.id || claims.aud !== clientId || claims.nonce !== auth.nonce) {
    throw new StepError('code token', `ID token for the wrong sign-in: sub ${claims.sub}, aud ${claims.aud}`, 200);
  }
  return tokens.refresh_token;
}

// ---------------------------------------------------------------------------------- the refresh chains
let interrupted = false; // Ctrl-C or SIGTERM
let serverDied = false;
let serverProcess;

/** One refresh: returns the successor refresh token, or throws a StepError with the OAuth error code. */
async function refreshOnce(chain) {
  const res = await request(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: chain.token, client_id: clientId }).toString(),
  });
  let json;
  try {
    json = JSON.parse(res.body);
  } catch {
    json = undefined;
  }
  if (res.status !== 200) {
    const error = new StepError('refresh', json?.error ? `${json.error}: ${json.error_description ?? ''}` : `${res.status}: ${snippet(res)}`, res.status);
    error.oauthError = json?.error;
    throw error;
  }
  const bad = (why) => new StepError('refresh', `200 with ${why}: ${res.body.slice(0, 160)}`, 200);
  if (!json) throw bad('a body that is not JSON');
  if (json.token_type !== 'Bearer' || !json.access_token) throw bad('no Bearer access token');
  if (!json.refresh_token) throw bad('no refresh_token');
  if (json.refresh_token === chain.token) throw bad('the same refresh token (no rotation)');
  if (!json.id_token) throw bad('no id_token although the scope has openid');
  const claims = idTokenClaims(json.id_token);
  if (claims.sub !== chain.user.id || claims.aud !== clientId) throw bad(`an ID token for sub ${claims.sub}, aud ${claims.aud}`);
  if (json.scope !== undefined && json.scope.split(' ').sort().join(' ') !== SCOPE.split(' ').sort().join(' ')) throw bad(`scope "${json.scope}"`);
  return json.refresh_token;
}

async function runChains(chains) {
  statusCounts = new Map();
  const latencies = [];
  const errors = [];
  const perSecond = []; // completed refreshes in each whole second of the run
  const deadline = now() + DURATION_S * 1000;
  let completed = 0;
  const started = now();
  let lastDone = started;
  const serverCpu0 = cpuSeconds(serverProcess.pid);
  const clientCpu0 = process.cpuUsage();
  const stop = () => interrupted || serverDied || errors.length >= MAX_ERRORS || now() >= deadline;

  await Promise.all(
    chains.map(async (chain) => {
      while (!stop()) {
        const t = now();
        try {
          chain.token = await refreshOnce(chain);
          const done = now();
          latencies.push(done - t);
          completed++;
          chain.refreshes++;
          lastDone = done;
          const second = Math.floor((done - started) / 1000);
          perSecond[second] = (perSecond[second] ?? 0) + 1;
        } catch (error) {
          if (interrupted) break; // a request cut short by Ctrl-C is not a server error
          const at = (now() - started) / 1000;
          errors.push({ chain: chain.index, status: error.status, code: error.oauthError, message: error.message, at });
          chain.errors++;
          if (serverProcess.exitCode !== null || serverProcess.signalCode !== null) {
            if (!serverDied) errors.push({ chain: '-', message: `the server exited (${serverProcess.exitCode ?? serverProcess.signalCode})`, at });
            serverDied = true;
            break;
          }
          if (error.oauthError === 'invalid_grant') {
            // The family is revoked (or the token is gone): this chain cannot go on.
            chain.ended = { at, after: chain.refreshes, message: error.message, earlierErrors: chain.errors - 1 };
            break;
          }
          // Anything else (a 5xx, a timeout, a malformed 200): the token we hold may or may not have been
          // rotated. Try it once more after a pause; if it was rotated, that try ends the chain with
          // invalid_grant, which is reported with the earlier error.
          await sleep(100);
        }
      }
    }),
  );
  const elapsed = (lastDone - started) / 1000;
  const finished = (now() - started) / 1000;
  const serverCpu = cpuSeconds(serverProcess.pid) - serverCpu0;
  const clientUsage = process.cpuUsage(clientCpu0);
  const clientCpu = (clientUsage.user + clientUsage.system) / 1e6;

  console.log(`\nrefresh chains${interrupted ? ' (INTERRUPTED)' : ''}: ${completed} refreshes in ${elapsed.toFixed(2)} s = ${(completed / elapsed || 0).toFixed(1)} refreshes/s` +
    ` (${chains.length} chains; last refresh ended ${elapsed.toFixed(2)} s after the start, all chains done after ${finished.toFixed(2)} s), errors ${errors.length}`);
  const sorted = [...latencies].sort((a, b) => a - b);
  const mean = latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1);
  const rows = [
    ['request', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'max ms'],
    ['refresh', String(latencies.length), ...[percentile(sorted, 0.5), percentile(sorted, 0.99), mean, sorted.at(-1) ?? NaN].map((v) => v.toFixed(1))],
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`);
  const fullSeconds = Array.from({ length: Math.floor(finished) }, (_, i) => perSecond[i] ?? 0);
  if (fullSeconds.length) {
    console.log(`  refreshes per whole second: min ${Math.min(...fullSeconds)}, median ${median(fullSeconds)}, max ${Math.max(...fullSeconds)} (${fullSeconds.length} s)`);
  }
  const perChain = chains.map((c) => c.refreshes);
  console.log(`  refreshes per chain: min ${Math.min(...perChain)}, median ${median(perChain)}, max ${Math.max(...perChain)}`);
  const share = (seconds) => (Number.isNaN(seconds) ? '?' : `${((seconds / finished) * 100).toFixed(0)}%`);
  console.log(`  CPU (share of one core): server process ${share(serverCpu)} (all threads), this driver ${share(clientCpu)}; PostgreSQL not counted`);
  console.log(`  HTTP statuses: ${[...statusCounts].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}×${n}`).join(', ') || 'none'}`);
  if (errors.length) {
    const byKind = new Map();
    for (const e of errors) {
      const key = `${e.status ?? '-'} ${e.code ?? ''}`.trim();
      if (!byKind.has(key)) byKind.set(key, { n: 0, first: e });
      byKind.get(key).n++;
    }
    console.log('  errors (status and OAuth error: count, first one):');
    for (const [key, { n, first }] of byKind) console.log(`    ${key}: ${n}× chain ${first.chain} at ${first.at.toFixed(2)} s: ${first.message}`);
  }
  const ended = chains.filter((c) => c.ended);
  if (ended.length) {
    console.log(`  CHAINS ENDED BY invalid_grant: ${ended.length} of ${chains.length} (a bug or a race in rotation: this driver never sends a token twice unless a request failed)`);
    for (const c of ended) {
      console.log(`    chain ${c.index} (${c.user.email}) at ${c.ended.at.toFixed(2)} s after ${c.ended.after} refreshes` +
        `${c.ended.earlierErrors ? `, after ${c.ended.earlierErrors} earlier error(s) on this chain` : ''}: ${c.ended.message}`);
    }
  }
  return { completed, elapsed, errors: errors.length, ended: ended.length };
}

/** What the database says after the run: one used token per successful refresh, no revoked grant. */
async function crossCheck(chains, completed) {
  const client = new pg.Client({ connectionString: dbUrlFor(dbName), connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const { rows } = await client.query(
      `select (select count(*) from refresh_tokens)::int as tokens,
              (select count(*) from refresh_tokens where used_at is not null)::int as used,
              (select count(*) from refresh_tokens where used_at is null and revoked_at is null)::int as live,
              (select count(*) from grants where revoked_at is not null)::int as revoked_grants`,
    );
    const r = rows[0];
    const expected = { tokens: chains.length + completed, used: completed, live: chains.length - chains.filter((c) => c.ended).length, revoked_grants: chains.filter((c) => c.ended).length };
    const ok = r.used === expected.used && r.live === expected.live && r.revoked_grants === expected.revoked_grants;
    console.log(`database: ${r.tokens} refresh tokens, ${r.used} used, ${r.live} live, ${r.revoked_grants} revoked grants` +
      ` (${ok ? 'consistent with' : 'MISMATCH with'} ${completed} successful refreshes on ${chains.length} chains${ok ? '' : `: expected ${JSON.stringify(expected)}`})`);
    return ok;
  } catch (error) {
    console.log(`database cross-check failed: ${error.message}`);
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

// --------------------------------------------------------------------------------------------- server
const serverLog = { warnOrAbove: [], tail: [], levels: new Map() };

function collectLines(stream, source) {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop();
    for (const line of lines) {
      if (!line.trim()) continue;
      serverLog.tail.push(`${source}: ${line}`);
      if (serverLog.tail.length > 40) serverLog.tail.shift();
      let level = 'text';
      try {
        const n = JSON.parse(line).level;
        level = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' }[n] ?? String(n);
      } catch {
        // not a pino line (a crash trace, a warning from node)
      }
      serverLog.levels.set(level, (serverLog.levels.get(level) ?? 0) + 1);
      if (level !== 'trace' && level !== 'debug' && level !== 'info' && serverLog.warnOrAbove.length < 1000) serverLog.warnOrAbove.push(line);
    }
  });
}

async function startServerProcess(env) {
  const started = now();
  serverProcess = spawn(process.execPath, ['dist/src/cli.js', 'serve'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  collectLines(serverProcess.stdout, 'stdout');
  collectLines(serverProcess.stderr, 'stderr');
  for (;;) {
    if (serverProcess.exitCode !== null || serverProcess.signalCode !== null) {
      throw new Error(`the server exited (${serverProcess.exitCode ?? serverProcess.signalCode}) before answering:\n${serverLog.tail.join('\n')}`);
    }
    try {
      const res = await request(`${origin}/healthz`);
      if (res.status === 200) break;
    } catch {
      // not listening yet
    }
    if (now() - started > 60_000) throw new Error(`no 200 on /healthz within 60 s:\n${serverLog.tail.join('\n')}`);
    await sleep(25);
  }
  return now() - started;
}

async function stopServerProcess() {
  const child = serverProcess;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  try {
    process.kill(-child.pid, 'SIGTERM');
  } catch {
    return; // already gone
  }
  const timedOut = await Promise.race([exited.then(() => false), sleep(15_000).then(() => true)]);
  if (timedOut) {
    console.error('refresh.js: the server did not stop within 15 s of SIGTERM; killing it');
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
    await exited;
  }
}

// -------------------------------------------------------------------------------------------- cleanup
let dbName;
let dataDir;
let cleaning;

function cleanup() {
  cleaning ??= (async () => {
    try {
      await stopServerProcess();
    } catch (error) {
      console.error(`refresh.js: stopping the server: ${error.message}`);
    }
    agent.destroy();
    if (dbName) {
      const admin = new pg.Client({ connectionString: dbUrlFor('postgres'), connectionTimeoutMillis: 10_000 });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
      } catch (error) {
        console.error(`refresh.js: could not drop database ${dbName}: ${error.message} (drop it by hand)`);
      } finally {
        await admin.end().catch(() => {});
      }
    }
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  })();
  return cleaning;
}

// First signal: no new requests; the in-flight ones end, then the finally block cleans up (or, if that
// takes more than 10 s, the timer does). A second signal kills the server at once, drops the database and exits.
let signals = 0;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    signals++;
    interrupted = true;
    if (signals === 1) {
      console.error(`\nrefresh.js: ${signal}: finishing in-flight requests, then stopping the server and dropping the database (again to stop at once)`);
      setTimeout(() => cleanup().finally(() => process.exit(130)), 10_000).unref();
      return;
    }
    if (serverProcess?.pid) {
      try {
        process.kill(-serverProcess.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    cleanup().finally(() => process.exit(130));
  });
}

// ----------------------------------------------------------------------------------------------- main
class Interrupted extends Error {}
const checkpoint = () => {
  if (interrupted) throw new Interrupted('interrupted during setup');
};

async function main() {
  const cliJs = join(root, 'dist', 'src', 'cli.js');
  if (!opts['no-build'] && (!existsSync(cliJs) || statSync(cliJs).mtimeMs < newestSourceMtime())) {
    console.log('building (dist/ is missing or older than the sources): npm run build');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`npm run build failed (exit ${r.status ?? r.signal})`);
  }
  checkpoint();

  const loadStart = fmtLoad();
  const port = await freePort();
  const callbackPort = await freePort(); // closed again: nothing listens there, and nothing fetches it
  origin = `http://127.0.0.1:${port}`;
  issuer = `${origin}/api/auth`;
  loginUrl = `${origin}/login`;
  tokenUrl = `${issuer}/oauth2/token`;
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
  checkpoint();
  dataDir = mkdtempSync(join(tmpdir(), 'idp-bench-refresh-'));

  // Only these variables: nothing from the caller's shell changes the server's configuration
  // (REFRESH_TOKEN_GRACE stays at its default, 0: strict rotation).
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    ...(process.env.HOME && { HOME: process.env.HOME }),
    NODE_ENV: 'production',
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
  console.log(`node ${process.version}, ${platform()} ${arch()}, ${cpu.length} CPUs (${cpu[0]?.model.trim() ?? 'unknown'})`);
  console.log(`load average at start: ${loadStart}`);
  console.log(`commit ${commit ?? 'unknown'}${dirty ? ' with uncommitted changes in src/plugins/schemas/db' : ''}`);
  console.log(
    `configuration: ${CHAINS} refresh chains, ${DURATION_S} s, scope "${SCOPE}", public client (client_id only), rotation on every refresh, REFRESH_TOKEN_GRACE=0 (default)\n` +
      `  server: node dist/src/cli.js serve on ${origin}, NODE_ENV=production, LOG_LEVEL=warn, ` +
      `DATABASE_POOL_SIZE=${POOL ?? '10 (default)'}; client and server share this machine\n` +
      `  database: PostgreSQL ${pgVersion} at ${dbBase.hostname || 'local socket'}:${dbBase.port || 5432}, fresh database ${dbName} (dropped at the end)`,
  );

  const ready = await startServerProcess(env);
  checkpoint();
  console.log(`setup: server answered /healthz ${ready.toFixed(0)} ms after launch (migrations on an empty database included)`);

  const adminHeaders = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json', accept: 'application/json' };
  let res = await request(`${origin}/api/admin/applications`, {
    method: 'POST',
    headers: adminHeaders,
    body: JSON.stringify({ clientName: 'Refresh benchmark', redirectUris: [redirectUri], allowedScopes: SCOPE.split(' ') }),
  });
  if (res.status !== 201) throw new Error(`creating the application: ${res.status} ${res.body}`);
  clientId = JSON.parse(res.body).clientId;

  let t = now();
  const users = await Promise.all(
    Array.from({ length: CHAINS }, async (_, i) => {
      const user = { email: `bench-refresh-${i}@example.com`, password: b64url(randomBytes(18)) };
      const r = await request(`${origin}/api/admin/users`, {
        method: 'POST',
        headers: adminHeaders,
        body: JSON.stringify({ email: user.email, password: user.password, name: `Bench Refresh ${i}`, emailVerified: true }),
      });
      if (r.status !== 201) throw new Error(`creating user ${user.email}: ${r.status} ${r.body}`);
      return { ...user, id: JSON.parse(r.body).id };
    }),
  );
  console.log(`setup: application and ${users.length} users created in ${(now() - t).toFixed(0)} ms`);
  checkpoint();

  // One sign-in per chain (with consent), each giving the chain its first refresh token.
  t = now();
  const chains = await Promise.all(
    users.map(async (user, index) => ({ index, user, token: await signIn(user), refreshes: 0, errors: 0, ended: undefined })),
  );
  console.log(`setup: ${chains.length} sign-ins (argon2id, consent, code exchange) in ${(now() - t).toFixed(0)} ms, one refresh token each`);
  checkpoint();

  const result = await runChains(chains);
  const consistent = serverDied ? false : await crossCheck(chains, result.completed);

  console.log(`\nserver log lines at warn or above: ${serverLog.warnOrAbove.length}` +
    ` (by level: ${[...serverLog.levels].map(([l, n]) => `${l} ${n}`).join(', ') || 'none'})`);
  for (const line of serverLog.warnOrAbove.slice(0, 10)) console.log(`  ${line.slice(0, 400)}`);
  console.log(`load average at end: ${fmtLoad()}`);
  if (serverDied || result.errors > 0 || !consistent) process.exitCode = 1;
  if (interrupted) process.exitCode = 130;
}

try {
  await main();
} catch (error) {
  if (interrupted) console.error(`refresh.js: interrupted (${error.message})`);
  else console.error(`refresh.js: ${error.stack ?? error}`);
  if (serverLog.tail.length) console.error(`last server output:\n${serverLog.tail.join('\n')}`);
  process.exitCode = interrupted ? 130 : 1;
} finally {
  await cleanup();
}
