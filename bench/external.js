#!/usr/bin/env node
// External API benchmark: GET /api/external/me with valid bearer tokens, driven by autocannon (programmatic
// API) over loopback, against `node dist/app/cli.js serve` on a fresh PostgreSQL database that is dropped at
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
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  Browser,
  StepError,
  b64url,
  baseEnv,
  buildIfStale,
  checkDatabaseUrl,
  createApplication,
  createDatabase,
  createHttpClient,
  createUser,
  databaseLine,
  exchangeCode,
  expectStatus,
  exited,
  fmtLoad,
  freePort,
  handleSignals,
  makeDataDir,
  newAuthorization,
  now,
  parseOptions,
  poolOption,
  printLogs,
  printMachine,
  root,
  run,
  runMain,
  serverEnv,
  setupEndpoints,
  signInPages,
  startProcess,
  wholeNumber,
} from './lib.js';
import { describe, measure, printSummary, stopMeasurement } from './lib/measure.js';

// ---------------------------------------------------------------------------------------------- options
const opts = parseOptions(
  'external.js',
  {
    duration: { type: 'string', default: '15' },
    connections: { type: 'string', default: '50' },
    tokens: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    warmup: { type: 'string', default: '2' },
  },
  'Usage: node bench/external.js [--duration S per target and round (default 15)] [--connections N (default 50)]\n' +
    '                             [--tokens N access tokens (default 20)] [--rounds N of bare, me (default 2)]\n' +
    '                             [--warmup S per target, unmeasured (default 2; 0: none)] ' +
    '[--pool DATABASE_POOL_SIZE] [--no-build]',
);
const DURATION_S = wholeNumber('duration', opts.duration, 1, 3600);
const CONNECTIONS = wholeNumber('connections', opts.connections, 1, 1000);
const TOKENS = wholeNumber('tokens', opts.tokens, 1, 200);
const ROUNDS = wholeNumber('rounds', opts.rounds, 1, 20);
const WARMUP_S = wholeNumber('warmup', opts.warmup, 0, 60);
const POOL = poolOption(opts);
const AUTOCANNON_TIMEOUT_S = 10; // a request without an answer for this long counts as a timeout
const SIGN_IN_CONCURRENCY = 5;
const SCOPE = 'openid profile email';
const PATH = '/api/external/me';
const MEASURE = { connections: CONNECTIONS, path: PATH, timeoutS: AUTOCANNON_TIMEOUT_S };
checkDatabaseUrl();

// The server under test is the only place setup requests go.
const client = createHttpClient({ maxSockets: 64, userAgent: 'idp-bench-external' });
const { request } = client;
/** issuer, loginUrl, redirectUri and clientId are set in main(). */
const oidc = { client, scope: SCOPE };

// ---------------------------------------------------------------------------- sign-in (token source)
/** A new browser: authorize → sign-in page → sign-in POST → continue → consent → code → token. */
async function signIn(user) {
  const auth = newAuthorization(oidc);
  const code = await signInPages(oidc, new Browser(client), auth, user);
  const { res, tokens } = await exchangeCode(oidc, auth, code, 'token');
  if (tokens.token_type !== 'Bearer' || !tokens.access_token)
    throw new StepError('token', `unexpected token response: ${res.body.slice(0, 160)}`, 200);
  if (tokens.scope !== undefined && tokens.scope.split(' ').sort().join(' ') !== SCOPE.split(' ').sort().join(' ')) {
    throw new StepError('token', `granted scope "${tokens.scope}", asked for "${SCOPE}"`, 200);
  }
  return tokens.access_token;
}

/** One unmeasured GET /me per token: 200, the claims of its own user. Returns the body. */
async function checkMe(user, token) {
  const res = await request(`${client.origin}${PATH}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  expectStatus('me', res, 200);
  const body = JSON.parse(res.body);
  if (body.sub !== user.id || body.email !== user.email || body.email_verified !== true || body.name !== user.name) {
    throw new StepError('me', `claims of another user or incomplete: ${res.body.slice(0, 200)}`, 200);
  }
  return res;
}

// The bare server: one Fastify route, no logger, no plugins, no database. CommonJS under `node -e`, so
// require() resolves fastify from the repository's node_modules (cwd).
const BARE_SCRIPT =
  `
const app = require('fastify')({ logger: false });
const body = JSON.parse(process.env.BARE_BODY);
app.get('/healthz', async () => ({ ok: true }));
app.get(${JSON.stringify(PATH)}, async (request, reply) => {
  reply.header('cache-control', 'no-store');
  return body;
});
app.listen({ host: '127.0.0.1', port: Number(process.env.PORT) })` +
  `.catch((error) => { console.error(error); process.exit(1); });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => app.close().then(() => process.exit(0)));
`;

// First signal: the running measurement stops, then cleanup (see handleSignals in lib/process.js).
run.onInterrupt = stopMeasurement;
handleSignals('stopping the measurement, then the servers, and dropping the database (again to stop at once)');

// ----------------------------------------------------------------------------------------------- main
async function main() {
  buildIfStale(opts['no-build']);
  if (run.interrupted) return;

  const loadStart = fmtLoad();
  const { port, origin, adminToken } = await setupEndpoints(client, oidc);
  const barePort = await freePort();
  const bareOrigin = `http://127.0.0.1:${barePort}`;

  // A fresh database for this run.
  const pgVersion = await createDatabase();
  if (run.interrupted) return;
  makeDataDir('idp-bench-external-');
  const env = serverEnv({ port, origin, pool: POOL, adminToken });

  const fastifyVersion = JSON.parse(
    readFileSync(join(root, 'node_modules', 'fastify', 'package.json'), 'utf8'),
  ).version;
  const autocannonVersion = JSON.parse(
    readFileSync(join(root, 'node_modules', 'autocannon', 'package.json'), 'utf8'),
  ).version;
  printMachine(loadStart);
  console.log(
    `configuration: autocannon ${autocannonVersion}, ${CONNECTIONS} connections, pipelining 1, ` +
      `${DURATION_S} s per target and round, ` +
      `${ROUNDS} round(s) of bare then me, ` +
      `${WARMUP_S ? `${WARMUP_S} s unmeasured warm-up per target` : 'no warm-up'}, ` +
      `${TOKENS} access tokens (scope "${SCOPE}", one user each) spread over the requests\n` +
      `  me:   GET ${PATH} with Authorization: Bearer, node dist/app/cli.js serve on ${origin}, ` +
      'NODE_ENV=production, LOG_LEVEL=warn, ' +
      `DATABASE_POOL_SIZE=${POOL ?? '10 (default)'}\n` +
      `  bare: GET ${PATH}, the same requests, Fastify ${fastifyVersion} (no logger, no plugins) ` +
      `in node -e on ${bareOrigin}, NODE_ENV=production\n` +
      `${databaseLine(pgVersion)}\n` +
      '  driver, both servers and PostgreSQL share this machine',
  );

  const ready = await startProcess({
    name: 'server',
    args: ['dist/app/cli.js', 'serve'],
    env,
    readyUrl: `${origin}/healthz`,
  });
  console.log(
    `setup: server answered /healthz ${ready.toFixed(0)} ms after launch (migrations on an empty database included)`,
  );
  if (run.interrupted) return;

  oidc.clientId = await createApplication(client, adminToken, {
    clientName: 'External API benchmark',
    redirectUri: oidc.redirectUri,
    scope: SCOPE,
  });

  let t = now();
  const users = [];
  for (let i = 0; i < TOKENS; i++) {
    const user = { email: `bench-user-${i}@example.com`, password: b64url(randomBytes(18)), name: `Bench User ${i}` };
    users.push({ ...user, id: await createUser(client, adminToken, user) });
  }
  console.log(`setup: application and ${users.length} users created in ${(now() - t).toFixed(0)} ms`);
  if (run.interrupted) return;

  // One sign-in flow (with consent) per user, a few at a time; then one checked /me per token.
  t = now();
  const tokens = new Array(users.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(SIGN_IN_CONCURRENCY, users.length) }, async () => {
      while (next < users.length && !run.interrupted) {
        const i = next++;
        try {
          tokens[i] = await signIn(users[i]);
        } catch (error) {
          throw new Error(`sign-in of ${users[i].email}, step ${error.step ?? 'network'}: ${error.message}`);
        }
      }
    }),
  );
  if (run.interrupted) return;
  let meBody;
  for (let i = 0; i < users.length; i++) {
    const r = await checkMe(users[i], tokens[i]);
    if (i === 0) meBody = r.body;
  }
  console.log(
    `setup: ${tokens.length} sign-in flows (authorize → sign-in → consent → token) in ${(now() - t).toFixed(0)} ms; ` +
      'every token answered 200 on /me with its own claims',
  );
  client.agent.destroy(); // no setup connections left open during the measurement

  t = now();
  const bareReady = await startProcess({
    name: 'bare',
    args: ['-e', BARE_SCRIPT],
    env: { ...baseEnv(), PORT: String(barePort), BARE_BODY: meBody },
    readyUrl: `${bareOrigin}/healthz`,
  });
  console.log(
    `setup: bare Fastify server answered ${bareReady.toFixed(0)} ms after launch; ` +
      `it returns /me's body for the first token (${Buffer.byteLength(meBody)} B)`,
  );
  if (run.interrupted) return;

  const targets = {
    bare: { name: 'bare', origin: bareOrigin, process: 'bare' },
    me: { name: 'me', origin, process: 'server' },
  };
  const order = ['bare', 'me'];
  const serverProblem = () => Object.entries(run.processes).find(([, { child }]) => exited(child));

  if (WARMUP_S) {
    t = now();
    const warm = [];
    for (const key of order) {
      if (run.interrupted || serverProblem()) break;
      warm.push(await measure(targets[key], WARMUP_S, tokens, MEASURE));
    }
    const warmed = warm.map((m) => `${m.target} ${m.total} responses (non-2xx ${m.non2xx}, errors ${m.errors})`);
    console.log(`setup: warm-up ${warmed.join(', ')} in ${((now() - t) / 1000).toFixed(1)} s, not counted`);
  }

  console.log(
    '\nrounds (req/s: per-second samples; latency: 2xx responses; CPU: share of one core; ' +
      'load1: 1-minute load average at the start):',
  );
  const runs = { bare: [], me: [] };
  for (let round = 1; round <= ROUNDS && !run.interrupted; round++) {
    for (const key of order) {
      if (run.interrupted) break;
      const problem = serverProblem();
      if (problem)
        throw new Error(
          `${problem[0]} exited (${problem[1].child.exitCode ?? problem[1].child.signalCode}):\n` +
            problem[1].log.tail.join('\n'),
        );
      const m = await measure(targets[key], DURATION_S, tokens, MEASURE);
      runs[key].push(m);
      describe(`${round} ${key}`, m);
    }
  }

  const combined = printSummary(runs, order, { path: PATH, durationS: DURATION_S, connections: CONNECTIONS });

  printLogs();
  console.log(`load average at end: ${fmtLoad()}`);
  const problem = serverProblem();
  if (problem)
    console.log(`${problem[0]} exited during the run (${problem[1].child.exitCode ?? problem[1].child.signalCode})`);
  const bad = Object.values(combined).some((c) => c.non2xx || c.errors || c.timeouts);
  if (bad || problem) process.exitCode = 1;
  if (run.interrupted) process.exitCode = 130;
}

await runMain(async () => {
  await main();
  if (run.interrupted) console.error('external.js: interrupted');
});
