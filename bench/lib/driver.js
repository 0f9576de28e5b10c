// The load generator of `npm run bench`, one forked process per target and scenario (never the server's own
// process). The orchestrator (bench/run.js) talks to it over IPC:
//   { cmd: 'setup', target, scenario, users }  unmeasured sign-ins: consent given, sessions, tokens, refresh chains
//   { cmd: 'count', n }                         n operations one after another (the statement counts)
//   { cmd: 'warmup', seconds } / { cmd: 'measure', seconds }   the load: closed-loop virtual users for flows and
//                                               refresh chains, autocannon (programmatic) for single requests
// and gets { ok: true, ... } or { ok: false, error } back for each.
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { b64url, now, percentile } from './core.js';
import { createHttpClient } from './http.js';
import { loginFlow, REFRESH_SCOPE, refresh, ssoFlow, userinfo } from './flows.js';

const FLOW_SCENARIOS = ['login', 'sso', 'refresh'];
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS || 50);

const client = createHttpClient({ maxSockets: 256, userAgent: 'idp-bench' });
let target;
let scenario;
let users = [];
const state = { browsers: [], tokens: [], chains: [] };

async function setup(msg) {
  target = msg.target;
  scenario = msg.scenario;
  users = msg.users;
  client.origin = target.origin;
  if (target.kind === 'bare') {
    state.tokens = users.map(() => b64url(randomBytes(32)));
    return;
  }
  if (scenario === 'refresh') {
    state.chains = await Promise.all(
      users.map(async (user) => {
        const { tokens } = await loginFlow(target, client, user, { scope: REFRESH_SCOPE, allowConsent: true });
        return { user, token: tokens.refresh_token };
      }),
    );
    if (state.chains.some((c) => !c.token)) throw new Error('no refresh token after sign-in');
  } else if (scenario === 'login' || scenario === 'sso' || scenario === 'me' || scenario === 'userinfo') {
    const done = await Promise.all(users.map((user) => loginFlow(target, client, user, { allowConsent: true })));
    state.browsers = done.map((d) => d.browser);
    state.tokens = done.map((d) => d.tokens.access_token);
  }
}

/** One operation of a flow scenario for virtual user `vu`. */
async function flowOp(vu) {
  const user = users[vu];
  if (scenario === 'login') return loginFlow(target, client, user);
  if (scenario === 'sso') return ssoFlow(target, client, user, state.browsers[vu]);
  const chain = state.chains[vu];
  try {
    chain.token = await refresh(target, client, chain);
  } catch (error) {
    if (error.oauthError === 'invalid_grant') {
      // The chain is gone (its family revoked): an error, and a new chain from a new sign-in.
      const { tokens } = await loginFlow(target, client, user, { scope: REFRESH_SCOPE, allowConsent: true });
      chain.token = tokens.refresh_token;
    }
    throw error;
  }
}

/** One request of a single-request scenario (sequential counting only; the load is autocannon's). */
async function requestOp(vu) {
  const path = target.paths[scenario];
  if (scenario === 'userinfo' && target.kind !== 'bare') return userinfo(target, client, state.tokens[vu], users[vu]);
  const res = await client.request(target.origin + path, {
    headers: { authorization: `Bearer ${state.tokens[vu % state.tokens.length]}`, accept: 'application/json' },
  });
  if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body.slice(0, 160)}`);
}

const isFlow = () => FLOW_SCENARIOS.includes(scenario);

async function count(n) {
  const errors = [];
  for (let i = 0; i < n; i++) {
    try {
      await (isFlow() ? flowOp(0) : requestOp(0));
    } catch (error) {
      errors.push(error.message);
    }
  }
  return { errors: errors.length, errorSamples: errors.slice(0, 3) };
}

async function closedLoop(seconds) {
  const latencies = [];
  const errors = [];
  const deadline = now() + seconds * 1000;
  const started = now();
  await Promise.all(
    users.map(async (_, vu) => {
      while (now() < deadline && errors.length < 1000) {
        const t = now();
        try {
          await flowOp(vu);
          latencies.push(now() - t);
        } catch (error) {
          errors.push(`${error.step ?? 'network'}: ${error.message}`);
        }
      }
    }),
  );
  return { latencies, errors, seconds: (now() - started) / 1000 };
}

async function cannon(seconds) {
  const path = target.paths[scenario];
  const headersFor = (token) => ({ authorization: `Bearer ${token}`, accept: 'application/json' });
  const tokens = state.tokens.length ? state.tokens : [b64url(randomBytes(32))];
  const requests = tokens.map((token) => ({ method: 'GET', path, headers: headersFor(token) }));
  let k = 0;
  const latencies = [];
  const started = now();
  const instance = autocannon({
    url: target.origin,
    connections: CONNECTIONS,
    pipelining: 1,
    duration: seconds,
    timeout: 10,
    bailout: 1000,
    requests,
    setupClient(c) {
      const i = k++ % requests.length;
      c.setRequests(
        requests
          .slice(i)
          .concat(requests.slice(0, i))
          .map((r) => ({ ...r, headers: { ...r.headers } })),
      );
    },
  });
  instance.on('response', (_c, status, _bytes, ms) => {
    if (status === 200) latencies.push(ms);
  });
  const r = await instance;
  const errors = [];
  const bad = r.non2xx + r.errors + r.timeouts;
  if (bad) errors.push(`non-2xx ${r.non2xx}, errors ${r.errors}, timeouts ${r.timeouts} on ${path}`);
  return { latencies, errors, errorCount: bad, seconds: (now() - started) / 1000 };
}

async function load(seconds) {
  const cpu0 = process.cpuUsage();
  const r = isFlow() ? await closedLoop(seconds) : await cannon(seconds);
  const cpu = process.cpuUsage(cpu0);
  const sorted = r.latencies.sort((a, b) => a - b);
  return {
    ops: r.latencies.length,
    seconds: r.seconds,
    opsPerSec: r.latencies.length / r.seconds,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    p99: percentile(sorted, 0.99),
    errors: r.errorCount ?? r.errors.length,
    errorSamples: [...new Set(r.errors)].slice(0, 3),
    driverCpuMs: (cpu.user + cpu.system) / 1000,
  };
}

process.on('message', async (msg) => {
  try {
    let result = {};
    if (msg.cmd === 'setup') await setup(msg);
    else if (msg.cmd === 'count') result = await count(msg.n);
    else if (msg.cmd === 'warmup') await load(msg.seconds);
    else if (msg.cmd === 'measure') result = await load(msg.seconds);
    else if (msg.cmd === 'exit') {
      client.agent.destroy();
      process.disconnect();
      return;
    }
    process.send({ ok: true, ...result });
  } catch (error) {
    process.send({ ok: false, error: `${error.step ? `${error.step}: ` : ''}${error.message}` });
  }
});
