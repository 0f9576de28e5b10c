#!/usr/bin/env node
// `npm run bench`: the benchmark of issue 14, one table. For every target (our server on PostgreSQL and on
// embedded PGlite, node-oidc-provider with its memory adapter and with bench/anchor/pg-adapter.js, a bare Fastify
// route as the ceiling, an argon2id verify loop as the login flow's ceiling) and every scenario it serves: a
// load generator in its own process (bench/lib/driver.js) signs users in (unmeasured), runs 50 operations one
// after another while count-statements.js counts the statements (servers on a database), warms up, then measures
// under load while this process samples the server's CPU and RSS and the PostgreSQL backends' CPU from /proc.
// Full mode: 3 runs of 15 s per scenario (medians; each run waits up to 60 s for a quiet machine); --quick: 1 run
// of 10 s. See bench/README.md for the columns and the targets.
import { fork, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import {
  buildIfStale,
  checkDatabaseUrl,
  fmtLoad,
  handleSignals,
  parseOptions,
  printMachine,
  root,
  run,
  runMain,
  usageError,
  wholeNumber,
} from './lib.js';
import { startMeter, statements, waitQuiet } from './lib/meter.js';
import { describeHost, printReport, SCENARIOS } from './lib/report.js';
import { recordBodies, SCENARIOS_OF, startAnchor, startBare, startOurs, stopTarget, USERS } from './lib/targets.js';

const opts = parseOptions(
  'run.js',
  {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    db: { type: 'string', default: 'both' },
    target: { type: 'string', default: 'all' },
    json: { type: 'string' },
    runs: { type: 'string' },
    duration: { type: 'string' },
    'max-wait': { type: 'string', default: '60' },
    'bare-same': { type: 'boolean', default: false },
  },
  'Usage: npm run bench -- [--quick] [--only login,sso,refresh,me,userinfo,discovery,jwks,scopes]\n' +
    '                        [--db pg|pglite|both] [--target ours|anchor|all] [--json FILE]\n' +
    '                        [--runs N (default 3, --quick 1)] [--duration S (default 15, --quick 10)]\n' +
    '                        [--max-wait S for a quiet machine before each run (default 60)] [--no-build]\n' +
    '                        [--bare-same: also the bare route with our logger, request id, trace and headers]',
);
const RUNS = opts.runs ? wholeNumber('runs', opts.runs, 1, 20) : opts.quick ? 1 : 3;
const DURATION_S = opts.duration ? wholeNumber('duration', opts.duration, 1, 600) : opts.quick ? 10 : 15;
const WARMUP_S = opts.quick ? 2 : 3;
const COUNT_OPS = 50;
const MAX_WAIT_S = wholeNumber('max-wait', opts['max-wait'], 0, 3600);
const only = opts.only ? opts.only.split(',') : SCENARIOS;
for (const s of only) if (!SCENARIOS.includes(s)) usageError(`--only: unknown scenario ${s} (${SCENARIOS.join(', ')})`);
if (!['pg', 'pglite', 'both'].includes(opts.db)) usageError('--db must be pg, pglite or both');
if (!['ours', 'anchor', 'all'].includes(opts.target)) usageError('--target must be ours, anchor or all');
const dbs = opts.db === 'both' ? ['pg', 'pglite'] : [opts.db];
checkDatabaseUrl();

/** The targets in the order they run: ours first (the bare server answers with bodies recorded from ours). */
function plan() {
  const list = [];
  if (opts.target !== 'anchor') {
    for (const db of dbs) list.push({ name: `ours-${db}`, start: () => startOurs(db), kind: 'ours' });
    list.push({ name: 'bare', kind: 'bare' }); // the ceiling goes with our rows
    if (opts['bare-same']) list.push({ name: 'bare-same', kind: 'bare', same: true });
  }
  if (opts.target !== 'ours') {
    list.push({ name: 'anchor-memory', start: () => startAnchor('memory'), kind: 'anchor' });
    if (dbs.includes('pg')) list.push({ name: 'anchor-pg', start: () => startAnchor('pg'), kind: 'anchor' });
  }
  if (opts.target !== 'anchor' && only.includes('login')) list.push({ name: 'argon2', kind: 'argon2' });
  return list.filter((t) => t.kind === 'argon2' || SCENARIOS_OF[t.kind].some((s) => only.includes(s)));
}

// ------------------------------------------------------------------------------------------- the driver
let driver;
function ask(msg) {
  return new Promise((resolve, reject) => {
    const onMessage = (reply) => {
      driver.off('exit', onExit);
      if (reply.ok) resolve(reply);
      else reject(new Error(`driver, ${msg.cmd}: ${reply.error}`));
    };
    const onExit = (code) => {
      driver.off('message', onMessage);
      reject(new Error(`the driver exited (${code}) during ${msg.cmd}`));
    };
    driver.once('message', onMessage);
    driver.once('exit', onExit);
    driver.send(msg);
  });
}

async function stopDriver() {
  if (!driver) return;
  const gone = new Promise((r) => driver.once('exit', r));
  driver.send({ cmd: 'exit' });
  await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
  if (driver.exitCode === null) driver.kill('SIGKILL');
  driver = undefined;
}

/** One scenario on a started target: setup, statement counts, warm-up, the measured load. */
async function measureScenario(started, scenario) {
  const { pid } = run.processes[started.process].child;
  driver = fork(join(root, 'bench', 'lib', 'driver.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  try {
    await ask({ cmd: 'setup', target: started.target, scenario, users: started.users });
    let stmts;
    if (started.stmtFile) {
      const before = await statements(pid, started.stmtFile);
      const counted = await ask({ cmd: 'count', n: COUNT_OPS });
      const after = await statements(pid, started.stmtFile);
      if (before && after) {
        const n = after.pg + after.pglite - before.pg - before.pglite;
        stmts = { perOp: n / COUNT_OPS, countErrors: counted.errors, countErrorSamples: counted.errorSamples };
      }
    }
    await ask({ cmd: 'warmup', seconds: WARMUP_S });
    const load1 = loadavg()[0];
    const stop = startMeter(pid, started.dbName);
    const r = await ask({ cmd: 'measure', seconds: DURATION_S });
    const m = stop();
    return {
      ...r,
      ok: undefined,
      load1,
      rssPeakMb: m.rssPeakMb,
      serverCpuMsPerOp: m.serverCpuMs / r.ops,
      pgCpuMsPerOp: m.pgCpuMs / r.ops,
      stmtsPerOp: stmts?.perOp,
      errors: r.errors + (stmts?.countErrors ?? 0),
      errorSamples: [...(r.errorSamples ?? []), ...(stmts?.countErrorSamples ?? [])],
    };
  } finally {
    await stopDriver();
  }
}

/** The host's RSA signature and plain JavaScript speed (bench/lib/host.js), in a process of its own. */
function measureHost() {
  const r = spawnSync(process.execPath, [join(root, 'bench', 'lib', 'host.js')], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`host.js failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

function argon2Loop() {
  const r = spawnSync(process.execPath, [join(root, 'bench', 'lib', 'argon2-loop.js'), String(DURATION_S)], {
    cwd: root,
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`argon2-loop.js failed: ${r.stderr}`);
  return { ...JSON.parse(r.stdout), errors: 0 };
}

// -------------------------------------------------------------------------------------------------- main
let bodies;
const results = []; // { run, target, scenario, ...figures }
const runInfo = [];
const logs = new Map(); // target → its server's log lines at warn or above (the last run with any)

async function oneRun(index, targets) {
  const quiet = await waitQuiet(MAX_WAIT_S);
  const host = measureHost();
  runInfo.push({ run: index, loadBefore: quiet.load, waitedS: quiet.waitedS, quiet: quiet.quiet, host });
  console.log(
    `run ${index}/${RUNS}: load average ${quiet.load.map((l) => l.toFixed(2)).join(' ')}` +
      ` after waiting ${quiet.waitedS.toFixed(0)} s` +
      `${quiet.quiet ? '' : ` (NOT QUIET: went on after ${MAX_WAIT_S} s)`}` +
      `; host: ${describeHost(host)}`,
  );
  for (const t of targets) {
    if (run.interrupted) return;
    if (t.kind === 'argon2') {
      const r = argon2Loop();
      results.push({ run: index, target: 'argon2', scenario: 'login', ...r, load1: loadavg()[0] });
      console.log(
        `  ${'argon2'.padEnd(13)} ${'verify'.padEnd(9)} ${r.opsPerSec.toFixed(1).padStart(8)}/s` +
          ` ${r.serverCpuMsPerOp.toFixed(2)} ms of CPU each`,
      );
      continue;
    }
    if (t.kind === 'bare' && !bodies) continue;
    let started;
    try {
      started = t.kind === 'bare' ? await startBare(bodies, { same: t.same }) : await t.start();
    } catch (error) {
      // A target that does not start: an error in each of its rows, and the run goes on.
      console.log(`  ${t.name}: COULD NOT START: ${error.message.split('\n').slice(0, 3).join(' / ')}`);
      for (const scenario of SCENARIOS_OF[t.kind].filter((s) => only.includes(s)))
        results.push({ run: index, target: t.name, scenario, errors: 1, errorSamples: [`start: ${error.message}`] });
      await stopTarget({ process: 'server' }).catch(() => {});
      continue;
    }
    try {
      if (t.kind === 'ours' && !bodies) bodies = await recordBodies(started);
      for (const scenario of SCENARIOS_OF[t.kind].filter((s) => only.includes(s))) {
        if (run.interrupted) break;
        let r;
        try {
          r = await measureScenario(started, scenario);
        } catch (error) {
          console.log(`  ${t.name} ${scenario}: FAILED: ${error.message}`);
          results.push({ run: index, target: t.name, scenario, errors: 1, errorSamples: [error.message] });
          continue;
        }
        results.push({ run: index, target: t.name, scenario, ...r });
        const flag = r.errors ? `  ERRORS ${r.errors}: ${r.errorSamples.join(' | ')}` : '';
        console.log(
          `  ${t.name.padEnd(13)} ${scenario.padEnd(9)} ${r.opsPerSec.toFixed(1).padStart(8)}/s` +
            ` p99 ${r.p99.toFixed(1)} ms, ${r.stmtsPerOp?.toFixed(1) ?? '-'} statements/op${flag}`,
        );
      }
    } finally {
      const { log } = run.processes[started.process] ?? {};
      if (log?.warnOrAbove.length) logs.set(t.name, log);
      await stopTarget(started);
    }
  }
}

handleSignals('stopping after the current scenario (again to stop at once)');

await runMain(async () => {
  if (opts.target !== 'anchor') buildIfStale(opts['no-build']);
  const loadStart = fmtLoad();
  printMachine(loadStart);
  const targets = plan();
  console.log(
    `configuration: ${RUNS} run(s), ${DURATION_S} s per scenario after ${WARMUP_S} s warm-up, ${USERS} virtual ` +
      `users or refresh chains, 50 connections for single requests, ${COUNT_OPS} sequential operations ` +
      `for the statement counts; targets ${targets.map((t) => t.name).join(', ')}; scenarios ${only.join(', ')}`,
  );
  for (let i = 1; i <= RUNS && !run.interrupted; i++) await oneRun(i, targets);
  const summary = printReport(results, { runs: RUNS, runInfo, dbs });
  for (const [name, log] of logs) {
    console.log(`\n${name}: ${log.warnOrAbove.length} log lines at warn or above, the first ones:`);
    for (const line of log.warnOrAbove.slice(0, 5)) console.log(`  ${line.slice(0, 300)}`);
  }
  console.log(`load average at end: ${fmtLoad()}`);
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify({ options: opts, runInfo, results, summary }, null, 2));
    console.log(`results written to ${opts.json}`);
  }
  if (summary.errors) process.exitCode = 1;
});
