// The operator's side of resource servers (issue 36) through the admin API: the built-in /api/external listed and
// read-only, create (201 with a Location that addresses it by its percent-encoded identifier), the field-level
// validation, 409 for a second one with the same identifier, updates (scope names unique across servers), delete,
// the audit trail, and the addressing: an identifier with slashes is one encoded path segment, decoded exactly once.
import t from 'tap';
import { adminHeaders, buildTestApp } from '../helpers/app.js';

const { app, config } = await buildTestApp(t);
const BUILT_IN = `${config.baseUrl}/api/external`;
const ORDERS = 'https://api.example.com/v1/orders';
const path = (identifier: string) => `/resource-servers/${encodeURIComponent(identifier)}`;

async function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers = adminHeaders) {
  const r = await app.inject({ method, url: `/api/admin${url}`, headers, ...(payload && { payload }) });
  return {
    status: r.statusCode,
    headers: r.headers,
    body: r.body ? (r.json() as Record<string, any>) : {},
  };
}

t.test('the built-in /api/external is listed first and is read-only', async (t) => {
  const list = await api('GET', '/resource-servers');
  t.equal(list.status, 200);
  t.equal(list.headers['cache-control'], 'no-store');
  t.same(
    list.body.items.map((s: { identifier: string; builtIn: boolean }) => [s.identifier, s.builtIn]),
    [[BUILT_IN, true]],
  );
  t.equal(list.body.items[0].accessTokenTtl, config.ttl.accessToken);
  t.ok(list.body.items[0].scopes.some((s: { name: string }) => s.name === 'openid'));
  const one = await api('GET', path(BUILT_IN));
  t.equal(one.status, 200);
  t.equal(one.body.builtIn, true);
  for (const [method, payload] of [
    ['PATCH', { name: 'Mine now' }],
    ['DELETE', undefined],
  ] as const) {
    const r = await api(method, path(BUILT_IN), payload);
    t.equal(r.status, 400, method);
    t.equal(r.body.error, 'BUILT_IN_RESOURCE');
  }
  const taken = await api('POST', '/resource-servers', { identifier: BUILT_IN, name: 'Shadow' });
  t.equal(taken.status, 400);
  t.match(taken.body, { error: 'VALIDATION_ERROR', details: [{ field: 'identifier' }] });
});

t.test('create: 201, Location by the percent-encoded identifier, defaults; a second one is 409', async (t) => {
  const created = await api('POST', '/resource-servers', {
    identifier: ORDERS,
    name: 'Orders API',
    description: 'Orders of the shop',
    scopes: [
      { name: 'orders:read', label: 'Read orders', consentDescription: 'See your orders' },
      { name: 'orders:write', label: 'Place orders', consentDescription: 'Place orders for you' },
    ],
    accessTokenFormat: 'jwt',
    accessTokenTtl: 600,
    allowedClients: ['shop'],
    introspectionClients: ['orders-api'],
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.equal(created.headers.location, '/api/admin/resource-servers/https%3A%2F%2Fapi.example.com%2Fv1%2Forders');
  t.match(created.body, {
    identifier: ORDERS,
    builtIn: false,
    accessTokenFormat: 'jwt',
    accessTokenTtl: 600,
    allowedClients: ['shop'],
    allowSelfRegistered: false,
    introspectionClients: ['orders-api'],
    enabled: true,
  });
  t.ok(created.body.createdAt);
  const byLocation = await app.inject({
    method: 'GET',
    url: created.headers.location as string,
    headers: adminHeaders,
  });
  t.equal(byLocation.statusCode, 200);
  t.equal(byLocation.json().name, 'Orders API');

  const urn = await api('POST', '/resource-servers', { identifier: 'urn:example:billing', name: 'Billing' });
  t.equal(urn.status, 201);
  t.match(urn.body, { scopes: [], accessTokenFormat: 'opaque', accessTokenTtl: null, allowedClients: [] });

  const again = await api('POST', '/resource-servers', { identifier: ORDERS, name: 'Again' });
  t.equal(again.status, 409);
  t.equal(again.body.error, 'RESOURCE_SERVER_EXISTS');
  const list = await api('GET', '/resource-servers');
  t.same(
    list.body.items.map((s: { identifier: string }) => s.identifier),
    [BUILT_IN, ORDERS, 'urn:example:billing'],
  );
});

t.test('the identifier is one encoded path segment, matched exactly', async (t) => {
  const raw = await api('GET', `/resource-servers/${ORDERS}`);
  t.equal(raw.status, 404, 'unencoded slashes are other path segments');
  t.equal(raw.body.error, 'NOT_FOUND');
  const twice = await api('GET', `/resource-servers/${encodeURIComponent(encodeURIComponent(ORDERS))}`);
  t.equal(twice.status, 404, 'decoded once: the doubly encoded form is another identifier');
  t.equal(twice.body.error, 'NOT_FOUND');
  const slash = await api('GET', path(`${ORDERS}/`));
  t.equal(slash.status, 404, 'a trailing slash is another identifier (compared as an exact string)');
  const unauthenticated = await api('GET', path(ORDERS), undefined, {} as typeof adminHeaders);
  t.equal(unauthenticated.status, 401);
  t.equal(unauthenticated.body.error, 'UNAUTHORIZED');
});

t.test('validation: every problem named by field', async (t) => {
  const r = await api('POST', '/resource-servers', {
    identifier: 'https://api.example.com/#frag',
    name: 'Bad',
    scopes: [
      { name: 'email', label: 'Built-in', consentDescription: 'x' },
      { name: 'a:b', label: 'A', consentDescription: 'x' },
      { name: 'a:b', label: 'Again', consentDescription: 'x' },
    ],
    allowedClients: ['shop', 'shop'],
  });
  t.equal(r.status, 400);
  t.equal(r.body.error, 'VALIDATION_ERROR');
  t.same((r.body.details as Array<{ field: string }>).map((d) => d.field).sort(), [
    'allowedClients',
    'identifier',
    'scopes.0.name',
    'scopes.2.name',
  ]);
  const shape = await api('POST', '/resource-servers', {
    identifier: 'https://x.example',
    name: 'X',
    scopes: [{ name: 'bad scope', label: 'L', consentDescription: 'C' }],
    accessTokenFormat: 'paseto',
    accessTokenTtl: 5,
    extra: true,
  });
  t.equal(shape.status, 400);
  t.equal(shape.body.error, 'VALIDATION_ERROR');
  const fields = (shape.body.details as Array<{ field: string }>).map((d) => d.field);
  for (const field of ['scopes.0.name', 'accessTokenFormat', 'accessTokenTtl', 'extra'])
    t.ok(fields.includes(field), `${field} is named (${fields.join(', ')})`);
  const missing = await api('POST', '/resource-servers', { name: 'No identifier' });
  t.equal(missing.status, 400);
  t.match(missing.body.details, [{ field: 'identifier' }]);
});

t.test('update: fields kept unless sent, null clears, scope names unique across servers; 404', async (t) => {
  const updated = await api('PATCH', path(ORDERS), {
    accessTokenTtl: null,
    description: null,
    allowSelfRegistered: true,
    enabled: false,
  });
  t.equal(updated.status, 200, JSON.stringify(updated.body));
  t.match(updated.body, {
    name: 'Orders API',
    accessTokenTtl: null,
    description: null,
    allowSelfRegistered: true,
    enabled: false,
  });
  t.equal(updated.body.scopes.length, 2, 'scopes kept');
  const clash = await api('PATCH', path('urn:example:billing'), {
    scopes: [{ name: 'orders:read', label: 'Mine', consentDescription: 'x' }],
  });
  t.equal(clash.status, 400);
  t.match(clash.body.details, [
    { field: 'scopes.0.name', message: /belongs to https:\/\/api.example.com\/v1\/orders/ },
  ]);
  const identifier = await api('PATCH', path(ORDERS), { identifier: 'https://other.example' });
  t.equal(identifier.status, 400, 'the identifier is fixed');
  t.match(identifier.body.details, [{ field: 'identifier' }]);
  const none = await api('PATCH', path('https://nope.example'), { name: 'x' });
  t.equal(none.status, 404);
  t.equal(none.body.error, 'NOT_FOUND');
  t.equal((await app.services.resourceServers.find(ORDERS))?.enabled, false, 'the registry sees it at once');
});

t.test('delete: 204, then 404; every change audited without values', async (t) => {
  const removed = await api('DELETE', path('urn:example:billing'));
  t.equal(removed.status, 204);
  t.equal(removed.body && Object.keys(removed.body).length, 0);
  t.equal((await api('GET', path('urn:example:billing'))).status, 404);
  t.equal((await api('DELETE', path('urn:example:billing'))).status, 404);
  const audit = await api(
    'GET',
    '/audit-events?type=resource_server.created,resource_server.updated,resource_server.deleted',
  );
  const events = audit.body.items.map((e: { type: string; actor: string; detail: Record<string, unknown> }) => [
    e.type,
    e.actor,
    e.detail.resource,
  ]);
  t.same(events, [
    ['resource_server.deleted', 'admin-api', 'urn:example:billing'],
    ['resource_server.updated', 'admin-api', ORDERS],
    ['resource_server.created', 'admin-api', 'urn:example:billing'],
    ['resource_server.created', 'admin-api', ORDERS],
  ]);
  t.same(audit.body.items[1].detail.fields.sort(), ['accessTokenTtl', 'allowSelfRegistered', 'description', 'enabled']);
});
