// The servers `npm run bench` measures, one at a time, each on 127.0.0.1 and a free port:
//  - ours: `node --import ./bench/lib/count-statements.js dist/app/cli.js serve`, on a fresh idp_bench_<random>
//    PostgreSQL database or (no DATABASE_URL) on file-backed PGlite in a fresh DATA_DIR; one application and
//    the users created through the admin API;
//  - the anchor: bench/anchor/server.js (node-oidc-provider) with its memory adapter or bench/anchor/pg-adapter.js
//    on a fresh database (the counting preload too); the users passed in a file, hashed at its start;
//  - bare: one Fastify process answering our paths with bodies recorded from our server (the ceiling).
// Imports core.js, database.js, http.js, process.js and flows.js.
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { b64url, freePort, root, run } from './core.js';
import { createDatabase, dbUrlFor, dropDatabase, makeDataDir, serverEnv, baseEnv } from './database.js';
import { createApplication, createHttpClient, createUser } from './http.js';
import { startProcess, stopProcess } from './process.js';
import { FLOW_SCOPE, loginFlow } from './flows.js';

export const USERS = Number(process.env.BENCH_VUS || 16);
const PRELOAD = ['--import', './bench/lib/count-statements.js'];
/** BENCH_CPU_PROF=DIR: our server writes V8 CPU profiles (one per thread, the PGlite worker's too) into DIR. */
const cpuProfile = (sub = '') => [
  ...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.BENCH_CPU_PROF, sub)}`] : []),
  // BENCH_PERF=1: /tmp/perf-<pid>.map, so that Linux `perf` names our JavaScript frames (bench/README).
  ...(process.env.BENCH_PERF ? ['--perf-basic-prof'] : []),
  // BENCH_SERVER_FLAGS="--flag ...": Node or V8 flags for our server only (to measure one, e.g. a heap setting).
  ...(process.env.BENCH_SERVER_FLAGS ? process.env.BENCH_SERVER_FLAGS.split(' ').filter(Boolean) : []),
];

const OUR_PATHS = {
  authorize: '/api/auth/oauth2/authorize',
  token: '/api/auth/oauth2/token',
  userinfo: '/api/auth/oauth2/userinfo',
  me: '/api/external/me',
  discovery: '/api/auth/.well-known/openid-configuration',
  jwks: '/api/auth/jwks',
  scopes: '/api/public/oidc/scopes',
};
const ANCHOR_PATHS = {
  authorize: '/auth',
  token: '/token',
  userinfo: '/me',
  discovery: '/.well-known/openid-configuration',
  jwks: '/jwks',
};

/** Which scenarios a target kind serves. */
export const SCENARIOS_OF = {
  ours: ['login', 'sso', 'refresh', 'me', 'userinfo', 'discovery', 'jwks', 'scopes'],
  anchor: ['login', 'sso', 'refresh', 'userinfo'],
  bare: ['me', 'userinfo', 'discovery', 'jwks', 'scopes'],
};

const newUsers = (prefix) =>
  Array.from({ length: USERS }, (_, i) => ({
    email: `${prefix}-${i}@example.com`,
    password: b64url(randomBytes(18)),
    name: `Bench User ${i}`,
  }));

async function endpoints() {
  const port = await freePort();
  const callbackPort = await freePort(); // closed again: nothing listens there, and nothing fetches it
  const origin = `http://127.0.0.1:${port}`;
  return { port, origin, redirectUri: `http://127.0.0.1:${callbackPort}/cb` };
}

const statementsFile = () => join(mkdtempSync(join(tmpdir(), 'idp-bench-stmts-')), 'counts.json');

/** Our server on `db` ('pg' | 'pglite'). Returns the target (see flows.js) plus what run.js needs. */
export async function startOurs(db) {
  const { port, origin, redirectUri } = await endpoints();
  const adminToken = b64url(randomBytes(32));
  if (db === 'pg') await createDatabase();
  makeDataDir(`idp-bench-${db}-`);
  const env = serverEnv({ port, origin, adminToken });
  if (db === 'pglite') {
    delete env.DATABASE_URL;
    delete env.WORKERS; // one process only on the embedded database
  }
  const stmtFile = statementsFile();
  env.BENCH_STATEMENTS_FILE = stmtFile;
  const client = createHttpClient({ maxSockets: 32, userAgent: 'idp-bench-setup' });
  client.origin = origin;
  if (db === 'pglite') {
    // initdb (WASM) and the migrations first, through the CLI: inside `serve` they count against Fastify's
    // 10 s plugin timeout, which a loaded 2-core machine can exceed (seen: "Plugin did not start in time: 'db'").
    const r = spawnSync(process.execPath, ['dist/app/cli.js', 'migrate'], { cwd: root, env, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`idp migrate on PGlite failed (${r.status}): ${r.stderr.slice(0, 400)}`);
  }
  const readyMs = await startProcess({
    name: 'server',
    label: `our server (${db})`,
    args: [...PRELOAD, ...cpuProfile(), 'dist/app/cli.js', 'serve'],
    env,
    readyUrl: `${origin}/healthz`,
  });
  const clientId = await createApplication(client, adminToken, {
    clientName: 'Benchmark',
    redirectUri,
    scope: 'openid profile email offline_access',
  });
  const users = await Promise.all(
    newUsers(`bench-${db}`).map(async (u) => ({ ...u, id: await createUser(client, adminToken, u) })),
  );
  const target = {
    kind: 'ours',
    name: `ours-${db}`,
    origin,
    issuer: `${origin}/api/auth`,
    loginUrl: `${origin}/login`,
    redirectUri,
    clientId,
    paths: OUR_PATHS,
  };
  return { target, users, readyMs, process: 'server', dbName: run.dbName, stmtFile, client, adminToken };
}

// Headers of one answer only (the connection's, the length, the request's own id and trace): not replayed.
const PER_ANSWER = new Set(['date', 'connection', 'keep-alive', 'content-length', 'x-request-id', 'traceparent']);

/**
 * The bodies the bare server answers with: our server's, for user 0 (one sign-in, unmeasured), and the rest of
 * our answers' headers (for `--bare-same`).
 */
export async function recordBodies(started) {
  const { target, users, client } = started;
  const { tokens } = await loginFlow(target, client, users[0], { scope: FLOW_SCOPE, allowConsent: true });
  const bodies = {};
  for (const key of SCENARIOS_OF.bare) {
    const res = await client.request(target.origin + target.paths[key], {
      headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json' },
    });
    if (res.status !== 200) throw new Error(`recording ${key} for the bare server: ${res.status} ${res.body}`);
    const headers = Object.fromEntries(Object.entries(res.headers).filter(([name]) => !PER_ANSWER.has(name)));
    bodies[target.paths[key]] = { body: res.body, cacheControl: res.headers['cache-control'], headers };
  }
  return bodies;
}

/** node-oidc-provider with `adapter` ('memory' | 'pg'). */
export async function startAnchor(adapter) {
  const { port, origin, redirectUri } = await endpoints();
  if (adapter === 'pg') await createDatabase();
  const dir = makeDataDir(`idp-bench-anchor-${adapter}-`);
  const users = newUsers(`anchor-${adapter}`).map((u) => ({ ...u, id: randomUUID() }));
  writeFileSync(join(dir, 'users.json'), JSON.stringify(users));
  const clientId = 'bench-anchor';
  const stmtFile = adapter === 'pg' ? statementsFile() : undefined;
  const env = {
    ...baseEnv(),
    PORT: String(port),
    ISSUER: origin,
    REDIRECT_URI: redirectUri,
    CLIENT_ID: clientId,
    USERS_FILE: join(dir, 'users.json'),
    ANCHOR_ADAPTER: adapter,
    ...(adapter === 'pg' && { DATABASE_URL: dbUrlFor(run.dbName) }),
    ...(stmtFile && { BENCH_STATEMENTS_FILE: stmtFile }),
  };
  const readyMs = await startProcess({
    name: 'server',
    label: `the anchor (${adapter})`,
    args: [...(stmtFile ? PRELOAD : []), 'bench/anchor/server.js'],
    env,
    readyUrl: `${origin}/healthz`,
  });
  const target = { kind: 'anchor', name: `anchor-${adapter}`, origin, issuer: origin, redirectUri, clientId };
  target.paths = ANCHOR_PATHS;
  return { target, users, readyMs, process: 'server', dbName: run.dbName, stmtFile };
}

// One Fastify app, no logger, no plugins: GET <path> answers the recorded body. CommonJS under `node -e`, so
// require() finds fastify in the repository's node_modules (cwd). BARE_SAME=1 (`--bare-same`): what our server
// must do on every answer besides its own work, on the same bare route: pino at warn (Fastify's per-request logger
// and its response listeners), one onRequest hook giving x-request-id and traceparent as ours do (a UUID, 24
// random bytes drawn from a pool), and every other header of our recorded answer.
const BARE_SCRIPT = `
const same = process.env.BARE_SAME === '1';
const app = require('fastify')({ logger: same ? { level: 'warn' } : false });
const routes = JSON.parse(process.env.BARE_ROUTES);
app.get('/healthz', async () => ({ ok: true }));
if (same) {
  const { randomFillSync, randomUUID } = require('node:crypto');
  const pool = Buffer.alloc(4080);
  let offset = pool.length;
  app.addHook('onRequest', (request, reply, done) => {
    if (offset + 24 > pool.length) { randomFillSync(pool); offset = 0; }
    const hex = pool.toString('hex', offset, (offset += 24));
    reply.header('x-request-id', randomUUID());
    reply.header('traceparent', '00-' + hex.slice(0, 32) + '-' + hex.slice(32) + '-00');
    done();
  });
}
for (const [path, { body, cacheControl, headers }] of Object.entries(routes)) {
  const json = JSON.parse(body);
  app.get(path, async (request, reply) => {
    if (same) reply.headers(headers);
    else if (cacheControl) reply.header('cache-control', cacheControl);
    return json;
  });
}
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) }).catch((e) => { console.error(e); process.exit(1); });
for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => app.close().then(() => process.exit(0)));
`;

/** The ceiling; `same`: the same route with our logger, request id, trace and headers (`--bare-same`). */
export async function startBare(bodies, { same = false } = {}) {
  const { port, origin } = await endpoints();
  const readyMs = await startProcess({
    name: 'server',
    label: same ? 'the bare Fastify server with our logger and headers' : 'the bare Fastify server',
    // BENCH_CPU_PROF=DIR: the ceiling's profiles go to DIR/bare, to compare with ours function by function.
    args: [...cpuProfile(same ? 'bare-same' : 'bare'), '-e', BARE_SCRIPT],
    env: { ...baseEnv(), PORT: String(port), BARE_ROUTES: JSON.stringify(bodies), ...(same && { BARE_SAME: '1' }) },
    readyUrl: `${origin}/healthz`,
  });
  const target = { kind: 'bare', name: same ? 'bare-same' : 'bare', origin, paths: OUR_PATHS };
  return { target, users: newUsers('bare'), readyMs, process: 'server' };
}

/** Stops the target's process, drops its database and removes its DATA_DIR. */
export async function stopTarget(started) {
  await stopProcess(started.process);
  delete run.processes[started.process];
  started.client?.agent.destroy();
  if (run.dbName) await dropDatabase();
  run.dbName = undefined;
  if (run.dataDir) rmSync(run.dataDir, { recursive: true, force: true });
  run.dataDir = undefined;
  if (started.stmtFile) rmSync(join(started.stmtFile, '..'), { recursive: true, force: true });
}
