// `idp keys` and `idp users sessions|grants`, in-process (run(argv, io)), on a database a real server (a
// process of its own) initialised.
import t from 'tap';
import { cliContext, exits, parseJson, startServe } from './fixtures/run-cli.js';

t.setTimeout(300_000);

interface Key {
  kid: string;
  state: string;
}

t.test('keys: list, rotate (age check, --force), retire (with --yes)', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t, { SECRET_KEY: 'cli-test-secret-key-0123456789abcdefghij' });
  const empty = await cli.run(['keys', 'list']);
  exits(t, empty, 0);
  t.match(empty.stdout, /No keys yet/);

  // The server generates the first current and next keys at its first start.
  const server = await startServe(t, { ...cli.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
  server.child.kill('SIGTERM');
  t.equal((await server.exited).code, 0);

  const listed = await cli.run(['keys', 'list', '--json']);
  exits(t, listed, 0);
  const keys = parseJson<{ items: Key[] }>(listed).items;
  t.same(
    keys.map((k) => k.state),
    ['current', 'next'],
  );

  const tooNew = await cli.run(['keys', 'rotate']);
  exits(t, tooNew, 1);
  t.match(tooNew.stderr, /was published \d+ s ago; relying parties may cache the JWKS/);

  const rotated = await cli.run(['keys', 'rotate', '--force', '--json']);
  exits(t, rotated, 0);
  const after = parseJson<{ items: Key[] }>(rotated).items;
  t.equal(
    after.find((k) => k.state === 'current')!.kid,
    keys.find((k) => k.state === 'next')!.kid,
    'next became current',
  );
  const retired = after.find((k) => k.state === 'retired')!.kid;
  t.equal(retired, keys.find((k) => k.state === 'current')!.kid, 'current became retired');

  const unconfirmed = await cli.run(['keys', 'retire', retired]);
  exits(t, unconfirmed, 2);
  t.match(unconfirmed.stderr, /add --yes/);
  const current = await cli.run(['keys', 'retire', after.find((k) => k.state === 'current')!.kid, '--yes']);
  exits(t, current, 1);
  t.match(current.stderr, /is signing; rotate first/);
  const done = await cli.run(['keys', 'retire', retired, '--yes', '--json']);
  exits(t, done, 0);
  t.notOk(parseJson<{ items: Key[] }>(done).items.some((k) => k.kid === retired));
});

t.test('users sessions and grants: list and revoke', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  exits(t, await cli.run(['users', 'create', '--email', 'sam@example.com', '--verified']), 0);
  const sessions = await cli.run(['users', 'sessions', 'sam@example.com']);
  exits(t, sessions, 0);
  t.match(sessions.stdout, /No sessions\./);
  const grants = await cli.run(['users', 'grants', 'sam@example.com', '--json']);
  exits(t, grants, 0);
  t.same(parseJson(grants), { items: [] });
  const revoke = await cli.run(['users', 'sessions', 'sam@example.com', '--revoke']);
  exits(t, revoke, 0);
  t.match(revoke.stdout, /Revoked 0 session\(s\) and 0 grant\(s\)/);
  const lone = await cli.run(['users', 'grants', 'sam@example.com', '--grant', 'x']);
  exits(t, lone, 2);
  t.match(lone.stderr, /--grant goes with --revoke/);
  const unknown = await cli.run(['users', 'sessions', 'nobody@example.com']);
  exits(t, unknown, 1);
  t.match(unknown.stderr, /No user nobody@example.com/);
});
