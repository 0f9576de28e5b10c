// A first-party single-page app that keeps its user signed in across reloads with the cookie token
// endpoint alone: the refresh token lives in an HttpOnly cookie of the provider, never in JavaScript.
// The page is served from another port of 127.0.0.1 (same site, other origin) listed in FIRST_PARTY_ORIGINS,
// so it reads the cookie endpoint's answers through CORS with credentials.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';

// Evaluated in the page (no DOM types in this project's compilation).
interface PageGlobals {
  document: { body: { dataset: Record<string, string | undefined> }; cookie: string };
  lastTokenResponse: Record<string, unknown>;
}

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

// The whole app: no framework, no token storage other than memory, PKCE verifier in sessionStorage.
const APP_JS = `
const { issuer, apiBase, clientId } = window.APP;
const redirectUri = location.origin + '/callback';
const status = document.getElementById('status');
const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const cookieToken = (params) => fetch(issuer + '/oauth2/token/cookie', {
  method: 'POST', credentials: 'include',
  headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params),
});
function show(state, text) {
  status.textContent = text;
  document.body.dataset.state = state;
  document.getElementById('sign-in').hidden = state !== 'signed-out';
  document.getElementById('sign-out').hidden = state !== 'signed-in';
}
async function showMe(accessToken) {
  const me = await fetch(apiBase + '/api/external/me', { headers: { authorization: 'Bearer ' + accessToken } });
  if (!me.ok) return show('error', 'me failed: ' + me.status);
  const claims = await me.json();
  show('signed-in', 'Signed in as ' + claims.email);
}
document.getElementById('sign-in').addEventListener('click', async () => {
  const verifier = b64url(crypto.getRandomValues(new Uint8Array(32)));
  sessionStorage.setItem('verifier', verifier);
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  location.href = issuer + '/oauth2/authorize?' + new URLSearchParams({
    client_id: clientId, redirect_uri: redirectUri, response_type: 'code', scope: 'openid email offline_access',
    code_challenge: challenge, code_challenge_method: 'S256',
  });
});
document.getElementById('sign-out').addEventListener('click', async () => {
  const res = await fetch(issuer + '/oauth2/token/cookie-logout', { method: 'POST', credentials: 'include' });
  show('signed-out', 'Signed out (' + res.status + ')');
});
(async () => {
  if (location.pathname === '/callback') {
    const code = new URLSearchParams(location.search).get('code');
    const res = await cookieToken({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: clientId, code_verifier: sessionStorage.getItem('verifier') });
    const body = await res.json();
    window.lastTokenResponse = body;
    history.replaceState(null, '', '/');
    if (!res.ok) return show('error', 'code exchange failed: ' + body.error);
    return showMe(body.access_token);
  }
  const res = await cookieToken({ grant_type: 'refresh_token', client_id: clientId });
  const body = await res.json();
  window.lastTokenResponse = body;
  if (res.ok) return showMe(body.access_token);
  show('signed-out', 'Not signed in (' + res.status + ' ' + body.error + ')');
})();
`;

async function startAppServer(config: () => { issuer: string; apiBase: string; clientId: string }) {
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/app.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      return res.end(`window.APP = ${JSON.stringify(config())};\n${APP_JS}`);
    }
    if (url.pathname === '/' || url.pathname === '/callback') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': "default-src 'self'; connect-src *; script-src 'self'" });
      return res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>First-party app</title></head>
<body><h1>First-party app</h1><p id="status">Loading…</p><button id="sign-in" hidden>Sign in</button><button id="sign-out" hidden>Sign out</button>
<script src="/app.js"></script></body></html>`);
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

t.test('a first-party page stays signed in across reloads with the cookie endpoint alone', {
  timeout: 180000,
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`,
}, async (t) => {
  let appConfig = { issuer: '', apiBase: '', clientId: '' };
  const { server: appServer, origin } = await startAppServer(() => appConfig);
  t.teardown(() => new Promise<void>((resolve) => appServer.close(() => resolve())));
  const ctx = await startTestServer(t, { FIRST_PARTY_ORIGINS: origin });
  const application = await ctx.app.services.applications.create(
    { clientName: 'First-party App', redirectUris: [`${origin}/callback`], allowedWebOrigins: [origin], allowedScopes: ['openid', 'email', 'offline_access'] },
    { actor: 'test' },
  );
  appConfig = { issuer: ctx.issuer, apiBase: ctx.baseUrl, clientId: application.clientId };
  const email = `cookie-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'a long enough passphrase';
  await ctx.app.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    timeout: 90000,
  });
  t.teardown(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 800, height: 600 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  mkdirSync(screenshots, { recursive: true });
  const shot = (name: string) => page.screenshot({ path: join(screenshots, `cookie-session-${name}.png`), fullPage: true });
  const stateIs = (state: string) => page.waitForFunction((s) => (globalThis as unknown as PageGlobals).document.body.dataset.state === s, state);
  const refreshCookie = async () => (await context.cookies(`${ctx.issuer}/oauth2/token`)).find((c) => c.name === 'idp.refresh');

  // Signed out at first: the refresh without a cookie is 401 invalid_grant, read through CORS.
  await page.goto(`${origin}/`);
  await stateIs('signed-out');
  t.match(await page.locator('#status').innerText(), /Not signed in \(401 invalid_grant\)/);
  await shot('1-signed-out');

  // Sign in: authorize → hosted sign-in → consent → callback → code exchanged at the cookie endpoint.
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/login\/sign-in\?request=/);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/login\/consent\?request=/);
  await page.getByRole('button', { name: 'Allow' }).click();
  await stateIs('signed-in');
  t.equal(await page.locator('#status').innerText(), `Signed in as ${email}`);
  t.equal(new URL(page.url()).pathname, '/', 'the callback cleaned its URL');
  const exchanged = await page.evaluate(() => (globalThis as unknown as PageGlobals).lastTokenResponse);
  t.ok(exchanged.access_token, 'the page got an access token');
  t.notOk('refresh_token' in exchanged, 'but never a refresh token');
  const first = await refreshCookie();
  t.ok(first, 'the refresh token is in the provider cookie');
  t.equal(first?.httpOnly, true, 'HttpOnly');
  t.equal(first?.path, '/api/auth/oauth2/token');
  t.equal(await page.evaluate(() => (globalThis as unknown as PageGlobals).document.cookie), '', 'the page cannot read it (nor any other cookie)');
  await shot('2-signed-in');

  // Reloads: each one refreshes through the cookie alone and rotates it.
  const seen = new Set([first!.value]);
  for (let i = 0; i < 2; i++) {
    await page.reload();
    await stateIs('signed-in');
    t.equal(await page.locator('#status').innerText(), `Signed in as ${email}`, `still signed in after reload ${i + 1}`);
    const refreshed = await page.evaluate(() => (globalThis as unknown as PageGlobals).lastTokenResponse);
    t.notOk('refresh_token' in refreshed, 'no refresh token in the refresh answer either');
    const cookie = await refreshCookie();
    t.ok(cookie && !seen.has(cookie.value), `the cookie rotated on reload ${i + 1}`);
    seen.add(cookie!.value);
  }
  await shot('3-after-reloads');
  const lastValue = (await refreshCookie())!.value;

  // Sign out: the family is revoked server-side and the cookie cleared; a reload is signed out.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await stateIs('signed-out');
  t.match(await page.locator('#status').innerText(), /Signed out \(204\)/);
  t.notOk(await refreshCookie(), 'the cookie is gone');
  await page.reload();
  await stateIs('signed-out');
  t.match(await page.locator('#status').innerText(), /Not signed in \(401 invalid_grant\)/);
  await shot('4-signed-out-again');

  // The last cookie value is dead on the server too, not just forgotten by the browser.
  const replay = await fetch(`${ctx.issuer}/oauth2/token/cookie`, {
    method: 'POST',
    headers: { origin, 'content-type': 'application/x-www-form-urlencoded', cookie: `idp.refresh=${lastValue}` },
    body: new URLSearchParams({ grant_type: 'refresh_token', client_id: application.clientId }),
  });
  t.equal(replay.status, 400);
  t.equal(((await replay.json()) as { error: string }).error, 'invalid_grant', 'the logged-out refresh token no longer refreshes');
  t.same(pageErrors, [], 'no script errors');
});
