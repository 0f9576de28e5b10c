// Preload of `npm run bench` (bench-only; nothing in src/ knows of it):
//   node --import ./bench/lib/count-statements.js dist/app/cli.js serve
// counts the statements a server process sends to its database, BEGIN/COMMIT included: every call of
// pg.Client.prototype.query (pg.Pool's queries, prepared statements and transactions all go through it) and of
// PGlite.prototype.query / exec (kysely-pglite-dialect sends every statement, BEGIN and COMMIT included, through
// PGlite's query(); neither method calls the other). On SIGUSR2 it writes
// { seq, pg, pglite } to the file named by BENCH_STATEMENTS_FILE (through a rename, so a reader never sees half a
// file); the caller diffs two snapshots. The preload runs in worker threads too (they inherit --import): a server
// that runs PGlite in a worker counts there, and the main thread collects the workers' totals over a
// BroadcastChannel before writing (signals reach the main thread only).
import { renameSync, writeFileSync } from 'node:fs';
import { BroadcastChannel, isMainThread, threadId } from 'node:worker_threads';

const file = process.env.BENCH_STATEMENTS_FILE;
const counts = { seq: 0, pg: 0, pglite: 0 };

function patch(proto, method, key) {
  const original = proto[method];
  if (typeof original !== 'function') return false;
  proto[method] = function countedQuery(...args) {
    counts[key]++;
    return original.apply(this, args);
  };
  return true;
}

try {
  const pg = (await import('pg')).default;
  patch(pg.Client.prototype, 'query', 'pg');
} catch {
  // no pg here
}
try {
  const { PGlite } = await import('@electric-sql/pglite');
  patch(PGlite.prototype, 'query', 'pglite');
  patch(PGlite.prototype, 'exec', 'pglite');
} catch {
  // no PGlite here
}

const channel = new BroadcastChannel('idp-bench-count-statements');
channel.unref();
const workers = new Map(); // threadId → { pg, pglite }, the main thread's copy of the workers' totals
channel.onmessage = ({ data }) => {
  if (!isMainThread && data === 'report') channel.postMessage({ threadId, pg: counts.pg, pglite: counts.pglite });
  if (isMainThread && typeof data === 'object') workers.set(data.threadId, data);
};

if (file && isMainThread) {
  process.on('SIGUSR2', () => {
    channel.postMessage('report');
    setTimeout(() => {
      counts.seq++;
      const total = { ...counts };
      for (const w of workers.values()) {
        total.pg += w.pg;
        total.pglite += w.pglite;
      }
      writeFileSync(`${file}.tmp`, JSON.stringify(total));
      renameSync(`${file}.tmp`, file);
    }, 100).unref();
  });
}
