// The admin web's APIs page (resource servers, issue 36): an administrator sees the built-in /api/external
// (read-only), adds an API with scopes as rows (more rows on request, without saving), the token format and
// lifetime, the applications that may use it (picked from the applications) and the confidential ones that may
// introspect; gets the service's problems next to the fields and rows; edits, disables, deletes after a
// confirmation. Forms without the CSRF token and users without the admin role change nothing.
import t from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { hiddenField } from '../helpers/flow.js';

const { app, config } = await buildTestApp(t);
const password = 'a long enough password';
const ORDERS = 'https://api.example.com/orders';
const ORDERS_PATH = `/admin/apis/${encodeURIComponent(ORDERS)}`;
const BUILT_IN_PATH = `/admin/apis/${encodeURIComponent(`${config.baseUrl}/api/external`)}`;

class Agent {
  jar: Record<string, string> = {};
  constructor(readonly server: FastifyInstance = app) {}
  keep(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === '' || c.maxAge === 0) delete this.jar[c.name];
      else this.jar[c.name] = c.value;
    }
    return res;
  }
  async get(url: string) {
    return this.keep(await this.server.inject({ method: 'GET', url, cookies: this.jar }));
  }
  async post(url: string, form: Record<string, string | string[]>) {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
    return this.keep(
      await this.server.inject({
        method: 'POST',
        url,
        cookies: this.jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: body.toString(),
      }),
    );
  }
  async signIn(email: string) {
    const page = await this.get('/login/sign-in');
    await this.post('/login/sign-in', { csrf: hiddenField(page.body, 'csrf'), email, password });
    if (!this.jar['idp.session']) throw new Error(`sign-in of ${email} failed`);
  }
}

const admin = new Agent();
await app.services.users.create(
  { email: 'root@example.com', password, emailVerified: true, role: 'admin' },
  { actor: 'test' },
);
await admin.signIn('root@example.com');
const csrf = () => admin.jar['idp.csrf']!;
const shop = await app.services.applications.create(
  { clientId: 'shop', clientName: 'Shop', redirectUris: ['https://shop.example.com/cb'] },
  { actor: 'test' },
);
await app.services.applications.create(
  {
    clientId: 'orders-api',
    clientName: 'Orders backend',
    redirectUris: ['https://orders.example.com/cb'],
    tokenEndpointAuthMethod: 'client_secret_basic',
  },
  { actor: 'test' },
);
const registry = app.services.resourceServers;

/** A complete form for the Orders API. */
const ordersForm = () => ({
  csrf: csrf(),
  action: 'save',
  identifier: ORDERS,
  name: 'Orders API',
  description: 'The shop’s orders',
  scopeName: ['orders:read', 'orders:write', ''],
  scopeLabel: ['Read orders', 'Place orders', ''],
  scopeConsent: ['See the orders you placed', '', ''],
  accessTokenFormat: 'jwt',
  accessTokenTtl: '600',
  allowedClients: shop.clientId,
  introspectionClients: 'orders-api',
  enabled: 'on',
});

t.test('the list shows the built-in API, read-only', async (t) => {
  const list = await admin.get('/admin/apis');
  t.equal(list.statusCode, 200);
  t.match(list.body, /<a href="\/admin\/apis" aria-current="page">APIs<\/a>/, 'in the navigation');
  t.match(list.body, new RegExp(`<a href="${BUILT_IN_PATH}">External API</a> <span class="badge">built-in</span>`));
  const view = await admin.get(BUILT_IN_PATH);
  t.equal(view.statusCode, 200);
  t.match(view.body, /it is read-only/);
  t.notMatch(view.body, /\/edit"|\/delete"/, 'no edit or delete');
  const edit = await admin.get(`${BUILT_IN_PATH}/edit`);
  t.equal(edit.statusCode, 400);
  t.match(edit.body, /The built-in API \(\/api\/external\) is read-only/);
  const del = await admin.post(`${BUILT_IN_PATH}/delete`, { csrf: csrf() });
  t.equal(del.statusCode, 400);
  t.equal((await registry.list()).length, 1);
});

t.test('add: the applications to pick from, more scope rows, problems by field and row', async (t) => {
  const form = await admin.get('/admin/apis/new');
  t.equal(form.statusCode, 200);
  t.match(form.body, /<input type="checkbox" name="allowedClients" value="shop"> Shop <code>shop<\/code>/);
  t.match(form.body, /<input type="checkbox" name="allowedClients" value="orders-api">/);
  const introspection = form.body.slice(form.body.indexOf('Introspection clients'));
  t.match(introspection, /name="introspectionClients" value="orders-api"/, 'a confidential application');
  t.notMatch(introspection, /name="introspectionClients" value="shop"/, 'not a public one');
  t.equal(form.body.match(/name="scopeName"/g)?.length, 3, 'three empty scope rows');

  const more = await admin.post('/admin/apis', { ...ordersForm(), action: 'more-scopes' });
  t.equal(more.statusCode, 200);
  t.equal(more.body.match(/name="scopeName"/g)?.length, 5, 'the two filled rows and three empty ones');
  t.match(more.body, /value="orders:write"/, 'the values are kept');
  t.equal(await registry.find(ORDERS), undefined, 'nothing saved');

  const bad = await admin.post('/admin/apis', {
    ...ordersForm(),
    identifier: 'https://api.example.com/orders#x',
    scopeName: ['orders:read', 'email', ''],
  });
  t.equal(bad.statusCode, 400);
  t.match(bad.body, /Please correct the fields marked below/);
  t.match(bad.body, /must not contain a fragment/);
  t.match(bad.body, /<p class="error">name: &quot;email&quot; is a built-in scope<\/p>/);
  t.match(bad.body, /value="https:\/\/api.example.com\/orders#x"/, 'the values are shown again');
  const ttl = await admin.post('/admin/apis', { ...ordersForm(), accessTokenTtl: 'ten minutes' });
  t.equal(ttl.statusCode, 400);
  t.match(ttl.body, /Enter whole seconds, or leave it empty/);
  const range = await admin.post('/admin/apis', { ...ordersForm(), accessTokenTtl: '10' });
  t.equal(range.statusCode, 400);
  t.match(range.body, /<p class="error" id="f-accessTokenTtl-error">must be &gt;= 60<\/p>/);
  t.equal(await registry.find(ORDERS), undefined);

  const forged = await admin.post('/admin/apis', { ...ordersForm(), csrf: 'not-the-token' });
  t.equal(forged.statusCode, 403, 'no CSRF token, no change');
  t.equal(await registry.find(ORDERS), undefined);

  const created = await admin.post('/admin/apis', ordersForm());
  t.equal(created.statusCode, 303, created.body);
  t.equal(created.headers.location, `${ORDERS_PATH}?done=created`);
  t.match(await registry.find(ORDERS), {
    name: 'Orders API',
    description: 'The shop’s orders',
    scopes: [
      { name: 'orders:read', label: 'Read orders', consentDescription: 'See the orders you placed' },
      { name: 'orders:write', label: 'Place orders', consentDescription: 'Place orders' },
    ],
    accessTokenFormat: 'jwt',
    accessTokenTtl: 600,
    allowedClients: ['shop'],
    allowSelfRegistered: false,
    introspectionClients: ['orders-api'],
    enabled: true,
  });
  const view = await admin.get(ORDERS_PATH);
  t.equal(view.statusCode, 200);
  t.match(view.body, /<code id="identifier">https:\/\/api.example.com\/orders<\/code>/);
  t.match(view.body, /<td><code>orders:read<\/code><\/td><td>Read orders<\/td><td>See the orders you placed<\/td>/);
  t.match(view.body, /JWT \(RFC 9068\)/);
  const list = await admin.get('/admin/apis');
  t.match(list.body, new RegExp(`<a href="${ORDERS_PATH}">Orders API</a>`));
});

t.test('edit, disable, enable, delete', async (t) => {
  const edit = await admin.get(`${ORDERS_PATH}/edit`);
  t.equal(edit.statusCode, 200);
  t.match(edit.body, /<input type="checkbox" name="allowedClients" value="shop" checked>/);
  t.match(edit.body, /value="600"/);
  const saved = await admin.post(ORDERS_PATH, {
    ...ordersForm(),
    identifier: 'https://ignored.example',
    scopeName: ['orders:read', '', ''],
    scopeLabel: ['Read orders', 'Place orders', ''],
    scopeConsent: ['', '', ''],
    accessTokenFormat: 'opaque',
    accessTokenTtl: '',
    allowSelfRegistered: 'on',
  });
  t.equal(saved.statusCode, 400, 'a row with a label and no name is a problem, not dropped');
  t.match(saved.body, /<p class="error">name: /);
  const fixed = await admin.post(ORDERS_PATH, {
    ...ordersForm(),
    scopeName: ['orders:read', ''],
    scopeLabel: ['Read orders', ''],
    scopeConsent: ['', ''],
    accessTokenFormat: 'opaque',
    accessTokenTtl: '',
    allowSelfRegistered: 'on',
  });
  t.equal(fixed.statusCode, 303, fixed.body);
  t.equal(fixed.headers.location, `${ORDERS_PATH}?done=saved`);
  t.match(await registry.find(ORDERS), {
    scopes: [{ name: 'orders:read', label: 'Read orders', consentDescription: 'Read orders' }],
    accessTokenFormat: 'opaque',
    accessTokenTtl: null,
    allowSelfRegistered: true,
  });

  const disabled = await admin.post(`${ORDERS_PATH}/disable`, { csrf: csrf() });
  t.equal(disabled.headers.location, `${ORDERS_PATH}?done=disabled`);
  t.equal((await registry.find(ORDERS))?.enabled, false);
  const enabled = await admin.post(`${ORDERS_PATH}/enable`, { csrf: csrf() });
  t.equal(enabled.headers.location, `${ORDERS_PATH}?done=enabled`);
  t.equal((await registry.find(ORDERS))?.enabled, true);

  const confirm = await admin.get(`${ORDERS_PATH}/delete`);
  t.equal(confirm.statusCode, 200);
  t.match(confirm.body, /Delete Orders API\?/);
  t.match(confirm.body, new RegExp(`action="${ORDERS_PATH}/delete"`));
  const deleted = await admin.post(`${ORDERS_PATH}/delete`, { csrf: csrf() });
  t.equal(deleted.headers.location, '/admin/apis?done=deleted');
  t.equal(await registry.find(ORDERS), undefined);
  t.equal((await admin.get(ORDERS_PATH)).statusCode, 404);
  const types = (await app.services.audit.list({ limit: 20 })).items
    .filter((e) => e.type.startsWith('resource_server.'))
    .map((e) => [e.type, e.actor]);
  t.same(types[0], ['resource_server.deleted', 'admin:root@example.com']);
});

t.test('a user without the admin role changes nothing', async (t) => {
  await registry.create({ identifier: ORDERS, name: 'Orders API' });
  await app.services.users.create({ email: 'user@example.com', password, emailVerified: true }, { actor: 'test' });
  const user = new Agent();
  await user.signIn('user@example.com');
  t.equal((await user.get('/admin/apis')).statusCode, 403);
  const post = await user.post(`${ORDERS_PATH}/disable`, { csrf: user.jar['idp.csrf']! });
  t.equal(post.statusCode, 403);
  t.equal((await registry.find(ORDERS))?.enabled, true);
});
