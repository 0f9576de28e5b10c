// `idp users`: one user through its whole life, in one DATA_DIR (or PostgreSQL schema).
import t from 'tap';
import { join } from 'node:path';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import type { User } from '../../schemas/admin.js';
import { createDatabase } from '../../db/create-db.js';
import { buildTestApp } from '../helpers/app.js';

// Every test spawns CLI processes (~3 s each just to load, more on a busy machine): more than tap's default.
t.setTimeout(300_000);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('users: create, reject a duplicate, show, update, disable, delete', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const password = 'correct-Horse-battery-staple-42';
  let id = '';

  await t.test('create --password-stdin --json: the password is set and never printed', async (t) => {
    const r = await cli.run(['users', 'create', '--email', 'Alice@Example.com', '--name', 'Alice Example', '--password-stdin', '--json'], {
      input: `${password}\n`,
    });
    exits(t, r, 0);
    const user = parseJson<User>(r);
    id = user.id;
    t.match(user.id, UUID);
    t.equal(user.email, 'Alice@Example.com');
    t.equal(user.name, 'Alice Example');
    t.equal(user.hasPassword, true);
    t.equal(user.emailVerified, false);
    t.same(user.permissions, []);
    t.equal(user.disabled, false);
    const output = r.stdout + r.stderr;
    t.notOk(output.includes(password), 'the password is not printed');
    t.notMatch(output, /\$argon2/, 'nor its hash');
    t.same(
      Object.keys(user).filter((k) => /password|hash/i.test(k)),
      ['hasPassword'],
      'no password or hash field in the JSON',
    );
  });
  if (!id) return t.fail('create failed; the rest depends on it');

  await t.test('create with the same e-mail address in another case: exit 1', async (t) => {
    const r = await cli.run(['users', 'create', '--email', 'alice@example.COM', '--json']);
    exits(t, r, 1);
    t.match(r.stderr, /already exists/);
    t.equal(r.stdout, '');
  });

  await t.test('show by e-mail address (any case)', async (t) => {
    const r = await cli.run(['users', 'show', 'ALICE@example.com']);
    exits(t, r, 0);
    t.match(r.stdout, new RegExp(`^ID:\\s+${id}$`, 'm'));
    t.match(r.stdout, /^E-mail:\s+Alice@Example\.com \(not verified\)$/m);
    t.match(r.stdout, /^Password set:\s+yes$/m);
    t.match(r.stdout, /^Disabled:\s+no$/m);
    t.notOk(r.stdout.includes(password));
  });

  await t.test('update --verified --permission a --permission b (by id)', async (t) => {
    const r = await cli.run(['users', 'update', id, '--verified', '--permission', 'a', '--permission', 'b', '--json']);
    exits(t, r, 0);
    const user = parseJson<User>(r);
    t.equal(user.id, id);
    t.equal(user.emailVerified, true);
    t.same(user.permissions, ['a', 'b']);
    t.equal(user.name, 'Alice Example', 'fields not given are unchanged');
    t.equal(user.hasPassword, true);
  });

  await t.test('disable', async (t) => {
    const r = await cli.run(['users', 'disable', 'alice@example.com', '--json']);
    exits(t, r, 0);
    const user = parseJson<User>(r);
    t.equal(user.disabled, true);
    t.same(user.permissions, ['a', 'b']);
  });

  await t.test('delete --yes, after which show fails', async (t) => {
    const r = await cli.run(['users', 'delete', 'alice@example.com', '--yes']);
    exits(t, r, 0);
    t.equal(r.stdout.trim(), 'Deleted user alice@example.com');
    const gone = await cli.run(['users', 'show', id]);
    exits(t, gone, 1);
    t.match(gone.stderr, new RegExp(`No user ${id}`));
    t.equal(gone.stdout, '');
  });
});

t.test('users create --admin: an admin who signs in to the admin web, and no setup link is offered', { timeout: 200_000 }, async (t) => {
  const cli = await cliContext(t);
  const password = 'operator-passphrase-7';
  const r = await cli.run(['users', 'create', '--email', 'Boss@Example.com', '--admin', '--password-stdin', '--json'], { input: `${password}\n` });
  if (!exits(t, r, 0)) return;
  const user = parseJson<User>(r);
  t.equal(user.role, 'admin');
  t.equal(user.hasPassword, true);
  t.notOk((r.stdout + r.stderr).includes(password), 'the password is not printed');

  // The same database in this process (the CLI has exited and released it): the admin web lets them in.
  const handle = await createDatabase(cli.databaseUrl ? { databaseUrl: cli.databaseUrl, poolSize: 2 } : { dataDir: join(cli.dataDir, 'pglite') });
  const { app } = await buildTestApp({ teardown: () => {} }, { database: { ...handle, dispose: () => handle.close() } });
  try {
    t.equal(await app.adminSetup.adminExists(), true);
    t.equal(await app.adminSetup.issueLink(), undefined, 'no setup link once the CLI made an admin');
    const created = (await app.services.audit.list({ type: 'user.created', userId: user.id })).items;
    t.match(created[0]?.actor, /^cli:/, 'the audit trail names the CLI');

    const page = await app.inject({ method: 'GET', url: '/login/sign-in' });
    const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
    const jar = Object.fromEntries((page.cookies as Array<{ name: string; value: string }>).map((c) => [c.name, c.value]));
    const signIn = await app.inject({
      method: 'POST',
      url: '/login/sign-in',
      cookies: jar,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, email: 'boss@example.com', password }).toString(),
    });
    t.equal(signIn.statusCode, 303, 'the admin signs in');
    const session = (signIn.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.session');
    t.ok(session);
    const admin = await app.inject({ method: 'GET', url: '/admin/applications', cookies: { ...jar, 'idp.session': session!.value } });
    t.equal(admin.statusCode, 200, 'and reaches the admin web');
    t.match(admin.body, /Boss@Example\.com/);
  } finally {
    await app.close();
    await handle.close();
  }
});
