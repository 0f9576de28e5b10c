// `idp upstreams` and `idp users identities` (issue 35): an operator adds the GitHub preset with the secret from
// standard input (never on the command line), an OpenID Connect provider with private_key_jwt, sees the callback URL
// and public key to register upstream, gets field-level errors in the words of the flags, rotates a key, lists and
// unlinks a user's identity, and removes a provider. In-process runs; few commands per test (each opens the database).
import t from 'tap';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';
import { buildTestApp } from '../helpers/app.js';
import type { UpstreamProviderDetails } from '../../src/domain/upstream-config.js';

t.setTimeout(300_000);
const SECRET = 'gh-client-secret-from-stdin-0123456789';

t.test('upstreams add (preset, oidc), errors, rotate-key, remove', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const gh = await cli.run(
    ['upstreams', 'add', '--preset', 'github', '--client-id', 'gh-id', '--client-secret-stdin', '--json'],
    { input: `${SECRET}\n` },
  );
  if (!exits(t, gh, 0)) return;
  const github = parseJson<UpstreamProviderDetails>(gh);
  t.equal(github.id, 'github');
  t.equal(github.kind, 'oauth2');
  t.equal(github.userinfoEndpoint, 'https://api.github.com/user');
  t.equal(github.hasClientSecret, true);
  t.match(github.callbackUrl, /\/login\/upstream\/github\/callback$/);
  t.notMatch(gh.stdout + gh.stderr, SECRET, 'the secret is never printed');

  const acme = await cli.run([
    'upstreams',
    'add',
    '--id',
    'acme',
    '--name',
    'Acme',
    '--issuer',
    'http://127.0.0.1:9/realms/acme',
    '--client-id',
    'idp',
    '--client-auth',
    'private_key_jwt',
    '--allowed-domain',
    'acme.example',
    '--sso-domain',
    'acme.example',
    '--map',
    'subject=oid',
    '--allow-sign-up',
  ]);
  if (!exits(t, acme, 0)) return;
  t.match(acme.stdout, /Callback URL:\s+http:\/\/\S+\/upstream\/acme\/callback/);
  t.match(acme.stdout, /Public key \(JWK\):\s+\{"kty":"EC"/);
  t.match(acme.stdout, /Mapping:\s+subject=oid/);
  t.match(acme.stdout, /SSO domains:\s+acme\.example/);
  t.notMatch(acme.stdout, /"d":/, 'no private key part');

  const bad = await cli.run([
    'upstreams',
    'add',
    '--id',
    'evil',
    '--issuer',
    'http://evil.example',
    '--client-id',
    'x',
    '--sso-domain',
    'acme.example',
  ]);
  exits(t, bad, 1);
  t.match(bad.stderr, /--issuer: http is allowed only for loopback hosts/);
  t.match(bad.stderr, /the client secret: client_secret_basic needs the client secret/);

  const rotated = await cli.run(['upstreams', 'rotate-key', 'acme', '--json']);
  if (!exits(t, rotated, 0)) return;
  t.match(parseJson<UpstreamProviderDetails>(rotated).publicJwk, { kty: 'EC' });

  const unconfirmed = await cli.run(['upstreams', 'remove', 'acme']);
  exits(t, unconfirmed, 2);
  t.match(unconfirmed.stderr, /add --yes to confirm/);
  const removed = await cli.run(['upstreams', 'remove', 'acme', '--yes']);
  exits(t, removed, 0);
  t.match(removed.stdout, /Removed upstream provider acme and 0 linked/);
  const list = await cli.run(['upstreams', 'list']);
  exits(t, list, 0);
  t.match(list.stdout, /^github\s+GitHub\s+oauth2\s+yes\s+http/m);
  t.notMatch(list.stdout, /acme/);
});

t.test('users identities: list and unlink', { timeout: 200_000 }, async (t) => {
  const cli = await cliContext(t);
  const email = 'lin@example.com';
  const created = await cli.run(['users', 'create', '--email', email, '--verified', '--password-stdin'], {
    input: 'lin-password-long-1\n',
  });
  if (!exits(t, created, 0)) return;
  // The provider and the link, made through an app on the same database between runs.
  // The context's own database handle (cli.openDatabase): its in-process runs keep it open.
  const handle = await cli.openDatabase();
  const { app } = await buildTestApp(
    { teardown: () => {} },
    { database: { ...handle, dispose: () => handle.close() } },
  );
  let identityId: string;
  try {
    await app.services.upstreams.providers.create({
      id: 'corp',
      kind: 'oidc',
      name: 'Corp',
      issuer: 'https://corp.example',
      clientId: 'c',
      clientSecret: 'corp-secret-0123456789',
    });
    const user = await app.services.users.get(email);
    identityId = await app.services.upstreams.identities.link(
      { userId: user.id, providerId: 'corp', subject: 'emp-42', email },
      { ip: null },
    );
  } finally {
    await app.close();
    await handle.close();
  }
  const listed = await cli.run(['users', 'identities', email]);
  if (!exits(t, listed, 0)) return;
  t.match(listed.stdout, new RegExp(`^${identityId}\\s+corp\\s+emp-42\\s+${email}`, 'm'));
  const unlinked = await cli.run(['users', 'identities', email, '--unlink', identityId, '--json']);
  exits(t, unlinked, 0);
  t.same(JSON.parse(unlinked.stdout), { unlinked: identityId });
  const after = await cli.run(['users', 'identities', email]);
  t.match(after.stdout, /No linked identities\./);
});
