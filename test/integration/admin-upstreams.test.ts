// The operator's side of upstream identity providers (issue 35): the admin API's create (with the GitHub preset,
// an OpenID Connect provider, private_key_jwt), the field-level validation, updates (a new secret, switching to and
// from private_key_jwt, key rotation), SSO domains claimed twice, audit events without secrets, removing a provider
// with its links (refused when a user would be left without a way to sign in, unless forced), and a user's linked
// identities (list, unlink, never the last way to sign in).
import t from 'tap';
import { adminHeaders, buildTestApp } from '../helpers/app.js';

const { app, database } = await buildTestApp(t);
const db = database.db;
const SECRET = 'upstream-client-secret-0123456789';

async function api(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const r = await app.inject({ method, url: `/api/admin${url}`, headers: adminHeaders, ...(payload && { payload }) });
  return { status: r.statusCode, body: r.body ? (r.json() as Record<string, any>) : {} };
}

t.test('the GitHub preset: the endpoints, scopes and mapping filled in; the callback URL shown', async (t) => {
  const r = await api('POST', '/upstreams', { preset: 'github', clientId: 'gh-client', clientSecret: SECRET });
  t.equal(r.status, 201, JSON.stringify(r.body));
  t.equal(r.body.id, 'github');
  t.equal(r.body.kind, 'oauth2');
  t.equal(r.body.name, 'GitHub');
  t.equal(r.body.tokenEndpoint, 'https://github.com/login/oauth/access_token');
  t.equal(r.body.emailsEndpoint, 'https://api.github.com/user/emails');
  t.same(r.body.scopes, ['read:user', 'user:email']);
  t.same(r.body.mapping, { subject: 'id', email: 'email', name: 'name', picture: 'avatar_url' });
  t.equal(r.body.clientAuth, 'client_secret_post');
  t.equal(r.body.hasClientSecret, true);
  t.equal(r.body.callbackUrl, 'http://localhost:3000/login/upstream/github/callback');
  t.notMatch(JSON.stringify(r.body), SECRET, 'the secret is never shown');
  const again = await api('POST', '/upstreams', { preset: 'github', clientId: 'x', clientSecret: SECRET });
  t.equal(again.status, 409);
  t.equal(again.body.error, 'UPSTREAM_EXISTS');
  const creds = await app.services.upstreams.providers.credentials('github');
  t.equal(creds?.clientSecret, SECRET, 'sealed, and opens for the round trip');
  const audit = await api('GET', '/audit-events?type=upstream.provider_created');
  t.equal(audit.body.items[0].detail.provider, 'github');
  t.notMatch(JSON.stringify(audit.body), SECRET, 'no secret in the audit trail');
});

t.test('validation: every problem named by field', async (t) => {
  const r = await api('POST', '/upstreams', {
    id: 'Bad_Id',
    kind: 'oidc',
    name: 'Acme',
    clientId: 'c',
    issuer: 'http://idp.example.com',
    logoUrl: 'javascript:alert(1)',
    scopes: ['email', 'bad scope'],
    mapping: { subject: 'oid', nickname: 'x' },
    allowedDomains: ['Example.com', 'not a domain'],
    ssoDomains: ['other.example'],
  });
  t.equal(r.status, 400);
  t.equal(r.body.error, 'VALIDATION_ERROR');
  const fields = (r.body.details as Array<{ field: string }>).map((d) => d.field).sort();
  t.same(fields, [
    'allowedDomains.0',
    'allowedDomains.1',
    'clientSecret',
    'id',
    'issuer',
    'logoUrl',
    'mapping.nickname',
    'scopes',
    'scopes.1',
    'ssoDomains.0',
  ]);
  const oauth2 = await api('POST', '/upstreams', {
    id: 'plain',
    kind: 'oauth2',
    name: 'P',
    clientId: 'c',
    clientSecret: SECRET,
  });
  t.equal(oauth2.status, 400);
  t.same(
    (oauth2.body.details as Array<{ field: string }>).map((d) => d.field).sort(),
    ['authorizationEndpoint', 'tokenEndpoint', 'userinfoEndpoint'],
    'oauth2 needs its endpoints',
  );
  const unknown = await api('POST', '/upstreams', { id: 'x', kind: 'oidc', name: 'X', clientId: 'c', foo: 1 });
  t.equal(unknown.status, 400);
  t.match(unknown.body.details, [{ field: 'foo' }]);
});

t.test('an OpenID Connect provider with private_key_jwt; updates, key rotation, SSO domains', async (t) => {
  const created = await api('POST', '/upstreams', {
    id: 'acme',
    kind: 'oidc',
    name: 'Acme SSO',
    issuer: 'http://127.0.0.1:9999/realms/acme',
    clientId: 'idp',
    clientAuth: 'private_key_jwt',
    allowedDomains: ['acme.example'],
    ssoDomains: ['acme.example'],
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  t.same(created.body.scopes, ['openid', 'email', 'profile'], 'the OpenID defaults');
  t.equal(created.body.publicJwk.kty, 'EC');
  t.notOk(created.body.publicJwk.d, 'the public half only');
  t.equal(created.body.hasClientSecret, false);

  const rotated = await api('POST', '/upstreams/acme/rotate-key');
  t.equal(rotated.status, 200);
  t.not(rotated.body.publicJwk.x, created.body.publicJwk.x, 'a new key');

  const claimed = await api('POST', '/upstreams', {
    id: 'rival',
    kind: 'oidc',
    name: 'Rival',
    issuer: 'https://rival.example',
    clientId: 'c',
    clientSecret: SECRET,
    ssoDomains: ['acme.example'],
  });
  t.equal(claimed.status, 409);
  t.equal(claimed.body.error, 'SSO_DOMAIN_TAKEN');

  const toSecret = await api('PATCH', '/upstreams/acme', { clientAuth: 'client_secret_basic' });
  t.equal(toSecret.status, 400, 'a secret method needs a secret');
  t.match(toSecret.body.details, [{ field: 'clientSecret' }]);
  const switched = await api('PATCH', '/upstreams/acme', {
    clientAuth: 'client_secret_basic',
    clientSecret: SECRET,
    name: 'Acme',
    enabled: false,
  });
  t.equal(switched.status, 200, JSON.stringify(switched.body));
  t.equal(switched.body.publicJwk, null, 'the key goes with private_key_jwt');
  t.equal(switched.body.hasClientSecret, true);
  t.equal(switched.body.enabled, false);
  const replaced = await api('PATCH', '/upstreams/acme', { clientSecret: 'another-secret-9876543210' });
  t.equal(replaced.status, 200);
  t.equal((await app.services.upstreams.providers.credentials('acme'))?.clientSecret, 'another-secret-9876543210');
  const badRotate = await api('POST', '/upstreams/acme/rotate-key');
  t.equal(badRotate.status, 400);
  t.match(badRotate.body.details, [{ field: 'rotateKey' }]);
  const back = await api('PATCH', '/upstreams/acme', { clientAuth: 'private_key_jwt' });
  t.equal(back.status, 200);
  t.equal(back.body.hasClientSecret, false, 'the secret goes with the switch');
  t.equal(back.body.publicJwk.kty, 'EC', 'a new key');
  const audit = await api('GET', '/audit-events?type=upstream.provider_updated');
  t.ok(audit.body.items.length >= 4);
  t.notMatch(JSON.stringify(audit.body), /another-secret|upstream-client-secret/, 'no secret in the audit trail');
  t.equal((await api('GET', '/upstreams/nope')).status, 404);
  const list = await api('GET', '/upstreams');
  t.same(
    list.body.items.map((p: { id: string }) => p.id),
    ['github', 'acme'],
  );
});

t.test('linked identities: list, unlink (never the last way in), remove a provider with its links', async (t) => {
  const { providers, identities } = app.services.upstreams;
  await providers.create({
    id: 'corp',
    kind: 'oidc',
    name: 'Corp',
    issuer: 'https://corp.example',
    clientId: 'c',
    clientSecret: SECRET,
  });
  const withPassword = await app.services.users.create(
    { email: 'pw@example.com', password: 'a long enough password', emailVerified: true },
    { actor: 'test' },
  );
  const onlyLinked = await app.services.users.create(
    { email: 'sso@example.com', emailVerified: true },
    { actor: 'test' },
  );
  const a = await identities.link(
    { userId: withPassword.id, providerId: 'corp', subject: 's1', email: null },
    { ip: null },
  );
  const b = await identities.link(
    { userId: onlyLinked.id, providerId: 'corp', subject: 's2', email: null },
    { ip: null },
  );

  const listed = await api('GET', `/users/${encodeURIComponent('sso@example.com')}/identities`);
  t.equal(listed.status, 200);
  t.match(listed.body.items, [{ id: b, providerId: 'corp', providerName: 'Corp', subject: 's2' }]);

  const last = await api('DELETE', `/users/${onlyLinked.id}/identities/${b}`);
  t.equal(last.status, 409);
  t.equal(last.body.error, 'LAST_SIGN_IN_METHOD');
  const wrongUser = await api('DELETE', `/users/${withPassword.id}/identities/${b}`);
  t.equal(wrongUser.status, 404, "another user's identity is not found");

  const refused = await api('DELETE', '/upstreams/corp');
  t.equal(refused.status, 409);
  t.equal(refused.body.error, 'UPSTREAM_IN_USE');
  t.match(refused.body.message, /1 user\(s\) can sign in only with "corp"/);

  const unlinked = await api('DELETE', `/users/${withPassword.id}/identities/${a}`);
  t.equal(unlinked.status, 204);
  const events = await api('GET', `/audit-events?type=upstream.unlinked&userId=${withPassword.id}`);
  t.equal(events.body.items[0].actor, 'admin-api');

  const forced = await api('DELETE', '/upstreams/corp?force=true');
  t.equal(forced.status, 200);
  t.same(forced.body, { identitiesRemoved: 1, usersLeftWithoutSignIn: [onlyLinked.id] });
  t.same(await identities.listForUser(onlyLinked.id), [], 'the link went with the provider');
  const deleted = await api('GET', '/audit-events?type=upstream.provider_deleted');
  t.match(deleted.body.items[0].detail, { provider: 'corp', identitiesRemoved: 1, forced: true });
  const rows = await db.selectFrom('upstream_identities').select('id').execute();
  t.equal(rows.length, 0);
});
