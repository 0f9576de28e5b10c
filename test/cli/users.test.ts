// `idp users`: one user through its whole life, in one DATA_DIR (or PostgreSQL schema). The commands run
// in-process (run(argv, io)), except the first create: a real process, with the password on its stdin.
import t from 'tap';
import { join } from 'node:path';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import type { User } from '../../schemas/admin.js';
import { buildTestApp } from '../helpers/app.js';
import { signInWithInject } from '../helpers/flow.js';
import { readFileSync } from 'node:fs';

// One CLI process (~3 s just to load, more on a busy machine), argon2 hashes, several databases opened.
t.setTimeout(300_000);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

t.test('users: create, reject a duplicate, show, update, disable, delete', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const password = 'correct-Horse-battery-staple-42';
  let id = '';

  await t.test('create --password-stdin --json: the password is set and never printed', async (t) => {
    const r = await cli.spawn(
      ['users', 'create', '--email', 'Alice@Example.com', '--name', 'Alice Example', '--password-stdin', '--json'],
      {
        input: `${password}\n`,
      },
    );
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

  await t.test('create with an invalid e-mail address: a sentence under --email, not a regex', async (t) => {
    const r = await cli.run(['users', 'create', '--email', 'not-an-address', '--password-stdin'], {
      input: `${password}\n`,
    });
    exits(t, r, 1);
    t.equal(r.stderr.trim(), 'idp: --email: must be an e-mail address such as alice@example.com');
  });

  await t.test('create with a common password: refused, naming --password, nothing created', async (t) => {
    const r = await cli.run(['users', 'create', '--email', 'common@example.com', '--password-stdin'], {
      input: 'Password123\n',
    });
    exits(t, r, 1);
    t.match(r.stderr, /password.*one of the most common ones/);
    t.notMatch(r.stderr, /Password123/, 'the password is not echoed');
    exits(t, await cli.run(['users', 'show', 'common@example.com']), 1, 'no such user');
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

t.test(
  'users create --admin: an admin who signs in to the admin web, and no setup link is offered',
  { timeout: 200_000 },
  async (t) => {
    const cli = await cliContext(t);
    const password = 'operator-passphrase-7';
    const r = await cli.run(
      ['users', 'create', '--email', 'Boss@Example.com', '--admin', '--password-stdin', '--json'],
      { input: `${password}\n` },
    );
    if (!exits(t, r, 0)) return;
    const user = parseJson<User>(r);
    t.equal(user.role, 'admin');
    t.equal(user.hasPassword, true);
    t.notOk((r.stdout + r.stderr).includes(password), 'the password is not printed');

    // The same database (the context's: cli.openDatabase): the admin web lets them in.
    const handle = await cli.openDatabase();
    const { app } = await buildTestApp(
      { teardown: () => {} },
      { database: { ...handle, dispose: () => handle.close() } },
    );
    try {
      t.equal(await app.services.adminSetup.adminExists(), true);
      t.equal(await app.services.adminSetup.issueLink(), undefined, 'no setup link once the CLI made an admin');
      const created = (await app.services.audit.list({ type: 'user.created', userId: user.id })).items;
      t.match(created[0]?.actor, /^cli:/, 'the audit trail names the CLI');

      const page = await app.inject({ method: 'GET', url: '/login/sign-in' });
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const jar = Object.fromEntries(
        (page.cookies as Array<{ name: string; value: string }>).map((c) => [c.name, c.value]),
      );
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
      const admin = await app.inject({
        method: 'GET',
        url: '/admin/applications',
        cookies: { ...jar, 'idp.session': session!.value },
      });
      t.equal(admin.statusCode, 200, 'and reaches the admin web');
      t.match(admin.body, /Boss@Example\.com/);
    } finally {
      await app.close();
      await handle.close();
    }
  },
);

t.test(
  'users update --password-stdin and users disable revoke, like the admin API (issue 12, items 3-4)',
  { timeout: 280_000 },
  async (t) => {
    const cli = await cliContext(t);
    const email = 'carol@example.com';
    const first = 'carol-first-password-1';
    const second = 'carol-second-password-2';
    exits(
      t,
      await cli.run(['users', 'create', '--email', email, '--verified', '--password-stdin'], { input: `${first}\n` }),
      0,
    );

    /** The same database, opened here between CLI runs (the context's: cli.openDatabase). */
    async function withApp<T>(fn: (app: Awaited<ReturnType<typeof buildTestApp>>['app']) => Promise<T>): Promise<T> {
      const handle = await cli.openDatabase();
      const { app } = await buildTestApp(
        { teardown: () => {} },
        { database: { ...handle, dispose: () => handle.close() } },
      );
      try {
        return await fn(app);
      } finally {
        await app.close();
        await handle.close();
      }
    }
    const signIn = (password: string) =>
      withApp(async (app) => {
        const { res, jar } = await signInWithInject(app, email, password);
        t.equal(res.statusCode, 303, 'signed in');
        return jar['idp.session']!;
      });
    const sessionState = (cookie: string) =>
      withApp(async (app) => ({
        live: Boolean(await app.services.sessions.resolve(cookie)),
        reasons: (await app.services.audit.list({ type: 'session.revoked' })).items.map(
          (e) => `${e.actor?.replace(/:.*/, '')}:${e.detail.reason}`,
        ),
      }));

    const cookie = await signIn(first);
    const update = await cli.run(['users', 'update', email, '--password-stdin'], { input: `${second}\n` });
    exits(t, update, 0);
    t.notOk((update.stdout + update.stderr).includes(second), 'the password is not printed');
    const outbox = readFileSync(join(cli.dataDir, 'outbox.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { to: string; subject: string });
    t.same(
      outbox.map((m) => [m.to, m.subject]),
      [[email, 'Your password was changed']],
      'the "password changed" mail (outbox without SMTP_URL)',
    );
    let state = await sessionState(cookie);
    t.equal(state.live, false, 'the session from before the CLI password change is over');
    t.same(state.reasons, ['cli:password_changed']);

    const again = await signIn(second);
    exits(t, await cli.run(['users', 'disable', email]), 0);
    exits(t, await cli.run(['users', 'enable', email]), 0);
    state = await sessionState(again);
    t.equal(state.live, false, 'disable then enable: the old session does not come back');
    t.same(state.reasons.sort(), ['cli:password_changed', 'cli:user_disabled']);
  },
);
