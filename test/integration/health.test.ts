import t from 'tap';
import { ADMIN_TOKEN, buildTestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';

// One database for the file's apps (each test builds its own app over it); the test that closes the database
// has one of its own.
const database = await createTestDatabase();
t.teardown(() => database.dispose());

t.test('healthz answers while the process is up', async (t) => {
  const { app } = await buildTestApp(t, { database });
  const res = await app.inject({ method: 'GET', url: '/healthz' });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: 'ok' });
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/);
});

const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

t.test('readyz is 200 while the database answers and 503 once it is gone', async (t) => {
  const { app, database } = await buildTestApp(t); // a database of its own: it closes it
  // Issue 31, item 6: anyone without the admin token learns ready or not, nothing else.
  const ready = await app.inject({ method: 'GET', url: '/readyz' });
  t.equal(ready.statusCode, 200);
  t.same(ready.json(), { status: 'ready' });
  t.equal(ready.headers['cache-control'], 'no-store');
  for (const authorization of ['Bearer wrong-token-0123456789abcdefghijklmnopq', `Basic ${ADMIN_TOKEN}`]) {
    const wrong = await app.inject({ method: 'GET', url: '/readyz', headers: { authorization } });
    t.equal(wrong.statusCode, 200, 'a wrong token is not refused (load balancers probe without one)');
    t.same(wrong.json(), { status: 'ready' }, 'and sees no details');
  }
  const details = await app.inject({ method: 'GET', url: '/readyz', headers: admin });
  t.equal(details.statusCode, 200);
  t.same(details.json(), {
    status: 'ready',
    database: database.engine,
    mail: { transport: 'outbox', sent: 0, failed: 0, retried: 0, pending: 0, lastFailure: null },
  });

  await database.close();
  for (const headers of [{}, admin]) {
    const gone = await app.inject({ method: 'GET', url: '/readyz', headers });
    t.equal(gone.statusCode, 503);
    t.same(gone.json(), {
      status: 'unavailable',
      error: 'DATABASE_UNAVAILABLE',
      message: 'The database does not answer',
    });
    t.equal(gone.headers['cache-control'], 'no-store');
  }
});

t.test('without ADMIN_API_TOKEN set, nobody gets the details of readyz', async (t) => {
  const { app } = await buildTestApp(t, { database, env: { ADMIN_API_TOKEN: undefined } });
  const res = await app.inject({ method: 'GET', url: '/readyz', headers: admin });
  t.equal(res.statusCode, 200);
  t.same(res.json(), { status: 'ready' });
});

t.test('a reset request for an existing or a missing address leaves the public readyz unchanged', async (t) => {
  // The oracle of issue 31, item 6: "request a reset, then read /readyz" told whether an address has an
  // account (only an existing one is sent a mail, and the mail counters moved).
  const { app } = await buildTestApp(t, { database });
  await app.services.users.create(
    { email: 'kept@example.com', password: 'kept-password-1', emailVerified: true },
    { actor: 'test' },
  );
  const readyz = async (headers = {}) => {
    const res = await app.inject({ method: 'GET', url: '/readyz', headers });
    t.equal(res.statusCode, 200);
    return res.body;
  };
  const reset = async (email: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/request-password-reset',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email, redirectTo: '/login/reset-password' }),
    });
    t.equal(res.statusCode, 200);
    await app.services.recovery.drain();
    await app.services.mailer.drain(5000);
  };
  const before = await readyz();
  const sentBefore = JSON.parse(await readyz(admin)).mail.sent;
  await reset('nobody@example.com');
  const afterMissing = await readyz();
  await reset('kept@example.com');
  const afterExisting = await readyz();
  t.equal(afterMissing, before, 'identical after a reset for a missing address');
  t.equal(afterExisting, afterMissing, 'identical after a reset for an existing one');
  t.same(JSON.parse(afterExisting), { status: 'ready' });
  t.equal(JSON.parse(await readyz(admin)).mail.sent, sentBefore + 1, 'the operator still sees the mail go');
});

t.test('a sane incoming x-request-id is kept, a hostile one replaced', async (t) => {
  const { app, logs } = await buildTestApp(t, { database });
  const kept = await app.inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'abc-123' } });
  t.equal(kept.headers['x-request-id'], 'abc-123');
  const replaced = await app.inject({ method: 'GET', url: '/readyz', headers: { 'x-request-id': 'evil\nlog line' } });
  t.not(replaced.headers['x-request-id'], 'evil\nlog line');
  t.match(replaced.headers['x-request-id'], /^[0-9a-f-]{36}$/);
  t.notMatch(logs.text(), /evil/);
});

t.test('unknown routes get a JSON 404', async (t) => {
  const { app } = await buildTestApp(t, { database });
  const res = await app.inject({ method: 'GET', url: '/nope?x=1' });
  t.equal(res.statusCode, 404);
  t.same(res.json(), { error: 'NOT_FOUND', message: 'No route GET /nope' });
});

t.test('unknown admin paths ask for the admin token before saying 404', async (t) => {
  const { app } = await buildTestApp(t, { database });
  const anonymous = await app.inject({ method: 'GET', url: '/api/admin/secret-route' });
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.json().error, 'UNAUTHORIZED');
  const admin = await app.inject({
    method: 'GET',
    url: '/api/admin/secret-route',
    headers: { authorization: 'Bearer test-admin-token-0123456789abcdefghijklmnop' },
  });
  t.equal(admin.statusCode, 404);
  t.same(admin.json(), { error: 'NOT_FOUND', message: 'No route GET /api/admin/secret-route' });
});

t.test('every answer says nosniff; on https, Strict-Transport-Security too (ASVS 5.0 3.4.1, 3.4.4)', async (t) => {
  const { app } = await buildTestApp(t, { database });
  for (const url of ['/healthz', '/api/auth/jwks', '/no-such-route']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.headers['x-content-type-options'], 'nosniff', url);
    t.equal(res.headers['strict-transport-security'], undefined, `${url}: no HSTS over http`);
  }
  const secure = await buildTestApp(t, { database, env: { BASE_URL: 'https://idp.example.com' } });
  const res = await secure.app.inject({ method: 'GET', url: '/healthz' });
  t.equal(res.headers['strict-transport-security'], 'max-age=31536000');
  t.equal(res.headers['x-content-type-options'], 'nosniff');
});
