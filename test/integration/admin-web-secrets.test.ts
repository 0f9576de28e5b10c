// The admin web's side of confidential clients (issue 33, item 7), as a browser without JavaScript uses it: the
// create form's application type (public PKCE by default, or a server-side application with its auth method, PKCE
// policy, client_credentials and keys), the secret shown once on the page that answers the POST (never in a URL, a
// redirect or a cookie; no-store) and on no page after it, rotation with an overlap and revocation (CSRF, a fresh
// password), the domain rules' errors next to their fields on create and edit, the snippets of a server-side app.
// The route-wide checks (non-admins refused, CSRF on every POST route) are in admin-web.test.ts, which reads the
// routes from the router and so covers the secret routes too.
import t from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

type Form = Record<string, string | string[]>;

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

function formFields(body: string, action: string): Record<string, string> {
  const escaped = action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const form = new RegExp(`<form method="post" action="${escaped}"[^>]*>([\\s\\S]*?)</form>`).exec(body);
  if (!form) throw new Error(`no form posting to ${action}`);
  const fields: Record<string, string> = {};
  for (const m of form[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]!] = unescapeHtml(m[2]!);
  return fields;
}

function fieldError(body: string, name: string): string | undefined {
  const m = new RegExp(`<p class="error" id="f-${name}-error">([^<]*)</p>`).exec(body);
  return m ? unescapeHtml(m[1]!) : undefined;
}

const secretOf = (body: string) => /<code id="client-secret">([^<]*)<\/code>/.exec(body)?.[1];

class Agent {
  jar: Record<string, string> = {};
  constructor(readonly app: FastifyInstance) {}
  keep(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number }>) {
      if (c.value === '' || c.maxAge === 0) delete this.jar[c.name];
      else this.jar[c.name] = c.value;
    }
    return res;
  }
  async get(url: string) {
    return this.keep(await this.app.inject({ method: 'GET', url, cookies: this.jar }));
  }
  async post(url: string, form: Form, headers: Record<string, string> = {}) {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const value of [v].flat()) body.append(k, value);
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        cookies: this.jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: body.toString(),
      }),
    );
  }
  async submit(page: string, action: string, fields: Form = {}) {
    const res = await this.get(page);
    if (res.statusCode !== 200) throw new Error(`GET ${page}: ${res.statusCode}`);
    return this.post(action, { ...formFields(res.body, action), ...fields });
  }
}

const password = 'a long admin password';
const { app, logs } = await buildTestApp(t);
await app.services.users.create(
  { email: 'ops@example.com', password, role: 'admin', emailVerified: true },
  { actor: 'test' },
);
const admin = new Agent(app);
{
  const page = await admin.get('/login/sign-in');
  const res = await admin.post('/login/sign-in', {
    ...formFields(page.body, '/login/sign-in'),
    email: 'ops@example.com',
    password,
  });
  if (res.statusCode !== 303) throw new Error(`sign-in failed: ${res.statusCode}`);
}

const serverSide = (name: string, extra: Form = {}): Form => ({
  clientName: name,
  redirectUris: 'https://rp.example.com/callback',
  allowedScopes: ['openid', 'profile', 'email'],
  clientType: 'confidential',
  authMethod: 'client_secret_basic',
  pkce: 'required',
  ...extra,
});

/** Every page an admin can reach for the application afterwards, as one string. */
async function pagesOf(clientId: string) {
  const base = `/admin/applications/${encodeURIComponent(clientId)}`;
  const pages = await Promise.all(
    [base, `${base}/created`, `${base}/edit`, '/admin/applications', `/admin/audit?clientId=${clientId}`].map((p) =>
      admin.get(p),
    ),
  );
  for (const p of pages) if (p.statusCode !== 200) throw new Error(`${p.statusCode} on a page of ${clientId}`);
  return pages.map((p) => p.body).join('\n');
}

t.test('the create form asks for the type; a browser or mobile app is the default', async (t) => {
  const page = await admin.get('/admin/applications/new');
  t.equal(page.statusCode, 200);
  t.match(page.body, /<input type="radio" name="clientType" value="public" checked> Browser or mobile app/);
  t.match(page.body, /<input type="radio" name="clientType" value="confidential"> Server-side application/);
  t.match(page.body, /name="authMethod" value="client_secret_basic" checked/);
  t.match(page.body, /name="authMethod" value="client_secret_post"/);
  t.match(page.body, /name="authMethod" value="private_key_jwt"/);
  t.match(page.body, /name="pkce" value="required" checked/);
  t.match(page.body, /<textarea id="f-jwks" name="jwks"/);
  t.match(page.body, /<input id="f-jwksUri" name="jwksUri" type="url"/);
  t.match(page.body, /name="clientCredentials" value="on"/);

  // A public app whatever the server-side fields (shown without a script) say: no secret, PKCE required.
  const res = await admin.submit('/admin/applications/new', '/admin/applications', {
    ...serverSide('Public one'),
    clientType: 'public',
    pkce: 'optional',
    clientCredentials: 'on',
  });
  t.equal(res.statusCode, 303, 'a public app: redirected as before');
  const clientId = decodeURIComponent(/applications\/([^/]+)\/created$/.exec(String(res.headers.location))![1]!);
  t.match(await app.services.applications.get(clientId), {
    tokenEndpointAuthMethod: 'none',
    pkce: 'required',
    grantTypes: ['authorization_code', 'refresh_token'],
  });
});

t.test('a server-side application: the secret on the answer to the POST, once', async (t) => {
  const res = await admin.submit(
    '/admin/applications/new',
    '/admin/applications',
    serverSide('Server One', { pkce: 'optional', clientCredentials: 'on' }),
  );
  t.equal(res.statusCode, 200, 'the page itself, not a redirect');
  t.notOk(res.headers.location);
  t.equal(res.headers['cache-control'], 'no-store');
  const secret = secretOf(res.body);
  t.match(secret, /^[A-Za-z0-9_-]{43}$/);
  t.match(res.body, /Copy this secret now: it will not be shown again/);
  t.notMatch(JSON.stringify(res.cookies), secret!, 'not in a cookie');
  const clientId = unescapeHtml(/<code id="client-id">([^<]*)<\/code>/.exec(res.body)![1]!);
  t.ok(await app.services.applications.verifySecret(clientId, secret!), 'the shown secret works');
  t.match(await app.services.applications.get(clientId), {
    tokenEndpointAuthMethod: 'client_secret_basic',
    clientType: 'confidential',
    pkce: 'optional',
    grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
  });
  t.match(res.body, /confidential \(server-side\): authenticates with client_secret_basic/);
  t.match(res.body, /ClientSecretBasic\(clientSecret\)/, 'the snippets configure the client secret');
  t.match(res.body, /const clientSecret = process\.env\.CLIENT_SECRET;/, 'from the environment, a placeholder');
  t.notMatch(
    res.body.replace(/<code id="client-secret">[^<]*<\/code>/, ''),
    secret!,
    'the secret is in the one place, not in the snippets',
  );

  const pages = await pagesOf(clientId);
  t.notMatch(pages, secret!, 'on no page afterwards');
  t.notMatch(logs.text(), secret!, 'never logged');
  t.notMatch(JSON.stringify(await listAuditEvents(app.db, { clientId })), secret!, 'never audited');
  const detail = await admin.get(`/admin/applications/${clientId}`);
  t.match(detail.body, /<td id="client-type">Server-side application \(confidential\)<\/td>/);
  t.match(detail.body, /<code id="auth-method">client_secret_basic<\/code>/);
  t.match(detail.body, /<td id="pkce">optional<\/td>/);
  t.match(detail.body, /authorization_code refresh_token client_credentials/);
  t.match(detail.body, /<table id="secrets">/);
  const list = await admin.get('/admin/applications?q=Server%20One');
  t.match(list.body, /<th>Type<\/th>/);
  t.match(list.body, /<td>server-side \(<code>client_secret_basic<\/code>\)<\/td>/, 'the list names the type');
  t.match(detail.body, /<td><code>cs_[A-Za-z0-9_-]+<\/code><\/td><td>\d{4}-[^<]+<\/td><td>no end date<\/td>/);
});

t.test('rotate with an overlap, then revoke; the new secret only on the answer', async (t) => {
  const created = await app.services.applications.create(
    {
      clientName: 'Rotating',
      redirectUris: ['https://rp.example.com/cb'],
      tokenEndpointAuthMethod: 'client_secret_post',
    },
    { actor: 'test' },
  );
  const base = `/admin/applications/${created.clientId}`;
  const page = await admin.get(base);
  t.match(page.body, /<option value="3600">in 1 hour<\/option>/);
  t.match(page.body, /<option value="86400" selected>in 24 hours<\/option>/);
  t.match(page.body, /<option value="0">now<\/option><option value="3600">in 1 hour<\/option>/);
  t.match(page.body, /<option value="604800">in 7 days<\/option>/);
  const res = await admin.submit(base, `${base}/secrets`, { overlapSeconds: '3600' });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  const secret = secretOf(res.body)!;
  t.match(secret, /^[A-Za-z0-9_-]{43}$/);
  t.match(res.body, /it will not be shown again/);
  t.match(res.body, /Secret id <code>cs_/);
  t.ok(await app.services.applications.verifySecret(created.clientId, secret));
  t.ok(await app.services.applications.verifySecret(created.clientId, created.clientSecret!), 'old: in its hour');
  const live = await app.services.applications.listSecrets(created.clientId);
  t.equal(live.length, 2);
  const old = live.find((s) => s.expiresAt !== null)!;
  t.ok(Date.parse(old.expiresAt!) - Date.now() <= 3600_000);
  t.notMatch(await pagesOf(created.clientId), secret);

  const bad = await admin.submit(base, `${base}/secrets`, { overlapSeconds: '5' });
  t.equal(bad.statusCode, 400, 'an overlap the form does not offer');
  t.equal((await app.services.applications.listSecrets(created.clientId)).length, 2, 'nothing rotated');

  const revoke = await admin.submit(base, `${base}/secrets/${old.id}/revoke`);
  t.equal(revoke.statusCode, 303);
  t.equal(revoke.headers.location, `${base}?done=secret-revoked`);
  t.notOk(await app.services.applications.verifySecret(created.clientId, created.clientSecret!), 'ended at once');
  const after = await admin.get(String(revoke.headers.location));
  t.match(after.body, /Client secret revoked/);
  t.notMatch(after.body, old.id);
  const types = (await listAuditEvents(app.db, { clientId: created.clientId })).map((e) => e.type);
  t.ok(types.includes('application.secret_rotated') && types.includes('application.secret_revoked'));
});

t.test('rotate and revoke: CSRF, and a fresh password', async (t) => {
  const created = await app.services.applications.create(
    {
      clientName: 'Guarded',
      redirectUris: ['https://rp.example.com/cb'],
      tokenEndpointAuthMethod: 'client_secret_basic',
    },
    { actor: 'test' },
  );
  const base = `/admin/applications/${created.clientId}`;
  const [secret] = await app.services.applications.listSecrets(created.clientId);
  const csrf = formFields((await admin.get(base)).body, `${base}/secrets`).csrf!;
  for (const [path, form] of [
    [`${base}/secrets`, { overlapSeconds: '0' }],
    [`${base}/secrets/${secret!.id}/revoke`, {}],
  ] as const) {
    const none = await admin.post(path, form);
    t.equal(none.statusCode, 403, `${path}: no csrf`);
    t.match(none.body, /This form has expired/);
    t.notOk(secretOf(none.body));
    const foreign = await admin.post(path, { ...form, csrf }, { origin: 'https://evil.example' });
    t.equal(foreign.statusCode, 403, `${path}: a foreign Origin`);
    t.match(foreign.body, /sent from another site/);
  }
  t.same(
    (await app.services.applications.listSecrets(created.clientId)).map((s) => s.id),
    [secret!.id],
    'nothing rotated or revoked',
  );

  await app.db
    .updateTable('sessions')
    .set({ auth_time: new Date(Date.now() - 3600_000) })
    .execute();
  const stale = await admin.post(`${base}/secrets`, { overlapSeconds: '0', csrf });
  t.equal(stale.statusCode, 303, 'a password older than ADMIN_FRESHNESS: sign in again');
  t.match(String(stale.headers.location), /\/login\/sign-in\?return_to=.*&prompt=login$/);
  t.notOk(secretOf(stale.body));
  t.equal((await app.services.applications.listSecrets(created.clientId)).length, 1);
  await app.db.updateTable('sessions').set({ auth_time: new Date() }).execute();
});

t.test('the domain rules next to their fields, on create and edit', async (t) => {
  const noKeys = await admin.submit(
    '/admin/applications/new',
    '/admin/applications',
    serverSide('JWT', { authMethod: 'private_key_jwt' }),
  );
  t.equal(noKeys.statusCode, 400);
  t.equal(fieldError(noKeys.body, 'jwks'), 'private_key_jwt needs exactly one of jwks and jwksUri');
  t.match(noKeys.body, /<input type="radio" name="clientType" value="confidential" checked>/, 'the choice is kept');
  t.match(noKeys.body, /name="authMethod" value="private_key_jwt" checked/);

  const notJson = await admin.submit(
    '/admin/applications/new',
    '/admin/applications',
    serverSide('JWT', { authMethod: 'private_key_jwt', jwks: '{ keys: nope' }),
  );
  t.equal(notJson.statusCode, 400);
  t.equal(fieldError(notJson.body, 'jwks'), 'Enter a JWK Set in JSON: { "keys": [ ... ] }');

  const privateKey = { kty: 'EC', crv: 'P-256', x: 'AAAA', y: 'BBBB', d: 'secret-part' };
  const priv = await admin.submit(
    '/admin/applications/new',
    '/admin/applications',
    serverSide('JWT', { authMethod: 'private_key_jwt', jwks: JSON.stringify({ keys: [privateKey] }) }),
  );
  t.equal(priv.statusCode, 400);
  t.equal(fieldError(priv.body, 'jwks'), 'must be a public key: it has private key parts');

  const uri = await admin.submit(
    '/admin/applications/new',
    '/admin/applications',
    serverSide('JWT', { authMethod: 'private_key_jwt', jwksUri: 'https://rp.example.com/jwks.json' }),
  );
  t.equal(uri.statusCode, 303, 'private_key_jwt with a JWKS URI: no secret, redirected');
  const clientId = decodeURIComponent(/applications\/([^/]+)\/created$/.exec(String(uri.headers.location))![1]!);
  const detail = await admin.get(`/admin/applications/${clientId}`);
  t.match(detail.body, /<tr><th>JWKS URI<\/th><td><code>https:\/\/rp\.example\.com\/jwks\.json<\/code><\/td><\/tr>/);
  t.notMatch(detail.body, /<table id="secrets">/, 'no secrets card without a secret method');

  // Edit: the form shows the settings; switching to client_secret_post shows its first secret once.
  const edit = await admin.get(`/admin/applications/${clientId}/edit`);
  t.match(edit.body, /name="authMethod" value="private_key_jwt" checked/);
  t.match(edit.body, /value="https:\/\/rp\.example\.com\/jwks\.json"/);
  const fields = {
    ...serverSide('JWT'),
    authMethod: 'client_secret_post',
    jwksUri: 'https://rp.example.com/jwks.json',
  };
  const saved = await admin.submit(`/admin/applications/${clientId}/edit`, `/admin/applications/${clientId}`, fields);
  t.equal(saved.statusCode, 200, 'a secret was made: shown on the answer');
  const secret = secretOf(saved.body)!;
  t.ok(await app.services.applications.verifySecret(clientId, secret));
  t.match(saved.body, /ClientSecretPost\(clientSecret\)/);
  t.match(saved.body, /<h1>Integrate JWT<\/h1>/, 'an edit, not a creation');
  t.notMatch(await pagesOf(clientId), secret);

  const publicAgain = await admin.submit(`/admin/applications/${clientId}/edit`, `/admin/applications/${clientId}`, {
    ...fields,
    clientType: 'public',
  });
  t.equal(publicAgain.statusCode, 303, 'back to a public client');
  t.notOk(await app.services.applications.verifySecret(clientId, secret), 'its secrets end with the method');
});
