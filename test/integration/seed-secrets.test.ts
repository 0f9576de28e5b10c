// Confidential applications in a seed file (issue 33, item 7): the secret comes from the environment variable
// "clientSecretEnv" names, never from the file; a re-seed with the same environment changes nothing, a changed
// variable replaces the stored secret (the previous one ends at once), audited by the service without the secret.
// The static applications file cannot hold a secret client.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { parseSeed } from '../../src/seed.js';
import { applySeed } from '../../src/services/seed.js';
import { parseStaticApplications } from '../../src/static-applications.js';
import { adminHeaders, buildTestApp } from '../helpers/app.js';

t.setTimeout(300_000);

const REDIRECT = 'https://rp.example.com/cb';
const FIRST = 'first-secret-from-the-environment-0123456789';
const SECOND = 'second-secret-from-the-environment-987654321';
const server = (extra: Record<string, unknown> = {}) => ({
  clientId: 'conformance-rp',
  clientName: 'Conformance RP',
  redirectUris: [REDIRECT],
  tokenEndpointAuthMethod: 'client_secret_basic',
  pkce: 'optional',
  clientSecretEnv: 'CONFORMANCE_CLIENT_SECRET',
  ...extra,
});

t.test('the file is checked before the database: where the secret comes from', async (t) => {
  const problem = (entry: Record<string, unknown>, env: Record<string, string> = {}) => {
    try {
      parseSeed({ applications: [entry] }, 'seed.json', env);
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };
  t.equal(
    problem(server({ clientSecret: FIRST }), { CONFORMANCE_CLIENT_SECRET: FIRST }),
    'seed.json: applications[0] (clientId "conformance-rp"): clientSecret: a literal client secret is not ' +
      'accepted in a seed file: put it in an environment variable and name that variable in "clientSecretEnv"',
  );
  t.equal(
    problem(server()),
    'seed.json: applications[0] (clientId "conformance-rp"): clientSecretEnv: environment variable ' +
      'CONFORMANCE_CLIENT_SECRET is not set',
  );
  t.equal(
    problem(server(), { CONFORMANCE_CLIENT_SECRET: 'short' }),
    'seed.json: applications[0] (clientId "conformance-rp"): clientSecretEnv: the value of ' +
      'CONFORMANCE_CLIENT_SECRET must be at least 32 characters (generate one: openssl rand -base64 32); ' +
      'it has 5 characters',
  );
  t.match(
    problem(server({ clientSecretEnv: undefined })),
    /clientSecretEnv: a client_secret_basic application needs its secret from the environment: name the variable/,
  );
  t.match(
    problem(server({ tokenEndpointAuthMethod: 'none', pkce: 'required' }), { CONFORMANCE_CLIENT_SECRET: FIRST }),
    /clientSecretEnv: a none application has no client secret; remove clientSecretEnv/,
  );
  t.match(
    problem(server({ tokenEndpointAuthMethod: 'none' }), { CONFORMANCE_CLIENT_SECRET: FIRST }),
    /pkce: a public client \(tokenEndpointAuthMethod none\) always requires PKCE/,
    'the domain rules of client authentication, before the database',
  );
  t.match(
    problem(server({ clientSecretEnv: 'not a name' }), { CONFORMANCE_CLIENT_SECRET: FIRST }),
    /clientSecretEnv: must match pattern/,
  );
  t.equal(problem(server(), { CONFORMANCE_CLIENT_SECRET: FIRST }), 'accepted');
  const plan = parseSeed({ applications: [server()] }, 'seed.json', { CONFORMANCE_CLIENT_SECRET: FIRST });
  t.notOk('clientSecretEnv' in plan.applications[0]!.input, 'the variable name is no application field');
});

t.test('the static applications file: private_key_jwt yes, a secret no', async (t) => {
  const entry = { clientId: 'static-rp', clientName: 'Static', redirectUris: [REDIRECT] };
  t.throws(() => parseStaticApplications([{ ...entry, tokenEndpointAuthMethod: 'client_secret_post' }], 'apps.json'), {
    message:
      'Invalid static applications file apps.json:\n  - [0].tokenEndpointAuthMethod: a static application cannot ' +
      'have a client secret; use private_key_jwt, or create it with SEED_FILE',
  });
  const [jwt] = parseStaticApplications(
    [{ ...entry, tokenEndpointAuthMethod: 'private_key_jwt', jwksUri: 'https://rp.example.com/jwks.json' }],
    'apps.json',
  );
  t.equal(jwt!.clientType, 'confidential');
});

t.test('seeding: created with the secret, quiet again, replaced when the variable changes', async (t) => {
  const { app, logs } = await buildTestApp(t);
  const { applications } = app.services;
  const seedIt = (file: unknown, env: Record<string, string>, options: { dryRun?: boolean } = {}) =>
    applySeed(
      { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords },
      parseSeed(file, 'seed.json', env),
      { actor: 'seed' },
      options,
    );
  const file = { applications: [server()] };
  const events = async () => (await listAuditEvents(app.db, { clientId: 'conformance-rp' })).map((e) => e.type);

  const created = await seedIt(file, { CONFORMANCE_CLIENT_SECRET: FIRST });
  t.same(created, [{ type: 'application', key: 'conformance-rp', action: 'created', fields: [] }]);
  const seeded = await applications.get('conformance-rp');
  t.match(seeded, { tokenEndpointAuthMethod: 'client_secret_basic', clientType: 'confidential', pkce: 'optional' });
  t.ok(await applications.verifySecret('conformance-rp', FIRST), 'the secret from the environment');
  t.equal((await applications.listSecrets('conformance-rp')).length, 1);
  const afterCreate = await events();
  t.ok(afterCreate.includes('application.secret_created'), 'the service audited the secret');

  const again = await seedIt(file, { CONFORMANCE_CLIENT_SECRET: FIRST });
  t.same(again, [{ type: 'application', key: 'conformance-rp', action: 'unchanged', fields: [] }]);
  t.same(await events(), afterCreate, 'no write, no audit event');

  const dry = await seedIt(file, { CONFORMANCE_CLIENT_SECRET: SECOND }, { dryRun: true });
  t.same(dry, [{ type: 'application', key: 'conformance-rp', action: 'updated', fields: ['clientSecret'] }]);
  t.ok(await applications.verifySecret('conformance-rp', FIRST), 'a dry run changes nothing');

  const changed = await seedIt(file, { CONFORMANCE_CLIENT_SECRET: SECOND });
  t.same(changed, [{ type: 'application', key: 'conformance-rp', action: 'updated', fields: ['clientSecret'] }]);
  t.notOk(await applications.verifySecret('conformance-rp', FIRST), 'the previous secret ended at once');
  t.ok(await applications.verifySecret('conformance-rp', SECOND));
  t.same(
    (await applications.listSecrets('conformance-rp')).map((s) => s.expiresAt),
    [null],
    'one live secret',
  );
  const afterChange = await events();
  t.equal(afterChange.filter((e) => e === 'application.secret_rotated').length, 1);

  // An operator rotates in the admin API (the environment's secret is now the old one, ending in a day): the next
  // seeded start makes the environment's secret current again, so the pipeline keeps working.
  const rotated = await app.inject({
    method: 'POST',
    url: '/api/admin/applications/conformance-rp/secrets',
    headers: adminHeaders,
    payload: { overlapSeconds: 86400 },
  });
  t.equal(rotated.statusCode, 201);
  const back = await seedIt(file, { CONFORMANCE_CLIENT_SECRET: SECOND });
  t.same(back[0]!.fields, ['clientSecret']);
  t.ok(await applications.verifySecret('conformance-rp', SECOND));
  t.notOk(await applications.verifySecret('conformance-rp', rotated.json().clientSecret));

  const audit = JSON.stringify(await listAuditEvents(app.db, { clientId: 'conformance-rp' }));
  for (const secret of [FIRST, SECOND]) {
    t.notMatch(audit, secret, 'no secret in the audit trail');
    t.notMatch(logs.text(), secret, 'no secret in the log');
  }
});

t.test('"replace": true makes an operator’s public application the file’s secret client', async (t) => {
  const { app } = await buildTestApp(t);
  await app.services.applications.create(
    { clientId: 'shop', clientName: 'Shop', redirectUris: [REDIRECT] },
    {
      actor: 'test',
    },
  );
  const plan = parseSeed({ applications: [server({ clientId: 'shop', replace: true })] }, 'seed.json', {
    CONFORMANCE_CLIENT_SECRET: FIRST,
  });
  const deps = { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords };
  const [outcome] = await applySeed(deps, plan, { actor: 'seed' });
  t.equal(outcome!.action, 'replaced');
  t.match(outcome!.fields, ['clientName', 'tokenEndpointAuthMethod', 'pkce', 'clientSecret']);
  const secrets = await app.services.applications.listSecrets('shop');
  t.equal(secrets.length, 1, 'only the environment’s secret: the one the method change made is gone');
  t.ok(await app.services.applications.verifySecret('shop', FIRST));
  const [quiet] = await applySeed(deps, plan, { actor: 'seed' });
  t.equal(quiet!.action, 'unchanged');
});

t.test('a private_key_jwt client with a JWK Set: quiet on a re-seed (jsonb reorders keys)', async (t) => {
  const { app } = await buildTestApp(t);
  const key = {
    kty: 'EC',
    crv: 'P-256',
    x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
    y: 'x_FEzRjmUw',
    use: 'sig',
  };
  const file = {
    applications: [
      {
        clientId: 'jwt-rp',
        clientName: 'JWT RP',
        redirectUris: [REDIRECT],
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwks: { keys: [key] },
        grantTypes: ['authorization_code', 'client_credentials'],
      },
    ],
  };
  const deps = { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords };
  const seedIt = () => applySeed(deps, parseSeed(file, 'seed.json', {}), { actor: 'seed' });
  t.equal((await seedIt())[0]!.action, 'created');
  t.same((await seedIt())[0], { type: 'application', key: 'jwt-rp', action: 'unchanged', fields: [] });
  t.same((await app.services.applications.get('jwt-rp')).jwks, { keys: [key] });
});
