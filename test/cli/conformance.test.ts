// `idp conformance-config`: the plan configuration JSON checked against the fields the conformance suite's source
// reads (github.com/openid-certification/conformance-suite), the seed file against the URIs the suite builds, and
// the seed file applied by `idp seed` (in-process; docs/conformance.md walks the same steps).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { cleanEnv, ROOT, runInProcess } from './fixtures/run-cli.js';
import { buildTestApp } from '../helpers/app.js';
import { discoveryUrlProblems, issuerProblems } from '../conformance/fixtures/discovery.js';

const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-conformance-'));
t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
const BASE_URL = 'https://op.example.test';
const env = cleanEnv({ DATA_DIR: dataDir, BASE_URL, SECRET_KEY: 'conformance-secret-key-0123456789abcdef' });
const secrets = {
  OIDCC_CLIENT_SECRET: 'first-client-secret-9f8e7d6c5b4a39281706f5e4d3c2b1a0',
  OIDCC_CLIENT2_SECRET: 'second-client-secret-0a1b2c3d4e5f60718293a4b5c6d7e8f9',
  OIDCC_CLIENT_POST_SECRET: 'post-client-secret-1122334455667788990011223344556677',
};
const run = (args: string[], extra: Record<string, string> = {}) =>
  runInProcess(['conformance-config', ...args], { env: { ...env, ...extra } });

type Json = Record<string, any>;
const TWO_CLIENT_PLANS = ['oidcc-basic-certification-test-plan', 'oidcc-formpost-basic-certification-test-plan'];
const PLANS = [
  ...TWO_CLIENT_PLANS,
  'oidcc-config-certification-test-plan',
  'oidcc-rp-initiated-logout-certification-test-plan',
];

/** The suite's reads of a plan configuration, each a problem when the field is missing or wrong. */
function suiteProblems(config: Json, plan: string): string[] {
  const problems: string[] = [];
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  // GetDynamicServerConfiguration: server.discoveryUrl (or discoveryIssuer), and no static server.issuer.
  if (!str(config.server?.discoveryUrl)) problems.push('server.discoveryUrl');
  if (config.server?.issuer !== undefined) problems.push('server.issuer makes GetDynamicServerConfiguration fail');
  problems.push(...discoveryUrlProblems(config.server.discoveryUrl)); // CheckDiscEndpointDiscoveryUrl
  // GetStaticClientConfiguration: a client object with a string client_id; AbstractOIDCCServerTest's
  // @VariantConfigurationFields(client_secret_basic / client_secret_post): client.client_secret.
  if (!str(config.client?.client_id)) problems.push('client.client_id');
  if (!str(config.client?.client_secret)) problems.push('client.client_secret');
  if (TWO_CLIENT_PLANS.includes(plan)) {
    // GetStaticClient2Configuration + AbstractOIDCCMultipleClient: client2.client_id, client2.client_secret.
    if (!str(config.client2?.client_id)) problems.push('client2.client_id');
    if (!str(config.client2?.client_secret)) problems.push('client2.client_secret');
    if (config.client2?.client_id === config.client?.client_id) problems.push('client2 is client');
    // OIDCCServerTestClientSecretPost: client_secret_post.client_id, client_secret_post.client_secret.
    if (!str(config.client_secret_post?.client_id)) problems.push('client_secret_post.client_id');
    if (!str(config.client_secret_post?.client_secret)) problems.push('client_secret_post.client_secret');
  }
  // OIDCCLoginHint: server.login_hint (optional; else buffy@<issuer host>, a user the deployment lacks).
  if (plan !== 'oidcc-config-certification-test-plan' && !str(config.server?.login_hint)) {
    problems.push('server.login_hint');
  }
  if (!str(config.alias)) problems.push('alias');
  return problems;
}

for (const plan of PLANS) {
  t.test(`${plan}: the configuration has every field the suite reads`, async (t) => {
    const r = await run(['--plan', plan, '--alias', 'my-idp']);
    t.equal(r.code, 0, r.stderr);
    const config = JSON.parse(r.stdout) as Json;
    t.same(suiteProblems(config, plan), []);
    t.equal(config.alias, 'my-idp');
    t.equal(config.server.discoveryUrl, `${BASE_URL}/api/auth/.well-known/openid-configuration`);
    t.equal(config.client.client_id, 'oidcc-client');
    t.equal(config.client.client_secret, '${OIDCC_CLIENT_SECRET}', 'a placeholder, never a secret');
    if (TWO_CLIENT_PLANS.includes(plan)) {
      t.equal(config.client2.client_id, 'oidcc-client2');
      t.equal(config.client_secret_post.client_id, 'oidcc-client-post');
    } else {
      t.notOk('client2' in config, 'no second client for a plan that reads none');
    }
  });
}

t.test(
  'the discoveryUrl is where this deployment serves its discovery document, with a consistent issuer',
  async (t) => {
    const config = JSON.parse((await run(['--plan', 'oidcc-config-certification-test-plan'])).stdout) as Json;
    const { app } = await buildTestApp(t, { env: { BASE_URL } });
    const res = await app.inject({ method: 'GET', url: new URL(config.server.discoveryUrl).pathname });
    t.equal(res.statusCode, 200);
    t.same(issuerProblems(res.json(), config.server.discoveryUrl), [], 'CheckDiscEndpointIssuer');
  },
);

t.test('--with-secrets takes the secrets from the environment, and names the unset ones', async (t) => {
  const plan = 'oidcc-basic-certification-test-plan';
  const r = await run(['--plan', plan, '--with-secrets'], secrets);
  t.equal(r.code, 0, r.stderr);
  const config = JSON.parse(r.stdout) as Json;
  t.equal(config.client.client_secret, secrets.OIDCC_CLIENT_SECRET);
  t.equal(config.client2.client_secret, secrets.OIDCC_CLIENT2_SECRET);
  t.equal(config.client_secret_post.client_secret, secrets.OIDCC_CLIENT_POST_SECRET);
  const missing = await run(['--plan', plan, '--with-secrets'], { OIDCC_CLIENT_SECRET: 'x'.repeat(40) });
  t.equal(missing.code, 2);
  t.match(missing.stderr, /OIDCC_CLIENT2_SECRET, OIDCC_CLIENT_POST_SECRET not set/);
  t.equal(missing.stdout, '');
});

t.test('usage errors: no plan, an unknown plan, a bad alias, an http suite', async (t) => {
  for (const [args, message] of [
    [[], /--plan is required/],
    [['--plan', 'oidcc-hybrid-certification-test-plan'], /unknown plan/],
    [['--plan', 'oidcc-config-certification-test-plan', '--alias', 'a/b'], /--alias/],
    [['--plan', 'oidcc-config-certification-test-plan', '--seed', '--suite-url', 'http://x'], /--suite-url/],
  ] as const) {
    const r = await run([...args]);
    t.equal(r.code, 2, args.join(' '));
    t.match(r.stderr, message);
  }
});

t.test('--seed: the suite redirect URIs for the alias, and the clients the configuration names', async (t) => {
  const plan = 'oidcc-basic-certification-test-plan';
  const args = ['--plan', plan, '--alias', 'my-idp', '--suite-url', 'https://suite.example.test'];
  const seed = JSON.parse((await run([...args, '--seed'])).stdout) as Json;
  const config = JSON.parse((await run(args)).stdout) as Json;
  // CreateRedirectUri: base_url + "/callback"; CreatePostLogoutRedirectUri: base_url + "/post_logout_redirect"; the
  // base_url of a run under an alias is <suite>/test/a/<alias> (TestDispatcher.TEST_PATH).
  const base = 'https://suite.example.test/test/a/my-idp';
  t.same(
    seed.applications.map((a: Json) => a.clientId),
    [config.client.client_id, config.client2.client_id, config.client_secret_post.client_id],
  );
  for (const app of seed.applications) {
    t.same(app.redirectUris, [`${base}/callback`]);
    t.same(app.postLogoutRedirectUris, [`${base}/post_logout_redirect`]);
    t.notOk(JSON.stringify(app).includes('Secret"'), 'no secret in the file');
  }
  t.same(
    seed.applications.map((a: Json) => a.tokenEndpointAuthMethod),
    ['client_secret_basic', 'client_secret_basic', 'client_secret_post'],
  );
  t.equal(seed.users[0].email, config.server.login_hint, 'the user to sign in as is the login_hint');
});

t.test('the printed seed file is accepted by idp seed, secrets from the environment', async (t) => {
  const plan = 'oidcc-basic-certification-test-plan';
  const seed = (await run(['--plan', plan, '--seed'])).stdout;
  const file = join(dataDir, 'conformance-seed.json');
  writeFileSync(file, seed);
  const applied = await runInProcess(['seed', file, '--json'], {
    env: { ...env, ...secrets, OIDCC_USER_PASSWORD: 'conformance-user-password-1' },
  });
  t.equal(applied.code, 0, applied.stderr);
  const results = JSON.parse(applied.stdout).results as Json[];
  t.same(
    results.map((r) => [r.type, r.key, r.action]),
    [
      ['application', 'oidcc-client', 'created'],
      ['application', 'oidcc-client2', 'created'],
      ['application', 'oidcc-client-post', 'created'],
      ['user', 'conformance@op.example.test', 'created'],
    ],
  );
  const shown = await runInProcess(['apps', 'show', 'oidcc-client-post', '--json'], { env });
  t.equal(shown.code, 0, shown.stderr);
  t.equal(JSON.parse(shown.stdout).tokenEndpointAuthMethod, 'client_secret_post');
  t.notOk(shown.stdout.includes(secrets.OIDCC_CLIENT_POST_SECRET), 'the secret is not shown');
});

t.test('docs/conformance.md shows what the command prints', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'conformance.md'), 'utf8');
  const blocks = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!);
  const docs = { BASE_URL: 'https://idp.example.com' };
  const args = ['--plan', 'oidcc-basic-certification-test-plan', '--alias', 'my-idp'];
  const printed = JSON.parse((await run(args, docs)).stdout) as Json;
  const configBlock = blocks.find((b) => b.includes('"discoveryUrl"'));
  t.same(JSON.parse(configBlock!), printed, 'the plan configuration');
  const seed = JSON.parse((await run([...args, '--seed'], docs)).stdout) as Json;
  const seedBlock = JSON.parse(blocks.find((b) => b.includes('"applications"'))!) as Json;
  t.same(seedBlock.applications[0], seed.applications[0], 'the seed file: its first client as printed');
  t.same(
    seedBlock.applications.map((a: Json) => a.clientId),
    seed.applications.map((a: Json) => a.clientId),
  );
  t.same(seedBlock.users, seed.users, 'the seed file: its user');
});
