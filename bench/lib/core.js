// Options parsing, the run's shared state, timing and formatting helpers, CPU shares, the machine lines of a
// report, StepError and the setup checkpoint. Imports nothing of bench/.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { arch, cpus, loadavg, platform } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export const root = join(fileURLToPath(import.meta.url), '..', '..', '..');

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
  const dirty = git('status', '--porcelain', '--', 'app', 'src', 'plugins', 'schemas', 'db');
  const cpu = cpus();
  console.log(
    `node ${process.version}, ${platform()} ${arch()}, ${cpu.length} CPUs (${cpu[0]?.model.trim() ?? 'unknown'})`,
  );
  console.log(`load average at start: ${loadStart}`);
  console.log(`commit ${commit ?? 'unknown'}${dirty ? ' with uncommitted changes in app/src/plugins/schemas/db' : ''}`);
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
