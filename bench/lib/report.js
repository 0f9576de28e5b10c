// The table of `npm run bench`: medians over runs, ratios to the anchor (node-oidc-provider, memory and
// PostgreSQL adapters) and to the ceiling (bare Fastify route; for the login flow the argon2id verify loop),
// each ratio taken within one run and then the median over runs, and the targets with pass/fail.
// Imports nothing of bench/.
export const SCENARIOS = ['login', 'sso', 'refresh', 'me', 'userinfo', 'discovery', 'jwks', 'scopes'];
const TARGETS = ['ours-pg', 'ours-pglite', 'anchor-memory', 'anchor-pg', 'bare', 'bare-same', 'argon2'];
const LABEL = {
  login: 'login flow',
  sso: 'SSO flow',
  refresh: 'refresh',
  me: '/api/external/me',
  userinfo: 'UserInfo',
  discovery: 'discovery',
  jwks: 'JWKS',
  scopes: 'scopes',
};
const FIGURES = ['opsPerSec', 'p50', 'p95', 'p99', 'rssPeakMb', 'serverCpuMsPerOp', 'allCpuMsPerOp'];

/**
 * CPU per operation of the load generator, and of everything the operation made work on this machine: the
 * server, its PostgreSQL backends and the load generator. They share the cores, so at the same utilization
 * throughput goes with the inverse of allCpuMsPerOp: the figure the bounds in bench/README.md are stated in.
 */
function withCpuFigures(r) {
  const driver = r.driverCpuMs !== undefined && r.ops ? r.driverCpuMs / r.ops : undefined;
  const or0 = (x) => (Number.isFinite(x) ? x : 0); // no PostgreSQL (memory adapter, PGlite): NaN or missing
  const all = driver === undefined ? undefined : or0(r.serverCpuMsPerOp) + or0(r.pgCpuMsPerOp) + driver;
  return { ...r, driverCpuMsPerOp: driver, allCpuMsPerOp: all };
}

const median = (xs) => {
  const s = xs.filter((x) => x != null && !Number.isNaN(x)).sort((a, b) => a - b); // null: NaN read back from JSON
  if (!s.length) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** The reference rows of a row: { name: [target, scenario] } where meaningful. */
function referencesOf(target, scenario) {
  const refs = {};
  const anchorScenario = scenario === 'me' ? 'userinfo' : scenario;
  if (
    !target.startsWith('anchor') &&
    ['login', 'sso', 'refresh', 'userinfo', 'discovery', 'jwks'].includes(anchorScenario)
  ) {
    refs['anchor-mem'] = ['anchor-memory', anchorScenario];
    refs['anchor-pg'] = ['anchor-pg', anchorScenario];
  }
  if (target === 'anchor-pg') refs['anchor-mem'] = ['anchor-memory', scenario];
  if (scenario === 'login' && target !== 'argon2') refs.ceiling = ['argon2', 'login'];
  if (['me', 'userinfo', 'discovery', 'jwks', 'scopes'].includes(scenario) && target !== 'bare') {
    refs.ceiling = ['bare', scenario];
    // --bare-same: the same route with what every answer of ours carries (logger, request id, trace, headers).
    if (target !== 'bare-same') refs['bare-same'] = ['bare-same', scenario];
  }
  if (target === 'ours-pglite') refs['ours-pg'] = ['ours-pg', scenario];
  return refs;
}

/** Median over runs of the per-run ratio figure(row) ÷ figure(reference). */
function ratio(results, row, ref, figure) {
  const byRun = (t, s) => new Map(results.filter((r) => r.target === t && r.scenario === s).map((r) => [r.run, r]));
  const mine = byRun(row.target, row.scenario);
  const theirs = byRun(ref[0], ref[1]);
  return median([...mine].map(([run, r]) => (theirs.has(run) ? r[figure] / theirs.get(run)[figure] : NaN)));
}

/** The targets for one of our rows: [{ text, ok }] (ok undefined: the reference is missing). */
function checksOf(row) {
  const checks = [];
  const min = (what, value, limit) =>
    checks.push({ text: `${what} ${fmt(value, 2)} >= ${limit}`, ok: nanOr(value >= limit, value) });
  const r = row.ratios;
  const ops = (ref) => r[ref]?.opsPerSec;
  if (row.target === 'ours-pg') {
    if (row.scenario === 'sso' || row.scenario === 'refresh') {
      const [mem, pg] = row.scenario === 'sso' ? [1.5, 2.5] : [1, 2];
      min('x anchor-mem', ops('anchor-mem'), mem);
      min('x anchor-pg', ops('anchor-pg'), pg);
    } else if (row.scenario === 'login') {
      min('x argon2 verify loop', ops('ceiling'), 0.8);
      min('x anchor-mem', ops('anchor-mem'), 1.2);
      min('x anchor-pg', ops('anchor-pg'), 1.2);
    } else if (row.scenario === 'me' || row.scenario === 'userinfo') {
      min('x bare', ops('ceiling'), 0.5);
      min('x anchor-mem UserInfo', ops('anchor-mem'), 2);
      min('x anchor-pg UserInfo', ops('anchor-pg'), 2);
    } else min('x bare', ops('ceiling'), 0.8);
    checks.push({ text: `RSS ${fmt(row.rssPeakMb, 0)} MB < 250`, ok: nanOr(row.rssPeakMb < 250, row.rssPeakMb) });
  }
  if (row.target === 'ours-pglite') min('x same on PostgreSQL', ops('ours-pg'), 0.6);
  if (row.scenario !== 'login')
    checks.push({ text: `p99 ${fmt(row.p99, 1)} ms < 50`, ok: nanOr(row.p99 < 50, row.p99) });
  return checks;
}
const nanOr = (ok, value) => (value == null || Number.isNaN(value) ? undefined : ok);

function fmt(x, digits) {
  if (x == null || Number.isNaN(x)) return '-';
  if (digits === undefined) return x >= 100 ? x.toFixed(0) : x.toFixed(1);
  return x.toFixed(digits);
}

function printTable(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) console.log(r.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  '));
}

/** The host line of bench/lib/host.js's figures, for the run's line and the report. */
export const describeHost = (host) =>
  `RSA-2048 signature ${host.rsaSignMs.toFixed(2)} ms of CPU, JSON round trip ${host.jsonUs.toFixed(1)} us`;

export function printReport(measured, { runs, runInfo }) {
  const results = measured.map(withCpuFigures);
  const rows = [];
  for (const scenario of SCENARIOS) {
    for (const target of TARGETS) {
      const rs = results.filter((r) => r.target === target && r.scenario === scenario);
      if (!rs.length) continue;
      const row = { scenario, target, runs: rs.length, errors: rs.reduce((a, r) => a + (r.errors ?? 0), 0) };
      row.errorSamples = [...new Set(rs.flatMap((r) => r.errorSamples ?? []))].slice(0, 3);
      for (const f of [...FIGURES, 'pgCpuMsPerOp', 'driverCpuMsPerOp', 'stmtsPerOp', 'load1'])
        row[f] = median(rs.map((r) => r[f]));
      row.ratios = {};
      for (const [name, ref] of Object.entries(referencesOf(target, scenario))) {
        if (!results.some((r) => r.target === ref[0] && r.scenario === ref[1])) continue;
        row.ratios[name] = Object.fromEntries(FIGURES.map((f) => [f, ratio(results, row, ref, f)]));
      }
      row.checks = target.startsWith('ours') ? checksOf(row) : [];
      rows.push(row);
    }
  }

  console.log(`\n=== npm run bench: median of ${runs} run(s); ratios per run, then the median ===`);
  for (const i of runInfo)
    console.log(
      `run ${i.run}: load average before ${i.loadBefore.map((l) => l.toFixed(2)).join(' ')}` +
        `${i.quiet ? '' : ' (not quiet: went on after the wait)'}` +
        (i.host ? `; ${describeHost(i.host)}` : ''),
    );
  const head = ['scenario', 'server', 'ops/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors', 'RSS MB', 'CPU ms/op'];
  head.push('PG CPU ms/op', 'driver CPU ms/op', 'all CPU ms/op', 'stmts/op');
  head.push('x anchor-mem', 'x anchor-pg', 'x ceiling', 'target');
  const table = [head];
  for (const row of rows) {
    const fails = row.checks.filter((c) => c.ok === false).length;
    const unknown = row.checks.filter((c) => c.ok === undefined).length;
    const verdict = !row.checks.length ? '' : fails ? `FAIL ${fails}/${row.checks.length}` : unknown ? 'pass?' : 'pass';
    table.push([
      LABEL[row.scenario],
      row.target,
      fmt(row.opsPerSec),
      fmt(row.p50, 1),
      fmt(row.p95, 1),
      fmt(row.p99, 1),
      row.errors ? `${row.errors} !!` : '0',
      fmt(row.rssPeakMb, 0),
      fmt(row.serverCpuMsPerOp, 2),
      fmt(row.pgCpuMsPerOp, 2),
      fmt(row.driverCpuMsPerOp, 3),
      fmt(row.allCpuMsPerOp, 3),
      fmt(row.stmtsPerOp, 1),
      fmt(row.ratios['anchor-mem']?.opsPerSec, 2),
      fmt(row.ratios['anchor-pg']?.opsPerSec, 2),
      fmt(row.ratios.ceiling?.opsPerSec, 2),
      verdict,
    ]);
  }
  printTable(table);

  console.log('\nratios of every figure (this row ÷ reference; ops/s higher is better, the others lower):');
  const rt = [['scenario', 'server', 'reference', 'ops/s', 'p50', 'p95', 'p99', 'RSS', 'CPU/op', 'all CPU/op']];
  for (const row of rows) {
    for (const [name, r] of Object.entries(row.ratios))
      rt.push([LABEL[row.scenario], row.target, name, ...FIGURES.map((f) => fmt(r[f], 2))]);
  }
  printTable(rt);

  console.log('\ntargets of issue 14 (our rows):');
  for (const row of rows.filter((r) => r.checks.length)) {
    const text = row.checks.map((c) => `${c.ok === undefined ? '?' : c.ok ? 'ok' : 'FAIL'} ${c.text}`).join('; ');
    console.log(`  ${LABEL[row.scenario]} ${row.target}: ${text}`);
  }
  const errors = rows.reduce((a, r) => a + r.errors, 0);
  if (errors) {
    console.log(`\n!!!!!!!! ${errors} ERRORS (every figure must come with 0 errors) !!!!!!!!`);
    for (const row of rows.filter((r) => r.errors))
      console.log(`  ${LABEL[row.scenario]} ${row.target}: ${row.errors} errors, e.g. ${row.errorSamples.join(' | ')}`);
  } else console.log('\nerrors: 0 in every row');
  const failed = rows.flatMap((r) => r.checks).filter((c) => c.ok === false).length;
  return { rows, errors, failedChecks: failed };
}
