// Mailed links in headless Chromium (issue 31, items 1 and 2). A mail scanner (a plain GET and HEAD of every
// http(s) link in the received mail, text and HTML parts, with and without following redirects) changes
// nothing; a person clicking the page's button does. An e-mail change link opened in a second browser
// context, without a session or with another account's, cannot complete the change; the context of the
// account that asked can. Screenshots go to .tap/screenshots/mailed-links-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BrowserContext, Page } from 'playwright-core';
import { findUserByEmail } from '../../db/repositories/users.js';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, fileChromium } from '../helpers/chromium.js';
import type { CapturedMail } from '../helpers/smtp.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
const PASSWORD = 'correct horse battery';

/** Every http(s) link of a mail, as a scanner finds them: in the text part and in the HTML's hrefs. */
function linksOf(mail: CapturedMail): string[] {
  const found = new Set<string>();
  for (const m of mail.text.matchAll(/https?:\/\/[^\s<>"]+/g)) found.add(m[0]);
  for (const m of mail.html.matchAll(/href="(https?:\/\/[^"]+)"/g)) found.add(m[1]!.replaceAll('&amp;', '&'));
  return [...found];
}

/** A mail gateway's link scanner: GET and HEAD of each link, no cookies, redirects followed or not. */
async function scan(links: string[]): Promise<string[]> {
  const seen: string[] = [];
  for (const link of links) {
    for (const method of ['GET', 'HEAD'] as const) {
      for (const redirect of ['manual', 'follow'] as const) {
        const res = await fetch(link, { method, redirect });
        await res.arrayBuffer();
        seen.push(`${method} ${redirect} ${link}: ${res.status}`);
      }
    }
  }
  return seen;
}

async function signIn(page: Page, login: string, email: string) {
  await page.goto(`${login}/sign-in`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL((u) => !u.pathname.endsWith('/sign-in'));
}

t.test(
  'a scanner fetching every link of the verification mail verifies nothing; the button does',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const login = `${ctx.baseUrl}/login`;
    const email = 'scanned@example.com';
    await ctx.app.services.users.create({ email, password: PASSWORD }, { actor: 'test' });
    const verified = async () => (await findUserByEmail(ctx.database.db, email))?.email_verified;

    const browser = await fileChromium();
    mkdirSync(screenshots, { recursive: true });
    const context: BrowserContext = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    const shot = (name: string) =>
      page.screenshot({ path: join(screenshots, `mailed-links-${name}.png`), fullPage: true });

    // The unverified account asks for its link on the "check your inbox" page.
    await signIn(page, login, email);
    await page.goto(`${login}/verify-email`);
    await page.getByRole('button', { name: 'Send the link again' }).click();
    await t.resolves(page.getByText('We sent a new link.').waitFor());
    const mail = await ctx.smtp.waitFor(email, 30000);
    const links = linksOf(mail);
    t.ok(links.length > 0, `the mail has links: ${links.join(' ')}`);

    const seen = await scan(links);
    t.ok(
      seen.every((s) => s.endsWith(': 200')),
      `the scanner got the pages: ${seen.join('; ')}`,
    );
    t.equal(await verified(), false, 'GET and HEAD of every link in the mail verified nothing');

    // The "check your inbox" page names the signed-in account and offers "Not you?".
    t.match(await page.locator('#signed-in-as').innerText(), `Signed in as ${email}`);
    await t.resolves(page.getByRole('button', { name: /Not you\?/ }).waitFor(), '"Not you?" is offered');

    // The person clicks: the page names the address and the action; its button confirms.
    const link = links.find((l) => l.includes('/verify-email/confirm'))!;
    await page.goto(link);
    await t.resolves(page.getByRole('heading', { name: `Confirm ${email} for your account` }).waitFor());
    t.equal(await verified(), false, 'opening the page in the browser verifies nothing either');
    await shot('1-verify');
    await page.getByRole('button', { name: 'Confirm this address' }).click();
    await t.resolves(page.getByRole('heading', { name: 'E-mail address verified' }).waitFor());
    t.equal(await verified(), true, 'the button verified the address');

    // The link is spent: scanner and browser alike get the same dead-link page.
    const after = await fetch(link);
    t.equal(after.status, 400);
    t.match(await after.text(), 'This link does not work');
  },
);

t.test(
  'an e-mail change link completes only in the browser of the account that asked',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const login = `${ctx.baseUrl}/login`;
    const owner = 'owner@example.com';
    const other = 'other@example.com';
    const target = 'moved@example.com';
    for (const email of [owner, other])
      await ctx.app.services.users.create({ email, password: PASSWORD, emailVerified: true }, { actor: 'test' });
    const ownerRow = async () => findUserByEmail(ctx.database.db, owner);

    const browser = await fileChromium();
    mkdirSync(screenshots, { recursive: true });
    const asker = await browser.newContext();
    const stranger = await browser.newContext();
    t.teardown(() => asker.close());
    t.teardown(() => stranger.close());
    const askerPage = await asker.newPage();
    const strangerPage = await stranger.newPage();

    // The owner asks for the change from their signed-in browser (the JSON endpoint behind the account page).
    await signIn(askerPage, login, owner);
    const asked = await asker.request.post(`${ctx.baseUrl}/api/me/email`, {
      data: { newEmail: target, password: PASSWORD },
      headers: { origin: ctx.baseUrl },
    });
    t.equal(asked.status(), 202, 'the change is asked for');
    const mail = await ctx.smtp.waitFor(target, 30000);
    const links = linksOf(mail);
    const link = links.find((l) => l.includes('/verify-email/confirm'))!;
    t.ok(link, 'the mail carries the confirmation link');

    // The new address's mail gateway scans every link: nothing changes.
    const seen = await scan(links);
    t.ok(
      seen.every((s) => s.endsWith(': 200')),
      `the scanner got the pages: ${seen.join('; ')}`,
    );
    t.equal((await ownerRow())?.email, owner, 'GET and HEAD of every link changed nothing');

    // A second browser, no session: the page asks to sign in to the asking account, and offers no button.
    await strangerPage.goto(link);
    await t.resolves(
      strangerPage.getByRole('heading', { name: 'Sign in to the account that asked for this change' }).waitFor(),
    );
    t.notMatch(await strangerPage.locator('main').innerText(), owner, 'the account is not named to a stranger');
    t.equal(await strangerPage.getByRole('button', { name: /Move my account/ }).count(), 0, 'no button to confirm');
    await strangerPage.screenshot({ path: join(screenshots, 'mailed-links-2-stranger.png'), fullPage: true });
    // A hand-made POST from that browser, with a valid CSRF token of its own: refused.
    const token = new URL(link).searchParams.get('token')!;
    const csrf = (await stranger.cookies(ctx.baseUrl)).find((c) => c.name === 'idp.csrf')?.value;
    t.ok(csrf, 'the stranger holds a CSRF cookie');
    const forged = await stranger.request.post(`${login}/verify-email/confirm`, {
      form: { csrf: csrf!, token },
      headers: { origin: ctx.baseUrl },
    });
    t.equal(forged.status(), 401, 'no session: refused');
    t.equal((await ownerRow())?.email, owner, 'nothing changed');

    // The stranger signs in to another account: still refused, the link still unspent.
    await signIn(strangerPage, login, other);
    await strangerPage.goto(link);
    await t.resolves(strangerPage.getByText('did not ask for this change').waitFor());
    t.equal(await strangerPage.getByRole('button', { name: /Move my account/ }).count(), 0, 'no button to confirm');
    const wrong = await stranger.request.post(`${login}/verify-email/confirm`, {
      form: { csrf: csrf!, token },
      headers: { origin: ctx.baseUrl },
    });
    t.equal(wrong.status(), 403, "another account's session: refused");
    t.equal((await ownerRow())?.email, owner, 'nothing changed');
    t.equal((await findUserByEmail(ctx.database.db, other))?.email, other, 'nor the other account');

    // The asking browser: the page names the account that takes the address; the button confirms.
    await askerPage.goto(link);
    await t.resolves(askerPage.getByRole('heading', { name: `Move your account to ${target}` }).waitFor());
    t.equal(await askerPage.locator('#account-email').innerText(), owner, 'the account that takes the address');
    await askerPage.screenshot({ path: join(screenshots, 'mailed-links-3-asker.png'), fullPage: true });
    await askerPage.getByRole('button', { name: `Move my account to ${target}` }).click();
    await t.resolves(askerPage.getByRole('heading', { name: 'E-mail address changed' }).waitFor());
    const row = await findUserByEmail(ctx.database.db, target);
    t.equal(row?.email, target, 'the address changed');
    t.equal(row?.email_verified, true);

    // The notice to the old address: its links (if any) act on nothing either.
    await ctx.app.services.mailer.drain();
    const notice = await ctx.smtp.waitFor(owner, 30000);
    t.equal(notice.subject, 'Your e-mail address was changed');
    await scan(linksOf(notice));
    t.equal((await findUserByEmail(ctx.database.db, target))?.email, target, 'the notice changes nothing');
  },
);
