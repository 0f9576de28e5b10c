// The authenticator app (TOTP) and recovery codes (issue 34) in headless Chromium, with a fixed clock: a person
// sets up the app on the sign-in methods page (the QR code drawn inline, the key as text), keeps the recovery
// codes, signs out, signs in with password and code; in a browser without JavaScript, with a recovery code
// instead. The pages pass axe-core at 1280 and 320 pixels wide. Screenshots go to .tap/screenshots/totp-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Secret, TOTP } from 'otpauth';
import type { Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { axeViolations, chromiumSkip, launchChromium, scrollWidth } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
t.test(
  'set up an authenticator app, then sign in with it or a recovery code',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    let now = Date.UTC(2026, 10, 27, 10, 0, 0);
    const ctx = await startTestServer(t, {}, { clock: () => now });
    const email = 'grace@example.com';
    const password = 'correct horse battery';
    await ctx.app.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });
    const browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const problems: string[] = [];
    const watch = (page: Page) => {
      page.setDefaultTimeout(30000);
      page.on('console', (msg) => {
        if (msg.type() !== 'error' && msg.type() !== 'warning') return;
        if (/favicon\.ico/.test(msg.location().url) && /status of 404/.test(msg.text())) return;
        // Wrong codes are answered 400 (setup) and 401 (sign-in) on purpose: Chromium reports the status.
        if (/status of 400/.test(msg.text()) && page.url().endsWith('/totp/confirm')) return;
        if (/status of 401/.test(msg.text())) return;
        problems.push(`${msg.type()}: ${msg.text()} (page ${page.url()})`);
      });
      page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
      return page;
    };
    /** axe at 1280 and 320 px, and no horizontal scroll at 320. */
    async function accessible(page: Page, what: string) {
      for (const width of [1280, 320]) {
        await page.setViewportSize({ width, height: 800 });
        t.same(await axeViolations(page), [], `${what} passes axe-core at ${width} px`);
        if (width === 320) t.ok((await page.evaluate(scrollWidth)) <= 320, `${what}: no horizontal scroll at 320 px`);
      }
      await page.screenshot({ path: join(screenshots, `totp-${what.replace(/\W+/g, '-')}.png`), fullPage: true });
    }
    const codeAt = (secret: string) =>
      new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
        timestamp: now,
      });

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = watch(await context.newPage());
    await page.goto(`${ctx.baseUrl}/login/sign-in?return_to=${encodeURIComponent('/login/account/sign-in-methods')}`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sign-in methods', level: 1 }).waitFor();
    await accessible(page, 'methods page');

    // 1. The setup: the QR code is drawn (inline SVG, nothing loaded), the key is there as text.
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    const qr = page.getByRole('img', { name: 'QR code to add this account to an authenticator app' });
    await qr.waitFor();
    const box = await qr.locator('svg').boundingBox();
    t.ok(box && box.width >= 150 && box.height >= 150, 'the QR code is drawn at a scannable size');
    await accessible(page, 'setup');
    const secret = (await page.locator('#totp-secret').innerText()).replace(/\s/g, '');
    t.match(secret, /^[A-Z2-7]{32}$/, 'the key as text');

    // A wrong code first: the error is tied to the field.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByLabel('Code from the app').fill('000000');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByText('That code is not correct').waitFor();
    await accessible(page, 'setup wrong code');
    await page.getByLabel('Code from the app').fill(codeAt(secret));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('status').filter({ hasText: 'Your authenticator app is set up.' }).waitFor();
    const codes = (await page.getByRole('list', { name: 'Recovery codes' }).locator('code').allInnerTexts()).map((c) =>
      c.trim(),
    );
    t.equal(codes.length, 10, 'ten recovery codes on the page');
    await accessible(page, 'recovery codes');

    // 2. Sign out, sign in again: password, then the code of the next step.
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.goto(`${ctx.baseUrl}/login/sign-in`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Second step of sign-in' }).waitFor();
    await accessible(page, 'second factor');
    await page.setViewportSize({ width: 1280, height: 800 });
    now += 30_000;
    await page.getByLabel('The 6-digit code your authenticator app shows').fill(codeAt(secret));
    await page.getByRole('button', { name: 'Continue' }).first().click();
    await page.waitForURL(`${ctx.baseUrl}/login/`);
    t.pass('signed in with password and code');

    // 3. Without JavaScript: a recovery code instead (the <details> opens without script).
    const noScript = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 320, height: 700 } });
    const plain = watch(await noScript.newPage());
    await plain.goto(`${ctx.baseUrl}/login/sign-in`);
    await plain.getByLabel('E-mail address').fill(email);
    await plain.getByLabel('Password').fill(password);
    await plain.getByRole('button', { name: 'Sign in' }).click();
    await plain.getByRole('heading', { name: 'Second step of sign-in' }).waitFor();
    await plain.getByText('Lost your second factor? Use a recovery code').click();
    await plain.getByLabel('One of your recovery codes (like abcde-fghij)').fill(codes[0]!.toUpperCase());
    await plain.locator('form[action$="/second-factor/recovery-code"] button').click();
    await plain.waitForURL(`${ctx.baseUrl}/login/`);
    t.pass('signed in with a recovery code, without JavaScript');
    await noScript.close();
    await context.close();
    t.same(problems, [], 'no console errors');
  },
);
