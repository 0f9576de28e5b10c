// SEED_FILE's "upstreams" (issue 35): upstream providers declared in the seed file, their secrets from the
// environment variable "clientSecretEnv" names (a literal secret is refused), every rule of the admin API checked
// before the database is touched, and idempotent: a second run changes nothing, a changed field or secret is
// updated (the outcome names it), a dry run writes nothing.
import t from 'tap';
import { parseSeed, SeedError } from '../../src/seed.js';
import { applySeed } from '../../src/services/seed.js';
import { upstreamStoreFor } from '../../src/services/upstreams/providers.js';
import { buildTestApp } from '../helpers/app.js';

t.setTimeout(200_000);

const ENV = { GH_SECRET: 'github-secret-from-env-0123456789', ACME_SECRET: 'acme-secret-from-env-0123456789' };

const FILE = {
  upstreams: [
    { preset: 'github', clientId: 'gh-client', clientSecretEnv: 'GH_SECRET', allowSignUp: true },
    {
      id: 'acme',
      name: 'Acme',
      issuer: 'https://login.acme.example/realms/staff',
      clientId: 'idp',
      clientSecretEnv: 'ACME_SECRET',
      allowedDomains: ['acme.example'],
      ssoDomains: ['acme.example'],
      mapping: { subject: 'oid' },
    },
    { id: 'keyed', name: 'Keyed', issuer: 'http://127.0.0.1:9/keyed', clientId: 'k', clientAuth: 'private_key_jwt' },
  ],
};

t.test('checked before the database: literal secrets, unset variables, the rules by field', async (t) => {
  const bad = {
    upstreams: [
      { id: 'a', issuer: 'https://a.example', name: 'A', clientId: 'c', clientSecret: 'literal' },
      { id: 'B!', issuer: 'http://b.example', name: 'B', clientId: 'c', clientSecretEnv: 'UNSET' },
      { id: 'c', kind: 'oauth2', name: 'C', clientId: 'c', clientAuth: 'private_key_jwt', mapping: { x: 'y' } },
      { id: 'a', issuer: 'https://a.example', name: 'A again', clientId: 'c', clientAuth: 'private_key_jwt' },
    ],
  };
  const error = t.throws(() => parseSeed(bad, 'seed.json', ENV)) as SeedError;
  t.ok(error instanceof SeedError);
  const lines = error.problems.map((p) => `${p.entry}: ${p.field}: ${p.message}`);
  t.match(lines.join('\n'), /upstreams\[0\] \(id "a"\): clientSecret: a literal client secret is not accepted/);
  t.match(lines.join('\n'), /upstreams\[0\] \(id "a"\): clientSecretEnv: client_secret_basic needs the client secret/);
  t.match(lines.join('\n'), /upstreams\[1\] \(id "B!"\): clientSecretEnv: environment variable UNSET is not set/);
  t.match(lines.join('\n'), /upstreams\[1\] \(id "B!"\): id: must be 1 to 32 lower-case/);
  t.match(lines.join('\n'), /upstreams\[1\] \(id "B!"\): issuer: http is allowed only for loopback/);
  t.match(lines.join('\n'), /upstreams\[2\] \(id "c"\): tokenEndpoint: an OAuth 2.0 provider/);
  t.match(lines.join('\n'), /upstreams\[2\] \(id "c"\): mapping\.x: is not a mapping field/);
  t.match(lines.join('\n'), /upstreams\[3\] \(id "a"\): id: the same provider id as upstreams\[0\]/);
});

t.test('created, then unchanged, then updated in the fields and the secret that changed', async (t) => {
  const { app, config } = await buildTestApp(t);
  const seedIt = (file: unknown, env: Record<string, string> = ENV, dryRun = false) =>
    applySeed(
      {
        db: app.servicesDb,
        staticApplications: app.staticApplications,
        passwords: app.services.passwords,
        upstreams: upstreamStoreFor(config),
      },
      parseSeed(file, 'seed.json', env),
      { actor: 'seed' },
      { dryRun },
    );
  const { providers } = app.services.upstreams;

  const dry = await seedIt(FILE, ENV, true);
  t.same(
    dry.map((o) => `${o.action} ${o.type} ${o.key}`),
    ['created upstream github', 'created upstream acme', 'created upstream keyed'],
  );
  t.same(await providers.list(), [], 'a dry run writes nothing');

  await seedIt(FILE);
  const github = await providers.require('github');
  t.equal(github.tokenEndpoint, 'https://github.com/login/oauth/access_token', 'the preset filled in');
  t.equal(github.allowSignUp, true);
  t.equal((await providers.credentials('github'))?.clientSecret, ENV.GH_SECRET, 'the secret from the environment');
  t.same((await providers.require('acme')).ssoDomains, ['acme.example']);
  const keyed = await providers.require('keyed');
  t.equal(keyed.publicJwk?.kty, 'EC', 'a private_key_jwt provider gets its key');

  const again = await seedIt(FILE);
  t.same(
    again.map((o) => o.action),
    ['unchanged', 'unchanged', 'unchanged'],
    'idempotent',
  );
  t.same((await providers.require('keyed')).publicJwk, keyed.publicJwk, 'the key is kept');

  const changed = structuredClone(FILE);
  changed.upstreams[1]!.name = 'Acme Staff';
  const outcomes = await seedIt(changed, { ...ENV, GH_SECRET: 'a-new-github-secret-9876543210' });
  t.same(
    outcomes.map((o) => `${o.action} ${o.key} ${o.fields.join(',')}`),
    ['updated github clientSecret', 'updated acme name', 'unchanged keyed '],
  );
  t.equal((await providers.credentials('github'))?.clientSecret, 'a-new-github-secret-9876543210');
  t.equal((await providers.require('acme')).name, 'Acme Staff');
  const audit = await app.db
    .selectFrom('audit_events')
    .select(['type', 'detail'])
    .where('type', 'like', 'upstream.%')
    .execute();
  t.equal(audit.filter((e) => e.type === 'upstream.provider_created').length, 3);
  t.equal(audit.filter((e) => e.type === 'upstream.provider_updated').length, 2);
  t.notMatch(JSON.stringify(audit), /secret-from-env|new-github-secret/, 'no secret in the audit trail');
});
