// The resource-server registry (issue 36): its rules, the built-in /api/external, unique scope names across
// servers, the cache dropped after a change, and the audit trail.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';

const { app, config } = await buildTestApp(t);
const registry = app.services.resourceServers;
const builtIn = `${config.baseUrl}/api/external`;

t.test('the built-in /api/external is listed first and cannot be changed', async (t) => {
  const [first] = await registry.list();
  t.equal(first?.identifier, builtIn);
  t.equal(first?.builtIn, true);
  t.ok(first?.scopes.some((s) => s.name === 'openid'));
  await t.rejects(registry.update(builtIn, { name: 'x' }), { code: 'BUILT_IN_RESOURCE' });
  await t.rejects(registry.remove(builtIn), { code: 'BUILT_IN_RESOURCE' });
  await t.rejects(registry.create({ identifier: builtIn, name: 'x' }), { code: 'VALIDATION_ERROR' });
});

t.test('identifiers are absolute URIs without fragment or query', async (t) => {
  for (const identifier of [
    'api',
    '/api/orders',
    'https://api.example.com/#x',
    'https://api.example.com/?a=1',
    'ftp://x.example',
    'https://u:p@api.example.com',
  ]) {
    await t.rejects(registry.create({ identifier, name: 'x' }), { code: 'VALIDATION_ERROR' }, identifier);
  }
  t.equal((await registry.list()).length, 1, 'nothing was stored');
});

t.test('a resource server with scopes; names are unique across servers and distinct from built-in ones', async (t) => {
  const orders = await registry.create({
    identifier: 'https://orders.example.com',
    name: 'Orders',
    scopes: [{ name: 'orders:read', label: 'Read orders', consentDescription: 'See your orders' }],
    accessTokenFormat: 'jwt',
    allowedClients: ['shop'],
  });
  t.equal(orders.accessTokenFormat, 'jwt');
  t.equal(orders.accessTokenTtl, null);
  t.same(orders.allowedClients, ['shop']);
  t.equal((await registry.find('https://orders.example.com'))?.name, 'Orders', 'the cache was dropped');
  t.equal((await registry.ownerOfScope('orders:read'))?.identifier, 'https://orders.example.com');
  await t.rejects(registry.create({ identifier: 'https://orders.example.com', name: 'again' }), {
    code: 'RESOURCE_SERVER_EXISTS',
  });
  await t.rejects(
    registry.create({
      identifier: 'https://billing.example.com',
      name: 'Billing',
      scopes: [{ name: 'orders:read', label: 'x', consentDescription: 'x' }],
    }),
    { code: 'VALIDATION_ERROR', details: [{ field: 'scopes.0.name' }] },
  );
  await t.rejects(
    registry.create({
      identifier: 'https://billing.example.com',
      name: 'Billing',
      scopes: [{ name: 'email', label: 'x', consentDescription: 'x' }],
    }),
    { code: 'VALIDATION_ERROR' },
  );
  const updated = await registry.update('https://orders.example.com', { accessTokenTtl: 300, enabled: false });
  t.equal(updated.accessTokenTtl, 300);
  t.equal(updated.enabled, false);
  t.equal(updated.name, 'Orders', 'fields not sent are kept');
  t.equal((await registry.find('https://orders.example.com'))?.enabled, false);
  await registry.remove('https://orders.example.com');
  t.equal(await registry.find('https://orders.example.com'), undefined);
  await t.rejects(registry.remove('https://orders.example.com'), { code: 'NOT_FOUND' });
  const types = (await app.services.audit.list({ limit: 10 })).items.map((e) => e.type);
  t.ok(types.includes('resource_server.created') && types.includes('resource_server.updated'));
  t.ok(types.includes('resource_server.deleted'));
});
