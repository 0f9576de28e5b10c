// What `npm run bench` reads from outside the processes under test: CPU time and resident memory from /proc, the
// CPU time of the PostgreSQL backends serving one database, the statement counters of count-statements.js, and
// the wait for a quiet machine. Linux only (/proc); elsewhere the figures are NaN. Imports core.js.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { sleep } from './core.js';

/** CPU milliseconds (user + system, all threads) of process `pid` so far; NaN when unreadable. */
export function cpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime in ticks of 10 ms (USER_HZ 100)
  } catch {
    return NaN;
  }
}

/** `pid` and its child processes (the workers of a WORKERS > 1 server), from /proc. */
export function processTree(pid) {
  const pids = [pid];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const ppid = Number(readFileSync(`/proc/${name}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      if (ppid === pid) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Resident set size of `pid` in MB; NaN when unreadable. */
export function rssMb(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** The pids of the PostgreSQL backends connected to database `dbName` (their title names the database). */
function backendsOf(dbName) {
  const pids = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.startsWith('postgres: ') && cmd.includes(` ${dbName} `)) pids.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * Starts sampling: the server's CPU, its peak RSS (every 250 ms) and, when `dbName` is given, the CPU of the
 * PostgreSQL backends of that database (a backend started during the window counts from 0; one that ends loses
 * at most its last 250 ms). stop() returns { serverCpuMs, rssPeakMb, pgCpuMs }.
 */
export function startMeter(pid, dbName) {
  // A WORKERS > 1 server: the primary and its workers (a worker that exits in the window loses its share).
  const tree = processTree(pid);
  const sum = (f) => tree.map(f).reduce((a, b) => a + b, 0);
  const cpu0 = sum(cpuMs);
  const backends = new Map(); // pid → { first, last }
  let rssPeak = sum(rssMb);
  let ticks = 0;
  const sampleBackends = (initial) => {
    if (ticks++ % 4 === 0) {
      for (const b of backendsOf(dbName)) if (!backends.has(b)) backends.set(b, { first: initial ? cpuMs(b) : 0 });
    }
    for (const [b, v] of backends) {
      const c = cpuMs(b);
      if (!Number.isNaN(c)) v.last = c;
    }
  };
  if (dbName) sampleBackends(true);
  const timer = setInterval(() => {
    rssPeak = Math.max(rssPeak, sum(rssMb));
    if (dbName) sampleBackends(false);
  }, 250);
  return () => {
    clearInterval(timer);
    rssPeak = Math.max(rssPeak, sum(rssMb));
    const serverCpuMs = sum(cpuMs) - cpu0;
    let pgCpuMs = NaN;
    if (dbName) {
      sampleBackends(false);
      pgCpuMs = 0;
      for (const v of backends.values()) pgCpuMs += (v.last ?? v.first) - v.first;
    }
    return { serverCpuMs, rssPeakMb: rssPeak, pgCpuMs };
  };
}

/** Asks the preloaded count-statements.js of `pid` for its counters: { pg, pglite } (undefined if no answer). */
export async function statements(pid, file) {
  let before = -1;
  try {
    if (existsSync(file)) before = JSON.parse(readFileSync(file, 'utf8')).seq;
    process.kill(pid, 'SIGUSR2');
  } catch {
    return undefined;
  }
  for (let i = 0; i < 200; i++) {
    await sleep(10);
    try {
      const c = JSON.parse(readFileSync(file, 'utf8'));
      if (c.seq !== before) return c;
    } catch {
      // not written yet
    }
  }
  return undefined;
}

/** Waits up to `maxS` seconds for a 1-minute load average below `perCore` × cores; returns the load then. */
export async function waitQuiet(maxS, perCore = 0.5) {
  const limit = perCore * cpus().length;
  const started = Date.now();
  while (loadavg()[0] >= limit && Date.now() - started < maxS * 1000) await sleep(2000);
  return { load: loadavg(), waitedS: (Date.now() - started) / 1000, quiet: loadavg()[0] < limit };
}
