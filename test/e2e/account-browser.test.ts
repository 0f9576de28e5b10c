// The account pages (issue 17) in headless Chromium: openid-client, unmodified, signs a person in through the
// hosted pages (consent, offline_access); the same browser opens the account page and revokes the application;
// the relying party's next refresh fails with invalid_grant, its access token gets 401 on /api/external/me and
// the next authorize asks for consent again. Also: the profile name changes, another session is signed out,
// a browser without JavaScript uses the forms, the pages pass axe-core at 800 and 320 pixels wide; a password change
// keeps the browser signed in under a new session cookie and signs a copy of the old one out.
// Screenshots go to .tap/screenshots/account-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import type { Browser, BrowserContext } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, startCallbackServer, axeViolations, scrollWidth } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
t.test(
  'revoking an application in the account page ends its access',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const callback = await startCallbackServer(t);
    const application = await ctx.app.services.applications.create(
      {
        clientName: 'Photo App',
        redirectUris: [callback.redirectUri],
        allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
      },
      { actor: 'test' },
    );
    const email = 'ada@example.com';
    const password = 'correct horse battery';
    await ctx.app.services.users.create({ email, password, name: 'Ada', emailVerified: true }, { actor: 'test' });

    const rp = await client.discovery(new URL(ctx.issuer), application.clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    async function authorizationUrl() {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(rp, {
        redirect_uri: callback.redirectUri,
        scope: 'openid profile offline_access',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });
      return { url, verifier, state };
    }

    const browser: Browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const problems: string[] = [];
    async function newPage(context: BrowserContext) {
      const page = await context.newPage();
      page.setDefaultTimeout(30000);
      page.setDefaultNavigationTimeout(60000);
      page.on('console', (msg) => {
        if (msg.type() !== 'error' && msg.type() !== 'warning') return;
        if (/favicon\.ico/.test(msg.location().url) && /status of 404/.test(msg.text())) return;
        // The refused password form (step 7) is a 400 page on purpose: Chromium reports its status.
        if (/\/login\/account\/password$/.test(page.url()) && /status of 400/.test(msg.text())) return;
        problems.push(`${msg.type()}: ${msg.text()} (page ${page.url()})`);
      });
      page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
      return page;
    }
    const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
    const page = await newPage(context);
    const shot = (name: string, p = page) =>
      p.screenshot({ path: join(screenshots, `account-${name}.png`), fullPage: true });

    // 1. The relying party signs Ada in through the hosted pages, with consent; it gets a refresh token.
    const first = await authorizationUrl();
    await page.goto(first.url.toString());
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Photo App wants to' }).waitFor();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.url()), {
      pkceCodeVerifier: first.verifier,
      expectedState: first.state,
    });
    t.type(tokens.refresh_token, 'string', 'offline_access gave a refresh token');
    const external = (token: string) =>
      fetch(`${ctx.baseUrl}/api/external/me`, { headers: { authorization: `Bearer ${token}` } });
    t.equal((await external(tokens.access_token)).status, 200, 'the access token works before');

    // 2. The same browser opens the account page: the application is there, with its scopes in words.
    await page.goto(`${ctx.baseUrl}/login/account/applications`);
    await page.getByRole('heading', { level: 1, name: 'Connected applications' }).waitFor();
    t.equal(await page.getByRole('link', { name: 'Applications' }).getAttribute('aria-current'), 'page');
    t.equal(await page.getByRole('heading', { level: 2, name: 'Photo App' }).count(), 1);
    const scopes = await page.locator('ul.scopes li').allInnerTexts();
    t.same(scopes, [
      'Sign in: Sign you in and know who you are',
      'Profile: See your name and profile picture',
      'Stay signed in: Keep access to this information while you are not using the application',
    ]);
    t.same(await axeViolations(page), [], 'the applications page passes axe-core');
    await shot('applications');

    // 3. One click on "Revoke access" (its name says which application).
    await page.getByRole('button', { name: 'Revoke access for Photo App' }).click();
    await page.waitForURL(/\/login\/account\/applications\?m=access-revoked$/);
    t.match(await page.getByRole('status').innerText(), /^Access revoked\./);
    t.equal(await page.getByText('No application has access to your account.').count(), 1);
    await shot('revoked');

    // 4. The relying party's next refresh fails, its access token is refused.
    const refused = await client.refreshTokenGrant(rp, tokens.refresh_token!).then(
      () => undefined,
      (error: unknown) => error,
    );
    t.ok(refused instanceof client.ResponseBodyError, 'the refresh is refused by the token endpoint');
    t.equal((refused as client.ResponseBodyError).error, 'invalid_grant');
    const after = await external(tokens.access_token);
    t.equal(after.status, 401, '/api/external/me refuses the access token');

    // 5. The next authorize asks for consent again (the browser is still signed in).
    const second = await authorizationUrl();
    await page.goto(second.url.toString());
    await page.getByRole('heading', { name: 'Photo App wants to' }).waitFor();
    t.match(page.url(), /\/login\/consent\?request=/, 'consent is asked again');
    t.same(await axeViolations(page), [], 'the consent page passes axe-core (with "Not you?" and the redirect host)');
    t.equal(
      await page.getByRole('button', { name: 'Not you? Sign out' }).count(),
      1,
      'the consent page offers "Not you?"',
    );

    // 6. The profile: a new name, saved and shown (Post/Redirect/Get).
    await page.goto(`${ctx.baseUrl}/login/account`);
    t.same(await axeViolations(page), [], 'the profile page passes axe-core');
    await page.getByLabel('Name', { exact: true }).fill('Ada Lovelace');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.waitForURL(/\/login\/account\?m=profile-saved$/);
    t.equal(await page.getByRole('status').innerText(), 'Your profile is saved.');
    t.equal(await page.getByLabel('Name', { exact: true }).inputValue(), 'Ada Lovelace');
    t.equal((await ctx.app.services.users.get(email)).name, 'Ada Lovelace');
    await shot('profile');

    // 7. A second browser without JavaScript: sent to sign-in, back to the account page, the forms work.
    const noScript = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 320, height: 640 } });
    const plain = await newPage(noScript);
    await plain.goto(`${ctx.baseUrl}/login/account`);
    t.match(plain.url(), /\/login\/sign-in\?return_to=%2Flogin%2Faccount$/);
    await plain.getByLabel('E-mail address').fill(email);
    await plain.getByLabel('Password').fill(password);
    await plain.getByRole('button', { name: 'Sign in' }).click();
    await plain.waitForURL(`${ctx.baseUrl}/login/account`);
    await plain.getByLabel('Given name').fill('Augusta Ada');
    await plain.getByRole('button', { name: 'Save profile' }).click();
    await plain.waitForURL(/\/login\/account\?m=profile-saved$/);
    t.equal(await plain.getByLabel('Given name').inputValue(), 'Augusta Ada', 'the form works without JavaScript');
    await plain.goto(`${ctx.baseUrl}/login/account/security`);
    await plain.getByLabel('Current password').first().fill(password);
    await plain.getByLabel('New password', { exact: true }).fill('another long password');
    await plain.getByLabel('Repeat the new password').fill('a different password');
    await plain.getByRole('button', { name: 'Change password' }).click();
    await plain.waitForURL(`${ctx.baseUrl}/login/account/password`);
    t.match(await plain.getByRole('alert').innerText(), /The two new passwords are not the same/);
    const confirm = plain.getByLabel('Repeat the new password');
    t.equal(await confirm.getAttribute('aria-invalid'), 'true');
    t.equal(await confirm.getAttribute('aria-describedby'), 'password-confirm_password-error');
    t.equal(await plain.locator('#password-confirm_password:focus').count(), 1, 'the cursor is in the field to fix');
    await shot('no-javascript-error', plain);
    const width = await plain.evaluate(scrollWidth);
    t.ok(width <= 320, `nothing is wider than 320 px (${width})`);

    // 8. The first browser signs the second one out from its sessions list.
    await page.goto(`${ctx.baseUrl}/login/account/security`);
    t.equal(await page.locator('ul.items > li').count(), 2, 'two sessions');
    t.equal(await page.getByRole('button', { name: 'Sign out this browser' }).count(), 1, 'this browser is marked');
    t.same(await axeViolations(page), [], 'the security page passes axe-core');
    await shot('security');
    await page.getByRole('button', { name: /^Sign out the session of / }).click();
    await page.waitForURL(/\/login\/account\/security\?m=session-ended$/);
    t.equal(await page.locator('ul.items > li').count(), 1, 'one session left');
    await plain.goto(`${ctx.baseUrl}/login/account`);
    t.match(plain.url(), /\/login\/sign-in\?return_to=/, 'the other browser is signed out');

    // 9. At 320 px wide the pages fit and still pass axe-core.
    await page.setViewportSize({ width: 320, height: 640 });
    for (const path of ['/login/account', '/login/account/security', '/login/account/applications']) {
      await page.goto(`${ctx.baseUrl}${path}`);
      const scroll = await page.evaluate(scrollWidth);
      t.ok(scroll <= 320, `${path} fits in 320 px (${scroll})`);
      t.same(await axeViolations(page), [], `${path} passes axe-core at 320 px`);
    }
    await shot('security-320');

    // 10. A password change keeps this browser signed in under a new session cookie; a copy of the old cookie,
    // taken before the change (as a thief would hold it), is signed out.
    await page.setViewportSize({ width: 800, height: 700 });
    const oldCookie = (await context.cookies()).filter((c) => c.name === 'idp.session');
    t.equal(oldCookie.length, 1, 'the session cookie');
    await page.goto(`${ctx.baseUrl}/login/account/security`);
    await page.getByLabel('Current password').first().fill(password);
    await page.getByLabel('New password', { exact: true }).fill('another long password');
    await page.getByLabel('Repeat the new password').fill('another long password');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.waitForURL(/\/login\/account\/security\?m=password-changed$/);
    t.match(await page.getByRole('status').innerText(), /^Your password is changed\./, 'still signed in');
    const newCookie = (await context.cookies()).find((c) => c.name === 'idp.session');
    t.ok(newCookie && newCookie.value !== oldCookie[0]!.value, 'the browser holds a new session cookie');
    const thief = await browser.newContext();
    await thief.addCookies(oldCookie);
    const stolen = await newPage(thief);
    await stolen.goto(`${ctx.baseUrl}/login/account`);
    t.match(stolen.url(), /\/login\/sign-in\?return_to=/, 'the old cookie is signed out');
    await page.goto(`${ctx.baseUrl}/login/account`);
    t.equal(page.url(), `${ctx.baseUrl}/login/account`, 'the new one is not');

    // Control: axe-core does see a violation when there is one (an input without a label).
    await page.evaluate(() => {
      const doc = (
        globalThis as unknown as {
          document: { createElement(n: string): object; querySelector(s: string): { append(e: object): void } };
        }
      ).document;
      doc.querySelector('main').append(doc.createElement('input'));
    });
    t.match((await axeViolations(page)).join('\n'), /^label /m, 'axe-core reports an input without a label');

    t.same(problems, [], 'no console errors, CSP violations or page errors');
  },
);
