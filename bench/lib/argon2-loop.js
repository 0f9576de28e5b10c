// The machine's argon2id verify throughput, the ceiling of the login flow: `node bench/lib/argon2-loop.js S`
// hashes one password with @node-rs/argon2's defaults (argon2id m=19456 t=2 p=1, as our server and the anchor)
// and verifies it for S seconds with 2 × cores verifications in flight (they run on libuv's thread pool, so
// every core works), then prints { ops, seconds, opsPerSec, p50, p95, p99, serverCpuMsPerOp } as JSON: the
// last is the loop process's CPU per verify (all threads), the cost of one argon2id check on this machine. Its
// own process, like a server.
import { cpus } from 'node:os';
import { hash, verify } from '@node-rs/argon2';

const seconds = Number(process.argv[2] || 10);
const password = 'correct horse battery staple';
const digest = await hash(password);
const latencies = [];
const cpu = process.cpuUsage();
const started = performance.now();
const deadline = started + seconds * 1000;
await Promise.all(
  Array.from({ length: 2 * cpus().length }, async () => {
    while (performance.now() < deadline) {
      const t = performance.now();
      if (!(await verify(digest, password))) throw new Error('verify failed');
      latencies.push(performance.now() - t);
    }
  }),
);
const elapsed = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
latencies.sort((a, b) => a - b);
const at = (p) => latencies[Math.max(0, Math.ceil(p * latencies.length) - 1)];
console.log(
  JSON.stringify({
    ops: latencies.length,
    seconds: elapsed,
    opsPerSec: latencies.length / elapsed,
    p50: at(0.5),
    p95: at(0.95),
    p99: at(0.99),
    serverCpuMsPerOp: (used.user + used.system) / 1000 / latencies.length,
    // No load generator: all CPU per operation is the loop's own.
    driverCpuMs: 0,
  }),
);
