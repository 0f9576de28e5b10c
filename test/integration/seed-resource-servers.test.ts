// SEED_FILE's "resourceServers" (issue 36): the operator's APIs declared in the seed file, every rule of the admin API
// checked before the database is touched (identifiers and scope names once in the file), the rules that need the
// database (the built-in /api/external, a scope another server holds) reported by entry, and idempotent: a second run
// changes nothing, a changed field is updated (the outcome names it), a dry run writes nothing.
import t from 'tap';
import { parseSeed, SeedError } from '../../src/seed.js';
import { applySeed, describeOutcome, resourceStoreFor } from '../../src/services/seed.js';
import { buildTestApp } from '../helpers/app.js';

t.setTimeout(200_000);

const ORDERS = 'https://api.example.com/orders';
const FILE = {
  applications: [{ clientId: 'shop', clientName: 'Shop', redirectUris: ['https://shop.example.com/callback'] }],
  resourceServers: [
    {
      identifier: ORDERS,
      name: 'Orders API',
      scopes: [{ name: 'orders:read', label: 'Read orders', consentDescription: 'See your orders' }],
      accessTokenFormat: 'jwt',
      allowedClients: ['shop'],
    },
    { identifier: 'urn:example:billing', name: 'Billing' },
  ],
};

t.test('checked before the database: the schema, the rules, repeated identifiers and scope names', async (t) => {
  const bad = {
    resourceServers: [
      {
        identifier: 'https://a.example/#x',
        name: 'A',
        scopes: [{ name: 'email', label: 'E', consentDescription: 'E' }],
      },
      { identifier: ORDERS, name: 'B', accessTokenFormat: 'paseto', colour: 'blue' },
      { identifier: ORDERS, name: 'C', scopes: [{ name: 'x:read', label: 'X', consentDescription: 'X' }] },
      { identifier: 'urn:d', name: 'D', scopes: [{ name: 'x:read', label: 'X', consentDescription: 'X' }] },
    ],
  };
  const error = t.throws(() => parseSeed(bad, 'seed.json', {})) as SeedError;
  t.ok(error instanceof SeedError);
  const text = error.problems.map((p) => `${p.entry}: ${p.field}: ${p.message}`).join('\n');
  t.match(
    text,
    /resourceServers\[0\] \(identifier "https:\/\/a.example\/#x"\): identifier: must not contain a fragment/,
  );
  t.match(
    text,
    /resourceServers\[0\] \(identifier "https:\/\/a.example\/#x"\): scopes\[0\]\.name: "email" is a built-in/,
  );
  t.match(text, /resourceServers\[1\] \(identifier "https:\/\/api.example.com\/orders"\): accessTokenFormat: /);
  t.match(
    text,
    /resourceServers\[1\] \(identifier "https:\/\/api.example.com\/orders"\): colour: is not a known field/,
  );
  t.match(
    text,
    /resourceServers\[2\] \(identifier "https:\/\/api.example.com\/orders"\): identifier: the same identifier as /,
  );
  t.match(text, /identifier: the same identifier as resourceServers\[1\]/);
  t.match(
    text,
    /resourceServers\[3\] \(identifier "urn:d"\): scopes\[0\]\.name: "x:read" is a scope of resourceServers\[2\] too/,
  );
  t.throws(() => parseSeed({ resourceServers: {} }, 'seed.json', {}), { message: /resourceServers: must be an array/ });
});

t.test('created, then unchanged, then updated in the fields that changed; dry run', async (t) => {
  const { app, config } = await buildTestApp(t);
  const registry = app.services.resourceServers;
  const seedIt = (file: unknown, dryRun = false) =>
    applySeed(
      {
        db: app.servicesDb,
        staticApplications: app.staticApplications,
        passwords: app.services.passwords,
        resourceServers: resourceStoreFor(config, () => registry.forget()),
      },
      parseSeed(file, 'seed.json', {}),
      { actor: 'seed' },
      { dryRun },
    );
  const dry = await seedIt(FILE, true);
  t.same(
    dry.map((o) => describeOutcome(o, true)),
    ['would create application shop', `would create resource ${ORDERS}`, 'would create resource urn:example:billing'],
  );
  t.equal((await registry.list()).length, 1, 'a dry run writes nothing');

  await seedIt(FILE);
  t.match(await registry.find(ORDERS), {
    name: 'Orders API',
    accessTokenFormat: 'jwt',
    allowedClients: ['shop'],
    scopes: [{ name: 'orders:read' }],
  });
  t.match(await registry.find('urn:example:billing'), { accessTokenFormat: 'opaque', scopes: [] });
  const again = await seedIt(FILE);
  t.same(
    again.map((o) => o.action),
    ['unchanged', 'unchanged', 'unchanged'],
    'idempotent',
  );

  // An operator's change to a field the file leaves out survives; one to a field it gives is undone.
  await registry.update(ORDERS, { accessTokenTtl: 900, name: 'Renamed by hand' });
  const changed = structuredClone(FILE);
  changed.resourceServers[0]!.scopes!.push({ name: 'orders:write', label: 'Place', consentDescription: 'Place' });
  const outcomes = await seedIt(changed);
  t.same(
    outcomes.map((o) => describeOutcome(o)),
    [
      'unchanged application shop',
      `updated resource ${ORDERS} (name, scopes)`,
      'unchanged resource urn:example:billing',
    ],
  );
  t.match(await registry.find(ORDERS), { name: 'Orders API', accessTokenTtl: 900 });
  t.equal((await registry.find(ORDERS))?.scopes.length, 2);
  const audit = await app.db
    .selectFrom('audit_events')
    .select(['type', 'actor'])
    .where('type', 'like', 'resource_server.%')
    .execute();
  t.equal(audit.filter((e) => e.type === 'resource_server.created' && e.actor === 'seed').length, 2);

  // What needs the database: a scope another (unseeded) server holds, the built-in identifier; nothing written.
  await registry.create({
    identifier: 'https://hr.example.com',
    name: 'HR',
    scopes: [{ name: 'hr:read', label: 'HR', consentDescription: 'HR' }],
  });
  const clash = structuredClone(FILE);
  clash.resourceServers[1]!.name = 'Billing 2';
  clash.resourceServers.push({
    identifier: 'urn:example:payroll',
    name: 'Payroll',
    scopes: [{ name: 'hr:read', label: 'Mine', consentDescription: 'Mine' }],
  } as never);
  await t.rejects(seedIt(clash), {
    name: 'SeedError',
    message:
      /resourceServers\[2\] \(identifier "urn:example:payroll"\): scopes\[0\]\.name: "hr:read" belongs to https:/,
  });
  t.equal((await registry.find('urn:example:billing'))?.name, 'Billing', 'the whole seed rolled back');
  t.equal(await registry.find('urn:example:payroll'), undefined);
  await t.rejects(seedIt({ resourceServers: [{ identifier: `${config.baseUrl}/api/external`, name: 'Shadow' }] }), {
    name: 'SeedError',
    message: /: identifier: is the built-in resource/,
  });
});
