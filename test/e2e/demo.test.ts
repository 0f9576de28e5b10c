// The welcome page and the live demo relying party in headless Chromium, on a real server on 127.0.0.1:
// / at 1280 px and 390 px → the demo → sign in (a verified user made through the services) → consent →
// /demo with the verified ID token, UserInfo and /me → Refresh (the refresh token rotates) → Sign out
// (RP-initiated logout) back to /demo. No page is wider than the viewport. Screenshots: .tap/screenshots/.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

t.test(
  'welcome page and demo relying party in headless Chromium',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t, { DEMO: 'on', WELCOME_PAGE: 'on' });
    const email = 'demo-user@example.com';
    const password = 'a long enough passphrase';
    const user = await ctx.app.services.users.create(
      { email, password, name: 'Dee Demo', emailVerified: true },
      { actor: 'test' },
    );

    const browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const problems: string[] = [];

    async function fits(page: Page, width: number, what: string) {
      const scrollWidth = await page.evaluate(
        () =>
          (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
            .scrollWidth,
      );
      t.ok(scrollWidth <= width, `${what} at ${width} px: scrollWidth ${scrollWidth} <= ${width}`);
    }

    for (const width of [1280, 390]) {
      const context = await browser.newContext({ viewport: { width, height: 900 } });
      const page = await context.newPage();
      page.setDefaultTimeout(30000);
      page.on('console', (msg) => {
        if (msg.type() === 'error' && !/favicon/.test(msg.location().url)) problems.push(`${width}: ${msg.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`${width}: ${error.message}`));
      const shot = (name: string) =>
        page.screenshot({ path: join(screenshots, `demo-${width}-${name}.png`), fullPage: true });
      const visit = async (name: string) => {
        await fits(page, width, name);
        await shot(name);
      };

      // The welcome page.
      const res = await page.goto(`${ctx.baseUrl}/`);
      t.equal(res?.status(), 200);
      const main = await page.locator('main').innerText();
      t.match(main, ctx.issuer, 'the issuer');
      t.match(main, 'create the first admin', 'no admin yet');
      await visit('1-welcome');

      // To the demo, signed out.
      await page.getByRole('link', { name: 'Try the demo application' }).click();
      await page.waitForURL(`${ctx.baseUrl}/demo`);
      t.match(await page.locator('main').innerText(), 'This is a demo of the identity provider');
      await visit('2-demo-signed-out');

      // Sign in → the provider's hosted pages.
      await page.getByRole('link', { name: 'Sign in' }).click();
      await page.waitForURL(/\/login\/sign-in\?request=/);
      t.equal(await page.title(), 'Sign in · Demo application');
      t.notMatch(page.url(), /state=|nonce=|code_verifier/, 'the sign-in page URL carries no demo state');
      await visit('3-sign-in');
      await page.getByLabel('E-mail address').fill(email);
      await page.getByLabel(/^Password/).fill(password);
      await page.getByRole('button', { name: 'Sign in' }).click();

      // Consent (each browser context is a new session; consent is remembered after the first one).
      await page.waitForURL((u) => u.pathname === '/login/consent' || u.pathname === '/demo');
      if (new URL(page.url()).pathname === '/login/consent') {
        await visit('4-consent');
        await page.getByRole('button', { name: 'Allow' }).click();
      }

      // Back on the demo, signed in.
      await page.waitForURL(`${ctx.baseUrl}/demo`);
      const signedIn = await page.locator('main').innerText();
      t.match(signedIn, `Signed in as ${email}`);
      t.match(signedIn, 'ID token (signature verified against the JWKS)');
      t.match(signedIn, `"iss": "${ctx.issuer}"`, 'the verified claims');
      t.match(signedIn, '"aud": "demo"');
      t.match(signedIn, '"alg": "RS256"', 'the header');
      t.match(signedIn, `"sub": "${user.id}"`, 'the subject');
      t.match(signedIn, /UserInfo\s+\{[^}]*"name": "Dee Demo"/, 'UserInfo');
      t.match(signedIn, /\/api\/external\/me\s+\{[^}]*"sub"/, '/me');
      t.notMatch(signedIn, 'Error:', 'no failed call');
      const cookies = await context.cookies(`${ctx.baseUrl}/demo`);
      const session = cookies.find((c) => c.name === 'demo.session');
      t.equal(session?.httpOnly, true, 'the demo session cookie is HttpOnly');
      t.equal(session?.path, '/demo');
      t.match(session?.value, /^v1\./, 'sealed');
      await visit('5-demo-signed-in');

      // Refresh: the refresh token rotates.
      const before = await page.locator('#refresh-current').innerText();
      t.match(before, /^[A-Za-z0-9_-]{6}… \(SHA-256 /, 'a short prefix and a fingerprint only');
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.waitForURL(`${ctx.baseUrl}/demo`);
      await page.locator('#refresh-count').filter({ hasText: '1' }).waitFor();
      const after = await page.locator('#refresh-current').innerText();
      t.not(after, before, 'a new refresh token');
      t.match(await page.locator('#refresh-previous').innerText(), before, 'the old one shown as previous');
      t.notMatch(await page.locator('main').innerText(), 'Error:', 'the new access token works');
      await visit('6-demo-refreshed');

      // Sign out: RP-initiated logout, back to /demo (through a confirmation page if the provider asks).
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.waitForURL((u) => u.pathname === '/demo' || u.pathname.includes('end-session'));
      if (new URL(page.url()).pathname !== '/demo') {
        await visit('7-end-session');
        await page.getByRole('button', { name: 'Sign out' }).click();
        await page.waitForURL((u) => u.pathname === '/demo');
      }
      t.match(await page.locator('main').innerText(), 'You are not signed in to the demo.');
      const left = await context.cookies(`${ctx.baseUrl}/demo`);
      t.notOk(
        left.find((c) => c.name === 'demo.session'),
        'the demo session cookie is gone',
      );
      t.notOk(
        left.find((c) => c.name === 'idp.session'),
        'the provider session ended too',
      );
      await visit('8-demo-signed-out');
      await context.close();
    }
    t.same(problems, [], 'no console errors (a CSP violation would be one)');
  },
);
