#!/usr/bin/env node
// The soak of issue 16 (part 7): our server (`node dist/app/cli.js serve`, METRICS=on) on a fresh PostgreSQL
// database (or embedded PGlite with --db pglite) under a steady mixed load for --duration seconds: sign-ins
// (argon2id, a fresh browser each), SSO flows, refresh chains, /api/external/me and admin changes (a user's
// name, an application created, changed and deleted: each drops caches through the invalidation bus). Every
// --sample seconds it reads the server's /metrics (resident memory, heap used, event-loop lag p99, active
// handles, the pool's connections) and PostgreSQL's connections to the database. At the end: errors (must be
// 0), the trend of each curve after the warm-up (first third against last third of the samples), a JSON file
// and a PNG plot of the curves in bench/results/ (drawn as SVG and rendered by Debian's Chromium).
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { chromium } from 'playwright-core';
import { buildIfStale, checkDatabaseUrl, fmtLoad, handleSignals, parseOptions, root, run, runMain } from './lib.js';
import { BENCH_METRICS_TOKEN, dbUrlFor } from './lib/database.js';
import { FLOW_SCOPE, loginFlow, REFRESH_SCOPE, refresh, ssoFlow } from './lib/flows.js';
import { wholeNumber, sleep, now } from './lib/core.js';
import { startOurs } from './lib/targets.js';

const opts = parseOptions(
  'soak.js',
  {
    duration: { type: 'string', default: '600' },
    sample: { type: 'string', default: '5' },
    db: { type: 'string', default: 'pg' },
    scale: { type: 'string', default: '1' },
  },
  'node bench/soak.js [--duration S] [--sample S] [--db pg|pglite] [--scale N] [--no-build]',
);
const durationS = wholeNumber('duration', opts.duration, 30, 7200);
const sampleS = wholeNumber('sample', opts.sample, 1, 60);
const scale = wholeNumber('scale', opts.scale, 1, 10);
const db = opts.db === 'pglite' ? 'pglite' : 'pg';

// Operations per second of each kind (times --scale): well below saturation on 2 cores, so the curves show
// the server's state, not queueing.
const RATES = { signIn: 2, sso: 15, refresh: 15, me: 40, admin: 0.5 };

const stats = Object.fromEntries(Object.keys(RATES).map((k) => [k, { ok: 0, errors: 0, lastError: '' }]));

/** Runs `op` `rate` times a second until `until`, at most `cap` at once (a late one is skipped and counted). */
async function steady(kind, rate, until, cap, op) {
  const interval = 1000 / rate;
  const inFlight = new Set();
  let next = now();
  let skipped = 0;
  while (now() < until && !run.interrupted) {
    if (inFlight.size < cap) {
      const p = op()
        .then(() => stats[kind].ok++)
        .catch((error) => {
          stats[kind].errors++;
          stats[kind].lastError = String(error.message ?? error).slice(0, 300);
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    } else skipped++;
    next += interval;
    await sleep(Math.max(0, next - now()));
  }
  await Promise.allSettled([...inFlight]);
  stats[kind].skipped = skipped;
}

function metric(text, name, labels = '') {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || l.startsWith(`${name}${labels}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN;
}

async function main() {
  if (db === 'pg') checkDatabaseUrl();
  handleSignals('stopping the soak');
  buildIfStale(opts['no-build']);
  process.env.BENCH_METRICS = 'on';
  console.log(`soak: ${durationS} s on ${db}, sample every ${sampleS} s, rates ${JSON.stringify(RATES)} x ${scale}`);
  console.log(`load average at start: ${fmtLoad()}`);
  const started = await startOurs(db);
  const { target, users, client } = started;
  const server = run.processes.server.child;

  // Setup (unmeasured): each user signs in once with consent remembered (a browser with a session for the
  // SSO flows, a token for /me) and starts a refresh chain.
  const sessions = [];
  const chains = [];
  for (const user of users) {
    const { browser, tokens } = await loginFlow(target, client, user, { scope: FLOW_SCOPE, allowConsent: true });
    sessions.push({ user, browser, accessToken: tokens.access_token });
    const offline = await loginFlow(target, client, user, { scope: REFRESH_SCOPE, allowConsent: true });
    chains.push({ user, token: offline.tokens.refresh_token });
  }
  const adminHeaders = {
    authorization: `Bearer ${started.adminToken}`,
    'content-type': 'application/json',
  };

  const pgClient = db === 'pg' ? new pg.Client({ connectionString: dbUrlFor(run.dbName) }) : undefined;
  await pgClient?.connect();
  const samples = [];
  const t0 = now();
  const until = t0 + durationS * 1000;
  let n = 0;
  const pick = (list) => list[n++ % list.length];

  const sampler = (async () => {
    while (now() < until && !run.interrupted) {
      await sleep(sampleS * 1000);
      const res = await client.request(`${target.origin}/metrics`, {
        headers: { authorization: `Bearer ${BENCH_METRICS_TOKEN}` },
      });
      const text = res.body;
      const dbConnections = pgClient
        ? Number(
            (await pgClient.query('select count(*)::int as n from pg_stat_activity where datname = $1', [run.dbName]))
              .rows[0].n,
          )
        : Number.NaN;
      samples.push({
        t: Math.round((now() - t0) / 1000),
        rssMb: metric(text, 'process_resident_memory_bytes') / 2 ** 20,
        heapMb: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
        lagP99Ms: metric(text, 'nodejs_eventloop_lag_p99_seconds') * 1000,
        handles: metric(text, 'nodejs_active_handles_total'),
        poolTotal: metric(text, 'idp_db_pool_connections', '{state="total"}'),
        dbConnections,
        load: fmtLoad(),
      });
      const s = samples.at(-1);
      process.stdout.write(
        `  t=${String(s.t).padStart(4)} s  rss ${s.rssMb.toFixed(0)} MB  heap ${s.heapMb.toFixed(1)} MB  ` +
          `lag p99 ${s.lagP99Ms.toFixed(1)} ms  handles ${s.handles}  pool ${s.poolTotal}  ` +
          `db conns ${s.dbConnections}  errors ${Object.values(stats).reduce((a, x) => a + x.errors, 0)}\n`,
      );
    }
  })();

  const admin = async () => {
    const user = pick(users);
    const rename = await client.request(`${target.origin}/api/admin/users/${user.id}`, {
      method: 'PATCH',
      headers: adminHeaders,
      body: JSON.stringify({ name: `Soak ${n}` }),
    });
    if (rename.status !== 200) throw new Error(`PATCH user: ${rename.status} ${rename.body.slice(0, 200)}`);
    const created = await client.request(`${target.origin}/api/admin/applications`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify({ clientName: `Soak ${n}`, redirectUris: [target.redirectUri], allowedScopes: ['openid'] }),
    });
    if (created.status !== 201) throw new Error(`POST application: ${created.status} ${created.body.slice(0, 200)}`);
    const path = `${target.origin}/api/admin/applications/${JSON.parse(created.body).clientId}`;
    const changed = await client.request(path, {
      method: 'PATCH',
      headers: adminHeaders,
      body: JSON.stringify({ clientName: `Soak ${n} renamed` }),
    });
    if (changed.status !== 200) throw new Error(`PATCH application: ${changed.status} ${changed.body.slice(0, 200)}`);
    const deleted = await client.request(path, {
      method: 'DELETE',
      headers: { authorization: adminHeaders.authorization },
    });
    if (deleted.status !== 204) throw new Error(`DELETE application: ${deleted.status} ${deleted.body.slice(0, 200)}`);
  };
  const me = async () => {
    const s = pick(sessions);
    const res = await client.request(`${target.origin}/api/external/me`, {
      headers: { authorization: `Bearer ${s.accessToken}` },
    });
    if (res.status !== 200) throw new Error(`/me: ${res.status} ${res.body.slice(0, 200)}`);
  };
  // A chain is used by one refresh at a time (rotation: the next refresh needs the token this one returns).
  const busy = new Set();
  const rotate = async () => {
    const chain = chains.find((c) => !busy.has(c));
    if (!chain) throw new Error('every refresh chain busy');
    busy.add(chain);
    try {
      chain.token = await refresh(target, client, chain);
    } finally {
      busy.delete(chain);
    }
  };

  await Promise.all([
    steady('signIn', RATES.signIn * scale, until, 8, () => loginFlow(target, client, pick(users))),
    steady('sso', RATES.sso * scale, until, 16, () => {
      const s = pick(sessions);
      return ssoFlow(target, client, s.user, s.browser);
    }),
    steady('refresh', RATES.refresh * scale, until, chains.length, rotate),
    steady('me', RATES.me * scale, until, 32, me),
    steady('admin', RATES.admin * scale, until, 1, admin),
    sampler,
  ]);
  await pgClient?.end();
  const serverAlive = server.exitCode === null && server.signalCode === null;
  report(samples, serverAlive);
}

/** Medians of the first, middle and last third of the samples after the first minute, and the maximum. */
function trend(samples, key) {
  const steadyPart = samples.filter((s) => s.t >= 60 && Number.isFinite(s[key]));
  if (steadyPart.length < 6) return { first: Number.NaN, middle: Number.NaN, last: Number.NaN, max: Number.NaN };
  const third = Math.floor(steadyPart.length / 3);
  const median = (xs) => xs.map((s) => s[key]).sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    first: median(steadyPart.slice(0, third)),
    middle: median(steadyPart.slice(third, -third)),
    last: median(steadyPart.slice(-third)),
    max: Math.max(...steadyPart.map((s) => s[key])),
  };
}

// A growth is a trend when the last third's median exceeds the first third's by both margins and the middle
// third's by half of them: a leak keeps growing, while a step (more keep-alive sockets after a busy moment) stays.
const LIMITS = {
  rssMb: { abs: 25, rel: 0.1 },
  heapMb: { abs: 10, rel: 0.15 },
  lagP99Ms: { abs: 20, rel: 0.5 },
  handles: { abs: 10, rel: 0.2 },
  poolTotal: { abs: 2, rel: 0.2 },
  dbConnections: { abs: 2, rel: 0.2 },
};

function report(samples, serverAlive) {
  console.log(`\nload average at end: ${fmtLoad()}`);
  const errors = Object.values(stats).reduce((a, s) => a + s.errors, 0);
  console.log('operations:');
  for (const [kind, s] of Object.entries(stats))
    console.log(
      `  ${kind.padEnd(8)} ok ${s.ok}  errors ${s.errors}  skipped (cap reached) ${s.skipped ?? 0}` +
        `${s.lastError ? `  last error: ${s.lastError}` : ''}`,
    );
  const verdicts = [];
  console.log('curves (medians of the thirds after the first minute, and the maximum):');
  for (const [key, limit] of Object.entries(LIMITS)) {
    const { first, middle, last, max } = trend(samples, key);
    if (!Number.isFinite(first)) {
      console.log(`  ${key.padEnd(14)} not measured`);
      continue;
    }
    const beyond = (from, share) =>
      last - from > limit.abs * share && last - from > limit.rel * share * Math.max(from, 1e-9);
    const grows = beyond(first, 1) && beyond(middle, 0.5);
    verdicts.push({ key, first, last, max, grows });
    console.log(
      `  ${key.padEnd(14)} ${first.toFixed(1)} -> ${middle.toFixed(1)} -> ${last.toFixed(1)} ` +
        `(max ${max.toFixed(1)}): ` +
        `${grows ? 'GROWS' : 'no growth trend'}`,
    );
  }
  const ok = errors === 0 && serverAlive && verdicts.every((v) => !v.grows);
  console.log(`\nsoak: ${ok ? 'PASS' : 'FAIL'} (errors ${errors}, server ${serverAlive ? 'alive' : 'DIED'})`);
  const dir = join(root, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const stamp = new Date().toISOString().slice(0, 16).replace(/[:T]/g, '-');
  const base = join(dir, `soak-${db}-${stamp}`);
  writeFileSync(`${base}.json`, JSON.stringify({ db, durationS, sampleS, RATES, scale, stats, samples, verdicts }));
  run.plot = { base, samples };
  if (!ok) process.exitCode = 1;
}

/** Six small line charts as one SVG page, rendered to PNG by Chromium. */
async function plot({ base, samples }) {
  const charts = [
    ['rssMb', 'resident memory (MB)'],
    ['heapMb', 'heap used (MB)'],
    ['lagP99Ms', 'event-loop lag p99 (ms)'],
    ['handles', 'active handles'],
    ['poolTotal', 'pool connections'],
    ['dbConnections', 'PostgreSQL connections'],
  ];
  const W = 420;
  const H = 220;
  const svgs = charts.map(([key, title]) => {
    const pts = samples.filter((s) => Number.isFinite(s[key]));
    if (!pts.length) return `<svg width="${W}" height="${H}"><text x="10" y="20">${title}: not measured</text></svg>`;
    const maxT = Math.max(...pts.map((s) => s.t), 1);
    const maxY = Math.max(...pts.map((s) => s[key]), 1) * 1.15;
    const x = (t) => 50 + (t / maxT) * (W - 70);
    const y = (v) => H - 30 - (v / maxY) * (H - 60);
    const path = pts.map((s, i) => `${i ? 'L' : 'M'}${x(s.t).toFixed(1)},${y(s[key]).toFixed(1)}`).join(' ');
    return `<svg width="${W}" height="${H}" font-family="sans-serif" font-size="12">
<text x="50" y="18" font-weight="bold">${title}</text>
<line x1="50" y1="${H - 30}" x2="${W - 20}" y2="${H - 30}" stroke="#999"/>
<line x1="50" y1="30" x2="50" y2="${H - 30}" stroke="#999"/>
<text x="4" y="${y(maxY / 1.15) + 4}">${(maxY / 1.15).toFixed(1)}</text><text x="30" y="${H - 26}">0</text>
<text x="${W - 60}" y="${H - 10}">${maxT} s</text>
<path d="${path}" fill="none" stroke="#1f6feb" stroke-width="1.5"/></svg>`;
  });
  const grid = `display:grid;grid-template-columns:repeat(3,${W}px)`;
  const html = `<html><body style="margin:8px;background:#fff"><div style="${grid}">
${svgs.join('\n')}</div></body></html>`;
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: W * 3 + 16, height: H * 2 + 16 } });
    await page.setContent(html);
    await page.screenshot({ path: `${base}.png` });
  } finally {
    await browser.close();
  }
  console.log(`results: ${base}.json, ${base}.png`);
}

await runMain(async () => {
  await main();
  if (run.plot) await plot(run.plot);
});
