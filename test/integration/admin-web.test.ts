// The admin web (ADMIN_URL, /admin): the first-admin setup link, access (signed out → sign-in and back,
// non-admin → 403 on every page and POST route), every form with good and bad input, CSRF, freshness for
// dangerous actions, the audit event of each action, static applications read-only, security headers,
// the audit page's filters and paging, and that disabling an application takes effect at once.
import t, { type Test } from 'tap';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest, userinfo } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { parseStaticApplications, staticApplicationsFrom } from '../../src/static-applications.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

type Form = Record<string, string | string[]>;

const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** Hidden inputs of the POST form whose action is exactly `action`; throws when the page has none. */
function formFields(body: string, action: string): Record<string, string> {
  const escaped = action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const form = new RegExp(`<form method="post" action="${escaped}"[^>]*>([\\s\\S]*?)</form>`).exec(body);
  if (!form) throw new Error(`no form posting to ${action}`);
  const fields: Record<string, string> = {};
  for (const m of form[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g))
    fields[m[1]!] = unescapeHtml(m[2]!);
  return fields;
}

const hasForm = (body: string, action: string) => body.includes(`<form method="post" action="${action}"`);

/** The inline error shown under a field (its id is f-<name>-error), unescaped; undefined when none. */
function fieldError(body: string, name: string): string | undefined {
  const m = new RegExp(`<p class="error" id="f-${name}-error">([^<]*)</p>`).exec(body);
  return m ? unescapeHtml(m[1]!) : undefined;
}

const textOf = (body: string, id: string) => {
  const m = new RegExp(`id="${id}">([^<]*)<`).exec(body);
  return m ? unescapeHtml(m[1]!) : undefined;
};

/** A cookie jar over app.inject: what a browser without JavaScript would do. */
class Agent {
  jar: Record<string, string> = {};
  constructor(readonly app: FastifyInstance) {}

  keep(res: LightMyRequestResponse): LightMyRequestResponse {
    for (const c of res.cookies as Array<{ name: string; value: string; maxAge?: number; expires?: Date }>) {
      if (c.value === '' || c.maxAge === 0 || (c.expires && c.expires.getTime() < Date.now())) delete this.jar[c.name];
      else this.jar[c.name] = c.value;
    }
    return res;
  }

  async get(url: string, headers: Record<string, string> = {}) {
    return this.keep(await this.app.inject({ method: 'GET', url, cookies: this.jar, headers }));
  }

  async post(url: string, form: Form, headers: Record<string, string> = {}, cookies = this.jar) {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const value of [v].flat()) body.append(k, value);
    return this.keep(
      await this.app.inject({
        method: 'POST',
        url,
        cookies,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: body.toString(),
      }),
    );
  }

  /** GETs `page`, then submits its POST form to `action` with its hidden fields and `fields`. */
  async submit(page: string, action: string, fields: Form = {}, headers: Record<string, string> = {}) {
    const res = await this.get(page);
    if (res.statusCode !== 200) throw new Error(`GET ${page}: ${res.statusCode} ${res.headers.location ?? ''}`);
    return this.post(action, { ...formFields(res.body, action), ...fields }, headers);
  }

  /** A csrf value matching this agent's cookie (fetching a page first when it has none). */
  async csrf(): Promise<string> {
    if (!this.jar['idp.csrf']) await this.get('/login/sign-in');
    return this.jar['idp.csrf']!;
  }

  async signIn(email: string, password: string, returnTo?: string) {
    const page = await this.get(`/login/sign-in${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`);
    return this.post('/login/sign-in', { ...formFields(page.body, '/login/sign-in'), email, password });
  }
}

const password = 'a long admin password';

async function adminAgent(app: FastifyInstance, email: string) {
  const user = await app.services.users.create(
    { email, password, role: 'admin', emailVerified: true },
    { actor: 'test' },
  );
  const agent = new Agent(app);
  const res = await agent.signIn(email, password);
  if (res.statusCode !== 303 || !agent.jar['idp.session'])
    throw new Error(`admin sign-in failed: ${res.statusCode} ${res.body.slice(0, 200)}`);
  return { agent, user };
}

async function userAgent(app: FastifyInstance, email: string, extra: Record<string, unknown> = {}) {
  const user = await app.services.users.create({ email, password, emailVerified: true, ...extra }, { actor: 'test' });
  const agent = new Agent(app);
  await agent.signIn(email, password);
  return { agent, user };
}

/** Audit events of one type, newest first. */
async function events(app: FastifyInstance, type: string, filter: { clientId?: string; userId?: string } = {}) {
  return (await app.services.audit.list({ type, ...filter, limit: 500 })).items;
}

function securityHeadersOk(t: Test, res: LightMyRequestResponse, what: string) {
  const csp = String(res.headers['content-security-policy'] ?? '');
  t.match(csp, /frame-ancestors 'none'/, `${what}: CSP frame-ancestors 'none'`);
  t.match(csp, /default-src 'none'/, `${what}: CSP default-src 'none'`);
  t.notMatch(csp, /unsafe-inline|unsafe-eval/, `${what}: no unsafe-inline or unsafe-eval`);
  t.notMatch(csp, /script-src/, `${what}: no script allowed at all`);
  t.equal(res.headers['x-frame-options'], 'DENY', `${what}: X-Frame-Options DENY`);
  t.match(String(res.headers['cache-control']), /no-store/, `${what}: no-store`);
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  if (String(res.headers['content-type']).startsWith('text/html')) {
    t.notMatch(
      res.body,
      /<script|\sstyle=|\son[a-z]+=/i,
      `${what}: no inline script, style attribute or event handler`,
    );
  }
}

const goodApplication = (name: string, extra: Form = {}): Form => ({
  clientName: name,
  clientDescription: 'An application for tests',
  clientLogoUrl: '',
  redirectUris: 'https://rp.example.com/callback\r\nhttp://127.0.0.1:8080/callback',
  allowedWebOrigins: 'https://rp.example.com',
  postLogoutRedirectUris: 'https://rp.example.com/bye',
  postVerificationRedirectPath: '/welcome',
  allowedScopes: ['openid', 'profile', 'email'],
  ...extra,
});

// --- Setup link --------------------------------------------------------------------------------------

t.test('setup link: form errors, success, single use, other links die, no link once an admin exists', async (t) => {
  const { app, config, logs } = await buildTestApp(t);
  t.equal(await app.services.adminSetup.adminExists(), false);
  const link = await app.services.adminSetup.issueLink();
  t.match(link, new RegExp(`^${config.adminUrl}/setup\\?token=[A-Za-z0-9_-]{43}$`), 'the link is under ADMIN_URL');
  const other = await app.services.adminSetup.issueLink();
  t.not(other, link, 'every call issues a new link');
  const token = new URL(link!).searchParams.get('token')!;
  const path = `/admin/setup?token=${token}`;

  const rows = await app.db.selectFrom('admin_setup_tokens').selectAll().execute();
  t.equal(rows.length, 2);
  t.notOk(JSON.stringify(rows).includes(token), 'the token is not stored as such (only its hash)');

  const browser = new Agent(app);
  for (const bad of ['/admin/setup', '/admin/setup?token=nope', `/admin/setup?token=${'A'.repeat(43)}`]) {
    const res = await browser.get(bad);
    t.equal(res.statusCode, 400, bad);
    t.match(res.body, /This link does not work/, bad);
    t.match(res.body, /idp users create --admin/, `${bad}: the page names the CLI alternative`);
  }

  const page = await browser.get(path);
  t.equal(page.statusCode, 200);
  securityHeadersOk(t, page, 'setup page');
  t.match(page.body, /Create the first admin/);
  t.same(Object.keys(formFields(page.body, '/admin/setup')).sort(), ['csrf', 'token']);
  for (const name of ['name', 'email', 'password', 'confirmPassword'])
    t.match(page.body, new RegExp(`<label for="f-${name}">`), `labelled ${name}`);

  const submit = (fields: Form, headers: Record<string, string> = {}) =>
    browser.post('/admin/setup', { ...formFields(page.body, '/admin/setup'), ...fields }, headers);

  let res = await submit({ name: 'Ada', email: 'not-an-address', password, confirmPassword: password });
  t.equal(res.statusCode, 400, 'bad e-mail address');
  t.equal(fieldError(res.body, 'email'), 'Enter a valid e-mail address');
  t.match(res.body, /id="f-email" name="email" type="email" value="not-an-address"/, 'the value is kept');
  t.match(res.body, /aria-describedby="f-email-error" aria-invalid="true"/, 'the error is tied to the field');

  res = await submit({ name: 'Ada', email: 'ada@example.com', password: 'short', confirmPassword: 'short' });
  t.equal(res.statusCode, 400, 'short password');
  t.equal(fieldError(res.body, 'password'), 'Use at least 8 characters');
  t.notMatch(res.body, /value="short"/, 'the password is not echoed');

  res = await submit({
    name: 'Ada',
    email: 'ada@example.com',
    password: 'Password123',
    confirmPassword: 'Password123',
  });
  t.equal(res.statusCode, 400, 'common password');
  t.match(fieldError(res.body, 'password'), /^This password is one of the most common ones/);

  res = await submit({ name: 'Ada', email: 'ada@example.com', password, confirmPassword: `${password}!` });
  t.equal(res.statusCode, 400, 'mismatching confirmation');
  t.equal(fieldError(res.body, 'confirmPassword'), 'The two passwords are not the same');

  // An address that belongs to an ordinary user (in another case): refused, the link survives.
  await app.services.users.create({ email: 'taken@example.com', password }, { actor: 'test' });
  res = await submit({ email: 'Taken@Example.com', password, confirmPassword: password });
  t.equal(res.statusCode, 409, 'an address in use');
  t.match(fieldError(res.body, 'email') ?? '', /exists already; promote it with idp users update/);
  t.equal(await app.services.adminSetup.isUsable(token), true, 'the link survives a refused address');
  t.equal(
    await app.services.adminSetup.isUsable(new URL(other!).searchParams.get('token')!),
    true,
    'and so does the other one',
  );

  res = await submit(
    { email: 'ada@example.com', password, confirmPassword: password },
    { origin: 'https://evil.example' },
  );
  t.equal(res.statusCode, 403, 'a foreign Origin is refused');
  res = await submit({ email: 'ada@example.com', password, confirmPassword: password, csrf: '' });
  t.equal(res.statusCode, 403, 'no csrf field is refused');
  t.equal(await app.services.adminSetup.adminExists(), false, 'none of that created an admin');
  t.equal((await browser.get(path)).statusCode, 200, 'and the link still works');

  res = await submit({ name: 'Ada Admin', email: 'Ada@Example.com', password, confirmPassword: password });
  t.equal(res.statusCode, 303, 'the admin is created');
  t.equal(res.headers.location, '/admin/applications?done=created', 'and lands on the applications page');
  t.ok(browser.jar['idp.session'], 'signed in');
  const sessionCookie = (res.cookies as Array<{ name: string; httpOnly?: boolean; path?: string }>).find(
    (c) => c.name === 'idp.session',
  );
  t.equal(sessionCookie?.httpOnly, true);
  t.equal(sessionCookie?.path, '/');
  const landing = await browser.get(res.headers.location as string);
  t.equal(landing.statusCode, 200);
  t.match(landing.body, /Applications/);
  t.match(landing.body, /Ada@Example\.com/, 'the admin is named in the header');

  const admin = await app.services.users.get('ada@example.com');
  t.equal(admin.role, 'admin');
  t.equal(admin.emailVerified, true);
  t.equal(admin.name, 'Ada Admin');
  const created = await events(app, 'user.created', { userId: admin.id });
  t.equal(created.length, 1);
  t.equal(created[0]!.actor, 'setup-link');
  t.same(created[0]!.detail, { role: 'admin' });
  t.notOk(JSON.stringify(await listAuditEvents(app.db)).includes(password), 'no password in the audit trail');

  // Single use: the same link (and the other outstanding one) no longer works.
  const again = await new Agent(app).get(path);
  t.equal(again.statusCode, 400);
  t.match(again.body, /Setup is done/);
  const reuse = await submit({ email: 'eve@example.com', password, confirmPassword: password });
  t.equal(reuse.statusCode, 400, 'posting the used link again fails');
  await t.rejects(
    app.services.users.get('eve@example.com'),
    { statusCode: 404 } as unknown as Error,
    'no second admin',
  );
  const otherToken = new URL(other!).searchParams.get('token')!;
  t.equal(await app.services.adminSetup.isUsable(otherToken), false, 'the other outstanding link died with the first');
  t.same(
    await app.db.selectFrom('admin_setup_tokens').select('used_at').where('used_at', 'is', null).execute(),
    [],
    'every link is marked used',
  );
  t.equal(await app.services.adminSetup.issueLink(), undefined, 'no new link once an admin exists');
  t.notOk(logs.text().includes(token), 'the setup token never reaches the request logs');
  t.notOk(logs.text().includes(password), 'nor the password');
});

t.test('setup link: expiry (ADMIN_SETUP_TTL) and a link outlived by an admin made elsewhere', async (t) => {
  const { app } = await buildTestApp(t, { env: { ADMIN_SETUP_TTL: '1' } });
  const expiring = await app.services.adminSetup.issueLink();
  const token = new URL(expiring!).searchParams.get('token')!;
  const browser = new Agent(app);
  const page = await browser.get(`/admin/setup?token=${token}`);
  t.equal(page.statusCode, 200, 'fresh: usable');
  await new Promise((r) => setTimeout(r, 1300));
  const expired = await browser.get(`/admin/setup?token=${token}`);
  t.equal(expired.statusCode, 400, 'after ADMIN_SETUP_TTL: refused');
  t.match(expired.body, /invalid, expired or was used already/);
  const post = await browser.post('/admin/setup', {
    ...formFields(page.body, '/admin/setup'),
    email: 'late@example.com',
    password,
    confirmPassword: password,
  });
  t.equal(post.statusCode, 400, 'the form of an expired link is refused');
  t.equal(await app.services.adminSetup.adminExists(), false);

  // expires_at moved into the past on a long-lived link: the same.
  const link = await app.services.adminSetup.issueLink();
  const token2 = new URL(link!).searchParams.get('token')!;
  await app.db
    .updateTable('admin_setup_tokens')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .execute();
  t.equal((await browser.get(`/admin/setup?token=${token2}`)).statusCode, 400);

  // An admin created meanwhile (CLI, admin API): an outstanding link shows "Setup is done" and cannot
  // make a second one.
  const live = await app.services.adminSetup.issueLink();
  const token3 = new URL(live!).searchParams.get('token')!;
  const form = await browser.get(`/admin/setup?token=${token3}`);
  t.equal(form.statusCode, 200);
  await app.services.users.create({ email: 'cli-admin@example.com', password, role: 'admin' }, { actor: 'cli:test' });
  const done = await browser.get(`/admin/setup?token=${token3}`);
  t.equal(done.statusCode, 400);
  t.match(done.body, /Setup is done/);
  t.match(done.body, /href="http:\/\/localhost:3000\/login\/sign-in\?return_to=/, 'it links to sign-in');
  const late = await browser.post('/admin/setup', {
    ...formFields(form.body, '/admin/setup'),
    email: 'second@example.com',
    password,
    confirmPassword: password,
  });
  t.equal(late.statusCode, 409);
  await t.rejects(app.services.users.get('second@example.com'), { statusCode: 404 } as unknown as Error);
  t.equal(await app.services.adminSetup.issueLink(), undefined, 'no link when an admin exists');
});

t.test('setup link: two links used at the same moment make exactly one admin', async (t) => {
  const { app } = await buildTestApp(t);
  const links = [await app.services.adminSetup.issueLink(), await app.services.adminSetup.issueLink()];
  const browsers = await Promise.all(
    links.map(async (link) => {
      const agent = new Agent(app);
      const page = await agent.get(new URL(link!).pathname + new URL(link!).search);
      return { agent, fields: formFields(page.body, '/admin/setup') };
    }),
  );
  const results = await Promise.all(
    browsers.map(({ agent, fields }, i) =>
      agent.post('/admin/setup', { ...fields, email: `racer${i}@example.com`, password, confirmPassword: password }),
    ),
  );
  const statuses = results.map((r) => r.statusCode).sort();
  const admins = await app.db.selectFrom('users').select('email').where('role', '=', 'admin').execute();
  t.equal(admins.length, 1, 'one admin');
  t.equal(statuses[0], 303, 'one of them succeeded');
  t.ok(
    [400, 409].includes(statuses[1]!),
    `the other is told the link no longer works (got ${statuses[1]}), not a server error`,
  );
});

// --- The main app ------------------------------------------------------------------------------------

const STATIC_SOURCE = '/etc/idp/static-applications.json';
const staticApplications = staticApplicationsFrom(
  parseStaticApplications(
    [
      {
        clientId: 'static-portal',
        clientName: 'Static Portal',
        redirectUris: ['https://portal.example.com/cb'],
        allowedWebOrigins: ['https://portal.example.com'],
      },
    ],
    STATIC_SOURCE,
  ),
  STATIC_SOURCE,
);
const main: TestApp = await buildTestApp(t, { staticApplications });
const { app, config } = main;
const admin = await adminAgent(app, 'root@example.com');
const actor = 'admin:root@example.com';
const normal = await userAgent(app, 'normal@example.com');
const target = await app.services.applications.create(
  {
    clientName: 'Target',
    redirectUris: ['https://target.example.com/cb'],
    allowedWebOrigins: ['https://target.example.com'],
  },
  { actor: 'test' },
);

/** Every method + path of the admin web, from the router itself (so a new route cannot be forgotten). */
function adminRoutes(server: FastifyInstance): Array<{ method: string; path: string }> {
  const out: Array<{ method: string; path: string }> = [];
  const stack: string[] = [];
  for (const raw of server.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?\s*$/.exec(raw);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack[depth] = m[2]!;
    stack.length = depth + 1;
    const path = stack.join('').replace(/^\/+/, '/');
    for (const method of (m[3] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s === 'GET' || s === 'POST')) {
      if (path === '/admin' || path.startsWith('/admin/')) out.push({ method, path });
    }
  }
  return out;
}

const PUBLIC_ADMIN_ROUTES = new Set([
  'GET /admin/setup',
  'POST /admin/setup',
  'GET /admin/assets/admin.css',
  'POST /admin/sign-out',
]);

t.test('the route list is complete and read from the router', async (t) => {
  const routes = adminRoutes(app).map((r) => `${r.method} ${r.path}`);
  t.ok(routes.length > 25, `found ${routes.length} admin routes`);
  for (const known of [
    'GET /admin/applications/:clientId/created',
    'POST /admin/users/:id/revoke-grants',
    'POST /admin/keys/rotate',
    'GET /admin/audit',
  ]) {
    t.ok(routes.includes(known), known);
  }
});

/** Every gated route with real ids, and a form body that would succeed for an admin. */
function gatedRoutes(clientId: string, userId: string) {
  return adminRoutes(app)
    .filter((r) => !PUBLIC_ADMIN_ROUTES.has(`${r.method} ${r.path}`))
    .map((r) => {
      const path = r.path.replace(':clientId', encodeURIComponent(clientId)).replace(':id', userId);
      const form: Form =
        r.method === 'POST' && /^\/admin\/applications(\/[^/]+)?$/.test(path) ? goodApplication('Sneaky') : {};
      return { ...r, route: `${r.method} ${r.path}`, path, form };
    });
}

t.test('a signed-out visitor is sent to sign-in with return_to, and comes back after signing in', async (t) => {
  const visitor = new Agent(app);
  const csrf = await visitor.csrf();
  const victim = await app.services.users.create(
    { email: 'victim-signed-out@example.com', password },
    { actor: 'test' },
  );
  for (const r of gatedRoutes(target.clientId, victim.id)) {
    const res = r.method === 'GET' ? await visitor.get(r.path) : await visitor.post(r.path, { ...r.form, csrf });
    t.equal(res.statusCode, 303, `${r.route}: 303`);
    const location = new URL(String(res.headers.location));
    t.equal(
      `${location.origin}${location.pathname}`,
      `${config.loginUrl}/sign-in`,
      `${r.route}: to the hosted sign-in`,
    );
    const returnTo = location.searchParams.get('return_to') ?? '';
    t.ok(returnTo.startsWith(`${config.adminUrl}/`), `${r.route}: return_to ${returnTo} is an absolute admin URL`);
    if (r.method === 'GET' && r.path !== '/admin' && r.path !== '/admin/')
      t.equal(returnTo, `${config.adminUrl}${r.path.slice('/admin'.length)}`, `${r.route}: returns to the same page`);
  }
  t.equal((await app.services.applications.get(target.clientId)).enabled, true, 'nothing changed');
  t.equal((await app.services.users.get(victim.id)).disabled, false);

  // Posts come back to the page holding the form.
  const post = await visitor.post(`/admin/applications/${target.clientId}/disable`, { csrf });
  t.equal(
    new URL(String(post.headers.location)).searchParams.get('return_to'),
    `${config.adminUrl}/applications/${target.clientId}`,
  );
  const create = await visitor.post('/admin/applications', { ...goodApplication('x'), csrf });
  t.equal(
    new URL(String(create.headers.location)).searchParams.get('return_to'),
    `${config.adminUrl}/applications/new`,
  );

  // Follow the redirect like a browser: the sign-in form carries return_to, and signing in returns there.
  const start = await visitor.get('/admin/applications?q=Target');
  const signInUrl = new URL(String(start.headers.location));
  const page = await visitor.get(signInUrl.pathname + signInUrl.search);
  t.equal(page.statusCode, 200);
  const hidden = formFields(page.body, '/login/sign-in');
  t.equal(hidden.return_to, `${config.adminUrl}/applications?q=Target`);
  const signedIn = await visitor.post('/login/sign-in', { ...hidden, email: 'root@example.com', password });
  t.equal(signedIn.statusCode, 303);
  t.equal(
    signedIn.headers.location,
    `${config.adminUrl}/applications?q=Target`,
    'back to the admin page first asked for',
  );
  const back = await visitor.get(`${new URL(String(signedIn.headers.location)).pathname}?q=Target`);
  t.equal(back.statusCode, 200);
  t.match(back.body, /Target/);

  // return_to never leaves the admin web.
  for (const evil of [
    'https://evil.example/admin/applications',
    'http://localhost:3000/login/../../evil',
    '//evil.example/admin',
    'http://localhost:3000/administrator',
  ]) {
    const other = new Agent(app);
    const res = await other.signIn('root@example.com', password, evil);
    t.equal(res.headers.location, '/login/', `return_to=${evil} is ignored`);
  }
});

t.test('a non-admin user gets 403 on every admin page and POST route, and nothing changes', async (t) => {
  const victim = await app.services.users.create({ email: 'victim@example.com', password }, { actor: 'test' });
  const keysBefore = (await app.services.signingKeys.list()).map((k) => `${k.kid}:${k.state}`);
  const auditBefore = (await listAuditEvents(app.db)).length;
  const csrf = await normal.agent.csrf();
  const routes = gatedRoutes(target.clientId, victim.id);
  t.ok(routes.some((r) => r.method === 'POST') && routes.some((r) => r.method === 'GET'));
  for (const r of routes) {
    const res =
      r.method === 'GET' ? await normal.agent.get(r.path) : await normal.agent.post(r.path, { ...r.form, csrf });
    t.equal(res.statusCode, 403, `${r.route}: 403`);
    t.match(res.body, /Not an administrator/, `${r.route}: says why`);
    t.match(res.body, /normal@example\.com/, `${r.route}: names the account`);
    securityHeadersOk(t, res, r.route);
  }
  const forbidden = await normal.agent.get('/admin/users');
  t.match(
    forbidden.body,
    /href="http:\/\/localhost:3000\/login\/sign-in\?return_to=[^"]+">Sign in with another account/,
    'offers signing in with another account',
  );
  t.equal((await app.services.applications.get(target.clientId)).enabled, true, 'the application is untouched');
  t.equal((await app.services.applications.get(target.clientId)).clientName, 'Target');
  const v = await app.services.users.get(victim.id);
  t.equal(v.disabled, false);
  t.equal(v.emailVerified, false);
  t.same(
    (await app.services.signingKeys.list()).map((k) => `${k.kid}:${k.state}`),
    keysBefore,
    'keys untouched',
  );
  const after = await listAuditEvents(app.db);
  t.same(
    after
      .slice(auditBefore)
      .map((e) => e.type)
      .filter((type) => /^(application\.|signing_key\.|user\.(updated|deleted)|token\.revoked)/.test(type)),
    [],
    'no change was recorded',
  );
  t.notOk((await app.services.applications.list({ q: 'Sneaky' })).items.length, 'no application was created');

  // Promotion takes effect at once; demotion too.
  await app.services.users.update(normal.user.id, { role: 'admin' }, { actor: 'test' });
  t.equal((await normal.agent.get('/admin/applications')).statusCode, 200, 'promoted: allowed');
  await app.services.users.update(normal.user.id, { role: 'user' }, { actor: 'test' });
  t.equal((await normal.agent.get('/admin/applications')).statusCode, 403, 'demoted: refused again');
});

t.test('security headers on admin pages, redirects and errors', async (t) => {
  const pages = [
    '/admin/applications',
    '/admin/applications/new',
    `/admin/applications/${target.clientId}`,
    `/admin/applications/${target.clientId}/edit`,
    `/admin/applications/${target.clientId}/created`,
    '/admin/users',
    `/admin/users/${normal.user.id}`,
    '/admin/keys',
    '/admin/audit',
    '/admin/applications/no-such-app',
  ];
  for (const path of pages) {
    const res = await admin.agent.get(path);
    t.ok([200, 404].includes(res.statusCode), `${path}: ${res.statusCode}`);
    t.match(String(res.headers['content-type']), /^text\/html/);
    securityHeadersOk(t, res, path);
    t.match(
      res.body,
      /<link rel="stylesheet" href="\/admin\/assets\/admin\.css">/,
      `${path}: the stylesheet is a file`,
    );
  }
  const missing = await admin.agent.get('/admin/applications/no-such-app');
  t.equal(missing.statusCode, 404);
  t.match(missing.body, /No application with client id no-such-app/);
  securityHeadersOk(t, await new Agent(app).get('/admin/applications'), 'signed-out redirect');
  const css = await new Agent(app).get('/admin/assets/admin.css');
  t.equal(css.statusCode, 200);
  t.match(String(css.headers['content-type']), /^text\/css/);
});

t.test('applications: create with bad input, then good; the created page; list and search', async (t) => {
  const page = await admin.agent.get('/admin/applications/new');
  t.equal(page.statusCode, 200);
  t.same(Object.keys(formFields(page.body, '/admin/applications')), ['csrf']);
  for (const name of [
    'clientName',
    'clientDescription',
    'clientLogoUrl',
    'redirectUris',
    'allowedWebOrigins',
    'postLogoutRedirectUris',
    'postVerificationRedirectPath',
  ]) {
    t.match(page.body, new RegExp(`<label for="f-${name}">`), `${name} has a label`);
  }
  // The same default as the admin API and the CLI (DEFAULT_ALLOWED_SCOPES), offline_access included.
  for (const scope of ['openid', 'profile', 'email', 'offline_access'])
    t.match(page.body, new RegExp(`name="allowedScopes" value="${scope}" checked`), `${scope} checked by default`);
  t.notMatch(page.body, /name="allowedScopes" value="permissions" checked/);

  const createdBefore = (await events(app, 'application.created')).length;
  const bad = async (fields: Form, field: string, expected: RegExp | string, what: string) => {
    const res = await admin.agent.submit(
      '/admin/applications/new',
      '/admin/applications',
      goodApplication('Bad App', fields),
    );
    t.equal(res.statusCode, 400, `${what}: 400`);
    const error = fieldError(res.body, field);
    if (typeof expected === 'string') t.equal(error, expected, `${what}: error on ${field}`);
    else t.match(error ?? '', expected, `${what}: error on ${field}`);
    const control = field === 'allowedScopes' ? '<fieldset' : `id="f-${field}"`;
    t.match(
      res.body,
      new RegExp(`${control}[^>]*aria-describedby="[^"]*f-${field}-error"`),
      `${what}: tied to the field`,
    );
    return res;
  };

  const line2 = await bad(
    { redirectUris: 'https://ok.example.com/cb\nhttp://evil.example.com/cb' },
    'redirectUris',
    /^Line 2: http is allowed only for loopback hosts/,
    'invalid redirect URI on line 2',
  );
  t.match(
    line2.body,
    new RegExp(
      /<textarea id="f-redirectUris" name="redirectUris"[^>]*>/.source +
        /https:\/\/ok\.example\.com\/cb\nhttp:\/\/evil\.example\.com\/cb<\/textarea>/.source,
    ),
    'the lines are kept as typed',
  );
  t.match(line2.body, /<p class="alert" role="alert">Please correct the fields marked below\.<\/p>/);
  t.match(line2.body, /value="Bad App"/, 'other values are kept');
  await bad(
    { redirectUris: 'https://a.example.com/cb\n\n  https://b.example.com/cb#frag  ' },
    'redirectUris',
    /^Line 2: must not contain a fragment/,
    'blank lines skipped, lines trimmed',
  );
  await bad(
    { redirectUris: 'https://a.example.com/cb\nhttps://a.example.com/cb' },
    'redirectUris',
    'must not contain duplicates',
    'duplicate redirect URIs',
  );
  await bad({ redirectUris: '  \n ' }, 'redirectUris', 'Enter at least one redirect URI', 'no redirect URI');
  await bad({ clientName: '   ' }, 'clientName', 'Enter a name', 'missing name');
  await bad({ clientName: 'x'.repeat(201) }, 'clientName', /200/, 'name too long');
  const noScopes = await admin.agent.submit('/admin/applications/new', '/admin/applications', {
    ...goodApplication('No scopes'),
    allowedScopes: [],
  });
  t.equal(noScopes.statusCode, 400, 'no scopes');
  t.match(noScopes.body, /<p class="error" id="f-allowedScopes-error">Choose at least openid<\/p>/);
  t.notMatch(
    noScopes.body,
    /name="allowedScopes" value="openid" checked/,
    'the boxes are shown as sent (none checked)',
  );
  await bad({ allowedScopes: ['profile', 'email'] }, 'allowedScopes', /must include openid/, 'scopes without openid');
  await bad({ allowedScopes: ['nonsense'] }, 'allowedScopes', 'Choose at least openid', 'unknown scopes are ignored');
  await bad(
    { allowedWebOrigins: 'https://rp.example.com/app' },
    'allowedWebOrigins',
    /^Line 1: must be a bare origin.*did you mean https:\/\/rp\.example\.com\?/,
    'bad origin',
  );
  await bad(
    { allowedWebOrigins: 'https://rp.example.com\nhttp://rp.example.com' },
    'allowedWebOrigins',
    /^Line 2: http is allowed only for loopback/,
    'http origin on line 2',
  );
  await bad(
    { clientLogoUrl: 'javascript:alert(1)' },
    'clientLogoUrl',
    /scheme javascript: is not allowed/,
    'bad logo URL',
  );
  const logo = await bad(
    { clientLogoUrl: 'http://cdn.example.com/logo.png' },
    'clientLogoUrl',
    /http is allowed only for loopback/,
    'http logo URL',
  );
  t.notMatch(logo.body, /<img class="logo"/, 'no preview of a refused logo');
  await bad(
    { postLogoutRedirectUris: 'not a url' },
    'postLogoutRedirectUris',
    /^Line 1: must not contain white space/,
    'bad post-logout URI',
  );
  await bad(
    { postVerificationRedirectPath: 'https://elsewhere.example/x' },
    'postVerificationRedirectPath',
    /must be a path starting with a single "\/"/,
    'bad post-verification path',
  );
  t.equal((await events(app, 'application.created')).length, createdBefore, 'no bad input created an application');

  // Good input.
  const res = await admin.agent.submit(
    '/admin/applications/new',
    '/admin/applications',
    goodApplication('Shiny <App>', {
      clientLogoUrl: 'https://cdn.example.com/logo.png',
      allowedScopes: ['openid', 'email', 'offline_access', 'bogus'],
    }),
  );
  t.equal(res.statusCode, 303);
  const m = /^\/admin\/applications\/([A-Za-z0-9_-]+)\/created$/.exec(String(res.headers.location));
  t.ok(m, `to the created page: ${res.headers.location}`);
  const clientId = m![1]!;
  const created = await app.services.applications.get(clientId);
  t.same(
    { ...created, createdAt: undefined, updatedAt: undefined },
    {
      clientId,
      clientName: 'Shiny <App>',
      clientDescription: 'An application for tests',
      clientLogoUrl: 'https://cdn.example.com/logo.png',
      redirectUris: ['https://rp.example.com/callback', 'http://127.0.0.1:8080/callback'],
      allowedWebOrigins: ['https://rp.example.com'],
      postLogoutRedirectUris: ['https://rp.example.com/bye'],
      postVerificationRedirectPath: '/welcome',
      allowedScopes: ['openid', 'email', 'offline_access'],
      enabled: true,
      // The checkbox left unticked (issue 34).
      requireMfa: false,
      // The form's default type (issue 33): a browser or mobile app, a public PKCE client.
      tokenEndpointAuthMethod: 'none',
      clientType: 'public',
      pkce: 'required',
      grantTypes: ['authorization_code', 'refresh_token'],
      jwks: null,
      jwksUri: null,
      registration: 'operator',
      source: 'database',
      createdAt: undefined,
      updatedAt: undefined,
    },
    'stored as entered',
  );
  const audit = await events(app, 'application.created', { clientId });
  t.equal(audit.length, 1, 'one application.created event');
  t.equal(audit[0]!.actor, actor);
  t.equal(audit[0]!.ip, '127.0.0.1');

  const createdPage = await admin.agent.get(String(res.headers.location));
  t.equal(createdPage.statusCode, 200);
  t.match(createdPage.body, /<h1>Created Shiny &lt;App&gt;<\/h1>/, 'escaped');
  t.equal(textOf(createdPage.body, 'client-id'), clientId, '#client-id');
  t.equal(
    textOf(createdPage.body, 'discovery-url'),
    `${config.issuer}/.well-known/openid-configuration`,
    '#discovery-url',
  );
  const openidClient = unescapeHtml(/<code id="snippet-openid-client">([\s\S]*?)<\/code>/.exec(createdPage.body)![1]!);
  t.match(openidClient, `const issuer = new URL('${config.issuer}');`);
  t.match(openidClient, `const clientId = '${clientId}';`);
  t.match(openidClient, "const redirectUri = 'https://rp.example.com/callback';");
  t.match(openidClient, "scope: 'openid email offline_access'");
  t.match(openidClient, "code_challenge_method: 'S256'");
  const oauth4 = unescapeHtml(/<code id="snippet-oauth4webapi">([\s\S]*?)<\/code>/.exec(createdPage.body)![1]!);
  t.match(oauth4, `client_id: '${clientId}'`);
  t.match(oauth4, `new URL('${config.issuer}')`);
  t.match(oauth4, "code_challenge_method: 'S256'");
  t.match(oauth4, 'oauth.None()');

  // Discovery really is there.
  const discovery = await app.inject({
    method: 'GET',
    url: new URL(textOf(createdPage.body, 'discovery-url')!).pathname,
  });
  t.equal(discovery.statusCode, 200);
  t.equal(discovery.json().issuer, config.issuer);

  // The list, with search.
  const list = await admin.agent.get('/admin/applications');
  t.match(list.body, new RegExp(`<a href="/admin/applications/${clientId}">Shiny &lt;App&gt;</a>`));
  t.match(list.body, /Static Portal/);
  t.match(list.body, /<a class="button" href="\/admin\/applications\/new">New application<\/a>/);
  const found = await admin.agent.get('/admin/applications?q=shiny');
  t.match(found.body, /Shiny &lt;App&gt;/);
  t.notMatch(found.body, /Target|Static Portal/, 'only matches');
  t.match(found.body, /<input id="q" type="search" name="q" value="shiny"/, 'the query is kept');
  const byId = await admin.agent.get(`/admin/applications?q=${clientId}`);
  t.match(byId.body, /Shiny &lt;App&gt;/, 'search by client id');
  const none = await admin.agent.get('/admin/applications?q=zzz-nothing');
  t.match(none.body, /No applications match\./);

  // The view page: logo preview and buttons.
  const view = await admin.agent.get(`/admin/applications/${clientId}`);
  t.match(view.body, /<img class="logo" src="https:\/\/cdn\.example\.com\/logo\.png" alt="">/);
  t.ok(hasForm(view.body, `/admin/applications/${clientId}/disable`), 'a Disable button');
  t.match(view.body, new RegExp(`href="/admin/applications/${clientId}/edit"`));
  t.match(view.body, new RegExp(`href="/admin/applications/${clientId}/delete"`));
  const form = await admin.agent.get(`/admin/applications/${clientId}/edit`);
  t.match(
    form.body,
    /<img class="logo" src="https:\/\/cdn\.example\.com\/logo\.png" alt="Logo preview">/,
    'the form previews the logo',
  );
});

t.test('applications: edit with bad and good input', async (t) => {
  const a = await app.services.applications.create(
    {
      clientName: 'Editable',
      redirectUris: ['https://edit.example.com/cb'],
      allowedWebOrigins: ['https://edit.example.com'],
      allowedScopes: ['openid', 'profile'],
    },
    { actor: 'test' },
  );
  const edit = `/admin/applications/${a.clientId}/edit`;
  const action = `/admin/applications/${a.clientId}`;
  const form = await admin.agent.get(edit);
  t.equal(form.statusCode, 200);
  t.match(form.body, /<h1>Edit Editable<\/h1>/);
  t.match(form.body, /<input id="f-clientName" name="clientName" type="text" value="Editable"/, 'prefilled');
  t.match(
    form.body,
    /<textarea id="f-redirectUris" name="redirectUris"[^>]*>https:\/\/edit\.example\.com\/cb<\/textarea>/,
  );
  t.match(form.body, /name="allowedScopes" value="profile" checked/);
  t.notMatch(form.body, /name="allowedScopes" value="email" checked/);

  const values = {
    clientName: 'Editable',
    redirectUris: 'https://edit.example.com/cb',
    allowedWebOrigins: 'https://edit.example.com',
    allowedScopes: ['openid', 'profile'],
  };
  let res = await admin.agent.submit(edit, action, {
    ...values,
    redirectUris: 'https://edit.example.com/cb\nftp://edit.example.com/cb',
  });
  t.equal(res.statusCode, 400);
  t.match(fieldError(res.body, 'redirectUris') ?? '', /^Line 2: scheme ftp: is not allowed/);
  t.match(res.body, /<h1>Edit Editable<\/h1>/, 'still the edit form');
  res = await admin.agent.submit(edit, action, { ...values, clientName: '' });
  t.equal(fieldError(res.body, 'clientName'), 'Enter a name');
  res = await admin.agent.submit(edit, action, { ...values, allowedWebOrigins: 'edit.example.com' });
  t.match(fieldError(res.body, 'allowedWebOrigins') ?? '', /^Line 1: must be an origin/);
  res = await admin.agent.submit(edit, action, { ...values, clientLogoUrl: 'data:image/png;base64,AAAA' });
  t.match(fieldError(res.body, 'clientLogoUrl') ?? '', /not allowed/);
  t.same(await app.services.applications.get(a.clientId), a, 'unchanged after bad input');
  t.equal((await events(app, 'application.updated', { clientId: a.clientId })).length, 0);

  res = await admin.agent.submit(edit, action, {
    ...values,
    clientName: 'Edited',
    redirectUris: 'https://edit.example.com/cb\nhttps://edit.example.com/cb2',
    allowedWebOrigins: '',
    allowedScopes: ['openid', 'email'],
    clientDescription: 'now described',
  });
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, `/admin/applications/${a.clientId}?done=saved`);
  const after = await app.services.applications.get(a.clientId);
  t.equal(after.clientName, 'Edited');
  t.same(after.redirectUris, ['https://edit.example.com/cb', 'https://edit.example.com/cb2']);
  t.same(after.allowedWebOrigins, [], 'an emptied list is emptied');
  t.same(after.allowedScopes, ['openid', 'email']);
  t.equal(after.clientDescription, 'now described');
  t.equal(after.requireMfa, false, 'the second-factor box unticked');
  const shown = await admin.agent.get(String(res.headers.location));
  t.match(shown.body, /<p class="notice" role="status">Saved\.<\/p>/);
  const audit = await events(app, 'application.updated', { clientId: a.clientId });
  t.equal(audit.length, 1);
  t.equal(audit[0]!.actor, actor);

  // The CORS origin list follows at once: the removed origin is no longer allowed.
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/external/me',
    headers: { origin: 'https://edit.example.com', 'access-control-request-method': 'GET' },
  });
  t.notOk(preflight.headers['access-control-allow-origin'], 'the removed origin lost CORS at once');

  // Require a second factor (issue 34): the box ticked, shown on the page and in the form, then unticked.
  res = await admin.agent.submit(edit, action, { ...values, requireMfa: 'on' });
  t.equal(res.statusCode, 303);
  t.equal((await app.services.applications.get(a.clientId)).requireMfa, true, 'requireMfa ticked');
  t.match((await admin.agent.get(`/admin/applications/${a.clientId}`)).body, /<td id="require-mfa">required<\/td>/);
  t.match((await admin.agent.get(edit)).body, /name="requireMfa" value="on" checked/, 'the form shows it ticked');
  res = await admin.agent.submit(edit, action, values);
  t.equal((await app.services.applications.get(a.clientId)).requireMfa, false, 'unticked again');

  const missing = await admin.agent.post('/admin/applications/no-such-app', {
    ...values,
    csrf: await admin.agent.csrf(),
  });
  t.equal(missing.statusCode, 404);
});

t.test('applications: disable, enable, delete with confirmation', async (t) => {
  const a = await app.services.applications.create(
    {
      clientName: 'Lifecycle',
      redirectUris: ['https://life.example.com/cb'],
      allowedWebOrigins: ['https://life.example.com'],
    },
    { actor: 'test' },
  );
  const preflight = () =>
    app.inject({
      method: 'OPTIONS',
      url: '/api/external/me',
      headers: { origin: 'https://life.example.com', 'access-control-request-method': 'GET' },
    });
  t.equal((await preflight()).headers['access-control-allow-origin'], 'https://life.example.com');
  const base = `/admin/applications/${a.clientId}`;

  let res = await admin.agent.submit(base, `${base}/disable`);
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, `${base}?done=disabled`);
  t.equal((await app.services.applications.get(a.clientId)).enabled, false);
  let view = await admin.agent.get(String(res.headers.location));
  t.match(view.body, /Disabled\./);
  t.match(view.body, /<span class="badge off">disabled<\/span>/);
  t.ok(hasForm(view.body, `${base}/enable`), 'now an Enable button');
  let audit = await events(app, 'application.updated', { clientId: a.clientId });
  t.equal(audit[0]!.actor, actor);
  t.same(audit[0]!.detail, { fields: ['enabled'] });

  res = await admin.agent.submit(base, `${base}/enable`);
  t.equal(res.headers.location, `${base}?done=enabled`);
  t.equal((await app.services.applications.get(a.clientId)).enabled, true);
  view = await admin.agent.get(String(res.headers.location));
  t.match(view.body, /Enabled\./);
  audit = await events(app, 'application.updated', { clientId: a.clientId });
  t.equal(audit.length, 2);

  const confirm = await admin.agent.get(`${base}/delete`);
  t.equal(confirm.statusCode, 200);
  t.match(confirm.body, /<h1>Delete Lifecycle\?<\/h1>/);
  t.match(confirm.body, new RegExp(`<a class="button secondary" href="${base}">Cancel</a>`));
  t.ok(await app.services.applications.get(a.clientId), 'showing the confirmation deletes nothing');
  res = await admin.agent.submit(`${base}/delete`, `${base}/delete`);
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/applications?done=deleted');
  await t.rejects(app.services.applications.get(a.clientId), { statusCode: 404 } as unknown as Error);
  t.match((await admin.agent.get('/admin/applications?done=deleted')).body, /Deleted\./);
  const deleted = await events(app, 'application.deleted', { clientId: a.clientId });
  t.equal(deleted.length, 1);
  t.equal(deleted[0]!.actor, actor);
  t.equal((await admin.agent.get(base)).statusCode, 404, 'its page is gone');
  t.notOk((await preflight()).headers['access-control-allow-origin'], 'its origin lost CORS at once');
  t.equal(
    (await admin.agent.post(`${base}/delete`, { csrf: await admin.agent.csrf() })).statusCode,
    404,
    'deleting again: 404',
  );
});

t.test('static applications are shown read-only with their source', async (t) => {
  const list = await admin.agent.get('/admin/applications');
  t.match(
    list.body,
    new RegExp(`<td>static \\(read-only, ${STATIC_SOURCE.replaceAll('/', '\\/').replaceAll('.', '\\.')}\\)</td>`),
  );
  const view = await admin.agent.get('/admin/applications/static-portal');
  t.equal(view.statusCode, 200);
  t.match(view.body, /Static application from \/etc\/idp\/static-applications\.json: read-only here/);
  t.notOk(hasForm(view.body, '/admin/applications/static-portal/disable'), 'no Disable button');
  t.notMatch(view.body, /static-portal\/edit|static-portal\/delete/, 'no Edit or Delete link');
  t.match(view.body, /static-portal\/created/, 'the integration snippet is offered');
  t.equal((await admin.agent.get('/admin/applications/static-portal/created')).statusCode, 200);
  const edit = await admin.agent.get('/admin/applications/static-portal/edit');
  t.equal(edit.statusCode, 409);
  t.match(edit.body, /read-only/);
  const csrf = await admin.agent.csrf();
  const before = (await listAuditEvents(app.db)).length;
  for (const [path, form] of [
    ['/admin/applications/static-portal', goodApplication('Changed')],
    ['/admin/applications/static-portal/disable', {}],
    ['/admin/applications/static-portal/enable', {}],
    ['/admin/applications/static-portal/delete', {}],
  ] as Array<[string, Form]>) {
    const res = await admin.agent.post(path, { ...form, csrf });
    t.equal(res.statusCode, 409, `POST ${path}: 409`);
    t.match(res.body, /read-only/, `POST ${path}: says why`);
  }
  const still = await app.services.applications.get('static-portal');
  t.equal(still.clientName, 'Static Portal');
  t.equal(still.enabled, true);
  t.equal((await listAuditEvents(app.db)).length, before, 'no event for refused changes');
});

t.test(
  'disabling an application in the admin web refuses its next authorize and drops its CORS origin at once',
  async (t) => {
    const origin = 'https://spa-disable.example.com';
    const redirectUri = `${origin}/cb`;
    const a = await app.services.applications.create(
      { clientName: 'SPA', redirectUris: [redirectUri], allowedWebOrigins: [origin] },
      { actor: 'test' },
    );
    const authorize = () =>
      app.inject({
        method: 'GET',
        url: `/api/auth/oauth2/authorize?${new URLSearchParams({
          client_id: a.clientId,
          redirect_uri: redirectUri,
          response_type: 'code',
          scope: 'openid',
          state: 's',
          code_challenge: s256Challenge('v'.repeat(43)),
          code_challenge_method: 'S256',
        })}`,
      });
    const preflight = () =>
      app.inject({
        method: 'OPTIONS',
        url: '/api/auth/oauth2/token',
        headers: { origin, 'access-control-request-method': 'POST' },
      });

    t.equal((await authorize()).statusCode, 303, 'enabled: authorize proceeds to sign-in');
    t.equal(
      (await preflight()).headers['access-control-allow-origin'],
      origin,
      'enabled: the origin passes preflight (and is cached)',
    );

    const res = await admin.agent.submit(
      `/admin/applications/${a.clientId}`,
      `/admin/applications/${a.clientId}/disable`,
    );
    t.equal(res.statusCode, 303);
    const refused = await authorize();
    t.equal(refused.statusCode, 400, 'disabled: authorize is refused');
    t.notOk(refused.headers.location, 'with no redirect to the client');
    t.match(refused.body, /invalid_client/);
    t.match(refused.body, /this application is disabled/);
    t.notOk((await preflight()).headers['access-control-allow-origin'], 'disabled: the origin fails preflight at once');
    const token = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code: 'x'.repeat(43),
      code_verifier: 'v'.repeat(43),
      client_id: a.clientId,
      redirect_uri: redirectUri,
    });
    t.equal(token.json().error, 'invalid_client', 'the token endpoint refuses it too');

    await admin.agent.submit(`/admin/applications/${a.clientId}`, `/admin/applications/${a.clientId}/enable`);
    t.equal((await authorize()).statusCode, 303, 'enabled again: authorize works');
    t.equal((await preflight()).headers['access-control-allow-origin'], origin, 'and CORS too');
  },
);

t.test('users: search, view, disable, enable, verify, revoke sessions, revoke grants, delete', async (t) => {
  const flowApp = await app.services.applications.create(
    { clientName: 'Flow', redirectUris: ['https://flow.example.com/cb'] },
    { actor: 'test' },
  );
  const bob = await app.services.users.create(
    { email: 'bob@example.com', password, name: 'Bob Builder' },
    { actor: 'test' },
  );
  const base = `/admin/users/${bob.id}`;

  const list = await admin.agent.get('/admin/users?q=bob');
  t.equal(list.statusCode, 200);
  t.match(list.body, new RegExp(`<a href="${base}">bob@example\\.com</a>`));
  t.notMatch(list.body, /normal@example\.com/, 'only matches');
  t.match((await admin.agent.get('/admin/users?q=nobody-like-this')).body, /No users match\./);
  const all = await admin.agent.get('/admin/users');
  t.match(
    all.body,
    /root@example\.com<\/a><\/td><td><\/td><td>yes<\/td><td><span class="badge on">active<\/span><\/td><td>admin<\/td>/,
    'roles are shown',
  );

  let view = await admin.agent.get(base);
  t.equal(view.statusCode, 200);
  t.match(view.body, /<h1>bob@example\.com<\/h1>/);
  t.match(view.body, /Bob Builder/);
  t.equal((await admin.agent.get('/admin/users/00000000-0000-4000-8000-000000000000')).statusCode, 404);

  // Verify.
  t.ok(hasForm(view.body, `${base}/verify`), 'unverified: a Mark verified button');
  let res = await admin.agent.submit(base, `${base}/verify`);
  t.equal(res.headers.location, `${base}?done=verified`);
  t.equal((await app.services.users.get(bob.id)).emailVerified, true);
  view = await admin.agent.get(String(res.headers.location));
  t.match(view.body, /E-mail address marked as verified\./);
  t.notOk(hasForm(view.body, `${base}/verify`), 'verified: no button');
  let audit = await events(app, 'user.updated', { userId: bob.id });
  t.equal(audit[0]!.actor, actor);
  t.same(audit[0]!.detail, { fields: ['emailVerified'] });

  // Sessions, then revoke them.
  const bobBrowser1 = new Agent(app);
  const bobBrowser2 = new Agent(app);
  await bobBrowser1.signIn('bob@example.com', password);
  await bobBrowser2.signIn('bob@example.com', password);
  t.equal((await bobBrowser1.get('/login/')).statusCode, 200, 'bob is signed in');
  view = await admin.agent.get(base);
  t.match(view.body, /Sessions \(2 active\)/);
  res = await admin.agent.submit(base, `${base}/revoke-sessions`);
  t.equal(res.headers.location, `${base}?done=sessions-revoked`);
  t.match(
    (await admin.agent.get(String(res.headers.location))).body,
    /Every session of this user was revoked\.[\s\S]*Sessions \(0 active\)/,
  );
  t.equal((await bobBrowser1.get('/login/')).statusCode, 303, 'bob is signed out in one browser');
  t.equal((await bobBrowser2.get('/login/')).statusCode, 303, 'and in the other');
  const revoked = await events(app, 'session.revoked', { userId: bob.id });
  t.equal(revoked.length, 2);
  t.ok(revoked.every((e) => e.actor === actor && e.detail.reason === 'admin'));

  // A grant (through a real code flow), then revoke it.
  const { tokens } = await obtainTokens(app, {
    clientId: flowApp.clientId,
    redirectUri: 'https://flow.example.com/cb',
    email: 'bob@example.com',
    password,
    scope: 'openid offline_access',
  });
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 200);
  view = await admin.agent.get(base);
  t.match(view.body, /Grants \(1 live\)/);
  t.match(view.body, new RegExp(`<code>${flowApp.clientId}</code>`));
  res = await admin.agent.submit(base, `${base}/revoke-grants`);
  t.equal(res.headers.location, `${base}?done=grants-revoked`);
  t.match(
    (await admin.agent.get(String(res.headers.location))).body,
    /Every grant of this user was revoked\.[\s\S]*Grants \(0 live\)/,
  );
  t.equal((await userinfo(app, tokens.access_token)).statusCode, 401, 'its access token stops working');
  const refresh = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: flowApp.clientId,
  });
  t.equal(refresh.json().error, 'invalid_grant', 'and its refresh token');
  const tokenRevoked = await events(app, 'token.revoked', { userId: bob.id });
  t.equal(tokenRevoked[0]!.actor, actor);
  t.equal(tokenRevoked[0]!.clientId, flowApp.clientId);

  // Disable, enable.
  const bobBrowser = new Agent(app);
  await bobBrowser.signIn('bob@example.com', password);
  res = await admin.agent.submit(base, `${base}/disable`);
  t.equal(res.headers.location, `${base}?done=disabled`);
  t.equal((await app.services.users.get(bob.id)).disabled, true);
  view = await admin.agent.get(String(res.headers.location));
  t.match(view.body, /<span class="badge off">disabled<\/span>/);
  t.ok(hasForm(view.body, `${base}/enable`));
  t.equal((await bobBrowser.get('/login/')).statusCode, 303, 'a disabled user is signed out');
  t.equal((await new Agent(app).signIn('bob@example.com', password)).statusCode, 401, 'and cannot sign in');
  audit = await events(app, 'user.updated', { userId: bob.id });
  t.same(audit[0]!.detail, { fields: ['disabled'] });
  t.equal(audit[0]!.actor, actor);
  res = await admin.agent.submit(base, `${base}/enable`);
  t.equal(res.headers.location, `${base}?done=enabled`);
  t.equal((await app.services.users.get(bob.id)).disabled, false);
  t.equal((await new Agent(app).signIn('bob@example.com', password)).statusCode, 303, 'enabled: can sign in again');
  t.equal(
    (await bobBrowser.get('/login/')).statusCode,
    303,
    'but the session from before the disable stays ended (issue 12, item 4)',
  );
  t.ok(
    (await events(app, 'session.revoked', { userId: bob.id })).some(
      (e) => e.actor === actor && e.detail.reason === 'user_disabled',
    ),
    'session.revoked says why',
  );
  t.equal((await events(app, 'user.updated', { userId: bob.id })).length, 3);

  // An admin cannot lock themselves out.
  const self = `/admin/users/${admin.user.id}`;
  res = await admin.agent.submit(self, `${self}/disable`);
  t.equal(res.statusCode, 409);
  t.match(res.body, /cannot disable your own account/);
  t.equal((await app.services.users.get(admin.user.id)).disabled, false);
  res = await admin.agent.post(`${self}/delete`, { csrf: await admin.agent.csrf() });
  t.equal(res.statusCode, 409);
  t.match(res.body, /cannot delete your own account/);

  // Delete, with confirmation.
  const confirm = await admin.agent.get(`${base}/delete`);
  t.equal(confirm.statusCode, 200);
  t.match(confirm.body, /<h1>Delete bob@example\.com\?<\/h1>/);
  t.equal((await app.services.users.get(bob.id)).id, bob.id, 'the confirmation deletes nothing');
  res = await admin.agent.submit(`${base}/delete`, `${base}/delete`);
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/users?done=deleted');
  await t.rejects(app.services.users.get(bob.id), { statusCode: 404 } as unknown as Error);
  // Issue 31, item 7a: the user's events stay under a pseudonym, which user.deleted names (not the id).
  t.same(await events(app, 'user.deleted', { userId: bob.id }), [], 'no event names the id any more');
  const deleted = (await events(app, 'user.deleted')).filter((e) => e.actor === actor);
  t.equal(deleted.length, 1);
  t.match(deleted[0]!.userId, /^deleted-user:/);
  t.equal((await admin.agent.get(base)).statusCode, 404);
});

t.test('signing keys: list, rotation refused while the next key is new, then done', async (t) => {
  const keys = await admin.agent.get('/admin/keys');
  t.equal(keys.statusCode, 200);
  const before = await app.services.signingKeys.list();
  const current = before.find((k) => k.state === 'current')!;
  const next = before.find((k) => k.state === 'next')!;
  t.ok(current && next, 'a current and a next key');
  for (const k of [current, next])
    t.match(
      keys.body,
      new RegExp(`<code>${k.kid}</code></td><td>${k.alg}</td><td><span class="badge[^"]*">${k.state}</span>`),
      `${k.state} key listed`,
    );

  const confirm = await admin.agent.get('/admin/keys/rotate');
  t.equal(confirm.statusCode, 200);
  t.match(confirm.body, /Rotate the signing keys\?/);
  let res = await admin.agent.submit('/admin/keys/rotate', '/admin/keys/rotate');
  t.equal(res.statusCode, 409, 'refused: the next key is too new');
  t.match(
    res.body,
    new RegExp(
      `<p class="alert" role="alert">The next key ${next.kid} was published \\d+ s ago; ` +
        'relying parties may cache the JWKS',
    ),
    'the reason is shown',
  );
  t.match(res.body, /<h1>Signing keys<\/h1>/, 'on the keys page');
  t.same(
    (await app.services.signingKeys.list()).map((k) => `${k.kid}:${k.state}`),
    before.map((k) => `${k.kid}:${k.state}`),
    'nothing rotated',
  );
  t.equal((await events(app, 'signing_key.rotated')).length, 0);

  // Old enough: it works.
  await app.db
    .updateTable('signing_keys')
    .set({ created_at: new Date(Date.now() - 30 * 24 * 3600 * 1000) })
    .where('kid', '=', next.kid)
    .execute();
  res = await admin.agent.submit('/admin/keys/rotate', '/admin/keys/rotate');
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/keys?done=rotated');
  const after = await app.services.signingKeys.list();
  t.equal(after.find((k) => k.kid === next.kid)?.state, 'current', 'next → current');
  t.equal(after.find((k) => k.kid === current.kid)?.state, 'retired', 'current → retired');
  const newNext = after.find((k) => k.state === 'next');
  t.ok(newNext && newNext.kid !== next.kid, 'a new next key');
  t.match((await admin.agent.get(String(res.headers.location))).body, /Keys rotated: the next key is now current\./);
  const rotated = await events(app, 'signing_key.rotated');
  t.equal(rotated.length, 1);
  t.equal(rotated[0]!.actor, actor);
  t.same(rotated[0]!.detail, { current: next.kid, retired: current.kid, next: newNext!.kid });

  // The promoted key signs from now on.
  await app.services.users.create({ email: 'kid@example.com', password, emailVerified: true }, { actor: 'test' });
  const kidApp = await app.services.applications.create(
    { clientName: 'Kid', redirectUris: ['https://kid.example.com/cb'] },
    { actor: 'test' },
  );
  const { tokens } = await obtainTokens(app, {
    clientId: kidApp.clientId,
    redirectUri: 'https://kid.example.com/cb',
    email: 'kid@example.com',
    password,
    scope: 'openid',
  });
  const header = JSON.parse(Buffer.from(tokens.id_token.split('.')[0]!, 'base64url').toString()) as { kid: string };
  t.equal(header.kid, next.kid, 'new ID tokens carry the promoted kid');
});

t.test('dangerous actions need a fresh password (ADMIN_FRESHNESS, default 600 s)', async (t) => {
  const fresh = await adminAgent(app, 'fresh@example.com');
  const a = await app.services.applications.create(
    { clientName: 'Fragile', redirectUris: ['https://fragile.example.com/cb'] },
    { actor: 'test' },
  );
  const u = await app.services.users.create({ email: 'fragile@example.com', password }, { actor: 'test' });
  const age = (seconds: number) =>
    app.db
      .updateTable('sessions')
      .set({ auth_time: new Date(Date.now() - seconds * 1000) })
      .where('user_id', '=', fresh.user.id)
      .execute();
  const dangerous = [
    { get: `/admin/applications/${a.clientId}/delete`, post: `/admin/applications/${a.clientId}/delete` },
    { get: `/admin/users/${u.id}/delete`, post: `/admin/users/${u.id}/delete` },
    { get: '/admin/keys/rotate', post: '/admin/keys/rotate' },
  ];

  await age(590);
  for (const d of dangerous)
    t.equal((await fresh.agent.get(d.get)).statusCode, 200, `${d.get}: password 590 s old is fresh enough`);

  await age(610);
  const csrf = await fresh.agent.csrf();
  for (const d of dangerous) {
    const expected =
      `${config.loginUrl}/sign-in?return_to=` +
      `${encodeURIComponent(`${config.adminUrl}${d.get.slice('/admin'.length)}`)}&prompt=login`;
    const get = await fresh.agent.get(d.get);
    t.equal(get.statusCode, 303, `GET ${d.get}: stale → sign in again`);
    t.equal(get.headers.location, expected, `GET ${d.get}: back to the confirmation afterwards`);
    const post = await fresh.agent.post(d.post, { csrf });
    t.equal(post.statusCode, 303, `POST ${d.post}: stale → sign in again`);
    t.equal(post.headers.location, expected, `POST ${d.post}: to the confirmation afterwards`);
  }
  t.ok(await app.services.applications.get(a.clientId), 'the application was not deleted');
  t.ok(await app.services.users.get(u.id), 'the user was not deleted');
  t.equal((await events(app, 'application.deleted', { clientId: a.clientId })).length, 0);
  t.equal(
    (await fresh.agent.get('/admin/applications')).statusCode,
    200,
    'a stale session still reaches ordinary pages',
  );
  const disable = await fresh.agent.submit(
    `/admin/applications/${a.clientId}`,
    `/admin/applications/${a.clientId}/disable`,
  );
  t.equal(disable.statusCode, 303, 'and ordinary actions');
  t.equal(disable.headers.location, `/admin/applications/${a.clientId}?done=disabled`);

  // Signing in again (the sign-in page knows who it is) returns to the confirmation, which now works.
  const get = await fresh.agent.get(dangerous[0]!.get);
  const signInUrl = new URL(String(get.headers.location));
  const page = await fresh.agent.get(signInUrl.pathname + signInUrl.search);
  t.equal(page.statusCode, 200);
  t.match(page.body, /fresh@example\.com/, 'the e-mail address is filled in');
  const signed = await fresh.agent.post('/login/sign-in', {
    ...formFields(page.body, '/login/sign-in'),
    email: 'fresh@example.com',
    password,
  });
  t.equal(signed.headers.location, `${config.adminUrl}/applications/${a.clientId}/delete`);
  const res = await fresh.agent.submit(dangerous[0]!.get, dangerous[0]!.post);
  t.equal(res.statusCode, 303);
  t.equal(res.headers.location, '/admin/applications?done=deleted');
  t.equal((await events(app, 'application.deleted', { clientId: a.clientId }))[0]?.actor, 'admin:fresh@example.com');
});

t.test(
  'CSRF: every POST route refuses a missing or wrong token, a token without its cookie, and a foreign Origin',
  async (t) => {
    const a = await app.services.applications.create(
      { clientName: 'Csrf Target', redirectUris: ['https://csrf.example.com/cb'] },
      { actor: 'test' },
    );
    const u = await app.services.users.create({ email: 'csrf-target@example.com', password }, { actor: 'test' });
    const before = (await listAuditEvents(app.db)).length;
    const csrf = await admin.agent.csrf();
    const { 'idp.csrf': _dropped, ...withoutCsrfCookie } = admin.agent.jar;
    const posts = [
      ...gatedRoutes(a.clientId, u.id).filter((r) => r.method === 'POST'),
      { route: 'POST /admin/sign-out', path: '/admin/sign-out', form: {} as Form, method: 'POST' },
    ];
    t.ok(posts.length >= 13, `${posts.length} POST routes`);
    for (const r of posts) {
      const cases: Array<[string, () => Promise<LightMyRequestResponse>, RegExp]> = [
        ['no csrf field', () => admin.agent.post(r.path, r.form), /This form has expired/],
        [
          'a wrong csrf value',
          () => admin.agent.post(r.path, { ...r.form, csrf: `${csrf.slice(0, -4)}AAAA` }),
          /This form has expired/,
        ],
        [
          'a csrf value without its cookie',
          () => admin.agent.post(r.path, { ...r.form, csrf }, {}, withoutCsrfCookie),
          /This form has expired/,
        ],
        [
          'a foreign Origin',
          () => admin.agent.post(r.path, { ...r.form, csrf }, { origin: 'https://evil.example' }),
          /sent from another site/,
        ],
        [
          'a look-alike Origin',
          () => admin.agent.post(r.path, { ...r.form, csrf }, { origin: 'http://localhost:3000.evil.example' }),
          /sent from another site/,
        ],
      ];
      for (const [what, send, message] of cases) {
        const res = await send();
        t.equal(res.statusCode, 403, `${r.route} with ${what}: 403`);
        t.match(res.body, message, `${r.route} with ${what}: says why`);
      }
    }
    t.equal((await listAuditEvents(app.db)).length, before, 'nothing happened');
    t.equal((await app.services.applications.get(a.clientId)).enabled, true);
    t.equal((await app.services.users.get(u.id)).disabled, false);
    t.equal((await admin.agent.get('/admin/applications')).statusCode, 200, 'still signed in');

    // Control: the same request with the right token and our own Origin works.
    const ok = await admin.agent.post(
      `/admin/applications/${a.clientId}/disable`,
      { csrf },
      { origin: 'http://localhost:3000' },
    );
    t.equal(ok.statusCode, 303);
    t.equal((await app.services.applications.get(a.clientId)).enabled, false);
  },
);

t.test('sign-out ends the admin session', async (t) => {
  const leaving = await adminAgent(app, 'leaving@example.com');
  const res = await leaving.agent.submit('/admin/applications', '/admin/sign-out');
  t.equal(res.statusCode, 303);
  t.equal(
    res.headers.location,
    `${config.loginUrl}/sign-in?return_to=${encodeURIComponent(`${config.adminUrl}/applications`)}`,
  );
  t.notOk(leaving.agent.jar['idp.session'], 'the cookie is cleared');
  const revoked = await events(app, 'session.revoked', { userId: leaving.user.id });
  t.equal(revoked[0]?.detail.reason, 'sign-out');
  t.equal((await leaving.agent.get('/admin/applications')).statusCode, 303, 'signed out');
});

t.test('the audit page: filters by type, user, application and UTC time; paging with "Older events"', async (t) => {
  const { app: auditApp } = await buildTestApp(t);
  const { agent, user } = await adminAgent(auditApp, 'auditor@example.com');
  const ids: string[] = [];
  for (let i = 0; i < 55; i++)
    ids.push(
      (
        await auditApp.services.applications.create(
          { clientName: `Seed ${i}`, redirectUris: [`https://seed${i}.example.com/cb`] },
          { actor: 'seed' },
        )
      ).clientId,
    );
  const other = await auditApp.services.users.create({ email: 'someone@example.com', password }, { actor: 'seed' });
  await agent.submit(`/admin/users/${other.id}`, `/admin/users/${other.id}/verify`);

  type Row = { time: string; type: string; actor: string; userId?: string; clientId?: string };
  const rows = (body: string): Row[] =>
    [
      ...body.matchAll(
        new RegExp(
          /<tr><td>(\d{4}-[^<]*)<\/td><td><code>([^<]*)<\/code><\/td><td>([^<]*)<\/td>/.source +
            /<td>(?:<a href="\/admin\/users\/([^"]+)" title="[^"]*">.*?<\/a>)?<\/td>/.source +
            /<td>(?:<a href="\/admin\/applications\/([^"]+)" title="[^"]*">[^<]*<\/a>|<code>([^<]*)<\/code>)?<\/td>/
              .source,
          'g',
        ),
      ),
    ].map((m) => ({
      time: m[1]!,
      type: m[2]!,
      actor: unescapeHtml(m[3]!),
      ...(m[4] && { userId: m[4] }),
      ...((m[5] || m[6]) && { clientId: m[5] ? decodeURIComponent(m[5]) : m[6]! }),
    }));
  const older = (body: string) => {
    const m = /<a href="(\/admin\/audit\?[^"]+)">Older events<\/a>/.exec(body);
    return m ? unescapeHtml(m[1]!) : undefined;
  };

  const all = await agent.get('/admin/audit');
  t.equal(all.statusCode, 200);
  const first = rows(all.body);
  t.equal(first.length, 50, 'a page of 50');
  t.same(
    first[0],
    { time: first[0]!.time, type: 'user.updated', actor: 'admin:auditor@example.com', userId: other.id },
    'newest first, with actor and user',
  );
  t.match(first[0]!.time, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/, 'UTC time without the T and milliseconds');
  t.match(
    all.body,
    /<option value="application\.created">application\.created<\/option>/,
    'the type filter lists the event types',
  );

  // Paging through application.created: every event once, in order.
  let url: string | undefined = '/admin/audit?type=application.created';
  const seen: string[] = [];
  for (let i = 0; url && i < 5; i++) {
    const res = await agent.get(url);
    t.equal(res.statusCode, 200);
    const page = rows(res.body);
    t.ok(
      page.every((r) => r.type === 'application.created' && r.actor === 'seed'),
      'only that type',
    );
    seen.push(...page.map((r) => r.clientId!));
    t.match(res.body, /<option value="application\.created" selected>/, 'the chosen type stays selected');
    url = older(res.body);
    if (url) t.match(url, /[?&]type=application\.created(&|$)/, 'the filter is kept on the next page');
  }
  t.same(seen, [...ids].reverse(), 'each of the 55 once, newest first, over two pages');

  const byUser = rows((await agent.get(`/admin/audit?userId=${other.id}`)).body);
  t.same(
    byUser.map((r) => r.type),
    ['user.updated', 'user.created'],
  );
  t.ok(byUser.every((r) => r.userId === other.id));
  const byClient = rows((await agent.get(`/admin/audit?clientId=${ids[3]}`)).body);
  t.same(
    byClient.map((r) => `${r.type} ${r.clientId}`),
    [`application.created ${ids[3]}`],
  );
  const byUserAndType = rows((await agent.get(`/admin/audit?userId=${user.id}&type=user.signed_in`)).body);
  t.equal(byUserAndType.length, 1, 'filters combine');

  // Time filters take datetime-local values (no zone) as UTC, whatever the server's time zone.
  const minute = (offsetMinutes: number) => new Date(Date.now() + offsetMinutes * 60_000).toISOString().slice(0, 16);
  const savedTz = process.env.TZ;
  process.env.TZ = 'Pacific/Kiritimati'; // UTC+14: a local-time reading would be off by 14 hours
  try {
    const recent = await agent.get(`/admin/audit?from=${minute(-30)}&type=application.created`);
    t.equal(recent.statusCode, 200);
    t.equal(rows(recent.body).length, 50, 'from 30 min ago (UTC): the events are in');
    t.match(
      recent.body,
      new RegExp(`<input id="a-from" type="datetime-local" name="from" value="${minute(-30).slice(0, 13)}`),
      'the value is kept',
    );
    t.match((await agent.get(`/admin/audit?from=${minute(30)}`)).body, /No events\./, 'from 30 min ahead: none');
    t.match((await agent.get(`/admin/audit?to=${minute(-30)}`)).body, /No events\./, 'to 30 min ago: none');
    t.equal(
      rows((await agent.get(`/admin/audit?to=${minute(30)}&userId=${other.id}`)).body).length,
      2,
      'to 30 min ahead: all',
    );
    t.equal(
      rows(
        (await agent.get(`/admin/audit?from=${new Date(Date.now() - 1800_000).toISOString()}&userId=${other.id}`)).body,
      ).length,
      2,
      'a full ISO time with zone works too',
    );
  } finally {
    if (savedTz === undefined) delete process.env.TZ;
    else process.env.TZ = savedTz;
  }

  const invalid = await agent.get('/admin/audit?from=yesterday');
  t.equal(invalid.statusCode, 400);
  t.match(invalid.body, /<p class="alert" role="alert">from must be a date-time/);
  const badCursor = await agent.get('/admin/audit?cursor=bm90LWEtbnVtYmVy');
  t.equal(badCursor.statusCode, 400);
  t.match((await agent.get('/admin/audit?type=no.such.type')).body, /No events\./);
});

t.test('the audit page names users and applications, full ids on hover, the detail as key: value', async (t) => {
  const { app: namedApp } = await buildTestApp(t);
  const { agent } = await adminAgent(namedApp, 'namer@example.com');
  const created = await namedApp.services.applications.create(
    { clientName: 'Named <b>App</b>', redirectUris: ['https://named.example.com/cb'] },
    { actor: 'seed' },
  );
  await namedApp.services.applications.update(
    created.clientId,
    { clientDescription: 'x', allowedWebOrigins: ['https://named.example.com'] },
    { actor: 'seed' },
  );
  const gone = await namedApp.services.applications.create(
    { clientName: 'Gone App', redirectUris: ['https://gone.example.com/cb'] },
    { actor: 'seed' },
  );
  await namedApp.services.applications.remove(gone.clientId, { actor: 'seed' });
  const person = await namedApp.services.users.create(
    { email: 'named.person@example.com', password, name: 'Named Person' },
    { actor: 'seed' },
  );

  const res = await agent.get('/admin/audit');
  t.equal(res.statusCode, 200);
  const body = res.body;
  t.match(
    body,
    `<a href="/admin/users/${person.id}" title="${person.id}">named.person@example.com</a>`,
    "the user's e-mail address, the full id on hover",
  );
  t.notMatch(body, /[0-9a-f]{8}…/, 'no shortened ids');
  t.match(
    body,
    `<a href="/admin/applications/${created.clientId}" title="${created.clientId}">Named &lt;b&gt;App&lt;/b&gt;</a>`,
    "the application's name (escaped), the client id on hover",
  );
  t.notMatch(body, /<b>App<\/b>/, 'never unescaped');
  t.match(body, `<code>${gone.clientId}</code>`, 'a deleted application keeps its client id');
  t.match(
    body,
    '<ul class="detail"><li><span class="key">fields</span>: clientDescription, allowedWebOrigins</li></ul>',
    'the detail as key: value, lists joined',
  );
  t.match(
    body,
    '<li><span class="key">clientName</span>: Named &lt;b&gt;App&lt;/b&gt;</li>',
    'detail values are escaped',
  );
  t.notMatch(body, /\{&quot;/, 'no raw JSON');
});

t.test('every admin-web change is attributed to admin:<email> in the audit API too', async (t) => {
  const res = await app.inject({
    method: 'GET',
    url: `/api/admin/audit-events?type=application.created&limit=200`,
    headers: { authorization: `Bearer ${main.config.adminApiToken}` },
  });
  t.equal(res.statusCode, 200);
  const mine = (res.json().items as Array<{ actor: string }>).filter((e) => e.actor === actor);
  t.ok(mine.length >= 1, 'the admin API shows the admin web creation with its actor');
  const types = new Set((await listAuditEvents(app.db)).filter((e) => e.actor === actor).map((e) => e.type));
  t.same(
    [...types].sort(),
    [
      'application.created',
      'application.deleted',
      'application.updated',
      'session.revoked',
      'signing_key.rotated',
      'token.revoked',
      'user.deleted',
      'user.updated',
    ],
    'each kind of action left its event',
  );
});

t.test('every logo the admin web shows is one its CSP lets the browser load', async (t) => {
  // img-src of the page's CSP: 'self', https: and data: only.
  const allowedByCsp = (src: string) => src.startsWith('https:') || src.startsWith('data:') || src.startsWith('/');
  const images = (body: string) => [...body.matchAll(/<img [^>]*src="([^"]*)"/g)].map((m) => unescapeHtml(m[1]!));
  const check = (body: string, what: string) => {
    for (const src of images(body))
      t.ok(allowedByCsp(src), `${what}: <img src="${src}"> is allowed by img-src 'self' https: data:`);
  };

  // A logo on a loopback http URL passes validation (like redirect URIs) ...
  const local = await admin.agent.submit(
    '/admin/applications/new',
    '/admin/applications',
    goodApplication('Local Logo', { clientLogoUrl: 'http://127.0.0.1:8080/logo.png' }),
  );
  t.equal(local.statusCode, 303, 'a loopback http logo URL is accepted');
  const clientId = /\/admin\/applications\/([^/]+)\/created/.exec(String(local.headers.location))![1]!;
  // ... so the pages that show it must not produce a CSP violation.
  check((await admin.agent.get(`/admin/applications/${clientId}`)).body, 'view page');
  check((await admin.agent.get(`/admin/applications/${clientId}/edit`)).body, 'edit form');

  // A form sent back for a missing field previews a logo URL that was never validated.
  const unchecked = await admin.agent.submit(
    '/admin/applications/new',
    '/admin/applications',
    goodApplication('', { clientLogoUrl: 'http://tracker.example.com/pixel.png' }),
  );
  t.equal(unchecked.statusCode, 400);
  check(unchecked.body, 'form with a missing name');
});

t.test('ADMIN_URL on another path: every page, link, redirect and the setup link follow it', async (t) => {
  const { app: other, config: otherConfig } = await buildTestApp(t, {
    env: { ADMIN_URL: 'http://localhost:3000/console' },
  });
  t.equal(otherConfig.adminUrl, 'http://localhost:3000/console');
  const link = await other.services.adminSetup.issueLink();
  t.match(link, /^http:\/\/localhost:3000\/console\/setup\?token=/);
  const setup = await new Agent(other).get(new URL(link!).pathname + new URL(link!).search);
  t.equal(setup.statusCode, 200);
  t.match(setup.body, /href="\/console\/assets\/admin\.css"/);
  t.ok(hasForm(setup.body, '/console/setup'));
  t.equal((await other.inject({ method: 'GET', url: '/admin/applications' })).statusCode, 404, 'nothing under /admin');

  await other.services.users.create({ email: 'console@example.com', password, role: 'admin' }, { actor: 'test' });
  const visitor = new Agent(other);
  const start = await visitor.get('/console/users');
  t.equal(start.statusCode, 303);
  t.equal(
    start.headers.location,
    `${otherConfig.loginUrl}/sign-in?return_to=${encodeURIComponent('http://localhost:3000/console/users')}`,
  );
  const signed = await visitor.signIn('console@example.com', password, 'http://localhost:3000/console/users');
  t.equal(signed.headers.location, 'http://localhost:3000/console/users', 'back under /console after signing in');
  const users = await visitor.get('/console/users');
  t.equal(users.statusCode, 200);
  t.match(users.body, /href="\/console\/assets\/admin\.css"/);
  t.match(users.body, /<a href="\/console\/applications"/);
  t.ok(hasForm(users.body, '/console/sign-out'));
  const created = await visitor.submit(
    '/console/applications/new',
    '/console/applications',
    goodApplication('Console App'),
  );
  t.match(String(created.headers.location), /^\/console\/applications\/[^/]+\/created$/);
  const snippet = await visitor.get(String(created.headers.location));
  t.equal(snippet.statusCode, 200);
  t.equal(textOf(snippet.body, 'discovery-url'), `${otherConfig.issuer}/.well-known/openid-configuration`);
});
