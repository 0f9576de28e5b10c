// Many instances on one PostgreSQL (issue 16, part 4): three `idp serve` processes share one database
// (this test's schema) and SECRET_KEY behind a small round-robin proxy with no sticky sessions, so every
// request of a flow lands on the next instance. Checked: a sign-in that starts on one instance and
// finishes on others; a key rotation on one instance seen in every instance's JWKS and used for signing
// by all at once; an application change (CORS origin, disabling) on one seen by all at once (NOTIFY,
// with cache lifetimes far longer than the test); rate limits counted once for all instances, in
// PostgreSQL and, with REDIS_URL, in a redis-server (or valkey-server) this test starts; a Redis outage
// that keeps every instance answering and limiting; clean-up jobs on all three deleting each expired row
// exactly once. PostgreSQL only: the embedded database belongs to one process.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import * as jose from 'jose';
import { Redis } from 'ioredis';
import { cliContext, startServe, usingPostgres, type ServeHandle } from './fixtures/run-cli.js';
import { freePort, signInAndConsent } from '../helpers/programs.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken } from '../../src/oauth/tokens.js';

t.setTimeout(600_000);
const SECRET_KEY = 'multi-instance-secret-key-0123456789abcdef';
const ADMIN_API_TOKEN = 'multi-instance-admin-token-0123456789abcdef';
const REDIRECT = 'https://rp.example.com/callback';
const PASSWORD = 'correct horse battery staple';
const ORIGIN = 'https://spa.example.com';

const PG_ONLY = usingPostgres
  ? false
  : 'PostgreSQL only (set DATABASE_URL): the embedded database belongs to one process; test:heavy runs it there';

interface Proxy {
  url: string;
  /** Which instance (0..n-1) served each request, in order, with its method and path. */
  log: Array<{ instance: number; method: string; path: string }>;
  close(): Promise<void>;
}

/** Round robin over the backends, no stickiness; X-Forwarded-For passed on as the client sent it. */
async function startProxy(port: number, backends: () => string[]): Promise<Proxy> {
  let next = 0;
  const log: Proxy['log'] = [];
  const server: Server = createServer((req, res) => {
    const all = backends();
    const instance = next++ % all.length;
    log.push({ instance, method: req.method ?? 'GET', path: (req.url ?? '/').split('?')[0]! });
    const target = new URL(req.url ?? '/', all[instance]);
    const upstream = httpRequest(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        // One request per connection: with keep-alive the client may reuse a socket the proxy is just closing
        // (seen as ECONNRESET on a loaded host), which says nothing about the instances behind it.
        const { connection: _connection, 'keep-alive': _keepAlive, ...headers } = answer.headers;
        res.writeHead(answer.statusCode ?? 502, { ...headers, connection: 'close' });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => {
      res.writeHead(502).end();
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 1;
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    log,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface Cluster {
  proxy: Proxy;
  instances: ServeHandle[];
  databaseUrl: string;
  admin(method: string, path: string, body?: unknown, instance?: number): Promise<Response>;
}

/** Three instances of `idp serve` on one schema behind the proxy (BASE_URL is the proxy's). */
async function startCluster(t: Test, env: Record<string, string>, databaseUrl?: string): Promise<Cluster> {
  const cli = await cliContext(t);
  const url = databaseUrl ?? cli.databaseUrl!;
  const port = await freePort();
  let backends: string[] = [];
  const proxy = await startProxy(port, () => backends);
  t.teardown(() => proxy.close());
  const common = {
    ...cli.env,
    DATABASE_URL: url,
    BASE_URL: proxy.url,
    HOST: '127.0.0.1',
    PORT: '0',
    SECRET_KEY,
    ADMIN_API_TOKEN,
    LOG_LEVEL: 'info',
    TRUST_PROXY: '127.0.0.1',
    // Far longer than the test: only notices can explain a change seen at once.
    CORS_CACHE_TTL: '3600',
    ...env,
  };
  // The first migrates; the other two start together.
  const first = await startServe(t, common);
  const rest = await Promise.all([startServe(t, common), startServe(t, common)]);
  const instances = [first, ...rest];
  backends = instances.map((i) => i.url);
  const admin = (method: string, path: string, body?: unknown, instance?: number) =>
    fetch(`${instance === undefined ? proxy.url : instances[instance]!.url}/api/admin${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_API_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  return { proxy, instances, databaseUrl: url, admin };
}

async function eventually(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - started;
}

async function query<T>(databaseUrl: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

/** `n` GETs of authorize through the proxy from one client address: the statuses in order. */
async function authorizeHits(proxy: Proxy, ip: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) {
    const res = await fetch(`${proxy.url}/api/auth/oauth2/authorize?client_id=nobody`, {
      headers: { 'x-forwarded-for': ip },
      redirect: 'manual',
    });
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

/** The same count (AUTHORIZE=6/60) hit through three instances: six answered, the rest refused. */
async function checkSharedLimit(t: Test, cluster: Cluster, label: string) {
  const ip = `198.51.100.${Math.floor(Math.random() * 200) + 1}`;
  const from = cluster.proxy.log.length;
  const statuses = await authorizeHits(cluster.proxy, ip, 9);
  const served = new Set(cluster.proxy.log.slice(from).map((r) => r.instance));
  t.equal(served.size, 3, `${label}: the nine requests were spread over the three instances`);
  t.same(
    statuses.map((s) => s === 429),
    [false, false, false, false, false, false, true, true, true],
    `${label}: six allowed in all (not six per instance), then 429`,
    { statuses },
  );
}

t.test('three instances on one PostgreSQL, behind a round-robin proxy', { skip: PG_ONLY }, async (t) => {
  const cluster = await startCluster(t, { RATE_LIMIT_AUTHORIZE: '6/60', CLEANUP_INTERVAL: '1' });
  const { proxy, instances, admin } = cluster;
  t.equal(new Set(instances.map((i) => i.url)).size, 3, 'three processes, three addresses');
  for (const i of instances) t.match(i.output(), /rate limits counted in postgres/, 'counted in PostgreSQL');

  const created = await admin('POST', '/applications', {
    clientName: 'Multi-instance RP',
    redirectUris: [REDIRECT],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
  });
  t.equal(created.status, 201, 'application created');
  const client = (await created.json()) as { clientId: string };
  const email = `multi-${randomBytes(4).toString('hex')}@example.com`;
  const user = await admin('POST', '/users', { email, password: PASSWORD, emailVerified: true });
  t.equal(user.status, 201, 'user created');

  let refreshToken = '';
  await t.test('a sign-in that starts on one instance and finishes on the others', async (t) => {
    const verifier = generateToken();
    const from = proxy.log.length;
    const authorizeUrl =
      `${proxy.url}/api/auth/oauth2/authorize?` +
      new URLSearchParams({
        response_type: 'code',
        client_id: client.clientId,
        redirect_uri: REDIRECT,
        scope: 'openid email offline_access',
        state: 'st',
        nonce: 'n0',
        code_challenge: s256Challenge(verifier),
        code_challenge_method: 'S256',
      }).toString();
    const callback = new URL(await signInAndConsent(proxy.url, authorizeUrl, REDIRECT, email, PASSWORD));
    const code = callback.searchParams.get('code');
    t.ok(code, 'a code came back');
    t.equal(callback.searchParams.get('state'), 'st');
    const tokenRes = await fetch(`${proxy.url}/api/auth/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: REDIRECT,
        client_id: client.clientId,
        code_verifier: verifier,
      }),
    });
    t.equal(tokenRes.status, 200, 'the code is redeemed on yet another instance');
    const tokens = (await tokenRes.json()) as { id_token: string; access_token: string; refresh_token: string };
    refreshToken = tokens.refresh_token;
    t.ok(refreshToken, 'with a refresh token');
    const steps = proxy.log.slice(from);
    t.equal(new Set(steps.map((s) => s.instance)).size, 3, 'the flow touched all three instances');
    const signInPost = steps.find((s) => s.method === 'POST' && s.path.endsWith('/sign-in'));
    const authorize = steps.find((s) => s.path.endsWith('/authorize'));
    const token = steps.find((s) => s.path.endsWith('/token'));
    t.ok(signInPost && authorize && token, 'authorize, sign-in and token all went through', { steps });
    t.ok(
      new Set([authorize!.instance, signInPost!.instance, token!.instance]).size >= 2,
      'authorize, the sign-in post and the token request were not all served by one instance',
      { steps },
    );
    // The ID token verifies against the JWKS of every instance.
    for (const [n, instance] of instances.entries()) {
      const jwks = jose.createLocalJWKSet(
        (await (await fetch(`${instance.url}/api/auth/jwks`)).json()) as jose.JSONWebKeySet,
      );
      const { payload } = await jose.jwtVerify(tokens.id_token, jwks, { issuer: `${proxy.url}/api/auth` });
      t.equal(payload.nonce, 'n0', `instance ${n} publishes the signing key`);
    }
    const me = await fetch(`${proxy.url}/api/auth/oauth2/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    t.equal(me.status, 200, 'the access token works on any instance');
  });

  await t.test('a key rotation on one instance is published and used by all at once', async (t) => {
    const kids = async (n: number) =>
      ((await (await fetch(`${instances[n]!.url}/api/auth/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys.map(
        (k) => k.kid,
      );
    const before = await Promise.all([0, 1, 2].map(kids)); // every instance has its key set cached now
    const rotated = await admin('POST', '/keys/rotate', { force: true }, 0);
    t.equal(rotated.status, 200, 'rotated on instance 0');
    const items = ((await rotated.json()) as { items: Array<{ kid: string; state: string }> }).items;
    const current = items.find((k) => k.state === 'current')!.kid;
    const next = items.find((k) => k.state === 'next')!.kid;
    t.notOk(before[1]!.includes(next), 'the rotation made a new next key');
    t.ok(before[1]!.includes(current), 'and promoted the published next key to current');
    for (const n of [1, 2]) {
      const ms = await eventually(`instance ${n} to publish ${next}`, async () => (await kids(n)).includes(next));
      t.ok(ms < 5000, `instance ${n} publishes the new key after ${ms} ms (its own refresh is 60 s)`);
    }
    // Each instance now signs with the new key (a refresh on each, each rotating the refresh token).
    for (const n of [1, 2, 0]) {
      const res = await fetch(`${instances[n]!.url}/api/auth/oauth2/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: client.clientId,
        }),
      });
      t.equal(res.status, 200, `instance ${n} refreshes`);
      const body = (await res.json()) as { id_token?: string; access_token: string; refresh_token: string };
      refreshToken = body.refresh_token;
      const signed = body.id_token ?? body.access_token;
      t.equal(jose.decodeProtectedHeader(signed).kid, current, `instance ${n} signs with the new key`);
    }
    const again = await fetch(`${instances[2]!.url}/api/admin/keys`, {
      headers: { authorization: `Bearer ${ADMIN_API_TOKEN}` },
    });
    const list = ((await again.json()) as { items: Array<{ kid: string; state: string }> }).items;
    t.equal(list.find((k) => k.state === 'current')?.kid, current, 'every instance names the same current key');
  });

  await t.test('an application change on one instance is seen by all at once (NOTIFY)', async (t) => {
    const preflight = (n: number) =>
      fetch(`${instances[n]!.url}/api/auth/oauth2/token`, {
        method: 'OPTIONS',
        headers: { origin: ORIGIN, 'access-control-request-method': 'POST' },
      }).then((r) => r.headers.get('access-control-allow-origin'));
    for (const n of [0, 1, 2]) t.equal(await preflight(n), null, `instance ${n}: origin not allowed yet (cached)`);
    const patched = await admin('PATCH', `/applications/${client.clientId}`, { allowedWebOrigins: [ORIGIN] }, 0);
    t.equal(patched.status, 200);
    for (const n of [1, 2]) {
      const ms = await eventually(`instance ${n} to allow ${ORIGIN}`, async () => (await preflight(n)) === ORIGIN);
      t.ok(ms < 5000, `instance ${n} allows the new origin after ${ms} ms (its cache lives an hour)`);
    }

    let ipCounter = 0;
    const authorize = (n: number) =>
      fetch(
        `${instances[n]!.url}/api/auth/oauth2/authorize?` +
          new URLSearchParams({
            response_type: 'code',
            client_id: client.clientId,
            redirect_uri: REDIRECT,
            scope: 'openid',
            code_challenge: s256Challenge(generateToken()),
            code_challenge_method: 'S256',
          }).toString(),
        { redirect: 'manual', headers: { 'x-forwarded-for': `192.0.2.${++ipCounter % 250}` } },
      ).then(async (r) => {
        await r.arrayBuffer();
        return r.status;
      });
    const enabledStatus = await authorize(0);
    t.ok(enabledStatus >= 300 && enabledStatus < 400, 'an enabled client is sent on to sign in');
    for (const n of [1, 2]) t.equal(await authorize(n), enabledStatus, `instance ${n}: the client is enabled (cached)`);
    const disabled = await admin('PATCH', `/applications/${client.clientId}`, { enabled: false }, 1);
    t.equal(disabled.status, 200, 'disabled on instance 1');
    for (const n of [0, 2]) {
      const ms = await eventually(
        `instance ${n} to refuse the disabled client`,
        async () => (await authorize(n)) === 400,
      );
      t.ok(ms < 5000, `instance ${n} refuses the disabled client after ${ms} ms`);
    }
    await admin('PATCH', `/applications/${client.clientId}`, { enabled: true }, 2);
  });

  await t.test('rate limits are counted once for all instances (PostgreSQL)', async (t) => {
    await checkSharedLimit(t, cluster, 'PostgreSQL');
    const rows = await query<{ key: string; points: number }>(
      cluster.databaseUrl,
      "select key, points from rate_limits where key like 'AUTHORIZE:%'",
    );
    t.ok(
      rows.some((r) => r.points >= 6),
      'the window lives in the rate_limits table',
    );
  });

  await t.test('clean-up jobs on three instances delete each expired row exactly once', async (t) => {
    const n = 3000;
    await query(
      cluster.databaseUrl,
      `insert into rate_limits (key, points, expire)
       select 'CLEANUP-TEST:' || i, 1, (extract(epoch from now()) * 1000)::bigint - 1000 from generate_series(1, $1) i`,
      [n],
    );
    await eventually(
      'the expired rows to go',
      async () =>
        (
          await query<{ n: number }>(
            cluster.databaseUrl,
            "select count(*)::int as n from rate_limits where key like 'CLEANUP-TEST:%'",
          )
        )[0]!.n === 0,
      20_000,
    );
    await new Promise((r) => setTimeout(r, 1500)); // let every instance log its run
    let deleted = 0;
    const runners = new Set<number>();
    for (const [i, instance] of instances.entries()) {
      t.notMatch(instance.output(), /clean-up failed/, `instance ${i}: no clean-up failure`);
      for (const line of instance.output().split('\n')) {
        if (!line.includes('clean-up removed expired rows')) continue;
        const count = (JSON.parse(line) as { deleted: Record<string, number> }).deleted.rate_limits ?? 0;
        deleted += count;
        if (count > 0) runners.add(i);
      }
    }
    // Windows of the earlier subtests may expire meanwhile and be counted too.
    t.ok(
      deleted >= n && deleted < n + 100,
      `${deleted} rows deleted by ${runners.size} instance(s), no job waiting on another`,
    );
  });

  for (const [i, instance] of instances.entries()) {
    const errors = instance
      .output()
      .split('\n')
      .filter((l) => /"level":(50|60)/.test(l));
    t.same(errors, [], `instance ${i} logged no error`);
  }
});

/** A redis-server (or valkey-server) of the test's own on a free port, or undefined when none is installed. */
function findRedisServer(): string | undefined {
  for (const name of ['valkey-server', 'redis-server']) {
    for (const dir of ['/usr/bin', '/usr/local/bin', '/usr/sbin'])
      if (existsSync(join(dir, name))) return join(dir, name);
    const which = spawnSync('which', [name], { encoding: 'utf8' });
    if (which.status === 0 && which.stdout.trim()) return which.stdout.trim();
  }
  return undefined;
}

async function startRedis(t: Test, binary: string): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'idp-redis-'));
  const child: ChildProcess = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  };
  t.teardown(async () => {
    await stop();
    rmSync(dir, { recursive: true, force: true });
  });
  const url = `redis://127.0.0.1:${port}`;
  await eventually('redis-server to answer', async () => {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      return (await probe.ping()) === 'PONG';
    } catch {
      return false;
    } finally {
      probe.disconnect();
    }
  });
  return { url, stop };
}

const redisBinary = usingPostgres ? findRedisServer() : undefined;
t.test(
  'rate limits shared through Redis (REDIS_URL), and a Redis outage',
  {
    skip:
      PG_ONLY ||
      // Locally a missing server skips with this message; in CI (.ci/run installs it) it must run.
      (redisBinary || process.env.CI
        ? false
        : 'no redis-server or valkey-server installed (apt-get install redis-server); npm run test:heavy requires it'),
  },
  async (t) => {
    if (!redisBinary) throw new Error('CI must run this test: no redis-server or valkey-server (see .ci/run)');
    const redis = await startRedis(t, redisBinary);
    const cluster = await startCluster(t, { RATE_LIMIT_AUTHORIZE: '6/60', REDIS_URL: redis.url });
    for (const i of cluster.instances) t.match(i.output(), /rate limits counted in redis/, 'counted in Redis');
    await checkSharedLimit(t, cluster, 'Redis');
    const inspect = new Redis(redis.url);
    const keys = await inspect.keys('idp:rl:AUTHORIZE:*');
    inspect.disconnect();
    t.ok(keys.length >= 1, 'the window lives in Redis', { keys });
    const rows = await query<{ n: number }>(cluster.databaseUrl, 'select count(*)::int as n from rate_limits');
    t.equal(rows[0]!.n, 0, 'and not in PostgreSQL');

    // Redis goes away: every instance keeps answering, and keeps limiting, each in its own memory.
    await redis.stop();
    const ip = '203.0.113.77';
    const statuses = await authorizeHits(cluster.proxy, ip, 30);
    t.notOk(
      statuses.some((s) => s >= 500),
      'no request fails because the store is down',
      { statuses },
    );
    const allowed = statuses.filter((s) => s !== 429).length;
    t.equal(allowed, 18, 'not open: each of the three instances allows its six, then refuses', { statuses });
    await eventually('an instance to report the outage', async () =>
      cluster.instances.some((i) => /rate-limit store failed/.test(i.output())),
    );
    t.pass('the outage is logged');
  },
);
