// The build-if-stale check, the server and bare processes (own process group, SIGTERM then SIGKILL, log lines
// by level), Ctrl-C handling, the cleanup and runMain. Imports core.js and database.js.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { now, root, run, sleep } from './core.js';
import { dropDatabase } from './database.js';

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
  for (const dir of ['app', 'src', 'plugins', 'schemas', 'db']) if (existsSync(join(root, dir))) walk(join(root, dir));
  return newest;
}

/** Runs `npm run build` when dist/ is missing or older than the sources (unless --no-build). */
export function buildIfStale(noBuild) {
  const cliJs = join(root, 'dist', 'app', 'cli.js');
  if (!noBuild && (!existsSync(cliJs) || statSync(cliJs).mtimeMs < newestSourceMtime())) {
    console.log('building (dist/ is missing or older than the sources): npm run build');
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) throw new Error(`npm run build failed (exit ${r.status ?? r.signal})`);
  }
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

/** `node dist/app/cli.js serve` as run.processes.server ("the server"), /healthz polled through `client`. */
export function startServer(client, env) {
  const readyUrl = `${client.origin}/healthz`;
  return startProcess({
    name: 'server',
    label: 'the server',
    args: ['dist/app/cli.js', 'serve'],
    env,
    readyUrl,
    probe: async () => (await client.request(readyUrl)).status,
    exitedText: 'the server exited',
    timeoutPrefix: '',
  });
}

/** SIGTERM to the process group, SIGKILL after 15 s. */
export async function stopProcess(name) {
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
