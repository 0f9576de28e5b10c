// external.js's measurement: one autocannon run against a target (per-second samples, 2xx latencies, CPU
// shares), its report line, and the summary over all rounds with the ratio /me ÷ bare. Imports core.js and
// process.js.
import { loadavg } from 'node:os';
import autocannon from 'autocannon';
import { cpuMeter, now, percentile, run } from './core.js';
import { exited } from './process.js';

const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const median = (xs) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

let currentRun; // the autocannon instance running now, stopped on Ctrl-C

/** Stops the running measurement, if any (external.js's run.onInterrupt). */
export const stopMeasurement = () => currentRun?.stop();

/** The same requests for both targets: GET `path`, one token each; connection i starts at token i. */
function requestsFor(tokens, path) {
  return tokens.map((token) => ({
    method: 'GET',
    path,
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  }));
}

/**
 * One autocannon run against `target` for `seconds`. Per-second samples are autocannon's own (its
 * 'tick' events carry the count it records in its requests histogram); latencies are those of the 2xx
 * responses from its 'response' events (what its latency histogram records, unrounded).
 * `connections` connections, pipelining 1, a request without an answer for `timeoutS` seconds is a timeout.
 */
export async function measure(target, seconds, tokens, { connections, path, timeoutS }) {
  const base = requestsFor(tokens, path);
  let clientIndex = 0;
  const ticks = [];
  const latencies = [];
  const proc = run.processes[target.process].child;
  const readCpu = cpuMeter(proc.pid);
  const load1 = loadavg()[0];
  const t0 = now();
  const instance = autocannon({
    url: target.origin,
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: timeoutS,
    bailout: 1000, // a dead server: stop after this many socket errors instead of spinning
    requests: base,
    setupClient(client) {
      const k = clientIndex++ % base.length;
      client.setRequests(
        base
          .slice(k)
          .concat(base.slice(0, k))
          .map((r) => ({ ...r, headers: { ...r.headers } })),
      );
    },
  });
  currentRun = instance;
  instance.on('tick', ({ counter }) => ticks.push(counter));
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
  });
  const result = await instance;
  currentRun = undefined;
  const wall = (now() - t0) / 1000;
  const cpu = readCpu();
  // The last tick comes after the stop with a zero count; autocannon records `samples` values.
  const samples = ticks.slice(0, result.samples);
  const counted = samples.reduce((a, b) => a + b, 0);
  const responses = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx'];
  if (counted !== responses)
    console.log(`  (note: per-second samples add up to ${counted}, autocannon counted ${responses} responses)`);
  return {
    target: target.name,
    samples,
    latencies,
    load1,
    total: responses,
    sent: result.requests.sent,
    acMean: result.requests.average,
    acMedian: result.requests.p50,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
    statuses: Object.entries(result.statusCodeStats).map(([s, { count }]) => [Number(s), count]),
    bytesPerResponse: result['2xx'] ? result.throughput.total / result['2xx'] : NaN, // bytes are counted for 2xx only
    serverCpu: Number.isNaN(cpu.server) ? undefined : cpu.server / wall,
    driverCpu: cpu.client / wall,
    exited: exited(proc),
  };
}

const pct = (share) => (share === undefined ? '?' : `${(share * 100).toFixed(0)}%`);
const fmtStatuses = (statuses) =>
  statuses
    .sort((a, b) => a[0] - b[0])
    .map(([s, n]) => `${s}×${n}`)
    .join(', ') || 'none';

export function describe(label, m) {
  const sorted = [...m.latencies].sort((a, b) => a - b);
  console.log(
    `${label.padEnd(12)} req/s mean ${mean(m.samples).toFixed(0)} median ${median(m.samples).toFixed(0)}` +
      ` (${m.samples.length} samples, min ${Math.min(...m.samples)} max ${Math.max(...m.samples)})` +
      ` | latency p50 ${percentile(sorted, 0.5).toFixed(2)} ms p99 ${percentile(sorted, 0.99).toFixed(2)} ms` +
      ` | ${m.total} responses, non-2xx ${m.non2xx}, errors ${m.errors}, timeouts ${m.timeouts}` +
      ` | statuses ${fmtStatuses(m.statuses)}, ${m.bytesPerResponse.toFixed(0)} B/response` +
      ` | CPU: ${m.target === 'me' ? 'server' : 'bare'} ${pct(m.serverCpu)}, driver ${pct(m.driverCpu)}` +
      ` | load1 ${m.load1.toFixed(2)}`,
  );
}

/** The summary over all rounds (`runs`: target → measurements, in `order`) and the ratio /me ÷ bare. */
export function printSummary(runs, order, { path, durationS, connections }) {
  // Summary over all rounds: all per-second samples of a target together, all 2xx latencies together.
  const combined = {};
  for (const key of order) {
    const ms = runs[key];
    if (!ms.length) continue;
    const samples = ms.flatMap((m) => m.samples);
    const latencies = ms.flatMap((m) => m.latencies).sort((a, b) => a - b);
    const sum = (f) => ms.reduce((a, m) => a + f(m), 0);
    combined[key] = {
      mean: mean(samples),
      median: median(samples),
      n: samples.length,
      p50: percentile(latencies, 0.5),
      p99: percentile(latencies, 0.99),
      responses: sum((m) => m.total),
      non2xx: sum((m) => m.non2xx),
      errors: sum((m) => m.errors),
      timeouts: sum((m) => m.timeouts),
      statuses: [
        ...ms.flatMap((m) => m.statuses).reduce((acc, [s, n]) => acc.set(s, (acc.get(s) ?? 0) + n), new Map()),
      ],
      cpu: mean(ms.map((m) => m.serverCpu ?? NaN)),
      driver: mean(ms.map((m) => m.driverCpu)),
    };
  }
  console.log(`\nsummary over ${runs.me.length} round(s) of ${durationS} s per target, ${connections} connections:`);
  const rows = [
    [
      'target',
      'samples',
      'req/s mean',
      'req/s median',
      'p50 ms',
      'p99 ms',
      'responses',
      'non-2xx',
      'errors',
      'timeouts',
      'CPU',
      'driver CPU',
    ],
  ];
  for (const [key, c] of Object.entries(combined)) {
    rows.push([
      key === 'me' ? `GET ${path}` : 'bare Fastify',
      String(c.n),
      c.mean.toFixed(0),
      c.median.toFixed(0),
      c.p50.toFixed(2),
      c.p99.toFixed(2),
      String(c.responses),
      String(c.non2xx),
      String(c.errors),
      String(c.timeouts),
      Number.isNaN(c.cpu) ? '?' : pct(c.cpu),
      pct(c.driver),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows)
    console.log(`  ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`);
  for (const [key, c] of Object.entries(combined)) console.log(`  ${key} HTTP statuses: ${fmtStatuses(c.statuses)}`);
  if (combined.me && combined.bare) {
    const perRound = runs.me.map((m, i) =>
      runs.bare[i] ? (mean(m.samples) / mean(runs.bare[i].samples)).toFixed(3) : '?',
    );
    console.log(
      `  ratio /me ÷ bare: req/s mean ${(combined.me.mean / combined.bare.mean).toFixed(3)}, ` +
        `median ${(combined.me.median / combined.bare.median).toFixed(3)}` +
        ` (per round, means: ${perRound.join(', ')}); ` +
        `latency p50 ${(combined.me.p50 / combined.bare.p50).toFixed(2)}×, ` +
        `p99 ${(combined.me.p99 / combined.bare.p99).toFixed(2)}×`,
    );
  }
  return combined;
}
