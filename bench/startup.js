#!/usr/bin/env node
// Start-up benchmark: time from launch to a 200 on /healthz on the embedded database, cold (fresh
// DATA_DIR: initdb + migrations + dev secret) and warm (existing DATA_DIR), and resident memory at idle.
// Usage: node bench/startup.js [--runs 5] [--npm]   (--npm also times `npm start`, which builds first)
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './lib.js';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1]) || 5;
const withNpm = args.includes('--npm');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function launch(command, argv, dataDir) {
  // A free port from the kernel: a fixed range can hit a local service (NATS listens on 4222 here).
  const port = await freePort();
  const started = performance.now();
  const child = spawn(command, argv, {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
    },
    stdio: 'ignore',
    detached: true,
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}`);
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() - started > 120_000) throw new Error('no answer within 120 s');
    await sleep(10);
  }
  const ms = performance.now() - started;
  return { child, ms };
}

function rssMiB(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024;
}

async function stop(child) {
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid, 'SIGTERM');
  await exited;
}

async function measure(label, command, argv) {
  const cold = [];
  const warm = [];
  const rss = [];
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'idp-bench-'));
    try {
      let r = await launch(command, argv, dir);
      cold.push(r.ms);
      await stop(r.child);
      r = await launch(command, argv, dir);
      warm.push(r.ms);
      if (command === process.execPath) {
        await sleep(3000);
        rss.push(rssMiB(r.child.pid));
      }
      await stop(r.child);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const fmt = (xs) =>
    `median ${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
  console.log(`${label}\n  cold: ${fmt(cold)}\n  warm: ${fmt(warm)}`);
  if (rss.length) console.log(`  idle RSS after 3 s: median ${median(rss).toFixed(0)} MiB`);
}

console.log(
  `node ${process.version}, ${runs} runs, load average ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
await measure('node dist/app/cli.js serve (compiled)', process.execPath, ['dist/app/cli.js', 'serve']);
if (withNpm) await measure('npm start (builds, then serves)', 'npm', ['start', '--silent']);
