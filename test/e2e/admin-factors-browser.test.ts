// The admin web's "Second factors" section of a user's page (issue 34) in headless Chromium: at 1280 and 320 px
// wide the page and the confirmation pages fit and pass axe-core; an administrator removes one passkey, then
// resets the rest, by clicking. The user's factors are rows inserted here (the ceremonies have their own tests).
// Screenshots go to .tap/screenshots/admin-factors-*.png.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, axeViolations, scrollWidth } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
t.test(
  'second factors on the admin user page: axe, widths, remove one, reset all',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const { app } = ctx;
    const db = app.db;
    const actor = { actor: 'test' };
    const password = 'operator passphrase 1';
    const adminEmail = 'operator@example.com';
    await app.services.users.create({ email: adminEmail, password, role: 'admin', emailVerified: true }, actor);
    const person = await app.services.users.create(
      { email: 'a.person.with.a.rather.long.address@subdomain.example-company.example.com', password },
      actor,
    );
    const passkey = randomUUID();
    for (const [id, name, backedUp] of [
      [passkey, 'Work laptop with a rather long passkey name', false],
      [randomUUID(), 'Phone', true],
    ] as const) {
      await db
        .insertInto('webauthn_credentials')
        .values({
          id,
          user_id: person.id,
          credential_id: randomUUID(),
          public_key: 'DummyPublicKey',
          device_type: backedUp ? 'multiDevice' : 'singleDevice',
          backed_up: backedUp,
          name,
        })
        .execute();
    }
    await db
      .insertInto('totp_factors')
      .values({ user_id: person.id, secret: 'sealed', confirmed_at: new Date() })
      .execute();
    for (let i = 0; i < 10; i++)
      await db
        .insertInto('recovery_codes')
        .values({ id: randomUUID(), user_id: person.id, code_hash: `h${i}` })
        .execute();

    const browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    page.setDefaultNavigationTimeout(60000);
    const adminUrl = ctx.config.adminUrl;
    const userPage = `${adminUrl}/users/${person.id}`;
    await page.goto(userPage);
    await page.getByLabel('E-mail address').fill(adminEmail);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(userPage);

    async function check(name: string) {
      for (const width of [1280, 320]) {
        await page.setViewportSize({ width, height: 900 });
        t.same(await axeViolations(page), [], `${name} at ${width} px: axe-core finds nothing`);
        const laidOut = await page.evaluate(scrollWidth);
        t.ok(laidOut <= width, `${name} at ${width} px: ${laidOut} px wide`);
        await page.screenshot({ path: join(screenshots, `admin-factors-${name}-${width}.png`), fullPage: true });
      }
      await page.setViewportSize({ width: 1280, height: 900 });
    }

    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Second factors (4)' }) });
    t.equal(await section.getByRole('row').count(), 5, 'a header row and four factors');
    await check('user');

    await page.getByRole('link', { name: 'Remove the passkey "Work laptop with a rather long passkey name"' }).click();
    await page.waitForURL(`${userPage}/factors/${passkey}/remove`);
    await page.getByRole('heading', { name: /^Remove the passkey/ }).waitFor();
    await check('remove');
    await page.getByRole('button', { name: 'Remove' }).click();
    await page.waitForURL(`${userPage}?done=factor-removed`);
    t.match(await page.getByRole('status').innerText(), /Second factor removed/);
    await page.getByRole('heading', { name: 'Second factors (3)' }).waitFor();
    t.equal(await page.getByText('Work laptop with a rather long passkey name').count(), 0, 'the passkey is gone');

    await page.getByRole('link', { name: 'Reset all second factors…' }).click();
    await page.waitForURL(`${userPage}/factors/reset`);
    await check('reset');
    await page.getByRole('button', { name: 'Reset all second factors' }).click();
    await page.waitForURL(`${userPage}?done=factors-reset`);
    await page.getByRole('heading', { name: 'Second factors (0)' }).waitFor();
    t.equal(await page.getByText('No second factors.').count(), 1);
    await check('user-empty');
    t.same(await app.services.factors.list(person.id), [], 'nothing left');
    t.equal(
      (await app.services.audit.list({ type: 'mfa.factors_reset', userId: person.id })).items[0]?.actor,
      `admin:${adminEmail}`,
    );
  },
);
