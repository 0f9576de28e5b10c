// The welcome page at / (WELCOME_PAGE=on|public|off, defaults by NODE_ENV) and the demo switch (DEMO):
// the admin line follows the admin-setup state, the demo link shows only when the demo is on, and
// DEMO=off answers 404 at /demo and disables the demo application.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';
import { PRODUCTION_PASSWORD_HASH_ENV } from '../helpers/password-cost.js';
import { loadConfig } from '../../src/config.js';
import { DEMO_CLIENT_ID, DEMO_CLIENT_NAME } from '../../src/services/demo.js';

const PRODUCTION = {
  NODE_ENV: 'production',
  BASE_URL: 'https://id.example.com',
  SECRET_KEY: 'test-secret-key-0123456789abcdefghijklmnop',
  ...PRODUCTION_PASSWORD_HASH_ENV,
};

t.test('defaults: WELCOME_PAGE on and DEMO on in development; public and off in production', async (t) => {
  const dev = loadConfig({ NODE_ENV: 'development' });
  t.equal(dev.welcomePage, 'on');
  t.equal(dev.demo, true);
  const prod = loadConfig(PRODUCTION);
  t.equal(prod.welcomePage, 'public');
  t.equal(prod.demo, false);
  t.equal(loadConfig({ NODE_ENV: 'test' }).demo, false, 'tests opt in');
  t.equal(loadConfig({ ...PRODUCTION, DEMO: 'on', WELCOME_PAGE: 'OFF' }).welcomePage, 'off');
  t.equal(loadConfig({ ...PRODUCTION, DEMO: 'true' }).demo, true);
  t.throws(() => loadConfig({ WELCOME_PAGE: 'maybe' }), /WELCOME_PAGE: expected on, public or off/);
  t.throws(() => loadConfig({ DEMO: 'maybe' }), /DEMO: expected on or off/);
});

t.test('WELCOME_PAGE=on: issuer, discovery, sign-in, the admin state, the docs; the demo link when on', async (t) => {
  const database = await createTestDatabase();
  t.teardown(() => database.dispose());
  const { app, config } = await buildTestApp(t, { database, env: { WELCOME_PAGE: 'on', DEMO: 'on' } });
  let res = await app.inject({ url: '/' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /text\/html/);
  t.match(res.headers['content-security-policy'], /default-src 'none'/);
  t.match(res.body, `<code>${config.issuer}</code>`);
  t.match(res.body, `${config.issuer}/.well-known/openid-configuration`);
  t.match(res.body, `href="${config.loginUrl}/sign-in"`);
  t.match(res.body, `href="${config.adminUrl}"`);
  t.match(res.body, 'No admin exists yet: create the first admin.');
  t.match(res.body, 'printed on its console at start');
  t.notMatch(res.body, /token=/, 'no setup token on the page');
  t.match(res.body, 'href="http://localhost:3000/demo"', 'the demo link');
  t.match(res.body, 'href="/api/openapi.json"');
  const css = await app.inject({ url: '/assets/welcome.css' });
  t.equal(css.statusCode, 200);
  t.match(css.headers['content-type'], /text\/css/);

  await app.services.users.create(
    { email: 'admin@example.com', password: 'a long enough passphrase', role: 'admin', emailVerified: true },
    { actor: 'test' },
  );
  res = await app.inject({ url: '/' });
  t.notMatch(res.body, 'create the first admin', 'the setup line goes once an admin exists');
  t.match(res.body, `href="${config.adminUrl}"`, 'the admin link stays');

  const demo = await app.services.applications.get(DEMO_CLIENT_ID);
  t.equal(demo.clientName, DEMO_CLIENT_NAME);
  t.equal(demo.enabled, true);
  t.same(demo.redirectUris, ['http://localhost:3000/demo/callback'], 'the redirect URI follows BASE_URL');
  t.same(demo.postLogoutRedirectUris, ['http://localhost:3000/demo']);
  const page = await app.inject({ url: '/demo' });
  t.equal(page.statusCode, 200);
  t.match(page.body, 'This is a demo of the identity provider');
  t.match(page.body, 'href="/demo/login"');
  await app.close();

  // A second start with DEMO=off on the same database: /demo is gone and the application disabled.
  const off = await buildTestApp(t, { database, env: { DEMO: 'off' } });
  t.equal((await off.app.inject({ url: '/demo' })).statusCode, 404);
  t.equal((await off.app.inject({ url: '/demo/login' })).statusCode, 404);
  t.equal((await off.app.services.applications.get(DEMO_CLIENT_ID)).enabled, false, 'the demo app is disabled');
  t.notMatch((await off.app.inject({ url: '/' })).body, '/demo', 'no demo link when it is off');
  await off.app.close();

  // On again: enabled again, once (idempotent).
  const again = await buildTestApp(t, { database, env: { DEMO: 'on' } });
  await again.app.ready();
  t.equal((await again.app.services.applications.get(DEMO_CLIENT_ID)).enabled, true);
  const { items } = await again.app.services.applications.list({ limit: 100 } as never);
  t.equal(items.filter((a: { clientId: string }) => a.clientId === DEMO_CLIENT_ID).length, 1);
});

t.test(
  'an operator\'s application "demo" from before the id was reserved: left alone, the demo stays off',
  async (t) => {
    // Made through the admin API before issue 31 reserved the id: a row the demo did not create.
    const database = await createTestDatabase();
    t.teardown(() => database.dispose());
    await database.db
      .insertInto('applications')
      .values({
        client_id: DEMO_CLIENT_ID,
        name: 'Operations dashboard',
        description: null,
        logo_url: null,
        redirect_uris: JSON.stringify(['https://ops.example.com/cb']),
        allowed_web_origins: JSON.stringify([]),
        post_verification_redirect_path: null,
        allowed_scopes: JSON.stringify(['openid', 'email']),
        enabled: true,
      })
      .execute();
    const before = await database.db.selectFrom('applications').selectAll().execute();

    const on = await buildTestApp(t, { database, env: { DEMO: 'on' } });
    await on.app.ready();
    t.equal((await on.app.inject({ url: '/demo' })).statusCode, 404, 'the demo is off');
    t.equal((await on.app.inject({ url: '/demo/login' })).statusCode, 404, 'no sign-in to that application');
    t.match(
      on.logs.text(),
      /"level":40.*an application \\"demo\\" that the demo did not create.*the demo at \/demo stays off/,
      'a warning says why',
    );
    t.same(await database.db.selectFrom('applications').selectAll().execute(), before, 'not overwritten');
    await on.app.close();

    const off = await buildTestApp(t, { database, env: { DEMO: 'off' } });
    await off.app.ready();
    t.same(await database.db.selectFrom('applications').selectAll().execute(), before, 'not disabled');
    t.notMatch(off.logs.text(), /did not create/, 'DEMO=off: nothing to warn about');
    t.equal(
      (await off.app.db.selectFrom('audit_events').select('type').where('client_id', '=', DEMO_CLIENT_ID).execute())
        .length,
      0,
      'no write audited',
    );
  },
);

t.test('WELCOME_PAGE=public: no admin links', async (t) => {
  const { app, config } = await buildTestApp(t, { env: { WELCOME_PAGE: 'public' } });
  const res = await app.inject({ url: '/' });
  t.equal(res.statusCode, 200);
  t.match(res.body, config.issuer);
  t.match(res.body, `${config.loginUrl}/sign-in`);
  t.notMatch(res.body, config.adminUrl);
  t.notMatch(res.body, /admin/i);
  t.notMatch(res.body, '/demo', 'DEMO is off in tests by default');
});

t.test('WELCOME_PAGE=off: / answers the JSON 404 as before', async (t) => {
  const { app } = await buildTestApp(t, { env: { WELCOME_PAGE: 'off' } });
  const res = await app.inject({ url: '/' });
  t.equal(res.statusCode, 404);
  t.same(res.json(), { error: 'NOT_FOUND', message: 'No route GET /' });
  t.equal((await app.inject({ url: '/demo' })).statusCode, 404, 'DEMO off by default in tests');
});

t.test('production: public by default, off on request; the demo only with DEMO=on', async (t) => {
  const prod = { ...PRODUCTION, COOKIE_SECURE: 'true' };
  const { app } = await buildTestApp(t, { env: prod });
  let res = await app.inject({ url: '/' });
  t.equal(res.statusCode, 200);
  t.notMatch(res.body, /admin/i, 'public: no admin link in production');
  t.notMatch(res.body, '/demo');
  t.equal((await app.inject({ url: '/demo' })).statusCode, 404);
  t.equal(await app.services.applications.find(DEMO_CLIENT_ID), undefined, 'no demo application');

  const on = await buildTestApp(t, { env: { ...prod, DEMO: 'on', WELCOME_PAGE: 'on' } });
  res = await on.app.inject({ url: '/' });
  t.match(res.body, 'https://id.example.com/demo');
  t.match(res.body, 'create the first admin');
  t.notMatch(res.body, 'printed on its console', 'production prints no setup link: only the commands');
  t.match(res.body, 'idp admin setup-link');
  t.equal((await on.app.inject({ url: '/demo' })).statusCode, 200);
  t.same((await on.app.services.applications.get(DEMO_CLIENT_ID)).redirectUris, [
    'https://id.example.com/demo/callback',
  ]);

  const off = await buildTestApp(t, { env: { ...prod, WELCOME_PAGE: 'off' } });
  t.equal((await off.app.inject({ url: '/' })).statusCode, 404);
});

t.test('/demo: the flow cookie is sealed and HttpOnly; a callback without it is refused', async (t) => {
  const { app } = await buildTestApp(t, { env: { DEMO: 'on' } });
  const res = await app.inject({ url: '/demo/callback?code=x&state=y' });
  t.equal(res.statusCode, 400);
  t.match(res.body, 'state mismatch');
  const forged = await app.inject({
    url: '/demo/callback?code=x&state=y',
    cookies: { 'demo.flow': 'v1.a.b.c' },
  });
  t.equal(forged.statusCode, 400, 'a cookie that does not unseal counts as none');
  const refresh = await app.inject({ method: 'POST', url: '/demo/refresh' });
  t.equal(refresh.statusCode, 303, 'signed out: refresh goes back to /demo');
  t.equal(refresh.headers.location, '/demo');
});
