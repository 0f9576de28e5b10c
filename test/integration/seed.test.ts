// The seed file applied in process (src/services/seed.ts; the CLI and SEED_FILE around it are in
// test/cli/seed.test.ts): the seed takes over no row it did not create (issue 31, item 4). A self-registered
// account or an operator's application named in the file stops the seed with the address or client id named,
// and nothing changes; "replace": true takes it over (the file's fields and password, every session, token and
// consent of the account ended, audited); afterwards the row is the seed's and re-running is quiet. The client
// id "demo" is refused in a seed file (item 7(e)).
import t from 'tap';
import { migrateToLatest, migrateUpTo } from '../../db/migrate.js';
import { parseSeed } from '../../src/seed.js';
import { applySeed, type SeedOutcome } from '../../src/services/seed.js';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';
import { cookiesOf, obtainTokens, signUpAndConfirm, smtpLinks, tokenRequest, userinfo } from '../helpers/flow.js';
import { startSmtp } from '../helpers/smtp.js';

t.setTimeout(300_000);

const OWNER_PASSWORD = 'the-owner-chose-this-1';
const SEED_PASSWORD = 'the-seed-file-password-2';
const ENV = { SEED_PASSWORD };
const CLIENT = 'rp';
const REDIRECT = 'https://rp.example.com/cb';

t.test('a self-registered account named in the seed file', async (t) => {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const { app } = await buildTestApp(t, { env: { SMTP_URL: smtp.url } });
  await app.services.applications.create(
    { clientId: CLIENT, clientName: 'RP', redirectUris: [REDIRECT] },
    {
      actor: 'test',
    },
  );
  const seedIt = (file: unknown, options: { dryRun?: boolean } = {}) =>
    applySeed(
      { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords },
      parseSeed(file, 'seed.json', ENV),
      { actor: 'seed' },
      options,
    );
  const signIn = (email: string, password: string) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/sign-in',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email, password }),
    });
  const auditTypes = async () =>
    (await app.db.selectFrom('audit_events').select('type').orderBy('id').execute()).map((r) => r.type);

  // Someone signs up with the address the operator's seed file will name, and uses the account.
  const email = 'owner@example.com';
  // Sign-up creates the account when the mailed link is confirmed (issue 31, item 3).
  const { signUp } = await signUpAndConfirm(app, smtpLinks(smtp), { email, password: OWNER_PASSWORD, via: 'json' });
  t.equal(signUp.statusCode, 201, 'signed up');
  const self = await app.services.users.get(email);
  await app.services.users.update(self.id, { emailVerified: true }, { actor: 'test' });
  const signedIn = await signIn(email, OWNER_PASSWORD);
  t.equal(signedIn.statusCode, 200);
  const jar = cookiesOf(signedIn);
  const { tokens } = await obtainTokens(app, {
    clientId: CLIENT,
    redirectUri: REDIRECT,
    email,
    password: OWNER_PASSWORD,
    scope: 'openid offline_access',
  });
  t.ok(tokens.refresh_token, 'an offline refresh token');
  const me = () => app.inject({ method: 'GET', url: '/api/me', cookies: jar });
  t.equal((await me()).statusCode, 200, 'the session works');

  const file = {
    users: [{ email: 'Owner@example.com', role: 'admin', permissions: ['ops:all'], passwordEnv: 'SEED_PASSWORD' }],
  };
  const before = await auditTypes();
  for (const dryRun of [true, false]) {
    await t.rejects(
      seedIt(file, { dryRun }),
      {
        code: 'SEED_INVALID',
        message: new RegExp(
          '^seed\\.json: users\\[0\\] \\(email "Owner@example\\.com"\\): an account with the address ' +
            'owner@example\\.com exists and was not created by the seed .*"replace": true',
        ),
      },
      `the seed stops and names the address${dryRun ? ' (dry run too)' : ''}`,
    );
  }
  const untouched = await app.services.users.get(email);
  t.equal(untouched.role, 'user', 'not an admin');
  t.same(untouched.permissions, [], 'no permissions');
  t.equal((await signIn(email, OWNER_PASSWORD)).statusCode, 200, 'the password is still the owner’s');
  t.equal((await signIn(email, SEED_PASSWORD)).statusCode, 401, 'the file’s password does not sign in');
  t.equal((await me()).statusCode, 200, 'the session still works');
  const notSignIns = (types: string[]) => types.filter((type) => !/sign/.test(type));
  t.same(notSignIns(await auditTypes()), notSignIns(before), 'nothing written but the sign-ins of this test');

  // The operator decides: "replace": true.
  const replacing = { users: [{ ...file.users[0], replace: true }] };
  const outcomes: SeedOutcome[] = await seedIt(replacing);
  t.same(
    outcomes.map((o) => [o.key, o.action]),
    [[email, 'replaced']],
  );
  t.same(
    outcomes[0]!.fields.sort(),
    ['email', 'password', 'permissions', 'role'].sort(),
    'the outcome names the fields',
  );
  const replaced = await app.services.users.get(email);
  t.equal(replaced.id, self.id, 'the same row');
  t.equal(replaced.role, 'admin', 'the file’s role');
  t.same(replaced.permissions, ['ops:all'], 'the file’s permissions');
  t.equal((await signIn(email, OWNER_PASSWORD)).statusCode, 401, 'the old password no longer signs in');
  t.equal((await me()).statusCode, 401, 'the old session cookie is refused');
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, 'the old access token is refused');
  const refresh = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: CLIENT,
  });
  t.equal(refresh.statusCode, 400, 'the old refresh token is refused');
  t.equal(refresh.json().error, 'invalid_grant');
  t.equal(
    (await app.db.selectFrom('consents').select('client_id').where('user_id', '=', self.id).execute()).length,
    0,
    'the previous holder’s consents are gone',
  );
  const event = await app.db
    .selectFrom('audit_events')
    .selectAll()
    .where('type', '=', 'user.replaced_by_seed')
    .executeTakeFirst();
  t.equal(event?.user_id, self.id, 'audited');
  t.equal(event?.actor, 'seed');
  t.same((event!.detail as { fields: string[] }).fields.sort(), ['email', 'password', 'permissions', 'role'].sort());
  t.ok((await auditTypes()).includes('session.revoked'), 'the session revocation is audited');
  t.equal((await signIn(email, SEED_PASSWORD)).statusCode, 200, 'the file’s password signs in');

  // The row is the seed's now: re-running (with or without "replace") changes nothing and says nothing.
  const settled = await auditTypes();
  const row = await app.db.selectFrom('users').selectAll().where('id', '=', self.id).executeTakeFirstOrThrow();
  for (const again of [replacing, file]) {
    t.same(
      (await seedIt(again)).map((o) => o.action),
      ['unchanged'],
    );
  }
  t.same(await auditTypes(), settled, 'no audit event');
  const rowAfter = await app.db.selectFrom('users').selectAll().where('id', '=', self.id).executeTakeFirstOrThrow();
  t.same(rowAfter, row, 'the row as it was (password hash and updated_at included)');
  t.equal((await signIn(email, SEED_PASSWORD)).statusCode, 200, 'the password is not set again');

  // A user the seed creates is the seed's from the start: a second run is quiet.
  const fresh = { users: [{ email: 'new@example.com', passwordEnv: 'SEED_PASSWORD' }] };
  t.same(
    (await seedIt(fresh)).map((o) => o.action),
    ['created'],
  );
  t.same(
    (await seedIt(fresh)).map((o) => o.action),
    ['unchanged'],
  );
});

t.test('replace without a password: the previous holder’s password is removed', async (t) => {
  const { app } = await buildTestApp(t);
  const user = await app.services.users.create(
    { email: 'made@example.com', password: OWNER_PASSWORD, role: 'admin', name: 'Made' },
    { actor: 'admin-api' },
  );
  const plan = parseSeed({ users: [{ email: 'made@example.com', replace: true }] }, 'seed.json', ENV);
  const [outcome] = await applySeed(
    { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords },
    plan,
    {
      actor: 'seed',
    },
  );
  t.equal(outcome!.action, 'replaced');
  const after = await app.services.users.get(user.id);
  t.equal(after.hasPassword, false, 'no password: the reset flow is the way in');
  t.equal(after.role, 'user', 'fields the entry leaves out take their creation defaults');
  t.equal(after.name, null);
  t.equal(after.emailVerified, true);
});

t.test('an application made through the admin API named in the seed file', async (t) => {
  const { app } = await buildTestApp(t);
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/applications',
    headers: adminHeaders,
    payload: {
      clientId: 'shop',
      clientName: 'Shop',
      redirectUris: ['https://shop.example.com/cb'],
      allowedWebOrigins: ['https://shop.example.com'],
    },
  });
  t.equal(created.statusCode, 201);
  const seedIt = (file: unknown) =>
    applySeed(
      { db: app.servicesDb, staticApplications: app.staticApplications, passwords: app.services.passwords },
      parseSeed(file, 'seed.json', ENV),
      {
        actor: 'seed',
      },
    );
  const entry = { clientId: 'shop', clientName: 'Shop (CI)', redirectUris: ['http://localhost:8080/callback'] };
  await t.rejects(seedIt({ applications: [entry] }), {
    message: new RegExp(
      '^seed\\.json: applications\\[0\\] \\(clientId "shop"\\): the application shop exists and was not ' +
        'created by the seed .*"replace": true',
    ),
  });
  const kept = await app.services.applications.get('shop');
  t.same(kept.redirectUris, ['https://shop.example.com/cb'], 'the redirect URIs are the operator’s');

  const outcomes = await seedIt({ applications: [{ ...entry, replace: true }] });
  t.same(
    outcomes.map((o) => [o.key, o.action]),
    [['shop', 'replaced']],
  );
  const replaced = await app.services.applications.get('shop');
  t.same(replaced.redirectUris, ['http://localhost:8080/callback']);
  t.equal(replaced.clientName, 'Shop (CI)');
  t.same(replaced.allowedWebOrigins, [], 'fields the entry leaves out take their creation defaults');
  const events = await app.db
    .selectFrom('audit_events')
    .select(['type', 'client_id'])
    .where('type', '=', 'application.replaced_by_seed')
    .execute();
  t.same(events, [{ type: 'application.replaced_by_seed', client_id: 'shop' }], 'audited');
  t.same(
    (await seedIt({ applications: [entry] })).map((o) => o.action),
    ['unchanged'],
    'the seed’s now: quiet',
  );
});

t.test('the client id "demo" is reserved in a seed file', async (t) => {
  t.throws(
    () =>
      parseSeed(
        { applications: [{ clientId: 'demo', clientName: 'Mine', redirectUris: ['https://a.example.com/cb'] }] },
        'seed.json',
        ENV,
      ),
    { message: /applications\[0\] \(clientId "demo"\): clientId: "demo" is reserved for the built-in demo/ },
  );
});

t.test('rows from before 0015-created-by: the seed’s and the demo’s are known by the audit trail', async (t) => {
  const database = await createTestDatabase({ migrated: false });
  t.teardown(() => database.dispose());
  const { db } = database;
  await migrateUpTo(db, '0012-sealed-codes');
  const user = (id: string, email: string) => ({ id, email, password_hash: null, permissions: '[]' });
  await db
    .insertInto('users')
    .values([user('u-seed', 'ci@example.com'), user('u-self', 'self@example.com')])
    .execute();
  const app = (clientId: string, description: string | null = null) => ({
    client_id: clientId,
    name: clientId,
    description,
    logo_url: null,
    redirect_uris: JSON.stringify(['http://localhost:8080/callback']),
    allowed_web_origins: '[]',
    post_verification_redirect_path: null,
    allowed_scopes: JSON.stringify(['openid']),
  });
  await db
    .insertInto('applications')
    .values([app('ci-app'), app('shop'), app('demo'), app('recreated')])
    .execute();
  const event = (type: string, actor: string, target: { userId?: string; clientId?: string }, minutesAgo = 10) => ({
    type,
    actor,
    user_id: target.userId ?? null,
    client_id: target.clientId ?? null,
    ip: null,
    detail: '{}',
    created_at: new Date(Date.now() - minutesAgo * 60_000),
  });
  await db
    .insertInto('audit_events')
    .values([
      event('user.created', 'seed', { userId: 'u-seed' }),
      event('user.signed_up', 'u-self', { userId: 'u-self' }),
      event('application.created', 'seed', { clientId: 'ci-app' }),
      event('application.created', 'admin-api', { clientId: 'shop' }),
      event('application.created', 'demo', { clientId: 'demo' }),
      // The seed made it once; it was deleted and an operator made one with the same id since.
      event('application.created', 'seed', { clientId: 'recreated' }, 30),
      event('application.created', 'admin-api', { clientId: 'recreated' }, 5),
    ])
    .execute();
  await migrateToLatest(db);
  t.same(await db.selectFrom('users').select(['id', 'created_by']).orderBy('id').execute(), [
    { id: 'u-seed', created_by: 'seed' },
    { id: 'u-self', created_by: null },
  ]);
  t.same(
    await db.selectFrom('applications').select(['client_id', 'created_by']).orderBy('client_id').execute(),
    [
      { client_id: 'ci-app', created_by: 'seed' },
      { client_id: 'demo', created_by: 'demo' },
      { client_id: 'recreated', created_by: null },
      { client_id: 'shop', created_by: null },
    ],
    'the latest creation counts',
  );
});
