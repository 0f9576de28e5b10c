// A single-page app on another loopback origin runs the whole code flow with PKCE in headless Chromium,
// with oauth4webapi's browser build, unmodified: discovery, the authorization request, the hosted
// sign-in and consent pages, the code exchange across origins, GET /api/external/me with the
// access token, and UserInfo through oauth4webapi's userInfoRequest (what oidc-client-ts does with
// loadUserInfo: a GET of discovery's userinfo_endpoint with the Bearer header). The browser does the
// CORS, and the test watches the network for it: the preflight
// of /me (an Authorization header needs one) and the Access-Control-Allow-Origin of the answers.
// Then what the browser must refuse: the same SPA on an unregistered origin cannot read /me or
// UserInfo, and a registered origin cannot read them with the token of an application it is not
// registered for.
// Screenshots go to .tap/screenshots/spa-*.png.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
const oauth4webapiBuild = join(root, 'node_modules', 'oauth4webapi', 'build', 'index.js');

interface SpaConfig {
  issuer: string;
  clientId: string;
  scope: string;
  meUrl: string;
}

/**
 * The SPA's one page, for `/` and `/callback`. Without a code it discovers, keeps PKCE verifier, state
 * and nonce in sessionStorage and goes to the authorization endpoint; on /callback it validates the
 * response, exchanges the code and calls /me. With `#probe=<access token>` it only tries discovery
 * and /me with that token. Every outcome is written as JSON into <pre id="result">.
 */
function spaPage(config: SpaConfig): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return (
    `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Demo SPA</title>
<style>body{font:15px system-ui,sans-serif;margin:2rem}` +
    `pre{background:#f3f4f6;padding:1rem;white-space:pre-wrap;word-break:break-all}</style>
</head>
<body>
<h1>Demo SPA</h1>
<p id="origin"></p>
<script type="module">
import * as oauth from '/oauth4webapi.js';
const config = ${json};
document.getElementById('origin').textContent = 'Running on ' + location.origin;
const issuer = new URL(config.issuer);
const client = { client_id: config.clientId };
const redirectUri = location.origin + '/callback';

function report(value) {
  const pre = document.createElement('pre');
  pre.id = 'result';
  pre.textContent = JSON.stringify(value, null, 2);
  document.body.append(pre);
}
function describe(error) {
  return { name: error?.name, message: String(error?.message ?? error), code: error?.code, ` +
    `isTypeError: error instanceof TypeError };
}
async function discover() {
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', [oauth.allowInsecureRequests]: true });
  return oauth.processDiscoveryResponse(issuer, response);
}
async function callUserInfo(as, accessToken) {
  let response;
  try {
    response = await oauth.userInfoRequest(as, client, accessToken, { [oauth.allowInsecureRequests]: true });
  } catch (error) {
    return { readable: false, error: describe(error) };
  }
  try {
    return { readable: true, status: response.status, ` +
    `body: await oauth.processUserInfoResponse(as, client, oauth.skipSubjectCheck, response) };
  } catch (error) {
    return { readable: true, status: response.status, error: describe(error) };
  }
}
async function callMe(accessToken) {
  try {
    const response = await fetch(config.meUrl, { headers: { authorization: 'Bearer ' + accessToken } });
    return { readable: true, status: response.status, body: await response.json() };
  } catch (error) {
    return { readable: false, error: describe(error) };
  }
}

const hash = new URLSearchParams(location.hash.slice(1));
try {
  if (hash.has('probe')) {
    let discovery;
    let as;
    try {
      as = await discover();
      discovery = { readable: true, issuer: as.issuer };
    } catch (error) {
      discovery = { readable: false, error: describe(error) };
    }
    const token = hash.get('probe');
    report({ mode: 'probe', origin: location.origin, discovery, me: await callMe(token), ` +
    `userinfo: as ? await callUserInfo(as, token) : undefined });
  } else if (location.pathname === '/callback') {
    const saved = JSON.parse(sessionStorage.getItem('oidc') ?? 'null');
    if (!saved) throw new Error('no authorization request in sessionStorage');
    sessionStorage.removeItem('oidc');
    const as = await discover();
    const params = oauth.validateAuthResponse(as, client, new URL(location.href), saved.state);
    const response = await oauth.authorizationCodeGrantRequest(` +
    `as, client, oauth.None(), params, redirectUri, saved.codeVerifier, {
      [oauth.allowInsecureRequests]: true,
    });
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, ` +
    `{ expectedNonce: saved.nonce, requireIdToken: true });
    const claims = oauth.getValidatedIdTokenClaims(tokens);
    report({
      mode: 'callback',
      origin: location.origin,
      tokens: { token_type: tokens.token_type, scope: tokens.scope, access_token: tokens.access_token },
      idToken: { iss: claims.iss, sub: claims.sub, aud: claims.aud, nonce: claims.nonce },
      me: await callMe(tokens.access_token),
      userinfo: await callUserInfo(as, tokens.access_token),
    });
  } else {
    const as = await discover();
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    sessionStorage.setItem('oidc', JSON.stringify({ codeVerifier, state, nonce }));
    const url = new URL(as.authorization_endpoint);
    url.searchParams.set('client_id', client.client_id);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('scope', config.scope);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(codeVerifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('state', state);
    url.searchParams.set('nonce', nonce);
    location.assign(url.href);
  }
} catch (error) {
  report({ mode: 'error', origin: location.origin, error: describe(error) });
}
</script>
</body>
</html>`
  );
}

/** The SPA's own static server on a loopback port of its own: a separate origin from the provider. */
async function startSpaServer(t: Test, config: Omit<SpaConfig, 'clientId'> & { clientId?: string }) {
  const library = readFileSync(oauth4webapiBuild);
  const state = { clientId: config.clientId ?? '' };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/' || url.pathname === '/callback') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(spaPage({ ...config, clientId: state.clientId }));
    } else if (url.pathname === '/oauth4webapi.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' });
      res.end(library);
    } else if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
    } else {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    redirectUri: `${origin}/callback`,
    setClientId: (id: string) => (state.clientId = id),
  };
}

interface Exchange {
  id: string;
  method: string;
  url: string;
  /** Chromium's resource type: Fetch, Preflight, Document… */
  type?: string;
  requestHeaders: Record<string, string>;
  /** The request went out on the wire (its raw headers were reported). */
  sent?: boolean;
  status?: number;
  responseHeaders?: Record<string, string>;
  respondedAt?: number;
  failure?: { errorText: string; corsError?: string | undefined; blockedReason?: string | undefined };
}

interface MeOutcome {
  readable: boolean;
  status?: number;
  body?: Record<string, unknown>;
  error?: { name: string; message: string; isTypeError: boolean };
}
interface SpaResult {
  mode: 'probe' | 'callback' | 'error';
  origin: string;
  error?: { name: string; message: string; code?: string; isTypeError: boolean };
  discovery?: { readable: boolean; issuer?: string };
  tokens?: { token_type: string; scope: string; access_token: string };
  idToken?: { iss: string; sub: string; aud: string | string[]; nonce: string };
  me?: MeOutcome;
  userinfo?: MeOutcome;
}

t.test(
  'a single-page app on another origin: code flow with PKCE and /api/external/me through browser CORS',
  {
    timeout: 240000,
    skip: chromiumSkip,
  },
  async (t) => {
    const ctx = await startTestServer(t);
    const meUrl = `${ctx.baseUrl}/api/external/me`;
    const userinfoUrl = `${ctx.issuer}/oauth2/userinfo`;
    const tokenUrl = `${ctx.issuer}/oauth2/token`;
    const spaConfig = { issuer: ctx.issuer, meUrl, scope: 'openid profile email' };

    // The registered SPA, an unregistered copy of it, and a second application's SPA on an origin of its own.
    const spa = await startSpaServer(t, spaConfig);
    const stranger = await startSpaServer(t, spaConfig);
    const other = await startSpaServer(t, spaConfig);
    t.not(spa.origin, ctx.baseUrl, 'the SPA is on another origin than the provider');

    const application = await ctx.app.services.applications.create(
      {
        clientName: 'Demo SPA',
        redirectUris: [spa.redirectUri],
        allowedWebOrigins: [spa.origin],
        allowedScopes: ['openid', 'profile', 'email'],
      },
      { actor: 'test' },
    );
    const otherApplication = await ctx.app.services.applications.create(
      {
        clientName: 'Other SPA',
        redirectUris: [other.redirectUri],
        allowedWebOrigins: [other.origin],
        allowedScopes: ['openid', 'profile', 'email'],
      },
      { actor: 'test' },
    );
    spa.setClientId(application.clientId);
    stranger.setClientId(application.clientId);
    other.setClientId(otherApplication.clientId);
    const email = `spa-${randomBytes(4).toString('hex')}@example.com`;
    const password = 'a long enough passphrase';
    const user = await ctx.app.services.users.create(
      { email, password, name: 'Sam Spa', emailVerified: true },
      { actor: 'test' },
    );

    const browser: Browser = await launchChromium(t);
    const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
    // No page.route()/context.route() anywhere: with interception on, Playwright answers CORS preflights
    // itself (204, allowing everything), which would hide the provider's own answers.
    const page: Page = await context.newPage();
    page.setDefaultTimeout(30000);
    page.setDefaultNavigationTimeout(60000);

    const consoleMessages: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' || msg.type() === 'warning')
        consoleMessages.push(`${msg.type()}: ${msg.text()} (page ${page.url()})`);
    });
    page.on('pageerror', (error) => consoleMessages.push(`pageerror: ${error.message}`));

    // Every request to the provider's API as Chromium's network stack saw it, over a CDP session of our
    // own: Playwright's request/response events leave out CORS preflights (they belong to no frame),
    // and the raw headers (Origin, Access-Control-*) are only in the *ExtraInfo events.
    const cdp = await context.newCDPSession(page);
    await cdp.send('Network.enable');
    const records = new Map<string, Exchange>();
    const order: Exchange[] = [];
    const record = (id: string) => {
      let r = records.get(id);
      if (!r) {
        r = { id, method: '', url: '', requestHeaders: {} };
        records.set(id, r);
        order.push(r);
      }
      return r;
    };
    const lower = (headers: Record<string, unknown>) =>
      Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), String(v)]));
    cdp.on('Network.requestWillBeSent', (e) => {
      const r = record(e.requestId);
      r.method = e.request.method;
      r.url = e.request.url.split('?')[0]!;
      if (e.type) r.type = e.type;
      Object.assign(r.requestHeaders, lower(e.request.headers));
    });
    cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
      const r = record(e.requestId);
      Object.assign(r.requestHeaders, lower(e.headers));
      r.sent = true;
    });
    cdp.on('Network.responseReceived', (e) => {
      const r = record(e.requestId);
      r.status = e.response.status;
      r.responseHeaders = { ...r.responseHeaders, ...lower(e.response.headers) };
      r.type = e.type;
      r.respondedAt = e.timestamp;
    });
    cdp.on('Network.responseReceivedExtraInfo', (e) => {
      const r = record(e.requestId);
      r.status ??= e.statusCode;
      r.responseHeaders = { ...lower(e.headers), ...r.responseHeaders };
    });
    cdp.on('Network.loadingFailed', (e) => {
      const r = record(e.requestId);
      r.failure = { errorText: e.errorText, corsError: e.corsErrorStatus?.corsError, blockedReason: e.blockedReason };
    });
    const isApi = (e: Exchange) => e.url.startsWith(`${ctx.baseUrl}/api/`);
    const since = (mark: number) => order.slice(mark).filter(isApi);
    /** Waits until the network record shows what the page already reported (CDP events may trail the DOM). */
    const until = async (predicate: () => boolean) => {
      for (let i = 0; i < 100 && !predicate(); i++) await new Promise((r) => setTimeout(r, 50));
    };

    mkdirSync(screenshots, { recursive: true });
    const shot = (name: string) => page.screenshot({ path: join(screenshots, `spa-${name}.png`), fullPage: true });
    const result = async (): Promise<SpaResult> => {
      const text = await page.locator('#result').textContent({ timeout: 30000 });
      return JSON.parse(text ?? 'null') as SpaResult;
    };

    /** Opens the SPA on `origin` in probe mode with `token` (a fresh document each time: only the hash differs). */
    const probe = async (origin: string, token: string) => {
      await page.goto('about:blank');
      await page.goto(`${origin}/#probe=${encodeURIComponent(token)}`);
      return result();
    };
    const find = (list: Exchange[], method: string, url: string) =>
      list.find((e) => e.method === method && e.url === url);

    let accessToken = '';

    await t.test('the registered SPA signs in and reads /api/external/me', async (t) => {
      // 1. The SPA discovers (cross-origin, `*`) and sends the browser to the authorization endpoint.
      let mark = order.length;
      await page.goto(`${spa.origin}/`);
      await page.waitForURL(new RegExp(`^${ctx.baseUrl}/login/sign-in\\?request=`));
      const discovery = find(since(mark), 'GET', `${ctx.issuer}/.well-known/openid-configuration`);
      t.ok(discovery, 'the SPA fetched the discovery document');
      t.equal(discovery?.type, 'Fetch');
      t.equal(discovery?.requestHeaders.origin, spa.origin, 'a cross-origin fetch from the SPA origin');
      t.equal(
        discovery?.responseHeaders?.['access-control-allow-origin'],
        '*',
        'discovery is readable from any origin',
      );
      t.notOk(
        find(since(mark), 'OPTIONS', `${ctx.issuer}/.well-known/openid-configuration`),
        'a simple request: no preflight',
      );
      await t.resolves(page.getByRole('heading', { name: 'Sign in' }).waitFor(), 'the hosted sign-in page');
      await shot('1-sign-in');

      // 2. Sign in and allow.
      await page.getByLabel('E-mail address').fill(email);
      await page.getByLabel('Password').fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(new RegExp(`^${ctx.baseUrl}/login/consent\\?request=`));
      await t.resolves(
        page.getByRole('heading', { name: 'Demo SPA wants to' }).waitFor(),
        'the consent page names the SPA',
      );
      await shot('2-consent');
      mark = order.length;
      await page.getByRole('button', { name: 'Allow' }).click();

      // 3. Back on the SPA's /callback, the SPA exchanges the code and calls /me.
      await page.waitForURL((u) => u.toString().startsWith(spa.redirectUri));
      const callback = new URL(page.url());
      t.equal(callback.searchParams.get('iss'), ctx.issuer, 'the callback carries iss (RFC 9207)');
      const outcome = await result();
      await shot('3-callback');
      t.equal(
        outcome.mode,
        'callback',
        `the SPA completed the flow${outcome.error ? `: ${JSON.stringify(outcome.error)}` : ''}`,
      );
      t.equal(outcome.origin, spa.origin);
      t.match(
        outcome.tokens,
        { token_type: /^bearer$/i, scope: 'openid profile email', access_token: /^.{20,}$/ },
        'oauth4webapi accepted the token response',
      );
      t.match(
        outcome.idToken,
        { iss: ctx.issuer, sub: user.id, aud: application.clientId },
        'and the ID token (nonce checked by oauth4webapi)',
      );
      t.same(
        outcome.me,
        { readable: true, status: 200, body: { sub: user.id, email, email_verified: true, name: 'Sam Spa' } },
        '/me answers the claims of the granted scopes',
      );
      accessToken = outcome.tokens?.access_token ?? '';

      // The network: what the browser really sent and was answered.
      await until(() =>
        Boolean(
          find(since(mark), 'GET', meUrl)?.responseHeaders && find(since(mark), 'OPTIONS', meUrl)?.responseHeaders,
        ),
      );
      const seen = since(mark);
      const tokenPost = find(seen, 'POST', tokenUrl);
      t.ok(tokenPost, 'the browser POSTed to the token endpoint');
      t.equal(tokenPost?.requestHeaders.origin, spa.origin, 'a cross-origin request from the SPA origin');
      t.equal(tokenPost?.status, 200);
      t.equal(
        tokenPost?.responseHeaders?.['access-control-allow-origin'],
        spa.origin,
        'the token response names the SPA origin',
      );
      t.notOk(tokenPost?.responseHeaders?.['access-control-allow-credentials'], 'and never allows credentials');
      t.match(tokenPost?.responseHeaders?.vary ?? '', /origin/i, 'Vary: Origin');
      t.notOk(tokenPost?.failure, 'the browser let the SPA read it');

      const preflight = find(seen, 'OPTIONS', meUrl);
      t.ok(preflight, 'the Authorization header made the browser send a preflight for /me');
      t.equal(preflight?.type, 'Preflight');
      t.equal(preflight?.requestHeaders.origin, spa.origin);
      t.equal(preflight?.requestHeaders['access-control-request-method'], 'GET');
      t.match(
        preflight?.requestHeaders['access-control-request-headers'] ?? '',
        /authorization/i,
        'asking for the Authorization header',
      );
      t.equal(preflight?.status, 204, 'the preflight is answered 204');
      t.equal(preflight?.responseHeaders?.['access-control-allow-origin'], spa.origin, 'allowing the SPA origin');
      t.match(
        preflight?.responseHeaders?.['access-control-allow-headers'] ?? '',
        /authorization/i,
        'and the Authorization header',
      );
      t.notOk(preflight?.responseHeaders?.['access-control-allow-credentials'], 'never credentials');
      const me = find(seen, 'GET', meUrl);
      t.ok(me, 'then the GET of /me itself');
      t.equal(me?.type, 'Fetch');
      t.equal(me?.status, 200);
      t.equal(me?.requestHeaders.authorization, `Bearer ${accessToken}`, 'with the access token');
      t.equal(me?.requestHeaders.origin, spa.origin);
      t.equal(me?.responseHeaders?.['access-control-allow-origin'], spa.origin, 'readable by the SPA origin');
      t.notOk(me?.failure);
      t.ok((preflight?.respondedAt ?? Infinity) < (me?.respondedAt ?? -Infinity), 'the preflight was answered first');

      // UserInfo (OIDC Core §5.3: SHOULD support CORS), as oidc-client-ts's loadUserInfo calls it.
      t.same(
        outcome.userinfo,
        { readable: true, status: 200, body: { sub: user.id, email, email_verified: true, name: 'Sam Spa' } },
        'UserInfo is readable by the SPA',
      );
      await until(() =>
        Boolean(
          find(since(mark), 'GET', userinfoUrl)?.responseHeaders &&
            find(since(mark), 'OPTIONS', userinfoUrl)?.responseHeaders,
        ),
      );
      const uiPreflight = find(since(mark), 'OPTIONS', userinfoUrl);
      t.ok(uiPreflight, 'a preflight for UserInfo');
      t.equal(uiPreflight?.status, 204);
      t.equal(uiPreflight?.responseHeaders?.['access-control-allow-origin'], spa.origin, 'allowing the SPA origin');
      t.match(uiPreflight?.responseHeaders?.['access-control-allow-headers'] ?? '', /authorization/i);
      const ui = find(since(mark), 'GET', userinfoUrl);
      t.equal(ui?.status, 200);
      t.equal(ui?.requestHeaders.authorization, `Bearer ${accessToken}`);
      t.equal(
        ui?.responseHeaders?.['access-control-allow-origin'],
        spa.origin,
        'the UserInfo answer names the SPA origin',
      );
      t.notOk(ui?.responseHeaders?.['access-control-allow-credentials']);
      t.notOk(ui?.failure);

      t.same(consoleMessages, [], 'no console errors or warnings on the way');
    });

    await t.test('the same SPA on an unregistered origin cannot read /me', async (t) => {
      t.ok(accessToken, 'a valid access token from the first part');
      consoleMessages.length = 0;
      const mark = order.length;
      const outcome = await probe(stranger.origin, accessToken);
      await shot('4-unregistered-origin');
      t.equal(outcome.mode, 'probe');
      t.equal(outcome.origin, stranger.origin);
      t.match(
        outcome.discovery,
        { readable: true, issuer: ctx.issuer },
        'discovery (`*`) is readable from anywhere: the page does reach the provider',
      );
      t.match(
        outcome.me,
        { readable: false, error: { name: 'TypeError', isTypeError: true } },
        'the fetch of /me rejects with a TypeError',
      );

      await until(() => Boolean(find(since(mark), 'GET', meUrl)?.failure));
      const preflight = find(since(mark), 'OPTIONS', meUrl);
      t.ok(preflight, 'the browser asked first (preflight)');
      t.equal(preflight?.requestHeaders.origin, stranger.origin);
      t.equal(preflight?.status, 204, 'answered 204');
      t.notOk(
        preflight?.responseHeaders?.['access-control-allow-origin'],
        'without Access-Control-Allow-Origin: the origin is in no application',
      );
      t.notOk(preflight?.responseHeaders?.['access-control-allow-headers'], 'nor anything else allowed');
      const get = find(since(mark), 'GET', meUrl);
      t.match(
        get?.failure,
        { corsError: 'PreflightMissingAllowOriginHeader' },
        'Chromium failed the GET on the preflight',
      );
      t.notOk(get?.sent, 'and never sent the token');
      t.equal(get?.status, undefined, 'no answer');
      t.ok(
        consoleMessages.some((m) => /blocked by CORS policy/.test(m) && m.includes(stranger.origin)),
        'Chromium reports the CORS block on the console',
      );

      t.match(
        outcome.userinfo,
        { readable: false, error: { name: 'TypeError', isTypeError: true } },
        'UserInfo cannot be read either',
      );
      await until(() => Boolean(find(since(mark), 'GET', userinfoUrl)?.failure));
      const uiPreflight = find(since(mark), 'OPTIONS', userinfoUrl);
      t.equal(uiPreflight?.status, 204, 'its preflight is answered 204');
      t.notOk(uiPreflight?.responseHeaders?.['access-control-allow-origin'], 'without Access-Control-Allow-Origin');
      const uiGet = find(since(mark), 'GET', userinfoUrl);
      t.match(uiGet?.failure, { corsError: 'PreflightMissingAllowOriginHeader' });
      t.notOk(uiGet?.sent, 'the token never left the browser');
    });

    await t.test("a registered origin cannot read /me with another application's token", async (t) => {
      // The other application's SPA signs in (the provider session exists: straight to its consent page).
      consoleMessages.length = 0;
      await page.goto(`${other.origin}/`);
      await page.waitForURL(new RegExp(`^${ctx.baseUrl}/login/consent\\?request=`));
      await t.resolves(page.getByRole('heading', { name: 'Other SPA wants to' }).waitFor());
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((u) => u.toString().startsWith(other.redirectUri));
      const own = await result();
      t.equal(
        own.mode,
        'callback',
        `the other SPA completed its flow${own.error ? `: ${JSON.stringify(own.error)}` : ''}`,
      );
      t.match(
        own.me,
        { readable: true, status: 200, body: { sub: user.id } },
        'on its own origin, its token reads /me',
      );
      const otherToken = own.tokens?.access_token ?? '';
      t.ok(otherToken);
      t.not(otherToken, accessToken);
      t.same(consoleMessages, [], 'no console errors on the way');

      // Control: on the registered origin, the probe with that origin's own application's token reads /me.
      const control = await probe(spa.origin, accessToken);
      t.match(
        control.me,
        { readable: true, status: 200, body: { sub: user.id, email } },
        "control: the SPA origin reads /me with its own application's token",
      );
      t.match(control.userinfo, { readable: true, status: 200, body: { sub: user.id, email } }, 'and UserInfo');

      // The other application's token from the SPA origin: the preflight passes (the origin is registered,
      // for the SPA's application) but the answer names no origin, so the browser withholds it.
      consoleMessages.length = 0;
      const mark = order.length;
      const outcome = await probe(spa.origin, otherToken);
      await shot('5-other-application-token');
      t.equal(outcome.origin, spa.origin);
      t.match(
        outcome.me,
        { readable: false, error: { name: 'TypeError', isTypeError: true } },
        'the fetch rejects with a TypeError',
      );

      await until(() => Boolean(find(since(mark), 'GET', meUrl)?.failure));
      const get = find(since(mark), 'GET', meUrl);
      t.ok(get?.sent, 'the GET was sent (the registered origin passed the preflight)');
      t.equal(get?.requestHeaders.origin, spa.origin);
      t.equal(get?.requestHeaders.authorization, `Bearer ${otherToken}`);
      t.equal(get?.status, 200, 'the provider answered');
      t.notOk(get?.responseHeaders?.['access-control-allow-origin'], 'but with no Access-Control-Allow-Origin');
      t.match(get?.failure, { corsError: 'MissingAllowOriginHeader' }, 'so Chromium withheld the answer');
      t.match(
        outcome.userinfo,
        { readable: false, error: { name: 'TypeError', isTypeError: true } },
        'UserInfo with that token is withheld the same way',
      );
      await until(() => Boolean(find(since(mark), 'GET', userinfoUrl)?.failure));
      const uiGet = find(since(mark), 'GET', userinfoUrl);
      t.equal(uiGet?.status, 200, 'the provider answered UserInfo');
      t.notOk(uiGet?.responseHeaders?.['access-control-allow-origin'], 'with no Access-Control-Allow-Origin');
      t.match(uiGet?.failure, { corsError: 'MissingAllowOriginHeader' });
      t.ok(
        consoleMessages.some((m) => /blocked by CORS policy/.test(m) && m.includes(spa.origin)),
        'Chromium reports the CORS block on the console',
      );

      // The same rule without a browser: the answer for that token names no origin but its own application's.
      const direct = await fetch(meUrl, { headers: { authorization: `Bearer ${otherToken}`, origin: spa.origin } });
      t.equal(direct.status, 200);
      t.equal(
        direct.headers.get('access-control-allow-origin'),
        null,
        "no Access-Control-Allow-Origin for an origin that is not the token's application's",
      );
      const directOwn = await fetch(meUrl, {
        headers: { authorization: `Bearer ${otherToken}`, origin: other.origin },
      });
      t.equal(directOwn.headers.get('access-control-allow-origin'), other.origin);
    });

    t.comment(`screenshots in ${screenshots}`);
  },
);
