// docs/integration.md's examples run as written, against a real server, each block taken from between its
// <!-- example:NAME:start/end --> markers. Only what the document tells the reader to set is set: IDP_URL
// and APP_URL in the environment (the server and the "application" listen on free ports), and the two
// constants at the top of the browser pages. The test is the person at the browser: it opens the printed
// authorization URL, signs in and allows (over HTTP for the Node.js and curl examples, in headless
// Chromium for the browser pages, whose CDN imports are answered from node_modules with page.route).
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, fileChromium } from '../helpers/chromium.js';
import { freePort, markedBlock, ROOT, runProgram, signInAndConsent } from '../helpers/programs.js';

t.setTimeout(300_000);
const doc = readFileSync(join(ROOT, 'docs', 'integration.md'), 'utf8');
const example = (name: string) => markedBlock(doc, `example:${name}`);

t.test('every example block in the document is run by this test or protect-api-docs', async (t) => {
  const names = [...doc.matchAll(/<!-- example:([\w-]+):start -->/g)].map((m) => m[1]);
  const here = ['curl', 'oauth4webapi-browser', 'oidc-client-ts', 'openid-client', 'register'];
  // Section 9, "Protect your own API": run by test/e2e/protect-api-docs.test.ts.
  const protectApi = ['protect-api-helper', 'protect-api-server', 'register-api'];
  t.same(names.sort(), [...here, ...protectApi].sort());
});

const ADMIN_API_TOKEN = 'integration-docs-admin-token-0123456789abcdef';
const ctx = await startTestServer(t, { ADMIN_API_TOKEN });
const appPort = await freePort();
const env = { IDP_URL: ctx.baseUrl, APP_URL: `http://127.0.0.1:${appPort}` };

let users = 0;
/** A verified person of their own for each example (consent is asked once per person and application). */
async function person() {
  const email = `reader${++users}@example.com`;
  const password = 'correct horse battery staple';
  await ctx.app.services.users.create(
    { email, password, name: `Reader ${users}`, emailVerified: true, permissions: ['docs:read'] },
    { actor: 'test' },
  );
  return { email, password };
}

t.test('register: the admin API call creates my-app', async (t) => {
  const run = runProgram(t, 'docs-register.sh', example('register'), 'bash', { ...env, ADMIN_API_TOKEN });
  t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
  const created = JSON.parse(run.output());
  t.equal(created.clientId, 'my-app');
  t.same(created.redirectUris, [`${env.APP_URL}/callback`, `${env.APP_URL}/`]);
  t.same(created.allowedWebOrigins, [env.APP_URL]);
});

t.test('openid-client: sign-in, claims, UserInfo, /api/external/me, rotation, reuse', async (t) => {
  const { email, password } = await person();
  const run = runProgram(t, 'docs-openid-client.mjs', example('openid-client'), 'node', env);
  const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
  const callback = await signInAndConsent(ctx.baseUrl, url!, `${env.APP_URL}/callback`, email, password);
  const answer = await fetch(callback);
  t.match(await answer.text(), /go back to the terminal/);
  t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
  const out = run.output();
  t.match(out, /ID token claims:[\s\S]*aud: 'my-app'/);
  t.match(out, new RegExp(`UserInfo:[\\s\\S]*email: '${email}'`));
  t.match(out, new RegExp(`/api/external/me: \\{[\\s\\S]*email: '${email}'`));
  t.match(out, 'Refreshed; new refresh token: true');
  t.match(out, 'Reusing the old refresh token: invalid_grant');
});

t.test('curl walk-through: every step by hand', async (t) => {
  const { email, password } = await person();
  const run = runProgram(t, 'docs-walk-through.sh', example('curl'), 'bash', env);
  const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
  const callback = await signInAndConsent(ctx.baseUrl, url!, `${env.APP_URL}/callback`, email, password);
  run.child.stdin.end(`${callback}\n`);
  t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
  const out = run.output();
  t.match(out, 'Granted scope: openid profile email offline_access');
  t.match(out, /ID token claims: \{[\s\S]*"aud": "my-app"/);
  t.match(out, new RegExp(`UserInfo: \\{.*"email":"${email}"`));
  t.match(out, new RegExp(`/api/external/me: \\{.*"email":"${email}"`));
  t.match(out, 'Refreshed: a new refresh token');
  t.match(out, /Reusing the old refresh token: \{"error":"invalid_grant"/);
});

t.test('curl walk-through: an error redirect stops it with the error', async (t) => {
  const run = runProgram(t, 'docs-walk-through-denied.sh', example('curl'), 'bash', env);
  const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
  const state = new URL(url!).searchParams.get('state');
  run.child.stdin.end(`${env.APP_URL}/callback?error=access_denied&error_description=denied&state=${state}\n`);
  t.equal(await run.exit, 1);
  t.match(run.output(), 'Authorization failed: access_denied denied');
});

// The CDN URLs the pages import, answered with this checkout's copies (the machine has no internet).
const CDN: Record<string, { file: string; pkg: string }> = {
  'https://cdn.jsdelivr.net/npm/oauth4webapi@3/build/index.js': {
    file: 'node_modules/oauth4webapi/build/index.js',
    pkg: 'oauth4webapi',
  },
  'https://cdn.jsdelivr.net/npm/oidc-client-ts@3/dist/browser/oidc-client-ts.min.js': {
    file: 'node_modules/oidc-client-ts/dist/browser/oidc-client-ts.min.js',
    pkg: 'oidc-client-ts',
  },
};

for (const name of ['oauth4webapi-browser', 'oidc-client-ts']) {
  t.test(`${name}: the page in headless Chromium`, { skip: chromiumSkip, timeout: 180_000 }, async (t) => {
    const { email, password } = await person();
    const html = example(name).replace("const IDP_URL = 'http://localhost:3000';", `const IDP_URL = '${ctx.baseUrl}';`);
    t.match(html, `const IDP_URL = '${ctx.baseUrl}';`, 'the reader sets IDP_URL');
    const cdnUrls = [...html.matchAll(/https:\/\/cdn\.jsdelivr\.net\/[^'"]+/g)].map((m) => m[0]);
    t.ok(cdnUrls.length === 1 && CDN[cdnUrls[0]!], `imports one known CDN URL: ${cdnUrls}`);
    const { pkg } = CDN[cdnUrls[0]!]!;
    const installed = JSON.parse(readFileSync(join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')).version;
    t.match(cdnUrls[0], `${pkg}@${installed.split('.')[0]}/`, 'the CDN URL names the major version tested here');

    // The reader's static file server on APP_URL: the page at /.
    const server = createServer((req, res) => {
      if (new URL(req.url ?? '/', env.APP_URL).pathname !== '/') return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    });
    await new Promise<void>((resolve) => server.listen(appPort, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

    const browser = await fileChromium();
    const context = await browser.newContext();
    t.teardown(() => context.close());
    await context.route('https://cdn.jsdelivr.net/**', (route) => {
      const entry = CDN[route.request().url()];
      if (!entry) return route.fulfill({ status: 404, body: 'not in this test' });
      return route.fulfill({
        status: 200,
        headers: { 'content-type': 'text/javascript; charset=utf-8', 'access-control-allow-origin': '*' },
        body: readFileSync(join(ROOT, entry.file), 'utf8'),
      });
    });
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (msg) => {
      if (msg.type() === 'error' && !/favicon/.test(msg.location().url)) problems.push(msg.text());
    });
    await page.goto(`${env.APP_URL}/`);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/login\/sign-in\?request=/);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel(/^Password/).fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/login\/consent\?request=/);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`${env.APP_URL}/`);
    const output = page.locator('#output');
    await output.filter({ hasText: '/api/external/me' }).waitFor();
    let text = await output.innerText();
    t.match(text, /ID token claims/);
    t.match(text, '"aud": "my-app"');
    t.match(text, `"email": "${email}"`);
    t.notMatch(text, /Error/);
    t.equal(page.url(), `${env.APP_URL}/`, 'the code is gone from the address bar');
    await page.getByRole('button', { name: 'Refresh' }).click();
    await output.filter({ hasText: 'Refreshed' }).waitFor();
    text = await output.innerText();
    t.match(text, 'Refreshed; new refresh token: true');
    t.same(problems, [], 'no errors in the page');
  });
}

// Section 7's tables, answer by answer (what a client sees), so that the document cannot drift.
t.test('the documented errors are what the server answers', async (t) => {
  const authorize = (params: Record<string, string>, accept = 'text/html') =>
    fetch(`${ctx.issuer}/oauth2/authorize?${new URLSearchParams(params)}`, { redirect: 'manual', headers: { accept } });
  const good = {
    client_id: 'my-app',
    redirect_uri: `${env.APP_URL}/callback`,
    response_type: 'code',
    scope: 'openid',
    state: 'st',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  };
  const redirected = async (params: Record<string, string>) => {
    const res = await authorize({ ...good, ...params });
    t.equal(res.status, 303, `redirected: ${JSON.stringify(params)}`);
    const location = new URL(res.headers.get('location')!);
    t.equal(location.origin + location.pathname, `${env.APP_URL}/callback`);
    t.equal(location.searchParams.get('state'), 'st');
    t.equal(location.searchParams.get('iss'), ctx.issuer);
    return location.searchParams.get('error');
  };
  t.equal((await authorize({ ...good, client_id: 'unknown' })).status, 400, 'unknown client: a 400 page');
  const page = await authorize({ ...good, redirect_uri: `${env.APP_URL}/other` });
  t.equal(page.status, 400, 'unregistered redirect URI: a 400 page');
  t.match(page.headers.get('content-type'), /text\/html/);
  t.equal((await authorize({ ...good, client_id: 'unknown' }, 'application/json')).status, 400, 'or JSON');
  t.equal(await redirected({ code_challenge_method: 'plain' }), 'invalid_request');
  t.equal(await redirected({ code_challenge: 'short' }), 'invalid_request');
  t.equal(await redirected({ response_type: 'token' }), 'unsupported_response_type');
  t.equal(await redirected({ scope: 'profile' }), 'invalid_scope', 'no openid');
  t.equal(await redirected({ scope: 'openid admin' }), 'invalid_scope', 'an unknown scope');
  t.equal(await redirected({ request: 'x' }), 'request_not_supported');
  t.equal(await redirected({ prompt: 'none' }), 'login_required', 'prompt=none without a session');

  const token = async (form: Record<string, string>, headers: Record<string, string> = {}) => {
    const res = await fetch(`${ctx.issuer}/oauth2/token`, { method: 'POST', body: new URLSearchParams(form), headers });
    t.equal(res.headers.get('cache-control'), 'no-store');
    return { status: res.status, error: ((await res.json()) as { error: string }).error };
  };
  const code = { grant_type: 'authorization_code', client_id: 'my-app', redirect_uri: good.redirect_uri };
  const verifier = { code_verifier: 'a'.repeat(43) };
  t.same(await token({ ...code, ...verifier }), { status: 400, error: 'invalid_request' }, 'no code');
  t.same(await token({ ...code, ...verifier, code: 'nope' }), { status: 400, error: 'invalid_grant' }, 'bad code');
  t.same(await token({ ...code, ...verifier, code: 'x', client_id: 'unknown' }), {
    status: 401,
    error: 'invalid_client',
  });
  t.same(await token({ ...code, ...verifier, code: 'x', client_secret: 's' }), {
    status: 401,
    error: 'invalid_client',
  });
  t.same(await token({ grant_type: 'password', client_id: 'my-app' }), {
    status: 400,
    error: 'unsupported_grant_type',
  });
  const refresh = { grant_type: 'refresh_token', client_id: 'my-app', refresh_token: 'nope' };
  t.same(await token(refresh), { status: 400, error: 'invalid_grant' }, 'unknown refresh token');

  for (const path of ['/api/auth/oauth2/userinfo', '/api/external/me']) {
    const call = async (query = '', headers: Record<string, string> = {}) => {
      const res = await fetch(`${ctx.baseUrl}${path}${query}`, { headers });
      return {
        status: res.status,
        www: res.headers.get('www-authenticate'),
        body: (await res.json()) as { error?: string },
      };
    };
    // /api/external/* names its protected-resource metadata (RFC 9728) in every challenge; UserInfo does not.
    const rm = path.endsWith('/me')
      ? [`resource_metadata="${ctx.baseUrl}/.well-known/oauth-protected-resource/api/external"`]
      : [];
    const www = (...attributes: string[]) => `Bearer ${[...attributes, ...rm].join(', ')}`.trim();
    t.same(await call(), { status: 401, www: www(), body: { error: 'UNAUTHORIZED' } }, `${path}: no header`);
    t.same(
      await call('', { authorization: 'Bearer nope' }),
      { status: 401, www: www('error="invalid_token"'), body: { error: 'UNAUTHORIZED' } },
      `${path}: a bad token`,
    );
    const twice = await call('?access_token=nope', { authorization: 'Bearer nope' });
    t.match(twice.www, /^Bearer error="invalid_request"/, `${path}: a token sent twice`);
    t.same([twice.status, twice.body.error], path.endsWith('/me') ? [401, 'UNAUTHORIZED'] : [400, 'invalid_request']);
  }
  const unknownApp = await fetch(`${ctx.baseUrl}/api/public/applications/unknown`);
  t.same([unknownApp.status, await unknownApp.json()], [404, { error: 'NOT_FOUND' }]);
  t.ok(unknownApp.headers.get('x-request-id'), 'x-request-id on every answer');
});
