// The whole account-recovery journey in a real browser (Debian's headless Chromium, driven by
// playwright-core) against a real server with real SMTP: signed in with the old password → sign-in page →
// "Forgot your password?" → the e-mail → "Check your e-mail" → the mailed link → the hosted reset page →
// a mismatching confirmation (field error) → the new password twice → "Password changed" → the old
// session is gone → "Sign in" → the old password fails → the new one works. The used link then lands on
// "This link does not work". Screenshots of each page go to .tap/screenshots/recovery-*.png.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { linkIn, type CapturedMail } from '../helpers/smtp.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

type Doc = { document: { cookie: string } };

t.test(
  'password recovery in headless Chromium: forgot password → mail → link → new password → sign in',
  {
    timeout: 180000,
    skip: chromiumSkip,
  },
  async (t) => {
    const ctx = await startTestServer(t);
    const login = `${ctx.baseUrl}/login`;
    const email = `recover-${randomBytes(4).toString('hex')}@example.com`;
    const oldPassword = 'the old passphrase 1';
    const newPassword = 'a brand new passphrase 2';
    const user = await ctx.app.services.users.create(
      { email, password: oldPassword, name: 'Rhea Recover', emailVerified: false },
      { actor: 'test' },
    );

    /** The first mail to `email` whose subject matches (polls the SMTP server's inbox). */
    async function mailWith(subject: RegExp, timeoutMs = 30000): Promise<CapturedMail> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const mail = ctx.smtp.mails.find((m) => m.to.toLowerCase().includes(email) && subject.test(m.subject));
        if (mail) return mail;
        if (Date.now() > until)
          throw new Error(
            `no mail "${subject.source}" for ${email} within ${timeoutMs} ms ` +
              `(have: ${ctx.smtp.mails.map((m) => m.subject).join(', ')})`,
          );
        await delay(50);
      }
    }

    const browser: Browser = await launchChromium(t);
    const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
    const page: Page = await context.newPage();
    page.setDefaultTimeout(30000);
    page.setDefaultNavigationTimeout(60000);

    /** Documents that answer 400/401 by design in this journey (URL → status). */
    const expectedErrors = new Map<string, number>();
    // Console errors (CSP violations land there), uncaught page errors and failed requests of our pages.
    const consoleErrors: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() !== 'error' && msg.type() !== 'warning') return;
      const source = msg.location().url;
      // Chromium asks every origin for /favicon.ico on its own; the server has none. Not a page error.
      if (new URL(source || 'about:blank').pathname === '/favicon.ico' && /status of 404/.test(msg.text())) return;
      // Pages answered with 4xx on purpose (a field error, a dead link, wrong password) log
      // "Failed to load resource: … status of 4xx"; those answers are checked one by one below.
      if (
        /Failed to load resource: the server responded with a status of 40[01]/.test(msg.text()) &&
        expectedErrors.has(source)
      )
        return;
      consoleErrors.push(`${msg.type()}: ${msg.text()} [source ${source}] (page ${page.url()})`);
    });
    page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`));
    const failedRequests: string[] = [];
    page.on('requestfailed', (req) => failedRequests.push(`${req.url()}: ${req.failure()?.errorText}`));
    page.on('response', (res) => {
      if (res.status() < 400) return;
      if (new URL(res.url()).pathname === '/favicon.ico') return;
      if (expectedErrors.get(res.url()) === res.status()) return;
      failedRequests.push(`${res.url()}: HTTP ${res.status()}`);
    });

    mkdirSync(screenshots, { recursive: true });
    const shot = (name: string) => page.screenshot({ path: join(screenshots, `recovery-${name}.png`), fullPage: true });
    const main = () => page.locator('main').innerText();

    // 0. Signed in with the old password: this session must not survive the reset.
    await page.goto(`${login}/sign-in`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(oldPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${login}/`);
    await t.resolves(
      page.getByRole('heading', { name: 'Signed in' }).waitFor(),
      'signed in with the old password first',
    );
    t.ok(
      (await context.cookies(ctx.baseUrl)).some((c) => c.name === 'idp.session'),
      'a session cookie is held',
    );
    await shot('0-signed-in-before');

    // 1. Sign-in page → "Forgot your password?".
    const signIn = await page.goto(`${login}/sign-in`);
    t.equal(signIn?.status(), 200);
    t.match(
      signIn?.headers()['content-security-policy'] ?? '',
      /frame-ancestors 'none'/,
      'the hosted page has its CSP',
    );
    await shot('1-sign-in');
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.waitForURL(`${login}/forgot-password`);
    t.equal(await page.title(), 'Reset your password');
    await t.resolves(
      page.getByRole('heading', { name: 'Reset your password' }).waitFor(),
      'the forgot-password page is shown',
    );
    t.equal(
      await page.locator('link[rel=stylesheet]').evaluate((l) => (l as unknown as { sheet: unknown }).sheet !== null),
      true,
      'the stylesheet loaded under the CSP',
    );

    // 2. The e-mail → "Check your e-mail".
    await page.getByLabel('E-mail address').fill(email.toUpperCase()); // addresses are matched case-insensitively
    await shot('2-forgot-password');
    await page.getByRole('button', { name: 'Send the link' }).click();
    await t.resolves(
      page.getByRole('heading', { name: 'Check your e-mail' }).waitFor(),
      'the check-your-e-mail page is shown',
    );
    t.match(
      await page.getByRole('status').innerText(),
      'If this e-mail address has an account, we sent it a link to choose a new password.',
    );
    t.notMatch(await main(), email, 'the page does not confirm the address');
    await shot('3-check-email');

    // 3. The mail at the SMTP server, and its link.
    const resetMail = await mailWith(/^Reset your password$/);
    const link = linkIn(resetMail);
    t.match(
      link,
      new RegExp(`^${ctx.issuer}/reset-password/[A-Za-z0-9_-]{40,}\\?redirectTo=`),
      'the mail links to the reset endpoint of the API',
    );
    t.equal(
      new URL(link).searchParams.get('redirectTo'),
      `${login}/reset-password`,
      'carrying the hosted reset page as target',
    );
    const token = new URL(link).pathname.split('/').pop()!;

    // 4. The link in the browser → the hosted reset page with ?token.
    const opened = await page.goto(link);
    t.equal(
      page.url(),
      `${login}/reset-password?token=${token}`,
      'the link redirects to the hosted reset page with the token',
    );
    t.equal(opened?.status(), 200);
    t.equal(opened?.request().redirectedFrom()?.url(), link, 'through the mailed link');
    t.equal(await page.title(), 'Choose a new password');
    await t.resolves(page.getByRole('heading', { name: 'Choose a new password' }).waitFor());
    t.equal(await page.locator('input[name=token]').inputValue(), token, 'the form carries the token');
    await shot('4-reset-password');

    // 5. A mismatching confirmation: the field error, tied to the field; the token is not used up.
    expectedErrors.set(`${login}/reset-password`, 400);
    await page.getByLabel('New password (8 to 128 characters)').fill(newPassword);
    await page.getByLabel('Repeat the new password').fill(`${newPassword}!`);
    const mismatch = page.waitForResponse(
      (r) => r.url() === `${login}/reset-password` && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Change password' }).click();
    t.equal((await mismatch).status(), 400, 'a mismatch is answered 400');
    await page.waitForLoadState();
    const confirm = page.getByLabel('Repeat the new password');
    t.equal(await confirm.getAttribute('aria-invalid'), 'true', 'the confirmation field is marked invalid');
    const errorId = await confirm.getAttribute('aria-describedby');
    t.equal(
      await page.locator(`[id="${errorId}"]`).innerText(),
      'The two passwords are not the same',
      'its error says why and is tied to it',
    );
    t.equal(
      await page.getByLabel('New password (8 to 128 characters)').getAttribute('aria-invalid'),
      null,
      'the first field is not marked',
    );
    t.equal(await page.locator('input[name=token]').inputValue(), token, 'the form still carries the token');
    await shot('5-mismatch');

    // 6. The new password twice → "Password changed".
    await page.getByLabel('New password (8 to 128 characters)').fill(newPassword);
    await page.getByLabel('Repeat the new password').fill(newPassword);
    const changed = page.waitForResponse(
      (r) => r.url() === `${login}/reset-password` && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Change password' }).click();
    t.equal((await changed).status(), 200);
    await t.resolves(
      page.getByRole('heading', { name: 'Password changed' }).waitFor(),
      'the password-changed page is shown',
    );
    t.match(await page.getByRole('status').innerText(), /every session was signed out/);
    await shot('6-password-changed');
    const notice = await mailWith(/^Your password was changed$/);
    t.notMatch(notice.text, token, 'the notification does not repeat the reset token');
    t.equal(
      (await ctx.app.services.users.get(user.id)).emailVerified,
      true,
      'following the mailed link verified the address',
    );

    // 7. "Sign in" from the password-changed page. The reset did not sign the user in, and the session
    // from before it is gone: / in another tab of the same browser sends to sign-in.
    await page.getByRole('link', { name: 'Sign in' }).click();
    await page.waitForURL(`${login}/sign-in`);
    const other = await context.newPage();
    await other.goto(`${login}/`);
    t.equal(other.url(), `${login}/sign-in`, 'the session from before the reset no longer signs in');
    await other.close();

    // 8. The old password fails.
    expectedErrors.set(`${login}/sign-in`, 401);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(oldPassword);
    const refused = page.waitForResponse((r) => r.url() === `${login}/sign-in` && r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in' }).click();
    t.equal((await refused).status(), 401, 'the old password is refused');
    await page.waitForLoadState();
    t.match(await main(), 'The e-mail address or password is not correct');
    t.equal(page.url(), `${login}/sign-in`);
    await shot('7-old-password-refused');

    // 9. The new password signs in: the signed-in page names the address.
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(newPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${login}/`);
    await t.resolves(page.getByRole('heading', { name: 'Signed in' }).waitFor(), 'signed in with the new password');
    t.match(await main(), `You are signed in as ${email}`);
    t.equal(
      await page.evaluate(() => (globalThis as unknown as Doc).document.cookie),
      '',
      'no cookie is readable from script',
    );
    await shot('8-signed-in');

    // 10. The used link again → "This link does not work", with a way to ask for a new one.
    expectedErrors.set(`${login}/reset-password?error=INVALID_TOKEN`, 400);
    const dead = await page.goto(link);
    t.equal(
      page.url(),
      `${login}/reset-password?error=INVALID_TOKEN`,
      'the used link redirects with error=INVALID_TOKEN',
    );
    t.equal(dead?.status(), 400);
    await t.resolves(
      page.getByRole('heading', { name: 'This link does not work' }).waitFor(),
      'the dead-link page is shown',
    );
    t.equal(await page.locator('form').count(), 0, 'no password form');
    t.equal(
      await page.getByRole('link', { name: 'Send me a new link' }).getAttribute('href'),
      '/login/forgot-password',
    );
    await shot('9-link-used');
    // The page the used link would have led to, opened by hand, is dead too.
    expectedErrors.set(`${login}/reset-password?token=${token}`, 400);
    await page.goto(`${login}/reset-password?token=${token}`);
    await t.resolves(
      page.getByRole('heading', { name: 'This link does not work' }).waitFor(),
      'the reset page with the used token is dead too',
    );

    // Exactly one reset mail and one notification were sent.
    t.same(
      ctx.smtp.mails
        .filter((m) => m.to.toLowerCase().includes(email))
        .map((m) => m.subject)
        .sort(),
      ['Reset your password', 'Your password was changed'],
    );
    t.same(consoleErrors, [], 'no console errors or warnings (a CSP violation would be one)');
    t.same(failedRequests, [], 'no failed requests beyond the expected 400/401 answers');
    t.comment(`screenshots in ${screenshots}`);
  },
);
