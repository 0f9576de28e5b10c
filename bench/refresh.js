#!/usr/bin/env node
// Refresh benchmark: grant_type=refresh_token with rotation, over real HTTP on loopback, against
// `node dist/app/cli.js serve` on a fresh PostgreSQL database that is dropped at the end.
// Setup (unmeasured): one user per chain signs in through the hosted pages (authorize → sign-in → continue
// → consent → code → token, scope "openid offline_access", PKCE S256) and gets a refresh token.
// Measured: every chain loops for --duration seconds: POST /api/auth/oauth2/token grant_type=refresh_token
// with its latest refresh token, and carries on with the one in the response. The server rotates the token
// on every use and revokes the whole family when an old one is presented, so a chain never sends a token
// twice: any non-200 is an error, and an invalid_grant ends the chain (its family is gone) and is reported.
// Usage: node bench/refresh.js [--duration 20] [--chains 10] [--pool N] [--no-build]
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
  cpuMeter,
  createApplication,
  createDatabase,
  createHttpClient,
  createUser,
  databaseLine,
  dbUrlFor,
  exchangeCode,
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
  sleep,
  snippet,
  setupEndpoints,
  startServer,
  wholeNumber,
} from './lib.js';
import pg from 'pg';

// ---------------------------------------------------------------------------------------------- options
const opts = parseOptions(
  'refresh.js',
  {
    duration: { type: 'string', default: '20' },
    chains: { type: 'string', default: '10' },
  },
  'Usage: node bench/refresh.js [--duration S (default 20)] [--chains N (default 10)] ' +
    '[--pool DATABASE_POOL_SIZE] [--no-build]',
);
const DURATION_S = wholeNumber('duration', opts.duration, 1, 3600);
const CHAINS = wholeNumber('chains', opts.chains, 1, 200);
const POOL = poolOption(opts);
const MAX_ERRORS = 100; // beyond this the run stops early
const SCOPE = 'openid offline_access';
checkDatabaseUrl();

const median = (xs) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    0.5,
  );

const client = createHttpClient({ maxSockets: 256, userAgent: 'idp-bench-refresh', countStatuses: true });
const { request } = client;
/** issuer, loginUrl, redirectUri and clientId are set in main(). */
const oidc = { client, scope: SCOPE };
let tokenUrl;

const idTokenClaims = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

// ---------------------------------------------------------------------------- sign-in (setup, unmeasured)
/** A new browser: authorize → sign-in page → sign-in POST → continue → consent → code → token. */
async function signIn(user) {
  const auth = newAuthorization(oidc);
  const code = await signInPages(oidc, new Browser(client), auth, user);
  const { res, tokens } = await exchangeCode(oidc, auth, code, 'code token');
  if (!tokens.refresh_token)
    throw new StepError('code token', `no refresh_token for scope "${SCOPE}": ${res.body.slice(0, 200)}`, 200);
  const claims = idTokenClaims(tokens.id_token);
  if (claims.sub !== user.id || claims.aud !== oidc.clientId || claims.nonce !== auth.nonce) {
    throw new StepError('code token', `ID token for the wrong sign-in: sub ${claims.sub}, aud ${claims.aud}`, 200);
  }
  return tokens.refresh_token;
}

// ---------------------------------------------------------------------------------- the refresh chains
let serverDied = false;

/** One refresh: returns the successor refresh token, or throws a StepError with the OAuth error code. */
async function refreshOnce(chain) {
  const res = await request(tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: chain.token,
      client_id: oidc.clientId,
    }).toString(),
  });
  let json;
  try {
    json = JSON.parse(res.body);
  } catch {
    json = undefined;
  }
  if (res.status !== 200) {
    const error = new StepError(
      'refresh',
      json?.error ? `${json.error}: ${json.error_description ?? ''}` : `${res.status}: ${snippet(res)}`,
      res.status,
    );
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
  if (claims.sub !== chain.user.id || claims.aud !== oidc.clientId)
    throw bad(`an ID token for sub ${claims.sub}, aud ${claims.aud}`);
  if (json.scope !== undefined && json.scope.split(' ').sort().join(' ') !== SCOPE.split(' ').sort().join(' '))
    throw bad(`scope "${json.scope}"`);
  return json.refresh_token;
}

async function runChains(chains) {
  const serverProcess = run.processes.server.child;
  client.statusCounts = new Map();
  const latencies = [];
  const errors = [];
  const perSecond = []; // completed refreshes in each whole second of the run
  const deadline = now() + DURATION_S * 1000;
  let completed = 0;
  const started = now();
  let lastDone = started;
  const readCpu = cpuMeter(serverProcess.pid);
  const stop = () => run.interrupted || serverDied || errors.length >= MAX_ERRORS || now() >= deadline;

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
          if (run.interrupted) break; // a request cut short by Ctrl-C is not a server error
          const at = (now() - started) / 1000;
          errors.push({ chain: chain.index, status: error.status, code: error.oauthError, message: error.message, at });
          chain.errors++;
          if (serverProcess.exitCode !== null || serverProcess.signalCode !== null) {
            if (!serverDied)
              errors.push({
                chain: '-',
                message: `the server exited (${serverProcess.exitCode ?? serverProcess.signalCode})`,
                at,
              });
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
  const cpu = readCpu();

  console.log(
    `\nrefresh chains${run.interrupted ? ' (INTERRUPTED)' : ''}: ` +
      `${completed} refreshes in ${elapsed.toFixed(2)} s = ${(completed / elapsed || 0).toFixed(1)} refreshes/s` +
      ` (${chains.length} chains; last refresh ended ${elapsed.toFixed(2)} s after the start, ` +
      `all chains done after ${finished.toFixed(2)} s), errors ${errors.length}`,
  );
  const sorted = [...latencies].sort((a, b) => a - b);
  const mean = latencies.reduce((a, b) => a + b, 0) / (latencies.length || 1);
  const rows = [
    ['request', 'n', 'p50 ms', 'p99 ms', 'mean ms', 'max ms'],
    [
      'refresh',
      String(latencies.length),
      ...[percentile(sorted, 0.5), percentile(sorted, 0.99), mean, sorted.at(-1) ?? NaN].map((v) => v.toFixed(1)),
    ],
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows)
    console.log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`);
  const fullSeconds = Array.from({ length: Math.floor(finished) }, (_, i) => perSecond[i] ?? 0);
  if (fullSeconds.length) {
    console.log(
      `  refreshes per whole second: min ${Math.min(...fullSeconds)}, median ${median(fullSeconds)}, ` +
        `max ${Math.max(...fullSeconds)} (${fullSeconds.length} s)`,
    );
  }
  const perChain = chains.map((c) => c.refreshes);
  console.log(
    `  refreshes per chain: min ${Math.min(...perChain)}, median ${median(perChain)}, max ${Math.max(...perChain)}`,
  );
  const share = shareOver(finished);
  console.log(
    `  CPU (share of one core): server process ${share(cpu.server)} (all threads), ` +
      `this driver ${share(cpu.client)}; PostgreSQL not counted`,
  );
  console.log(
    `  HTTP statuses: ${
      [...client.statusCounts]
        .sort((a, b) => a[0] - b[0])
        .map(([s, n]) => `${s}×${n}`)
        .join(', ') || 'none'
    }`,
  );
  if (errors.length) {
    const byKind = new Map();
    for (const e of errors) {
      const key = `${e.status ?? '-'} ${e.code ?? ''}`.trim();
      if (!byKind.has(key)) byKind.set(key, { n: 0, first: e });
      byKind.get(key).n++;
    }
    console.log('  errors (status and OAuth error: count, first one):');
    for (const [key, { n, first }] of byKind)
      console.log(`    ${key}: ${n}× chain ${first.chain} at ${first.at.toFixed(2)} s: ${first.message}`);
  }
  const ended = chains.filter((c) => c.ended);
  if (ended.length) {
    console.log(
      `  CHAINS ENDED BY invalid_grant: ${ended.length} of ${chains.length} ` +
        '(a bug or a race in rotation: this driver never sends a token twice unless a request failed)',
    );
    for (const c of ended) {
      console.log(
        `    chain ${c.index} (${c.user.email}) at ${c.ended.at.toFixed(2)} s after ${c.ended.after} refreshes` +
          `${c.ended.earlierErrors ? `, after ${c.ended.earlierErrors} earlier error(s) on this chain` : ''}` +
          `: ${c.ended.message}`,
      );
    }
  }
  return { completed, elapsed, errors: errors.length, ended: ended.length };
}

/** What the database says after the run: one used token per successful refresh, no revoked grant. */
async function crossCheck(chains, completed) {
  const db = new pg.Client({ connectionString: dbUrlFor(run.dbName), connectionTimeoutMillis: 10_000 });
  try {
    await db.connect();
    const { rows } = await db.query(
      `select (select count(*) from refresh_tokens)::int as tokens,
              (select count(*) from refresh_tokens where used_at is not null)::int as used,
              (select count(*) from refresh_tokens where used_at is null and revoked_at is null)::int as live,
              (select count(*) from grants where revoked_at is not null)::int as revoked_grants`,
    );
    const r = rows[0];
    const expected = {
      tokens: chains.length + completed,
      used: completed,
      live: chains.length - chains.filter((c) => c.ended).length,
      revoked_grants: chains.filter((c) => c.ended).length,
    };
    const ok = r.used === expected.used && r.live === expected.live && r.revoked_grants === expected.revoked_grants;
    console.log(
      `database: ${r.tokens} refresh tokens, ${r.used} used, ${r.live} live, ${r.revoked_grants} revoked grants` +
        ` (${ok ? 'consistent with' : 'MISMATCH with'} ${completed} successful refreshes on ${chains.length} chains` +
        `${ok ? '' : `: expected ${JSON.stringify(expected)}`})`,
    );
    return ok;
  } catch (error) {
    console.log(`database cross-check failed: ${error.message}`);
    return false;
  } finally {
    await db.end().catch(() => {});
  }
}

// First signal: no new requests; the in-flight ones end, then cleanup (see handleSignals in lib/process.js).
handleSignals(
  'finishing in-flight requests, then stopping the server and dropping the database (again to stop at once)',
);

// ----------------------------------------------------------------------------------------------- main
async function main() {
  buildIfStale(opts['no-build']);
  checkpoint();

  const loadStart = fmtLoad();
  const { port, origin, adminToken } = await setupEndpoints(client, oidc);
  tokenUrl = `${oidc.issuer}/oauth2/token`;

  // A fresh database for this run.
  const pgVersion = await createDatabase();
  checkpoint();
  makeDataDir('idp-bench-refresh-');
  // REFRESH_TOKEN_GRACE stays at its default, 0: strict rotation.
  const env = serverEnv({ port, origin, pool: POOL, adminToken });

  printMachine(loadStart);
  console.log(
    `configuration: ${CHAINS} refresh chains, ${DURATION_S} s, scope "${SCOPE}", public client (client_id only), ` +
      'rotation on every refresh, REFRESH_TOKEN_GRACE=0 (default)\n' +
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
    clientName: 'Refresh benchmark',
    redirectUri: oidc.redirectUri,
    scope: SCOPE,
  });

  let t = now();
  const users = await Promise.all(
    Array.from({ length: CHAINS }, async (_, i) => {
      const user = { email: `bench-refresh-${i}@example.com`, password: b64url(randomBytes(18)) };
      return { ...user, id: await createUser(client, adminToken, { ...user, name: `Bench Refresh ${i}` }) };
    }),
  );
  console.log(`setup: application and ${users.length} users created in ${(now() - t).toFixed(0)} ms`);
  checkpoint();

  // One sign-in per chain (with consent), each giving the chain its first refresh token.
  t = now();
  const chains = await Promise.all(
    users.map(async (user, index) => ({
      index,
      user,
      token: await signIn(user),
      refreshes: 0,
      errors: 0,
      ended: undefined,
    })),
  );
  console.log(
    `setup: ${chains.length} sign-ins (argon2id, consent, code exchange) in ${(now() - t).toFixed(0)} ms, ` +
      'one refresh token each',
  );
  checkpoint();

  const result = await runChains(chains);
  const consistent = serverDied ? false : await crossCheck(chains, result.completed);

  printLogs();
  console.log(`load average at end: ${fmtLoad()}`);
  if (serverDied || result.errors > 0 || !consistent) process.exitCode = 1;
  if (run.interrupted) process.exitCode = 130;
}

await runMain(main);
