// `idp apps create|update --require-mfa / --no-require-mfa` (issue 34): the application's requireMfa, in-process.
import t from 'tap';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import type { Application } from '../../schemas/admin.js';

// Every command opens the database (seconds on a busy machine): more than tap's default.
t.setTimeout(200_000);

t.test('create --require-mfa, show, update --no-require-mfa; both flags at once is a usage mistake', async (t) => {
  const cli = await cliContext(t);
  const both = await cli.run(['apps', 'update', 'any-id', '--require-mfa', '--no-require-mfa']);
  exits(t, both, 2);
  t.match(both.stderr, /--require-mfa and --no-require-mfa contradict each other/);
  const created = await cli.run([
    'apps',
    'create',
    '--name',
    'Strict',
    '--redirect-uri',
    'https://s.example.com/cb',
    '--require-mfa',
    '--json',
  ]);
  exits(t, created, 0);
  const app = parseJson<Application>(created);
  t.equal(app.requireMfa, true, 'create --require-mfa');
  const shown = await cli.run(['apps', 'show', app.clientId]);
  exits(t, shown, 0);
  t.match(shown.stdout, /Requires MFA:\s+yes/);
  const off = await cli.run(['apps', 'update', app.clientId, '--no-require-mfa', '--json']);
  exits(t, off, 0);
  t.equal(parseJson<Application>(off).requireMfa, false, 'update --no-require-mfa');
});
