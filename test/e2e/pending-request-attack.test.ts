// Issue 12, item 1, played in a real browser: the owner of a registered application starts an
// authorization request R in their own browser, signs in on R with their own (unverified) account and
// clicks Allow on R's consent form; then they get a signed-in victim to open R's continue link. The
// victim's browser must never land on the application without the victim's own consent. Two browser
// contexts of headless Chromium are two people's browsers (separate cookie jars).
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, startCallbackServer } from '../helpers/chromium.js';

t.test(
  'a victim never lands on the application through an attacker-prepared request',
  { timeout: 180000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const callback = await startCallbackServer(t);
    const actor = { actor: 'test' };
    const rp = await ctx.app.services.applications.create(
      {
        clientName: 'Attacker RP',
        redirectUris: [callback.redirectUri],
        allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
      },
      actor,
    );
    const PASSWORD = 'a long enough passphrase';
    await ctx.app.services.users.create({ email: 'owner@rp.example', password: PASSWORD, emailVerified: false }, actor);
    await ctx.app.services.users.create(
      { email: 'victim@example.com', password: PASSWORD, emailVerified: true },
      actor,
    );

    const browser = await launchChromium(t);
    const open = async () => {
      const page = await (await browser.newContext()).newPage();
      page.setDefaultTimeout(30000);
      return page;
    };
    const attacker = await open();
    const victimPage = await open();
    const signIn = async (page: Page, email: string) => {
      await page.getByLabel('E-mail address').fill(email);
      await page.getByLabel(/^Password/).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
    };
    const authorizeUrl = (scope: string) => {
      const url = new URL(`${ctx.issuer}/oauth2/authorize`);
      url.search = new URLSearchParams({
        client_id: rp.clientId,
        redirect_uri: callback.redirectUri,
        response_type: 'code',
        scope,
        code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
        code_challenge_method: 'S256',
        state: randomBytes(8).toString('base64url'),
      }).toString();
      return url.toString();
    };

    // The victim is signed in to the provider in their own browser.
    await victimPage.goto(`${ctx.baseUrl}/login/sign-in`);
    await signIn(victimPage, 'victim@example.com');
    await victimPage.waitForURL(`${ctx.baseUrl}/login/`);

    // The attacker prepares R: their own PKCE challenge, their own sign-in, then Allow on R's consent form.
    await attacker.goto(authorizeUrl('openid profile email offline_access'));
    await attacker.waitForURL(/\/login\/sign-in\?request=/);
    const r = new URL(attacker.url()).searchParams.get('request')!;
    await signIn(attacker, 'owner@rp.example');
    await attacker.waitForURL(/\/login\/verify-email\?request=/);
    await attacker.goto(`${ctx.baseUrl}/login/consent?request=${r}`);
    await attacker.getByRole('button', { name: 'Allow' }).click();
    await attacker.waitForURL(/\/login\/verify-email\?request=/);
    t.pass('Allow on a request that is not at its consent step only leads back to the step that is due');

    // The victim opens the attacker's link to R, and then R's consent page.
    const continued = await victimPage.goto(`${ctx.issuer}/oauth2/authorize/continue?request=${encodeURIComponent(r)}`);
    t.equal(continued?.status(), 400, 'R cannot be continued in the victim browser');
    t.ok(victimPage.url().startsWith(ctx.issuer), 'the victim stays on the provider');
    t.match(await victimPage.locator('main').innerText(), /another browser/);
    const consentPage = await victimPage.goto(`${ctx.baseUrl}/login/consent?request=${encodeURIComponent(r)}`);
    t.equal(consentPage?.status(), 400, "nor is R's consent page shown to the victim");
    // Codes are sealed, not stored: one issued would have been redirected to the application.
    t.equal(callback.received.length, 0, 'the application received nothing: no code was issued for the victim');

    // The same application, asked properly by the victim: the victim sees the consent page and decides.
    await victimPage.goto(authorizeUrl('openid profile'));
    await victimPage.waitForURL(/\/login\/consent\?request=/);
    await t.resolves(
      victimPage.getByRole('heading', { name: /Attacker RP/ }).waitFor(),
      'the victim is asked for their own consent',
    );
    await victimPage.getByRole('button', { name: 'Allow' }).click();
    await victimPage.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    t.equal(callback.received.length, 1, 'only the victim’s own consent sends a code');
    t.ok(callback.received[0]!.get('code'));
  },
);
