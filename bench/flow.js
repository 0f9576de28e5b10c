#!/usr/bin/env node
// Flow benchmark: complete authorization code flows (PKCE) through the hosted pages, over real HTTP on
// loopback, against `node dist/app/cli.js serve` on a fresh PostgreSQL database that is dropped at the end.
//   scenario "password": a new browser each flow: authorize (→ sign-in page) → sign-in POST (argon2id)
//                        → continue (consent remembered) → code redirect → token POST → userinfo GET
//   scenario "session":  each virtual user keeps its session cookie: authorize → code redirect at once
//                        → token POST → userinfo GET
// Consent is given once per user in an unmeasured warm-up flow. The callback is never fetched: the driver
// stops at the redirect to it and reads the code from the Location header.
// Usage: node bench/flow.js [--duration 20] [--count N] [--vus 10] [--scenario both|password|session]
//                           [--pool N] [--no-build]
//   DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test) names the server, user and password;
//   the run creates idp_bench_<random> next to it (via the "postgres" database) and drops it afterwards.
import { randomBytes } from 'node:crypto';
import {
  Browser,
  StepError,
  b64url,
  buildIfStale,
  checkDatabaseUrl,
  checkpoint,
  codeFrom,
  cpuMeter,
  createApplication,
  createDatabase,
  createHttpClient,
  createUser,
  databaseLine,
  exchangeCode,
  expectStatus,
  fmtLoad,
  handleSignals,
  makeDataDir,
  newAuthorization,
  now,
  parseOptions,
  percentile,
  poolOption,
  printLogs,
  printMachine,
  run,
  runMain,
  serverEnv,
  shareOver,
  signInPages,
  setupEndpoints,
  startServer,
  usageError,
  wholeNumber,
} from './lib.js';

// ---------------------------------------------------------------------------------------------- options
const opts = parseOptions(
  'flow.js',
  {
    duration: { type: 'string' },
    count: { type: 'string' },
    vus: { type: 'string', default: '10' },
    scenario: { type: 'string', default: 'both' },
  },
  'Usage: node bench/flow.js [--duration S (default 20)] [--count N flows per user] [--vus N (default 10)]\n' +
    '                         [--scenario both|password|session] [--pool DATABASE_POOL_SIZE] [--no-build]',
);
const VUS = wholeNumber('vus', opts.vus, 1, 200);
const COUNT = opts.count !== undefined ? wholeNumber('count', opts.count, 1, 100_000) : undefined;
// With --count alone, the duration is only a safety cap.
const DURATION_S = opts.duration !== undefined ? wholeNumber('duration', opts.duration, 1, 3600) : COUNT ? 600 : 20;
const POOL = poolOption(opts);
if (!['both', 'password', 'session'].includes(opts.scenario))
  usageError('--scenario must be both, password or session');
const MAX_ERRORS = 100; // per scenario; beyond this the scenario stops early
const SCOPE = 'openid profile email';
checkDatabaseUrl();

const client = createHttpClient({ maxSockets: 256, userAgent: 'idp-bench-flow', countStatuses: true });
const { request } = client;
/** issuer, loginUrl, redirectUri and clientId are set in main(). */
const oidc = { client, scope: SCOPE };

// ------------------------------------------------------------------------------------------ the flows
async function tokenAndUserinfo(user, auth, code, times) {
  let t = now();
  const { res, tokens } = await exchangeCode(oidc, auth, code, 'token');
  if (tokens.token_type !== 'Bearer' || !tokens.access_token || !tokens.id_token)
    throw new StepError('token', `unexpected token response: ${res.body.slice(0, 160)}`, 200);
  const claims = JSON.parse(Buffer.from(tokens.id_token.split('.')[1], 'base64url').toString('utf8'));
  if (
    claims.sub !== user.id ||
    claims.aud !== oidc.clientId ||
    claims.nonce !== auth.nonce ||
    claims.iss !== oidc.issuer
  ) {
    throw new StepError(
      'token',
      `ID token for the wrong sign-in: sub ${claims.sub}, aud ${claims.aud}, ` +
        `nonce ${claims.nonce === auth.nonce ? 'ok' : 'mismatch'}`,
      200,
    );
  }
  times.token = now() - t;

  t = now();
  const info = await request(`${oidc.issuer}/oauth2/userinfo`, {
    headers: { authorization: `Bearer ${tokens.access_token}`, accept: 'application/json' },
  });
  expectStatus('userinfo', info, 200);
  const body = JSON.parse(info.body);
  if (body.sub !== user.id || body.email !== user.email || body.email_verified !== true) {
    throw new StepError('userinfo', `claims of another user or incomplete: ${info.body.slice(0, 160)}`, 200);
  }
  times.userinfo = now() - t;
}

/** authorize → sign-in page → sign-in POST → continue; consent too when `consent` (warm-up only). */
async function passwordFlow(user, browser = new Browser(client), consent = false) {
  const times = {};
  const start = now();
  const auth = newAuthorization(oidc);
  const code = await signInPages(oidc, browser, auth, user, { consent, codeStep: 'continue', times });
  await tokenAndUserinfo(user, auth, code, times);
  times.flow = now() - start;
  return { times, browser };
}

/** The session cookie is already there: authorize answers with the code redirect at once. */
async function sessionFlow(user, browser) {
  const times = {};
  const start = now();
  const auth = newAuthorization(oidc);
  const t = now();
  const res = await browser.fetch(auth.url);
  const code = codeFrom(oidc, 'authorize', res, auth);
  times.authorize = now() - t;
  await tokenAndUserinfo(user, auth, code, times);
  times.flow = now() - start;
  return { times };
}

// ------------------------------------------------------------------------------------------- scenario
let serverDied = false;
let users = [];

async function runScenario(name, steps, flow) {
  const serverProcess = run.processes.server.child;
  client.statusCounts = new Map();
  const samples = Object.fromEntries(steps.concat('flow').map((s) => [s, []]));
  const errors = [];
  const deadline = now() + DURATION_S * 1000;
  let completed = 0;
  const started = now();
  let lastDone = started;
  const readCpu = cpuMeter(serverProcess.pid);
  const stop = () => run.interrupted || serverDied || errors.length >= MAX_ERRORS || now() >= deadline;

  await Promise.all(
    users.map(async (user, vu) => {
      for (let i = 0; (COUNT === undefined || i < COUNT) && !stop(); i++) {
        try {
          const { times } = await flow(user, vu);
          for (const [step, ms] of Object.entries(times)) samples[step].push(ms);
          completed++;
          lastDone = now();
        } catch (error) {
          if (run.interrupted) break; // a flow cut short by Ctrl-C is not a server error
          errors.push({ step: error.step ?? 'network', status: error.status, message: error.message });
          if (serverProcess.exitCode !== null || serverProcess.signalCode !== null) {
            if (!serverDied)
              errors.push({
                step: 'server',
                message: `the server exited (${serverProcess.exitCode ?? serverProcess.signalCode})`,
              });
            serverDied = true;
          }
        }
      }
    }),
  );
  const elapsed = (lastDone - started) / 1000;
  const finished = (now() - started) / 1000;
  const cpu = readCpu();

  console.log(
    `\nscenario "${name}"${run.interrupted ? ' (INTERRUPTED)' : ''}: ` +
      `${completed} flows in ${elapsed.toFixed(2)} s = ${(completed / elapsed || 0).toFixed(1)} flows/s` +
      ` (${VUS} users; last flow ended ${elapsed.toFixed(2)} s after the start, ` +
      `all users done after ${finished.toFixed(2)} s), errors ${errors.length}`,
  );
  const rows = [['step', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'max ms']];
  for (const [step, xs] of Object.entries(samples)) {
    const sorted = [...xs].sort((a, b) => a - b);
    const mean = xs.reduce((a, b) => a + b, 0) / (xs.length || 1);
    rows.push([
      step,
      String(xs.length),
      ...[percentile(sorted, 0.5), percentile(sorted, 0.99), mean, sorted.at(-1) ?? NaN].map((v) => v.toFixed(1)),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows)
    console.log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`);
  const share = shareOver(finished);
  console.log(
    `  CPU (share of one core): server process ${share(cpu.server)} (all threads, argon2id included), ` +
      `this driver ${share(cpu.client)}; PostgreSQL not counted`,
  );
  console.log(
    `  HTTP statuses: ${[...client.statusCounts]
      .sort((a, b) => a[0] - b[0])
      .map(([s, n]) => `${s}×${n}`)
      .join(', ')}`,
  );
  if (errors.length) {
    const byKind = new Map();
    for (const e of errors) {
      const key = `${e.step} ${e.status ?? '-'}`;
      if (!byKind.has(key)) byKind.set(key, { n: 0, first: e.message });
      byKind.get(key).n++;
    }
    console.log('  errors (step, status: count, first message):');
    for (const [key, { n, first }] of byKind) console.log(`    ${key}: ${n}× ${first}`);
  }
  return { completed, elapsed, errors: errors.length };
}

// First signal: no new flows; the in-flight ones end, then cleanup (see handleSignals in lib/process.js).
handleSignals('finishing in-flight flows, then stopping the server and dropping the database (again to stop at once)');

// ----------------------------------------------------------------------------------------------- main
async function main() {
  buildIfStale(opts['no-build']);
  checkpoint();

  const loadStart = fmtLoad();
  const { port, origin, adminToken } = await setupEndpoints(client, oidc);

  // A fresh database for this run.
  const pgVersion = await createDatabase();
  checkpoint();
  makeDataDir('idp-bench-flow-');
  const env = serverEnv({ port, origin, pool: POOL, adminToken });

  printMachine(loadStart);
  console.log(
    `configuration: ${VUS} virtual users, ` +
      `${COUNT ? `${COUNT} flows per user (cap ${DURATION_S} s)` : `${DURATION_S} s`} per scenario, ` +
      `scenarios ${opts.scenario}, scope "${SCOPE}", PKCE S256\n` +
      `  server: node dist/app/cli.js serve on ${origin}, NODE_ENV=production, LOG_LEVEL=warn, ` +
      `DATABASE_POOL_SIZE=${POOL ?? '10 (default)'}; client and server share this machine\n` +
      databaseLine(pgVersion),
  );

  const ready = await startServer(client, env);
  checkpoint();
  console.log(
    `setup: server answered /healthz ${ready.toFixed(0)} ms after launch (migrations on an empty database included)`,
  );

  oidc.clientId = await createApplication(client, adminToken, {
    clientName: 'Flow benchmark',
    redirectUri: oidc.redirectUri,
    scope: SCOPE,
  });

  let t = now();
  users = await Promise.all(
    Array.from({ length: VUS }, async (_, i) => {
      const user = { email: `bench-user-${i}@example.com`, password: b64url(randomBytes(18)) };
      return { ...user, id: await createUser(client, adminToken, { ...user, name: `Bench User ${i}` }) };
    }),
  );
  console.log(`setup: application and ${users.length} users created in ${(now() - t).toFixed(0)} ms`);
  checkpoint();

  // Warm-up: one flow per user with consent (remembered from then on); the browsers keep their sessions.
  t = now();
  const browsers = await Promise.all(
    users.map(async (user) => (await passwordFlow(user, new Browser(client), true)).browser),
  );
  console.log(`setup: warm-up, one flow with consent per user, in ${(now() - t).toFixed(0)} ms`);
  checkpoint();

  const results = {};
  if (opts.scenario !== 'session' && !run.interrupted && !serverDied) {
    results.password = await runScenario(
      'password (new browser each flow; sign-in with argon2id)',
      ['authorize', 'sign-in', 'continue', 'token', 'userinfo'],
      (user) => passwordFlow(user),
    );
  }
  if (opts.scenario !== 'password' && !run.interrupted && !serverDied) {
    results.session = await runScenario(
      'session (session cookie kept; no password check)',
      ['authorize', 'token', 'userinfo'],
      (user, vu) => sessionFlow(user, browsers[vu]),
    );
  }

  printLogs();
  console.log(`load average at end: ${fmtLoad()}`);
  if (serverDied || Object.values(results).some((r) => r.errors > 0)) process.exitCode = 1;
  if (run.interrupted) process.exitCode = 130;
}

await runMain(main);
