// A first-party page keeps a user signed in across reloads with the cookie token endpoints alone, in a
// real browser (Debian's headless Chromium, driven by playwright-core). The page never holds a refresh
// token: on load it POSTs grant_type=refresh_token to /api/auth/oauth2/token/cookie with credentials and
// shows the user from /api/external/me; without a session it offers "Sign in", which runs the code flow
// with PKCE (S256) and exchanges the code at the same cookie endpoint; "Sign out" calls cookie-logout.
// Two deployments of the same page:
//  - on the provider's own origin (routes added through BuildOptions.configure), and
//  - on another port of 127.0.0.1 listed in FIRST_PARTY_ORIGINS: same site, so the SameSite=Lax cookie
//    travels with fetch(credentials:'include'), and the provider must answer with
//    Access-Control-Allow-Credentials for the browser to accept the cookie and let the page read the body.
// Screenshots go to .tap/screenshots/cookie-<variant>-*.png.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, fileChromium } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
const REFRESH_TOKEN_TTL = 7 * 24 * 3600;

interface DemoConfig {
  clientId: string;
  authorizeUrl: string;
  cookieUrl: string;
  logoutUrl: string;
  meUrl: string;
  scope: string;
  base: string;
}

/** The page's script (served as /demo/app.js: the page's CSP allows no inline script). */
const APP_JS =
  `
const config = JSON.parse(document.getElementById('config').textContent);
const $ = (id) => document.getElementById(id);
const calls = [];
window.demo = { calls };
const redirectUri = location.origin + config.base + 'callback';

function show(state, text) {
  document.body.dataset.state = state;
  $('status').textContent = text;
}
function b64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
}
async function tokenCall(params) {
  const response = await fetch(config.cookieUrl, {
    method: 'POST',
    credentials: 'include',
    body: new URLSearchParams({ client_id: config.clientId, ...params }),
  });
  const body = await response.json().catch(() => null);
  calls.push({ grant: params.grant_type, status: response.status, ` +
  `keys: body ? Object.keys(body).sort() : [], error: body && body.error });
  return { status: response.status, body };
}
async function showUser(accessToken) {
  const response = await fetch(config.meUrl, { headers: { authorization: 'Bearer ' + accessToken } });
  if (!response.ok) throw new Error('/me answered ' + response.status);
  const me = await response.json();
  $('email').textContent = me.email;
  $('sign-in').hidden = true;
  $('sign-out').hidden = false;
  show('signed-in', 'Signed in as');
}
function showSignIn(text) {
  $('email').textContent = '';
  $('sign-in').hidden = false;
  $('sign-out').hidden = true;
  show('signed-out', text);
}

$('sign-in').addEventListener('click', async () => {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  const state = b64url(crypto.getRandomValues(new Uint8Array(16)));
  const challenge = b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem('pkce', JSON.stringify({ verifier, state }));
  const url = new URL(config.authorizeUrl);
  url.search = new URLSearchParams({
    client_id: config.clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: config.scope,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  }).toString();
  location.assign(url.href);
});

$('sign-out').addEventListener('click', async () => {
  const response = await fetch(config.logoutUrl, { method: 'POST', credentials: 'include' });
  calls.push({ logout: response.status });
  showSignIn('Signed out');
});

async function start() {
  if (location.pathname === config.base + 'callback') {
    const query = new URLSearchParams(location.search);
    const saved = JSON.parse(sessionStorage.getItem('pkce') || 'null');
    sessionStorage.removeItem('pkce');
    history.replaceState(null, '', config.base); // a reload must not replay the code
    if (query.get('error')) throw new Error('authorization failed: ' + query.get('error'));
    if (!saved || query.get('state') !== saved.state) throw new Error('state does not match');
    const { status, body } = await tokenCall({
      grant_type: 'authorization_code',
      code: query.get('code'),
      redirect_uri: redirectUri,
      code_verifier: saved.verifier,
    });
    if (status !== 200) throw new Error('the code exchange answered ' + status + ' ' + (body && body.error));
    return showUser(body.access_token);
  }
  const { status, body } = await tokenCall({ grant_type: 'refresh_token' });
  if (status === 200) return showUser(body.access_token);
  if (status === 401) return showSignIn('Not signed in');
  throw new Error('the refresh answered ' + status + ' ' + (body && body.error));
}
start()
  .catch((error) => show('error', 'Error: ' + error.message))
  .finally(() => { document.body.dataset.ready = 'true'; });
`;

function demoHtml(config: DemoConfig): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>First-party demo</title></head>
<body>
<h1>First-party demo</h1>
<p><span id="status">Loading…</span> <strong id="email"></strong></p>
<button id="sign-in" type="button" hidden>Sign in</button>
<button id="sign-out" type="button" hidden>Sign out</button>
<script type="application/json" id="config">${json}</script>
<script src="${config.base}app.js"></script>
</body>
</html>`;
}

interface Asset {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The demo's files: /demo/, /demo/callback, /demo/app.js, and a probe page under the refresh cookie's
 * path (a page there would see the cookie in document.cookie if it were not HttpOnly).
 */
function demoAsset(pathname: string, config: DemoConfig, connectSrc: string): Asset | undefined {
  const csp =
    "default-src 'none'; script-src 'self'; " +
    `connect-src ${connectSrc}; ` +
    "base-uri 'none'; frame-ancestors 'none'";
  const html = {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-security-policy': csp,
  };
  if (pathname === config.base || pathname === `${config.base}callback`)
    return { status: 200, headers: html, body: demoHtml(config) };
  if (pathname === `${config.base}app.js`)
    return {
      status: 200,
      headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' },
      body: APP_JS,
    };
  if (pathname === '/api/auth/oauth2/token/probe')
    return { status: 200, headers: html, body: '<!doctype html><title>probe</title><p>probe</p>' };
  return undefined;
}

/** The page on a loopback port of its own: another origin, the same site as the provider. */
async function startDemoServer(t: Test, config: DemoConfig, connectSrc: () => string) {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const asset = demoAsset(url.pathname, config, connectSrc());
    if (asset) res.writeHead(asset.status, asset.headers).end(asset.body);
    else if (url.pathname === '/favicon.ico') res.writeHead(204).end();
    else res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

type Doc = { document: { cookie: string; body: { dataset: Record<string, string> } } };
type Call = { grant?: string; status?: number; keys?: string[]; error?: string | null; logout?: number };

for (const variant of ['same-origin', 'first-party-origin'] as const) {
  t.test(
    `a first-party page (${variant}) stays signed in across reloads with the cookie endpoint alone`,
    {
      timeout: 180000,
      skip: chromiumSkip,
    },
    async (t) => {
      const config: DemoConfig = {
        clientId: '',
        authorizeUrl: '',
        cookieUrl: '',
        logoutUrl: '',
        meUrl: '',
        scope: 'openid email offline_access',
        base: '/demo/',
      };
      const env = { REFRESH_TOKEN_TTL: String(REFRESH_TOKEN_TTL) };
      let ctx: Awaited<ReturnType<typeof startTestServer>>;
      let origin: string;
      if (variant === 'same-origin') {
        ctx = await startTestServer(t, env, {
          configure(app) {
            for (const path of [
              config.base,
              `${config.base}callback`,
              `${config.base}app.js`,
              '/api/auth/oauth2/token/probe',
            ]) {
              app.get(path, async (_request, reply) => {
                const asset = demoAsset(path, config, "'self'")!;
                return reply.code(asset.status).headers(asset.headers).send(asset.body);
              });
            }
          },
        });
        origin = ctx.baseUrl;
      } else {
        let providerOrigin = '';
        origin = await startDemoServer(t, config, () => providerOrigin);
        ctx = await startTestServer(t, { ...env, FIRST_PARTY_ORIGINS: origin });
        providerOrigin = ctx.baseUrl;
        t.not(origin, ctx.baseUrl, 'the page is on another origin');
      }
      Object.assign(config, {
        authorizeUrl: `${ctx.issuer}/oauth2/authorize`,
        cookieUrl: `${ctx.issuer}/oauth2/token/cookie`,
        logoutUrl: `${ctx.issuer}/oauth2/token/cookie-logout`,
        meUrl: `${ctx.baseUrl}/api/external/me`,
      });
      const application = await ctx.app.services.applications.create(
        {
          clientName: 'First-party Demo',
          redirectUris: [`${origin}/demo/callback`],
          ...(variant === 'first-party-origin' ? { allowedWebOrigins: [origin] } : {}),
          allowedScopes: ['openid', 'email', 'offline_access'],
        },
        { actor: 'test' },
      );
      config.clientId = application.clientId;
      const email = `cookie-${randomBytes(4).toString('hex')}@example.com`;
      const password = 'a cookie-kept passphrase';
      await ctx.app.services.users.create(
        { email, password, name: 'Cora Cookie', emailVerified: true },
        { actor: 'test' },
      );
      const demoUrl = `${origin}/demo/`;

      const browser: Browser = await fileChromium();
      const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
      t.teardown(() => context.close());
      const page: Page = await context.newPage();
      page.setDefaultTimeout(30000);
      page.setDefaultNavigationTimeout(60000);

      // Console errors (CSP violations land there), uncaught page errors and failed requests.
      // The refresh without a cookie answers 401 by design; Chromium logs each such answer as
      // "Failed to load resource"; they are counted separately and matched against the page's calls.
      const consoleErrors: string[] = [];
      const refused401: string[] = [];
      page.on('console', (msg) => {
        if (msg.type() !== 'error' && msg.type() !== 'warning') return;
        const source = msg.location().url;
        if (new URL(source || 'about:blank').pathname === '/favicon.ico' && /status of 404/.test(msg.text())) return;
        if (source === config.cookieUrl && /status of 401/.test(msg.text())) {
          refused401.push(msg.text());
          return;
        }
        consoleErrors.push(`${msg.type()}: ${msg.text()} [source ${source}] (page ${page.url()})`);
      });
      page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
      const failedRequests: string[] = [];
      const cookieEndpointAnswers: Array<{
        status: number;
        allowCredentials: string | undefined;
        allowOrigin: string | undefined;
      }> = [];
      let authorizeRequests = 0;
      page.on('request', (req) => {
        const url = new URL(req.url());
        if (`${url.origin}${url.pathname}` === config.authorizeUrl) authorizeRequests++;
      });
      page.on('requestfailed', (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`));
      page.on('response', (res) => {
        if (res.url() === config.cookieUrl) {
          const headers = res.headers();
          cookieEndpointAnswers.push({
            status: res.status(),
            allowCredentials: headers['access-control-allow-credentials'],
            allowOrigin: headers['access-control-allow-origin'],
          });
          if (res.status() === 401) return;
        }
        if (res.status() >= 400 && new URL(res.url()).pathname !== '/favicon.ico')
          failedRequests.push(`${res.url()}: HTTP ${res.status()}`);
      });

      mkdirSync(screenshots, { recursive: true });
      const shot = (name: string) =>
        page.screenshot({ path: join(screenshots, `cookie-${variant}-${name}.png`), fullPage: true });
      const ready = () => page.locator('body[data-ready=true]').waitFor();
      const state = () => page.evaluate(() => (globalThis as unknown as Doc).document.body.dataset.state);
      const calls = () => page.evaluate(() => (globalThis as unknown as { demo: { calls: Call[] } }).demo.calls);
      const refreshCookie = async () => (await context.cookies()).find((c) => c.name === 'idp.refresh');
      const documentCookie = () => page.evaluate(() => (globalThis as unknown as Doc).document.cookie);

      // 1. First visit: no cookie, the refresh is refused with 401 invalid_grant, "Sign in" is offered.
      await page.goto(demoUrl);
      await ready();
      t.equal(await state(), 'signed-out', 'without a cookie the page is signed out');
      t.same(
        await calls(),
        [{ grant: 'refresh_token', status: 401, keys: ['error', 'error_description'], error: 'invalid_grant' }],
        'the refresh without a cookie is 401 invalid_grant, readable by the page',
      );
      await t.resolves(page.getByRole('button', { name: 'Sign in' }).waitFor(), 'a Sign in button is shown');
      await shot('1-signed-out');

      // 2. Sign in: PKCE authorize → hosted sign-in → consent → /demo/callback → code at the cookie endpoint.
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.toString().startsWith(`${ctx.baseUrl}/login/sign-in?request=`));
      t.equal(authorizeRequests, 1, 'the page went to the authorization endpoint');
      await page.getByLabel('E-mail address').fill(email);
      await page.getByLabel('Password', { exact: true }).fill(password);
      await shot('2-hosted-sign-in');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL((u) => u.toString().startsWith(`${ctx.baseUrl}/login/consent?request=`));
      await t.resolves(
        page.getByRole('heading', { name: 'First-party Demo wants to' }).waitFor(),
        'the consent page is shown',
      );
      await shot('3-consent');
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL(demoUrl); // the callback replaced its URL with /demo/
      await ready();
      t.equal(
        await state(),
        'signed-in',
        `after the callback the page is signed in: ${await page.locator('#status').innerText()}`,
      );
      t.equal(await page.locator('#email').innerText(), email, 'the page shows the e-mail from /api/external/me');
      const exchange = await calls();
      t.same(
        exchange,
        [
          {
            grant: 'authorization_code',
            status: 200,
            keys: ['access_token', 'expires_in', 'id_token', 'scope', 'token_type'],
            error: null,
          },
        ],
        'the code is exchanged at the cookie endpoint; the JSON holds no refresh_token',
      );
      await shot('4-signed-in');

      // The refresh token lives in the cookie only: HttpOnly, on the token path, SameSite=Lax, not Secure on http.
      const first = await refreshCookie();
      t.ok(first, 'the refresh cookie is set');
      t.equal(first?.httpOnly, true, 'HttpOnly');
      t.equal(first?.path, '/api/auth/oauth2/token', 'Path=/api/auth/oauth2/token');
      t.equal(first?.sameSite, 'Lax', 'SameSite=Lax');
      t.equal(first?.secure, false, 'not Secure on http (COOKIE_SECURE follows BASE_URL)');
      t.equal(first?.domain, '127.0.0.1', 'a host-only cookie of the provider');
      const lifetime = (first?.expires ?? 0) - Date.now() / 1000;
      t.ok(
        lifetime > REFRESH_TOKEN_TTL - 300 && lifetime <= REFRESH_TOKEN_TTL + 5,
        `Max-Age is REFRESH_TOKEN_TTL (${Math.round(lifetime)} s left)`,
      );
      t.notOk((await documentCookie()).includes('idp.refresh'), 'the page cannot see the refresh cookie');
      t.notOk((await documentCookie()).includes(first!.value), 'nor its value');

      // 3. Two reloads: each one refreshes through the cookie alone (no authorize, no sign-in) and rotates it.
      const seen = [first!.value];
      for (const round of [1, 2]) {
        await page.reload();
        await ready();
        t.equal(page.url(), demoUrl);
        t.equal(await state(), 'signed-in', `reload ${round}: still signed in`);
        t.equal(await page.locator('#email').innerText(), email, `reload ${round}: the e-mail is shown`);
        t.same(
          await calls(),
          [
            {
              grant: 'refresh_token',
              status: 200,
              keys: ['access_token', 'expires_in', 'id_token', 'scope', 'token_type'],
              error: null,
            },
          ],
          `reload ${round}: one refresh via the cookie, no refresh_token in the JSON`,
        );
        const rotated = await refreshCookie();
        t.ok(rotated && !seen.includes(rotated.value), `reload ${round}: the refresh cookie rotated`);
        t.equal(rotated?.httpOnly, true);
        t.equal(rotated?.path, '/api/auth/oauth2/token');
        t.notOk(
          (await documentCookie()).includes(rotated!.value),
          `reload ${round}: the page cannot read the new value`,
        );
        seen.push(rotated!.value);
      }
      t.equal(authorizeRequests, 1, 'the reloads never went back to the authorization endpoint');
      await shot('5-after-reloads');

      // Even a page of the same host under the cookie's path cannot read it: it is HttpOnly.
      const probe = await context.newPage();
      await probe.goto(`${origin}/api/auth/oauth2/token/probe`);
      t.notOk(
        (await probe.evaluate(() => (globalThis as unknown as Doc).document.cookie)).includes('idp.refresh'),
        'a page under the cookie path sees no refresh cookie',
      );
      await probe.close();

      // Cross-origin, the browser accepts the cookie and lets the page read answers only with credentials allowed.
      if (variant === 'first-party-origin') {
        t.ok(
          cookieEndpointAnswers.length >= 4 &&
            cookieEndpointAnswers.every((a) => a.allowOrigin === origin && a.allowCredentials === 'true'),
          'every cookie-endpoint answer allows the page origin with credentials',
        );
      }

      // 4. Sign out: cookie-logout answers 204 and clears the cookie; the reload shows "Sign in" again.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.locator('body[data-state=signed-out]').waitFor();
      t.same((await calls()).at(-1), { logout: 204 }, 'cookie-logout answered 204');
      t.equal(await refreshCookie(), undefined, 'the refresh cookie is gone');
      await page.reload();
      await ready();
      t.equal(await state(), 'signed-out', 'after sign-out a reload shows the signed-out page');
      t.same(
        await calls(),
        [{ grant: 'refresh_token', status: 401, keys: ['error', 'error_description'], error: 'invalid_grant' }],
        'no cookie: 401 invalid_grant',
      );
      await t.resolves(page.getByRole('button', { name: 'Sign in' }).waitFor(), 'Sign in is offered again');
      t.equal(await page.locator('#email').innerText(), '', 'no e-mail is shown');
      await shot('6-signed-out-again');

      // The last cookie value was revoked server-side too, not only dropped by the browser.
      const replay = await fetch(config.cookieUrl, {
        method: 'POST',
        headers: { origin, cookie: `idp.refresh=${seen.at(-1)!}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'refresh_token', client_id: application.clientId }),
      });
      t.equal(
        ((await replay.json()) as { error?: string }).error,
        'invalid_grant',
        'the signed-out refresh token no longer refreshes',
      );

      t.equal(
        refused401.length,
        2,
        'the only console errors about the cookie endpoint are the two 401 refusals by design',
      );
      t.same(consoleErrors, [], 'no console errors or warnings (a CSP violation would be one)');
      t.same(failedRequests, [], 'no failed requests besides the 401 refreshes without a cookie');
      t.comment(`screenshots in ${screenshots}`);
    },
  );
}
