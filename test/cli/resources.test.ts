// `idp resources` (issue 36): an operator registers an API with its scopes (`--scope NAME=LABEL:CONSENT`), JWT
// tokens, a lifetime and the applications that may use it; gets the service's problems in the words of the flags;
// updates (a JSON scope list for a label with ":", "" for the default lifetime); lists it after the built-in
// /api/external (read-only); removes it only with --yes. In-process runs over one opened database (few commands:
// each builds the services).
import t from 'tap';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import type { ResourceServer } from '../../src/domain/resource-server.js';

t.setTimeout(300_000);
const ORDERS = 'https://api.example.com/orders';

t.test('resources add, errors, update, list, remove', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const added = await cli.run([
    'resources',
    'add',
    ORDERS,
    '--name',
    'Orders API',
    '--scope',
    'orders:read=Read orders:See the orders you placed',
    '--scope',
    'orders:write=Place orders',
    '--format',
    'jwt',
    '--ttl',
    '600',
    '--allow-client',
    'shop',
    '--introspection-client',
    'orders-api',
    '--json',
  ]);
  if (!exits(t, added, 0)) return;
  const orders = parseJson<ResourceServer>(added);
  t.match(orders, {
    identifier: ORDERS,
    name: 'Orders API',
    accessTokenFormat: 'jwt',
    accessTokenTtl: 600,
    allowedClients: ['shop'],
    introspectionClients: ['orders-api'],
    allowSelfRegistered: false,
    enabled: true,
    builtIn: false,
  });
  t.same(orders.scopes, [
    { name: 'orders:read', label: 'Read orders', consentDescription: 'See the orders you placed' },
    { name: 'orders:write', label: 'Place orders', consentDescription: 'Place orders' },
  ]);

  const bad = await cli.run([
    'resources',
    'add',
    'https://billing.example.com/#x',
    '--name',
    'Billing',
    '--scope',
    'email=E-mail',
    '--scope',
    'orders:read=Mine',
  ]);
  exits(t, bad, 1);
  t.match(bad.stderr, /the identifier: must not contain a fragment/);
  t.match(bad.stderr, /--scope #1 \(name\): "email" is a built-in scope/);
  const clash = await cli.run(['resources', 'add', 'urn:example:billing', '--name', 'B', '--scope', 'orders:read=X']);
  exits(t, clash, 1);
  t.match(clash.stderr, /--scope #1 \(name\): "orders:read" belongs to https:\/\/api\.example\.com\/orders/);
  const usage = await cli.run(['resources', 'add', ORDERS, '--name', 'X', '--scope', 'no-label', '--ttl', '1h']);
  exits(t, usage, 2);
  t.match(usage.stderr, /--scope takes NAME=LABEL:CONSENT/);

  const updated = await cli.run([
    'resources',
    'update',
    ORDERS,
    '--scopes-json',
    JSON.stringify([{ name: 'orders:read', label: 'Orders: read', consentDescription: 'See your orders' }]),
    '--ttl',
    '',
    '--allow-self-registered',
    '--disabled',
  ]);
  if (!exits(t, updated, 0)) return;
  t.match(updated.stdout, /Token lifetime:\s+\(ACCESS_TOKEN_TTL\)/);
  t.match(updated.stdout, /Self-registered:\s+allowed/);
  t.match(updated.stdout, /Enabled:\s+no/);
  t.match(updated.stdout, /^ {2}orders:read {2}Orders: read: See your orders$/m);
  t.notMatch(updated.stdout, /orders:write/, 'the list of scopes was replaced');

  const builtIn = await cli.run(['resources', 'update', 'http://localhost:3000/api/external', '--name', 'Mine']);
  exits(t, builtIn, 1);
  t.match(builtIn.stderr, /the built-in resource \(\/api\/external\) cannot be changed/);

  const list = await cli.run(['resources', 'list']);
  exits(t, list, 0);
  const rows = list.stdout.split('\n');
  t.match(rows[0], /^IDENTIFIER\s+NAME\s+FORMAT\s+ENABLED\s+SCOPES$/);
  t.match(rows[1], /^http:\/\/localhost:3000\/api\/external\s+External API\s+opaque\s+yes\s+\(built-in\)$/);
  t.match(rows[2], /^https:\/\/api\.example\.com\/orders\s+Orders API\s+jwt\s+no\s+orders:read$/);

  const unconfirmed = await cli.run(['resources', 'remove', ORDERS]);
  exits(t, unconfirmed, 2);
  t.match(unconfirmed.stderr, /add --yes to confirm/);
  const removed = await cli.run(['resources', 'remove', ORDERS, '--yes', '--json']);
  exits(t, removed, 0);
  t.same(JSON.parse(removed.stdout), { removed: ORDERS });
  const gone = await cli.run(['resources', 'show', ORDERS]);
  exits(t, gone, 1);
  t.match(gone.stderr, /no resource server "https:\/\/api\.example\.com\/orders"/);
});
