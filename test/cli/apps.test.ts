// `idp apps`: one application through its whole life, in one DATA_DIR (or PostgreSQL schema), in-process
// (run(argv, io)).
import t from 'tap';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import type { Application } from '../../schemas/admin.js';

// Every command opens the database (seconds on a busy machine): more than tap's default.
t.setTimeout(300_000);

t.test('apps: create, list, show, update, disable, enable, delete', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const redirectUris = ['https://app.example.com/callback', 'http://localhost:5173/callback'];
  let clientId = '';

  await t.test('create --json with repeated options', async (t) => {
    const r = await cli.run([
      'apps',
      'create',
      '--name',
      'CLI Test App',
      '--redirect-uri',
      redirectUris[0]!,
      '--redirect-uri',
      redirectUris[1]!,
      '--origin',
      'https://app.example.com',
      '--scope',
      'openid',
      '--scope',
      'email',
      '--json',
    ]);
    exits(t, r, 0);
    const app = parseJson<Application>(r);
    clientId = app.clientId;
    t.match(app.clientId, /^[A-Za-z0-9_-]{32}$/, 'a generated 192-bit base64url client id');
    t.equal(app.clientName, 'CLI Test App');
    t.same(app.redirectUris, redirectUris, 'both redirect URIs, in order, exactly as given');
    t.same(app.allowedWebOrigins, ['https://app.example.com']);
    t.same(app.allowedScopes, ['openid', 'email']);
    t.equal(app.enabled, true);
    t.equal(app.source, 'database');
    t.equal(app.clientDescription, null);
    t.ok(app.createdAt && !Number.isNaN(Date.parse(app.createdAt)), 'createdAt is a timestamp');
    t.notMatch(r.stderr, /Created application/, '--json keeps the human message off');
  });
  if (!clientId) return t.fail('create failed; the rest depends on it');

  await t.test('create with an invalid redirect URI: exit 1, the field named, nothing created', async (t) => {
    const r = await cli.run([
      'apps',
      'create',
      '--name',
      'Bad App',
      '--redirect-uri',
      'http://evil.example.com/cb',
      '--json',
    ]);
    exits(t, r, 1);
    t.match(r.stderr, /^idp: --redirect-uri #1: http is allowed only for loopback hosts/m, 'in the words of the flags');
    t.notMatch(r.stderr, /redirectUris/, 'not the API field name');
    t.equal(r.stdout, '');
  });

  await t.test('create --client-id demo: exit 1, the id is reserved for the demo (issue 31, 7(e))', async (t) => {
    const r = await cli.run([
      'apps',
      'create',
      '--client-id',
      'demo',
      '--name',
      'Mine',
      '--redirect-uri',
      redirectUris[0]!,
    ]);
    exits(t, r, 1);
    t.match(r.stderr, /"demo" is reserved for the built-in demo application/);
  });

  await t.test('create with an unknown --scope: exit 1, the allowed scopes listed', async (t) => {
    const r = await cli.run(['apps', 'create', '--name', 'Bad', '--redirect-uri', redirectUris[0]!, '--scope', 'foo']);
    exits(t, r, 1);
    t.equal(
      r.stderr.trim(),
      'idp: --scope: unknown scope "foo"; allowed: openid, profile, email, offline_access, permissions',
    );
    t.equal(r.stdout, '');
  });

  await t.test('several invalid values: each under its flag, the second --origin numbered', async (t) => {
    const r = await cli.run([
      ...['apps', 'create', '--name', 'Bad', '--redirect-uri', redirectUris[0]!],
      ...['--origin', 'https://app.example.com', '--origin', 'not an origin', '--post-verification-path', 'abc'],
    ]);
    exits(t, r, 1);
    t.match(r.stderr, /^idp: 2 values are invalid$/m);
    t.match(r.stderr, /^ {2}- --origin #2: must be an origin/m);
    t.match(r.stderr, /^ {2}- --post-verification-path: must be a path/m);
    t.notMatch(r.stderr, /allowedWebOrigins|postVerificationRedirectPath/);
  });

  await t.test('delete without --yes: exit 2, asks for --yes', async (t) => {
    const r = await cli.run(['apps', 'delete', clientId]);
    exits(t, r, 2);
    t.match(r.stderr, /cannot be undone: add --yes/);
    t.equal(r.stdout, '');
  });

  await t.test('list: a table with the client id', async (t) => {
    const r = await cli.run(['apps', 'list']);
    exits(t, r, 0);
    const lines = r.stdout.trimEnd().split('\n');
    t.match(lines[0], /^CLIENT ID\s+NAME\s+ENABLED\s+SOURCE\s+REDIRECT URIS$/);
    t.equal(lines.length, 2, 'one application: the invalid one was not created, the undeleted one is still there');
    t.match(lines[1], new RegExp(`^${clientId}\\s+CLI Test App\\s+yes\\s+database\\s+2$`));
  });

  await t.test('list --json: the page has the item', async (t) => {
    const r = await cli.run(['apps', 'list', '--json']);
    exits(t, r, 0);
    const page = parseJson<{ items: Application[]; nextCursor?: string }>(r);
    t.equal(page.items.length, 1);
    t.equal(page.items[0]?.clientId, clientId);
    t.equal(page.nextCursor, undefined);
  });

  await t.test('show: the details as text', async (t) => {
    const r = await cli.run(['apps', 'show', clientId]);
    exits(t, r, 0);
    t.match(r.stdout, new RegExp(`^Client ID:\\s+${clientId}$`, 'm'));
    t.match(r.stdout, /^Name:\s+CLI Test App$/m);
    t.match(r.stdout, /^Enabled:\s+yes$/m);
    t.match(r.stdout, new RegExp(`^Redirect URIs:\\s+${redirectUris[0]}\\n\\s+${redirectUris[1]}$`, 'm'));
    t.match(r.stdout, /^Allowed scopes:\s+openid email$/m);
  });

  await t.test('update --name changes only the name', async (t) => {
    const r = await cli.run(['apps', 'update', clientId, '--name', 'Renamed App', '--json']);
    exits(t, r, 0);
    const app = parseJson<Application>(r);
    t.equal(app.clientId, clientId);
    t.equal(app.clientName, 'Renamed App');
    t.same(app.redirectUris, redirectUris, 'the other fields are unchanged');
    t.same(app.allowedScopes, ['openid', 'email']);
    t.equal(app.enabled, true);
  });

  await t.test('disable, then enable', async (t) => {
    const off = await cli.run(['apps', 'disable', clientId, '--json']);
    exits(t, off, 0);
    t.equal(parseJson<Application>(off).enabled, false);
    t.equal(parseJson<Application>(off).clientName, 'Renamed App');
    const on = await cli.run(['apps', 'enable', clientId, '--json']);
    exits(t, on, 0);
    t.equal(parseJson<Application>(on).enabled, true);
  });

  await t.test('delete --yes, after which show fails with "No application"', async (t) => {
    const r = await cli.run(['apps', 'delete', clientId, '--yes']);
    exits(t, r, 0);
    t.equal(r.stdout.trim(), `Deleted application ${clientId}`);
    const gone = await cli.run(['apps', 'show', clientId]);
    exits(t, gone, 1);
    t.match(gone.stderr, new RegExp(`No application with client id ${clientId}`));
    t.equal(gone.stdout, '');
  });
});
