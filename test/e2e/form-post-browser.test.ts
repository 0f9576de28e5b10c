// response_mode=form_post in headless Chromium: the authorization response reaches the client's callback as a
// POST (application/x-www-form-urlencoded: code, state, iss), never in a URL; with JavaScript on the page
// submits itself under its CSP (no violation reported), with JavaScript off the user presses its button.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

interface Received {
  method: string;
  contentType: string;
  query: string;
  body: URLSearchParams;
}

/** A relying party's callback that records every request (method, content type, query, form body). */
async function startPostCallback(t: Test) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (url.pathname === '/callback') {
        received.push({
          method: req.method ?? '',
          contentType: String(req.headers['content-type'] ?? ''),
          query: url.search,
          body: new URLSearchParams(Buffer.concat(chunks).toString('utf8')),
        });
      }
      res.writeHead(url.pathname === '/callback' ? 200 : 404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(url.pathname === '/callback' ? 'callback ok' : 'not found');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { redirectUri: `http://127.0.0.1:${port}/callback`, received };
}

/** Console errors and warnings (CSP violations land there) and uncaught errors of a page. */
function watch(page: Page): string[] {
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error' && msg.type() !== 'warning') return;
    const source = msg.location().url;
    if (new URL(source || 'about:blank').pathname === '/favicon.ico' && /status of 404/.test(msg.text())) return;
    problems.push(`${msg.type()}: ${msg.text()} [${source}]`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  return problems;
}

t.test('form_post in Chromium, with JavaScript and without', { timeout: 180000, skip: chromiumSkip }, async (t) => {
  const ctx = await startTestServer(t);
  const callback = await startPostCallback(t);
  const application = await ctx.app.services.applications.create(
    { clientName: 'Form Post App', redirectUris: [callback.redirectUri], allowedScopes: ['openid', 'email'] },
    { actor: 'test' },
  );
  const email = `fp-${randomBytes(4).toString('hex')}@example.com`;
  const password = 'a long enough passphrase';
  await ctx.app.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });
  const browser = await launchChromium(t);

  /** The client's request: form_post, PKCE, state (with characters HTML must escape). */
  const start = () => {
    const verifier = randomBytes(32).toString('base64url');
    const state = `s"<&>'${randomBytes(8).toString('base64url')}`;
    const url = new URL(`${ctx.issuer}/oauth2/authorize`);
    url.search = new URLSearchParams({
      client_id: application.clientId,
      redirect_uri: callback.redirectUri,
      response_type: 'code',
      response_mode: 'form_post',
      scope: 'openid email',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state,
      nonce: randomBytes(8).toString('hex'),
    }).toString();
    return { url: url.toString(), verifier, state };
  };

  const signIn = async (page: Page) => {
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };

  /** The POST the callback received last: its fields, checked; the code is exchanged at the token endpoint. */
  const expectPosted = async (t: Test, request: ReturnType<typeof start>, page: Page, label: string) => {
    await page.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    t.equal(await page.locator('body').innerText(), 'callback ok', `${label}: the callback page`);
    t.equal(page.url(), callback.redirectUri, `${label}: nothing in the URL`);
    const got = callback.received.at(-1)!;
    t.equal(got.method, 'POST', `${label}: POSTed`);
    t.match(got.contentType, /^application\/x-www-form-urlencoded/, `${label}: form-encoded`);
    t.equal(got.query, '', `${label}: no query`);
    t.same([...got.body.keys()].sort(), ['code', 'iss', 'state'], `${label}: code, state, iss`);
    t.equal(got.body.get('state'), request.state, `${label}: the state exactly as sent`);
    t.equal(got.body.get('iss'), ctx.issuer, `${label}: iss`);
    const token = await fetch(`${ctx.issuer}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: got.body.get('code')!,
        redirect_uri: callback.redirectUri,
        client_id: application.clientId,
        code_verifier: request.verifier,
      }),
    });
    t.equal(token.status, 200, `${label}: the posted code is exchanged`);
  };

  await t.test('JavaScript on: the page submits itself', async (t) => {
    const context: BrowserContext = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    const problems = watch(page);
    const request = start();
    await page.goto(request.url);
    await signIn(page);
    await page.waitForURL(/\/login\/consent\?request=/);
    // The form page's own response, as the browser got it.
    const formPage = page.waitForResponse((r) => /\/(login\/consent|oauth2\/authorize\/continue)/.test(r.url()));
    await page.getByRole('button', { name: 'Allow' }).click();
    const res = await formPage;
    t.match(res.headers()['content-security-policy'] ?? '', /default-src 'none'/);
    await expectPosted(t, request, page, 'after consent');
    t.equal(callback.received.length, 1, 'one POST');

    // Signed in with consent remembered: the code is issued at once, and posted.
    const again = start();
    await page.goto(again.url);
    await expectPosted(t, again, page, 'single sign-on');
    t.same(problems, [], 'no CSP violation, no script error');
  });

  await t.test('JavaScript off: the Continue button posts the form', async (t) => {
    const context = await browser.newContext({ javaScriptEnabled: false });
    t.teardown(() => context.close());
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    const problems = watch(page);
    const before = callback.received.length;
    const request = start();
    await page.goto(request.url);
    await signIn(page);
    // Consent is remembered: after sign-in the answer page comes, and waits for the user.
    const button = page.getByRole('button', { name: 'Continue' });
    await t.resolves(button.waitFor({ state: 'visible' }), 'the Continue button is shown');
    t.equal(callback.received.length, before, 'nothing posted before the user presses it');
    t.notMatch(page.url(), /code=/, 'no code in the URL');
    await button.click();
    await expectPosted(t, request, page, 'no JavaScript');
    t.equal(callback.received.length, before + 1);
    t.same(problems, [], 'no CSP violation');
  });
});
