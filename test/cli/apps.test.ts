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

t.test('apps: server-side applications and their secrets (issue 33)', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const create = ['apps', 'create', '--name', 'Server App', '--redirect-uri', 'https://rp.example.com/cb'];
  const SECRET = /^Client secret: ([A-Za-z0-9_-]{43})$/m;
  const SHOWN_ONCE = /This client secret is shown once: store it now/;
  let clientId = '';
  let secret = '';

  await t.test('create --type confidential: the secret on stdout once, labelled; the warning on stderr', async (t) => {
    const r = await cli.run([...create, '--type', 'confidential', '--pkce', 'optional']);
    exits(t, r, 0);
    secret = SECRET.exec(r.stdout)?.[1] ?? '';
    t.ok(secret, 'labelled "Client secret:"');
    t.match(r.stdout, /^Token endpoint auth: +client_secret_basic$/m);
    t.match(r.stdout, /^Type: +confidential \(server-side\)$/m);
    t.match(r.stdout, /^PKCE: +optional$/m);
    t.match(r.stderr, SHOWN_ONCE);
    t.notMatch(r.stderr, secret, 'the secret is on stdout only');
    clientId = /^Created application (\S+)$/m.exec(r.stderr)?.[1] ?? '';
    t.ok(clientId);
  });
  if (!clientId) return t.fail('create failed; the rest depends on it');

  await t.test('show and list never print the secret', async (t) => {
    const show = await cli.run(['apps', 'show', clientId, '--json']);
    exits(t, show, 0);
    t.notOk('clientSecret' in JSON.parse(show.stdout));
    t.notMatch(show.stdout + show.stderr, secret);
    const list = await cli.run(['apps', 'secret', 'list', clientId]);
    exits(t, list, 0);
    const lines = list.stdout.trimEnd().split('\n');
    t.match(lines[0], /^SECRET ID\s+CREATED\s+ENDS$/);
    t.equal(lines.length, 2);
    t.match(lines[1], /^cs_\S+\s+\d{4}-\S+Z\s+-$/, 'the current secret has no end date');
    t.notMatch(list.stdout, secret);
  });

  await t.test('secret rotate --overlap 1h: a new secret once; the old one ends in an hour', async (t) => {
    const r = await cli.run(['apps', 'secret', 'rotate', clientId, '--overlap', '1h']);
    exits(t, r, 0);
    const next = SECRET.exec(r.stdout)?.[1];
    t.ok(next);
    t.not(next, secret);
    t.match(r.stdout, /The previous secret \(cs_\S+\) stays valid until \d{4}-/);
    t.match(r.stderr, SHOWN_ONCE);
    const list = await cli.run(['apps', 'secret', 'list', clientId, '--json']);
    exits(t, list, 0);
    const items = JSON.parse(list.stdout).items as Array<{ id: string; expiresAt: string | null }>;
    t.equal(items.length, 2);
    const old = items.find((s) => s.expiresAt !== null)!;
    const ends = Date.parse(old.expiresAt!) - Date.now();
    t.ok(ends > 3000_000 && ends <= 3600_000, 'ends within the hour');

    const revoke = await cli.run(['apps', 'secret', 'revoke', clientId, old.id]);
    exits(t, revoke, 0);
    t.equal(revoke.stdout.trim(), `Revoked secret ${old.id} of application ${clientId}`);
    const after = JSON.parse((await cli.run(['apps', 'secret', 'list', clientId, '--json'])).stdout).items;
    t.equal(after.length, 1);
    const again = await cli.run(['apps', 'secret', 'revoke', clientId, old.id]);
    exits(t, again, 1);
    t.match(again.stderr, new RegExp(`^idp: Application ${clientId} has no secret ${old.id}$`, 'm'));
  });

  await t.test('rotate --json: the secret in the JSON document', async (t) => {
    const r = await cli.run(['apps', 'secret', 'rotate', clientId, '--overlap', '0', '--json']);
    exits(t, r, 0);
    const body = JSON.parse(r.stdout);
    t.match(body, { clientSecret: /^[A-Za-z0-9_-]{43}$/, secret: { id: /^cs_/, expiresAt: null } });
    t.match(r.stderr, SHOWN_ONCE);
    const items = JSON.parse((await cli.run(['apps', 'secret', 'list', clientId, '--json'])).stdout).items;
    t.equal(items.length, 1, 'overlap 0: the previous secret ended at once');
  });

  await t.test('usage mistakes: exit 2 before the database', async (t) => {
    for (const [args, message] of [
      [[...create, '--type', 'server'], /--type must be one of public, confidential/],
      [[...create, '--type', 'public', '--auth-method', 'client_secret_post'], /--type public has no --auth-method/],
      [[...create, '--pkce', 'never'], /--pkce must be one of required, optional/],
      [[...create, '--grant', 'password'], /--grant must be one of authorization_code/],
      [['apps', 'secret', 'rotate', clientId, '--overlap', '2y'], /--overlap must be a duration/],
      [['apps', 'secret', 'rotate', clientId, '--overlap', '31d'], /at most 30d/],
      [['apps', 'secret', 'revoke', clientId], /expected a client id and a secret id/],
      [['apps', 'secret', 'drop', clientId], /unknown subcommand "apps secret drop"/],
      [[...create, '--type', 'confidential', '--jwks-file', '/nonexistent/jwks.json'], /cannot be read: ENOENT/],
    ] as const) {
      const r = await cli.run([...args]);
      exits(t, r, 2, args.join(' '));
      t.match(r.stderr, message);
      t.equal(r.stdout, '');
    }
  });

  await t.test('the domain rules, in the words of the flags', async (t) => {
    const pkce = await cli.run([...create, '--pkce', 'optional']);
    exits(t, pkce, 1);
    t.match(pkce.stderr, /^idp: --pkce: a public client \(tokenEndpointAuthMethod none\) always requires PKCE$/m);
    const jwt = await cli.run([...create, '--auth-method', 'private_key_jwt']);
    exits(t, jwt, 1);
    t.match(jwt.stderr, /--jwks-file: private_key_jwt needs exactly one of jwks and jwksUri/);
    const grant = await cli.run([...create, '--grant', 'client_credentials']);
    exits(t, grant, 1);
    t.match(grant.stderr, /--grant: client_credentials needs a confidential client/);
    const unknown = await cli.run(['apps', 'secret', 'list', 'no-such-app']);
    exits(t, unknown, 1);
    t.match(unknown.stderr, /^idp: No application with client id no-such-app$/m);
  });

  await t.test('private_key_jwt with --jwks-uri, and client_credentials: no secret printed', async (t) => {
    const r = await cli.run([
      ...create,
      ...['--auth-method', 'private_key_jwt', '--jwks-uri', 'https://rp.example.com/jwks.json'],
      ...['--grant', 'authorization_code', '--grant', 'refresh_token', '--grant', 'client_credentials', '--json'],
    ]);
    exits(t, r, 0);
    const app = JSON.parse(r.stdout);
    t.match(app, {
      tokenEndpointAuthMethod: 'private_key_jwt',
      clientType: 'confidential',
      jwksUri: 'https://rp.example.com/jwks.json',
      jwks: null,
      grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
    });
    t.notOk('clientSecret' in app);
    t.notMatch(r.stderr, SHOWN_ONCE);
    const secrets = await cli.run(['apps', 'secret', 'rotate', app.clientId]);
    exits(t, secrets, 1);
    t.match(secrets.stderr, /authenticates with private_key_jwt: it has no client secret/);
  });

  await t.test('update --auth-method client_secret_post on a public app prints its first secret', async (t) => {
    const created = JSON.parse((await cli.run([...create, '--json'])).stdout);
    const r = await cli.run(['apps', 'update', created.clientId, '--auth-method', 'client_secret_post']);
    exits(t, r, 0);
    t.match(r.stdout, SECRET);
    t.match(r.stderr, SHOWN_ONCE);
    const rename = await cli.run(['apps', 'update', created.clientId, '--name', 'Renamed']);
    exits(t, rename, 0);
    t.notMatch(rename.stdout, /Client secret/);
    t.notMatch(rename.stderr, SHOWN_ONCE);
  });
});
