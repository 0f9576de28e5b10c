// A real browser (Debian's headless Chromium, driven by playwright-core) signs up through the hosted
// pages: sign-in → "Create one" → sign-up → check your inbox → the mailed link → its "Create my account"
// button → consent → Allow → the client's callback. Screenshots of each page go to .tap/screenshots/.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { SCOPES } from '../../src/oauth/scopes.js';
import { startTestServer } from '../helpers/server.js';
import { linkIn } from '../helpers/smtp.js';
import { chromiumSkip, launchChromium, startCallbackServer } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

/** The client's callback: answers 200 "callback ok" and records each query it receives. */
t.test(
  'sign-up, e-mail verification and consent in headless Chromium',
  {
    timeout: 180000,
    skip: chromiumSkip,
  },
  async (t) => {
    const ctx = await startTestServer(t);
    const callback = await startCallbackServer(t);
    const application = await ctx.app.services.applications.create(
      {
        clientName: 'Browser App',
        redirectUris: [callback.redirectUri],
        allowedScopes: ['openid', 'profile', 'email'],
      },
      { actor: 'test' },
    );

    const browser: Browser = await launchChromium(t);
    const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
    const page: Page = await context.newPage();
    page.setDefaultTimeout(30000);
    page.setDefaultNavigationTimeout(60000);

    // Console errors (CSP violations land there), uncaught page errors and failed requests of our pages.
    const consoleErrors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() !== 'error' && msg.type() !== 'warning') return;
      const source = msg.location().url;
      // Chromium asks every origin for /favicon.ico on its own; neither server has one. Not a page error.
      if (new URL(source || 'about:blank').pathname === '/favicon.ico' && /status of 404/.test(msg.text())) return;
      consoleErrors.push(`${msg.type()}: ${msg.text()} [source ${source}] (page ${page.url()})`);
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
    const failedRequests: string[] = [];
    page.on('requestfailed', (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`));
    page.on('response', (res) => {
      if (res.status() >= 400) failedRequests.push(`${res.url()}: HTTP ${res.status()}`);
    });

    mkdirSync(screenshots, { recursive: true });
    const shot = (name: string) => page.screenshot({ path: join(screenshots, `${name}.png`), fullPage: true });

    // The relying party's authorization request: PKCE S256 and state.
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(16).toString('base64url');
    const authUrl = new URL(`${ctx.issuer}/oauth2/authorize`);
    authUrl.search = new URLSearchParams({
      client_id: application.clientId,
      redirect_uri: callback.redirectUri,
      response_type: 'code',
      scope: 'openid profile email',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state,
    }).toString();

    // 1. Sign-in page, with the security headers of every hosted page.
    const signIn = await page.goto(authUrl.toString());
    t.match(
      page.url(),
      new RegExp(`^${ctx.baseUrl}/login/sign-in\\?request=`),
      'the authorization request lands on the sign-in page',
    );
    t.equal(signIn?.status(), 200);
    const headers = signIn!.headers();
    const csp = headers['content-security-policy'] ?? '';
    t.match(csp, /frame-ancestors 'none'/, 'CSP forbids framing');
    t.notMatch(csp, /unsafe-inline/, 'CSP allows no inline script or style');
    t.notMatch(csp, /unsafe-eval/, 'CSP allows no eval');
    t.match(headers['cache-control'] ?? '', /no-store/, 'the page is not cached');
    t.equal(headers['x-frame-options'], 'DENY');
    t.equal(await page.title(), 'Sign in · Browser App');
    await t.resolves(page.getByRole('heading', { name: 'Sign in' }).waitFor(), 'the sign-in heading is shown');
    t.equal(
      await page.locator('link[rel=stylesheet]').evaluate((l) => (l as unknown as { sheet: unknown }).sheet !== null),
      true,
      'the stylesheet loaded under the CSP',
    );
    await shot('1-sign-in');

    // 2. "Create one" → sign-up, filled in by label.
    await page.getByRole('link', { name: 'Create one' }).click();
    await page.waitForURL(/\/login\/sign-up\?request=/);
    t.equal(await page.title(), 'Create an account · Browser App');
    const email = `browser-${randomBytes(4).toString('hex')}@example.com`;
    await page.getByLabel('Name', { exact: true }).fill('Bea Browser');
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel(/^Password/).fill('a long enough passphrase');
    await shot('2-sign-up');
    await page.getByRole('button', { name: 'Create account' }).click();

    // 3. "Check your inbox": the answer to the sign-up itself; no account and no session exist yet.
    await t.resolves(
      page.getByRole('heading', { name: 'Check your inbox' }).waitFor(),
      'the check-your-inbox page is shown',
    );
    t.match(await page.locator('main').innerText(), email, 'it names the address the link went to');
    t.notOk(
      (await context.cookies(ctx.baseUrl)).some((c) => c.name === 'idp.session'),
      'no session before the mailbox owner confirms (issue 31)',
    );
    await shot('3-check-inbox');

    // 4. The mailed link, opened in the same browser: a page naming the address, with a button.
    const mail = await ctx.smtp.waitFor(email, 30000);
    t.equal(mail.subject, 'Confirm your e-mail address to create your account');
    const link = linkIn(mail);
    t.match(
      link,
      new RegExp(`^${ctx.baseUrl}/login/sign-up/confirm\\?token=`),
      'the mail links to the confirmation page',
    );
    await page.goto(link);
    await t.resolves(
      page.getByRole('heading', { name: `Create your account for ${email}` }).waitFor(),
      'the link opens a page naming the address and the action',
    );
    await shot('4-confirm-sign-up');
    await page.getByRole('button', { name: 'Create my account' }).click();
    await page.waitForURL(new RegExp(`^${ctx.baseUrl}/login/consent\\?request=`));
    t.match(page.url(), new RegExp(`^${ctx.baseUrl}/login/consent\\?request=`), 'after confirming, the consent page');

    // The session cookie the confirmation set (this browser started the request) is HttpOnly.
    const cookies = await context.cookies(ctx.baseUrl);
    const session = cookies.find((c) => c.name === 'idp.session');
    t.ok(session, 'a session cookie is set');
    t.equal(session?.httpOnly, true, 'the session cookie is HttpOnly');
    t.equal(session?.path, '/');
    t.match(session?.sameSite, /^(Lax|Strict)$/, 'the session cookie is SameSite');
    t.equal(
      await page
        .evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)
        .catch(() => ''),
      '',
      'no cookie is readable from script',
    );

    await t.resolves(page.getByRole('heading', { name: 'Browser App wants to' }).waitFor());
    const items = await page.locator('ul.scopes li').allInnerTexts();
    const expected = SCOPES.filter((s) => ['openid', 'profile', 'email'].includes(s.name)).map(
      (s) => `${s.label}: ${s.consentDescription}`,
    );
    t.same(items, expected, 'each requested scope with its consent description, and no other');
    t.match(items.join('\n'), 'Sign you in and know who you are');
    t.match(items.join('\n'), 'See your name and profile picture');
    t.match(items.join('\n'), 'See your e-mail address and whether it is verified');
    t.match(await page.locator('main').innerText(), `Signed in as ${email}`);
    await shot('5-consent');

    // 5. Allow → the client's callback with code, state and iss.
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    t.equal(await page.locator('body').innerText(), 'callback ok');
    t.equal(callback.received.length, 1, 'the callback was called once');
    const query = callback.received[0]!;
    t.equal(query.get('state'), state, 'state comes back unchanged');
    t.equal(query.get('iss'), ctx.issuer, 'iss names the issuer (RFC 9207)');
    const code = query.get('code');
    t.type(code, 'string');
    t.notOk(query.has('error'));
    t.same(new URL(page.url()).searchParams.get('code'), code, 'the browser saw the same code');

    // The code works: a plain token request.
    const tokenResponse = await fetch(`${ctx.issuer}/oauth2/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code!,
        redirect_uri: callback.redirectUri,
        client_id: application.clientId,
        code_verifier: verifier,
      }),
    });
    t.equal(tokenResponse.status, 200);
    const tokens = (await tokenResponse.json()) as Record<string, unknown>;
    t.equal(tokens.token_type, 'Bearer');
    t.equal(tokens.scope, 'openid profile email');
    t.type(tokens.access_token, 'string');
    t.type(tokens.id_token, 'string');
    const userinfo = await fetch(`${ctx.issuer}/oauth2/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token as string}` },
    });
    t.same(await userinfo.json(), {
      sub: (
        JSON.parse(Buffer.from((tokens.id_token as string).split('.')[1]!, 'base64url').toString()) as { sub: string }
      ).sub,
      name: 'Bea Browser',
      email,
      email_verified: true,
    });

    t.same(consoleErrors, [], 'no console errors or warnings (a CSP violation would be one)');
    t.same(failedRequests, [], 'no failed requests');

    // Control: a CSP violation on a hosted page really does show as a console error.
    const control = await context.newPage();
    await control.goto(`${ctx.baseUrl}/login/sign-in`);
    const violation = control.waitForEvent('console', {
      predicate: (m) => m.type() === 'error' && /Content Security Policy/.test(m.text()),
      timeout: 30000,
    });
    await control.evaluate(() => {
      const doc = (
        globalThis as unknown as {
          document: { createElement(n: string): { textContent: string }; head: { append(e: unknown): void } };
        }
      ).document;
      const script = doc.createElement('script');
      script.textContent = 'window.injected = true';
      doc.head.append(script);
    });
    t.match((await violation).text(), /inline script/i, 'an inline script is refused and reported on the console');
    t.equal(
      await control.evaluate(() => (globalThis as unknown as { injected?: boolean }).injected),
      undefined,
      'the inline script did not run',
    );
    await control.close();
    t.comment(`screenshots in ${screenshots}`);
  },
);
