// `idp seed FILE` and SEED_FILE at serve start: idempotent (the second run writes nothing: no row, no
// audit event, no updated_at), a changed entry updated to the file, a bad file refused with the file, the
// entry and the field named and the database left as it was; DATA_DIR=:memory: refused for commands.
// The commands run in-process (run(argv, io)); `idp serve` runs as a real process.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cliContext, exits, parseJson, startServe, type CliContext } from './fixtures/run-cli.js';

t.setTimeout(600_000);
const opts = { timeout: 400_000 };
const PASSWORD = 'seed-test-password-1';

const SEED = {
  applications: [
    {
      clientId: 'ci-app',
      clientName: 'CI App',
      redirectUris: ['http://localhost:8080/callback'],
      allowedWebOrigins: ['http://localhost:8080'],
    },
  ],
  users: [
    { email: 'ci@example.com', name: 'CI User', permissions: ['orders:read'], passwordEnv: 'CI_PASSWORD' },
    { email: 'admin@example.com', role: 'admin', passwordEnv: 'CI_PASSWORD' },
  ],
  // An API (issue 36) the application may ask tokens for.
  resourceServers: [
    {
      identifier: 'http://localhost:8081/api',
      name: 'CI API',
      scopes: [{ name: 'ci:read', label: 'Read', consentDescription: 'Read your CI data' }],
      allowedClients: ['ci-app'],
    },
  ],
};

function writeSeed(cli: CliContext, name: string, content: unknown): string {
  const file = join(cli.dataDir, name);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

/** What the database holds, read between runs (the context's database: cli.openDatabase). */
async function snapshot(cli: CliContext) {
  const database = await cli.openDatabase();
  try {
    const { db } = database;
    const rows = async (table: 'applications' | 'users') =>
      (await db.selectFrom(table).select(['updated_at']).execute()).map((r) => String(r.updated_at)).sort();
    const audit = await db.selectFrom('audit_events').select(['type']).execute();
    const types = audit.map((a) => a.type).sort();
    return { applications: await rows('applications'), users: await rows('users'), audit: types };
  } finally {
    await database.close();
  }
}

t.test('idp seed: creates, then changes nothing the second time, then follows the file', opts, async (t) => {
  const cli = await cliContext(t, { CI_PASSWORD: PASSWORD });
  const file = writeSeed(cli, 'seed.json', SEED);

  const first = await cli.run(['seed', file]);
  exits(t, first, 0);
  t.match(first.stdout, /^created application ci-app$/m);
  t.match(first.stdout, /^created user ci@example\.com$/m);
  t.match(first.stdout, /^created resource http:\/\/localhost:8081\/api$/m);
  t.match(first.stderr, /4 created, 0 updated, 0 unchanged/);
  const before = await snapshot(cli);
  t.equal(before.applications.length, 1);
  t.equal(before.users.length, 2);
  t.same(before.audit, ['application.created', 'resource_server.created', 'user.created', 'user.created']);

  const second = await cli.run(['seed', file, '--json']);
  exits(t, second, 0);
  const result = parseJson<{ results: Array<{ key: string; action: string; fields: string[] }> }>(second);
  t.same(
    result.results.map((r) => [r.key, r.action]),
    [
      ['ci-app', 'unchanged'],
      ['ci@example.com', 'unchanged'],
      ['admin@example.com', 'unchanged'],
      ['http://localhost:8081/api', 'unchanged'],
    ],
  );
  t.same(await snapshot(cli), before, 'the second run wrote nothing: same rows, same updated_at, no audit event');

  const shown = parseJson<{ emailVerified: boolean; permissions: string[]; hasPassword: boolean; role: string }>(
    await cli.run(['users', 'show', 'ci@example.com', '--json']),
  );
  t.equal(shown.emailVerified, true, 'emailVerified defaults to true');
  t.same(shown.permissions, ['orders:read']);
  t.equal(shown.hasPassword, true, 'the password from CI_PASSWORD');

  // The file changes: a redirect URI more; the user's name. A different password leaves the existing one.
  const changed = structuredClone(SEED);
  changed.applications[0]!.redirectUris.push('http://localhost:8080/other');
  changed.users[0]!.name = 'Renamed';
  writeSeed(cli, 'seed.json', changed);
  const dry = await cli.run(['seed', file, '--dry-run'], { env: { CI_PASSWORD: 'another-password-2' } });
  exits(t, dry, 0);
  t.match(dry.stdout, /^would update application ci-app \(redirectUris\)$/m);
  t.match(dry.stdout, /^would update user ci@example\.com \(name\)$/m);
  t.same(await snapshot(cli), before, '--dry-run wrote nothing');
  const third = await cli.run(['seed', file], { env: { CI_PASSWORD: 'another-password-2' } });
  exits(t, third, 0);
  t.match(third.stdout, /^updated application ci-app \(redirectUris\)$/m);
  t.match(third.stdout, /^updated user ci@example\.com \(name\)$/m);
  t.match(third.stdout, /^unchanged user admin@example\.com$/m);
  const after = await snapshot(cli);
  t.same(after.audit, [...before.audit, 'application.updated', 'user.updated'].sort(), 'one audit event per change');
});

t.test('a bad seed file: every problem with file, entry and field; nothing written', opts, async (t) => {
  const cli = await cliContext(t, { CI_PASSWORD: PASSWORD });
  const good = writeSeed(cli, 'good.json', { applications: [SEED.applications[0]] });
  exits(t, await cli.run(['seed', good]), 0);
  const before = await snapshot(cli);

  const bad = writeSeed(cli, 'bad.json', {
    applications: [
      { clientId: 'new-app', clientName: 'New', redirectUris: ['http://localhost:9000/cb'] },
      { clientId: 'ci-app', clientName: 'CI App', redirectUris: ['http://evil.example.com/cb'], colour: 'red' },
      { clientId: 'new-app', clientName: 'Again', redirectUris: ['http://localhost:9001/cb'] },
      { clientId: 'bad id!', clientName: 'X', redirectUris: ['http://localhost:9002/cb'] },
    ],
    users: [
      { email: 'new@example.com', passwordEnv: 'CI_PASSWORD' },
      { email: 'literal@example.com', password: 'in-the-file-123' },
      { email: 'unset@example.com', passwordEnv: 'NOT_SET_ANYWHERE' },
      { email: 'NEW@example.com' },
    ],
  });
  const r = await cli.run(['seed', bad]);
  exits(t, r, 1);
  const lines = r.stderr.split('\n');
  const has = (re: RegExp, what: string) =>
    t.ok(
      lines.some((l) => re.test(l)),
      what,
      { stderr: r.stderr },
    );
  has(/bad\.json: applications\[1\] \(clientId "ci-app"\): colour: is not a known field/, 'unknown field');
  has(
    /bad\.json: applications\[1\] \(clientId "ci-app"\): redirectUris\[0\]: http is allowed only for loopback/,
    'bad redirect URI (despite the unknown field)',
  );
  has(/applications\[2\] \(clientId "new-app"\): clientId: the same client id as applications\[0\]/, 'dup id');
  has(/applications\[3\] \(clientId "bad id!"\): clientId: /, 'client id alphabet');
  has(/users\[1\] \(email "literal@example\.com"\): password: a literal password is not accepted/, 'literal');
  has(
    /users\[2\] \(email "unset@example\.com"\): passwordEnv: environment variable NOT_SET_ANYWHERE is not set/,
    'env',
  );
  has(/users\[3\] \(email "NEW@example\.com"\): email: the same e-mail address as users\[0\]/, 'dup email');
  t.notMatch(r.stderr, /in-the-file-123/, 'the literal password is not echoed');
  t.same(await snapshot(cli), before, 'nothing written (new-app and new@example.com not created)');

  const syntax = writeSeed(cli, 'syntax.json', '{\n  "applications": [\n    { "clientId": "x", }\n  ]\n}\n');
  const s = await cli.run(['seed', syntax]);
  exits(t, s, 1);
  t.match(s.stderr, /syntax\.json: is not valid JSON: .* at line 3, column \d+/);

  const wrongPassword = writeSeed(cli, 'short.json', { users: [{ email: 'a@example.com', passwordEnv: 'SHORT' }] });
  const p = await cli.run(['seed', wrongPassword], { env: { SHORT: 'short' } });
  exits(t, p, 1);
  t.match(p.stderr, /users\[0\] \(email "a@example\.com"\): passwordEnv: the value of SHORT must be 8 to 128/);
  t.notMatch(p.stderr, /: short\b/);
  const common = await cli.run(['seed', wrongPassword], { env: { SHORT: 'Password123' } });
  exits(t, common, 1);
  t.match(
    common.stderr,
    /users\[0\] \(email "a@example\.com"\): passwordEnv: the value of SHORT is one of the most common passwords/,
  );
  t.notMatch(common.stderr, /Password123/);

  const statics = writeSeed(cli, 'static.json', [{ ...SEED.applications[0], clientId: 'static-app' }]);
  const clash = writeSeed(cli, 'clash.json', { applications: [{ ...SEED.applications[0], clientId: 'static-app' }] });
  const c = await cli.run(['seed', clash], { env: { STATIC_APPLICATIONS_FILE: statics } });
  exits(t, c, 1);
  t.match(c.stderr, /applications\[0\] \(clientId "static-app"\): clientId: is a static application/);

  exits(t, await cli.run(['seed']), 2, 'no file: usage error');
  t.same(await snapshot(cli), before, 'still nothing written');
});

t.test('a user the seed did not create: exit 1 naming it; "replace": true takes it over once', opts, async (t) => {
  const cli = await cliContext(t, { CI_PASSWORD: PASSWORD });
  exits(t, await cli.run(['users', 'create', '--email', 'ci@example.com']), 0);
  const file = writeSeed(cli, 'seed.json', { users: [SEED.users[0]] });
  const refused = await cli.run(['seed', file]);
  exits(t, refused, 1);
  t.match(
    refused.stderr,
    /seed\.json: users\[0\] \(email "ci@example\.com"\): an account with the address ci@example\.com exists /,
  );
  t.match(refused.stderr, /was not created by the seed.*"replace": true/);
  writeSeed(cli, 'seed.json', { users: [{ ...SEED.users[0], replace: true }] });
  const replaced = await cli.run(['seed', file]);
  exits(t, replaced, 0);
  t.match(replaced.stdout, /^replaced user ci@example\.com \(name, permissions, emailVerified, password\)$/m);
  t.match(replaced.stderr, /0 created, 0 updated, 0 unchanged, 1 replaced/);
  const again = await cli.run(['seed', file]);
  exits(t, again, 0);
  t.match(again.stdout, /^unchanged user ci@example\.com$/m, "the seed's now");
});

t.test('DATA_DIR=:memory: is refused by commands, which would see an empty database', opts, async (t) => {
  const cli = await cliContext(t, { CI_PASSWORD: PASSWORD, DATABASE_URL: '' });
  const file = writeSeed(cli, 'seed.json', SEED);
  for (const args of [
    ['seed', file],
    ['users', 'list'],
  ]) {
    const r = await cli.run(args, { env: { DATA_DIR: ':memory:' } });
    exits(t, r, 1, `${args[0]} exits 1`);
    t.match(r.stderr, /DATA_DIR=:memory: is for idp serve only/);
  }
});

t.test('SEED_FILE at serve start: seeded before listening; a bad file stops the start', opts, async (t) => {
  const cli = await cliContext(t, { CI_PASSWORD: PASSWORD });
  const file = writeSeed(cli, 'seed.json', SEED);
  const bad = writeSeed(cli, 'bad.json', { users: [{ email: 'x@example.com', passwordEnv: 'UNSET_VAR' }] });
  const failed = await cli.spawn(['serve'], { env: { SEED_FILE: bad, PORT: '0' } });
  exits(t, failed, 1);
  t.match(
    failed.stderr,
    /bad\.json: users\[0\] \(email "x@example\.com"\): passwordEnv: environment variable UNSET_VAR/,
  );

  // Passes the file check, fails in the database (a static application's id): the start stops too.
  // (Migrated first: a first start's initdb can exceed Fastify's 10 s plugin timeout on a busy machine.)
  exits(t, await cli.run(['migrate']), 0);
  const statics = writeSeed(cli, 'static.json', [{ ...SEED.applications[0] }]);
  const clash = await cli.spawn(['serve'], { env: { SEED_FILE: file, STATIC_APPLICATIONS_FILE: statics, PORT: '0' } });
  exits(t, clash, 1);
  t.match(clash.stderr, /clientId: is a static application/);

  const server = await startServe(t, {
    ...cli.env,
    SEED_FILE: file,
    PORT: '0',
    LOG_LEVEL: 'info',
    HOST: '127.0.0.1',
    ADMIN_API_TOKEN: 'seed-test-admin-token-0123456789',
  });
  const app = await fetch(`${server.url}/api/public/applications/ci-app`);
  t.equal(app.status, 200, 'the seeded application answers as soon as the server listens');
  const signIn = await fetch(`${server.url}/api/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'ci@example.com', password: PASSWORD }),
  });
  t.equal(signIn.status, 200, 'the seeded user signs in');
  t.match(server.output(), /seed file .*seed\.json applied: 4 created, 0 updated, 0 unchanged/);
  const api = await fetch(
    `${server.url}/api/admin/resource-servers/${encodeURIComponent('http://localhost:8081/api')}`,
    {
      headers: { authorization: 'Bearer seed-test-admin-token-0123456789' },
    },
  );
  t.equal(api.status, 200, 'the seeded API is registered');
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);
});

t.test(
  'a server-side application: its secret from clientSecretEnv, never printed; rotated when it changes',
  opts,
  async (t) => {
    const first = 'seed-cli-secret-one-0123456789abcdef';
    const second = 'seed-cli-secret-two-0123456789abcdef';
    const cli = await cliContext(t, { RP_SECRET: first });
    const file = writeSeed(cli, 'seed.json', {
      applications: [
        {
          clientId: 'server-rp',
          clientName: 'Server RP',
          redirectUris: ['http://localhost:8080/callback'],
          tokenEndpointAuthMethod: 'client_secret_post',
          clientSecretEnv: 'RP_SECRET',
        },
      ],
    });
    const created = await cli.run(['seed', file]);
    exits(t, created, 0);
    t.match(created.stdout, /^created application server-rp$/m);
    const again = await cli.run(['seed', file]);
    exits(t, again, 0);
    t.match(again.stdout, /^unchanged application server-rp$/m, 'the same secret: nothing to do');
    const changed = await cli.run(['seed', file, '--json'], { env: { RP_SECRET: second } });
    exits(t, changed, 0);
    t.same(parseJson<{ results: unknown[] }>(changed).results, [
      { type: 'application', key: 'server-rp', action: 'updated', fields: ['clientSecret'] },
    ]);
    for (const r of [created, again, changed]) {
      t.notMatch(r.stdout + r.stderr, first);
      t.notMatch(r.stdout + r.stderr, second);
    }
    const { audit } = await snapshot(cli);
    t.same(audit, ['application.created', 'application.secret_created', 'application.secret_rotated']);

    const unset = await cli.run(['seed', file], { env: { RP_SECRET: '' } });
    exits(t, unset, 1);
    t.match(
      unset.stderr,
      /applications\[0\] \(clientId "server-rp"\): clientSecretEnv: environment variable RP_SECRET is not set/,
    );
  },
);
