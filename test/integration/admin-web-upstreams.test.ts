// The admin web's sign-in providers (issue 35): an administrator adds GitHub from its preset and an OpenID Connect
// provider with private_key_jwt, sees the callback URL and the public key to register upstream, gets field errors on
// the form, edits (an empty secret keeps the stored one), deletes after a confirmation (which says when users would
// be stranded and then forces); the user's page lists linked identities with an unlink behind a confirmation.
import t from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { hiddenField } from '../helpers/flow.js';

const { app } = await buildTestApp(t);
const password = 'a long enough password';
const SECRET = 'github-client-secret-0123456789';

class Agent {
  jar: Record<string, string> = {};
  constructor(readonly server: FastifyInstance = app) {}
  keep(res: LightMyRequestResponse) {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === '' || c.maxAge === 0) delete this.jar[c.name];
      else this.jar[c.name] = c.value;
    }
    return res;
  }
  async get(url: string) {
    return this.keep(await this.server.inject({ method: 'GET', url, cookies: this.jar }));
  }
  async post(url: string, form: Record<string, string>) {
    return this.keep(
      await this.server.inject({
        method: 'POST',
        url,
        cookies: this.jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(form).toString(),
      }),
    );
  }
  async signIn(email: string) {
    const page = await this.get('/login/sign-in');
    await this.post('/login/sign-in', { csrf: hiddenField(page.body, 'csrf'), email, password });
    if (!this.jar['idp.session']) throw new Error(`sign-in of ${email} failed`);
  }
}

const admin = new Agent();
await app.services.users.create(
  { email: 'root@example.com', password, emailVerified: true, role: 'admin' },
  { actor: 'test' },
);
await admin.signIn('root@example.com');
const csrf = () => admin.jar['idp.csrf']!;

t.test('add GitHub from the preset; the details show the callback URL', async (t) => {
  const form = await admin.get('/admin/upstreams/new?preset=github');
  t.equal(form.statusCode, 200);
  t.match(form.body, /value="https:\/\/github.com\/login\/oauth\/authorize"/, 'the preset fills the form');
  const fields = {
    csrf: csrf(),
    preset: 'github',
    kind: 'oauth2',
    id: 'github',
    name: 'GitHub',
    clientId: 'gh',
    clientSecret: SECRET,
    clientAuth: 'client_secret_post',
    authorizationEndpoint: hiddenValue(form.body, 'authorizationEndpoint'),
    tokenEndpoint: hiddenValue(form.body, 'tokenEndpoint'),
    userinfoEndpoint: hiddenValue(form.body, 'userinfoEndpoint'),
    emailsEndpoint: hiddenValue(form.body, 'emailsEndpoint'),
    scopes: 'read:user user:email',
    mapping: 'subject=id\nemail=email\nname=name\npicture=avatar_url',
    trustEmailVerified: 'on',
    enabled: 'on',
  };
  const bad = await admin.post('/admin/upstreams', { ...fields, id: 'Git Hub', allowedDomains: 'not a domain' });
  t.equal(bad.statusCode, 400);
  t.match(bad.body, /Please correct the fields marked below/);
  t.match(bad.body, /must be 1 to 32 lower-case letters/);
  t.match(bad.body, /must be a domain name such as example.com/);
  t.notMatch(bad.body, SECRET, 'the secret is not echoed back');

  const created = await admin.post('/admin/upstreams', fields);
  t.equal(created.statusCode, 303, created.body);
  t.equal(created.headers.location, '/admin/upstreams/github?done=created');
  const view = await admin.get('/admin/upstreams/github');
  t.match(view.body, /<code id="callback-url">http:\/\/localhost:3000\/login\/upstream\/github\/callback<\/code>/);
  t.notMatch(view.body, SECRET);
  const list = await admin.get('/admin/upstreams');
  t.match(list.body, /<a href="\/admin\/upstreams\/github">GitHub<\/a>/);

  // Edit: an empty secret keeps the stored one.
  const edited = await admin.post('/admin/upstreams/github', { ...fields, clientSecret: '', name: 'GitHub.com' });
  t.equal(edited.statusCode, 303);
  const github = await app.services.upstreams.providers.credentials('github');
  t.equal(github?.clientSecret, SECRET);
  t.equal((await app.services.upstreams.providers.require('github')).name, 'GitHub.com');
});

t.test('an OpenID Connect provider with private_key_jwt: the public key to register', async (t) => {
  const created = await admin.post('/admin/upstreams', {
    csrf: csrf(),
    kind: 'oidc',
    id: 'acme',
    name: 'Acme',
    issuer: 'https://login.acme.example',
    clientId: 'idp',
    clientAuth: 'private_key_jwt',
    scopes: 'openid email profile',
    enabled: 'on',
  });
  t.equal(created.statusCode, 303, created.body);
  const view = await admin.get('/admin/upstreams/acme');
  t.match(view.body, /<code id="public-jwk">\{\n {2}&quot;kty&quot;: &quot;EC&quot;/);
  t.notMatch(view.body, /&quot;d&quot;/, 'no private part');
  const confirm = await admin.get('/admin/upstreams/acme/rotate-key');
  t.match(confirm.body, /Make a new key for Acme\?/);
  const before = (await app.services.upstreams.providers.require('acme')).publicJwk;
  const rotated = await admin.post('/admin/upstreams/acme/rotate-key', { csrf: csrf() });
  t.equal(rotated.headers.location, '/admin/upstreams/acme?done=key-rotated');
  t.not((await app.services.upstreams.providers.require('acme')).publicJwk?.x, before?.x);
});

t.test('linked identities on the user page; unlink; delete a provider that strands a user', async (t) => {
  const { identities } = app.services.upstreams;
  const pw = await app.services.users.create(
    { email: 'pw@example.com', password, emailVerified: true },
    { actor: 't' },
  );
  const sso = await app.services.users.create({ email: 'sso@example.com', emailVerified: true }, { actor: 't' });
  const a = await identities.link({ userId: pw.id, providerId: 'acme', subject: 'emp-1', email: null }, { ip: null });
  await identities.link({ userId: sso.id, providerId: 'acme', subject: 'emp-2', email: null }, { ip: null });

  const page = await admin.get(`/admin/users/${pw.id}`);
  t.match(page.body, /Linked identities \(1\)/);
  t.match(page.body, /<code>emp-1<\/code>/);
  const confirm = await admin.get(`/admin/users/${pw.id}/identities/${a}/unlink`);
  t.match(confirm.body, /Unlink the Acme identity of pw@example.com\?/);
  const unlinked = await admin.post(`/admin/users/${pw.id}/identities/${a}/unlink`, { csrf: csrf() });
  t.equal(unlinked.headers.location, `/admin/users/${pw.id}?done=unlinked`);
  t.same(await identities.listForUser(pw.id), []);

  const del = await admin.get('/admin/upstreams/acme/delete');
  t.match(del.body, /1 user\(s\) have no other way to sign in/);
  t.match(del.body, /action="\/admin\/upstreams\/acme\/delete\?force=1"/);
  const refused = await admin.post('/admin/upstreams/acme/delete', { csrf: csrf() });
  t.equal(refused.statusCode, 409, 'without force: refused');
  const deleted = await admin.post('/admin/upstreams/acme/delete?force=1', { csrf: csrf() });
  t.equal(deleted.headers.location, '/admin/upstreams?done=deleted');
  t.equal(await app.services.upstreams.providers.get('acme'), undefined);
});

/** The value of the input named `name` on a page. */
function hiddenValue(body: string, name: string): string {
  const match = new RegExp(`name="${name}" type="[a-z]+" value="([^"]*)"`).exec(body);
  if (!match) throw new Error(`no ${name} on the page`);
  return match[1]!.replace(/&amp;/g, '&');
}
