// Passkeys (issue 34) in headless Chromium with a virtual authenticator (DevTools protocol: WebAuthn.enable,
// WebAuthn.addVirtualAuthenticator, ctap2, internal, resident keys, user verification): Ada registers a passkey
// from the sign-in methods page; an application's authorize request is then signed in with the passkey alone
// (user verified: the session's and the ID token's amr have mfa, acr urn:idp:mfa); the sign-in page
// offers the passkey in the e-mail field's autofill (conditional UI); after her password the passkey is her
// second factor; once removed, the passkey signs nobody in. The provider runs on http://localhost (a WebAuthn
// RP ID must be a domain, not an IP address). Screenshots go to .tap/screenshots/passkeys-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import type { CDPSession, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, startCallbackServer, axeViolations, scrollWidth } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

/** axe-core's violations (WCAG 2.x A/AA and best practice) and any horizontal scroll, at 1280 and 320 px wide. */
async function axeAtWidths(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const width of [1280, 320]) {
    await page.setViewportSize({ width, height: 800 });
    const scroll = await page.evaluate(scrollWidth);
    if (scroll > width) found.push(`wider than ${width} px: ${scroll}`);
    found.push(...(await axeViolations(page)).map((v) => `${width}px ${v}`));
  }
  await page.setViewportSize({ width: 800, height: 800 });
  return found;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });

t.test('passkeys end to end', { timeout: 300000, skip: chromiumSkip }, async (t) => {
  const port = await freePort();
  const ctx = await startTestServer(t, { PORT: String(port), BASE_URL: `http://localhost:${port}` });
  t.equal(ctx.config.mfa.rpId, 'localhost');
  const callback = await startCallbackServer(t);
  const application = await ctx.app.services.applications.create(
    { clientName: 'Photo App', redirectUris: [callback.redirectUri], allowedScopes: ['openid', 'email'] },
    { actor: 'test' },
  );
  const email = 'ada@example.com';
  const password = 'correct horse battery';
  const ada = await ctx.app.services.users.create(
    { email, password, name: 'Ada', emailVerified: true },
    { actor: 'test' },
  );
  const rp = await client.discovery(new URL(ctx.issuer), application.clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  const db = ctx.database.db;
  const latestAmr = async () =>
    (
      await db
        .selectFrom('sessions')
        .select('amr')
        .where('user_id', '=', ada.id)
        .orderBy('auth_time', 'desc')
        .executeTakeFirstOrThrow()
    ).amr as unknown as string[];

  const browser = await launchChromium(t);
  mkdirSync(screenshots, { recursive: true });
  const context = await browser.newContext({ viewport: { width: 800, height: 800 } });
  t.teardown(() => context.close());
  const page: Page = await context.newPage();
  page.setDefaultTimeout(30000);
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    if (/favicon\.ico/.test(msg.location().url) && /status of 404/.test(msg.text())) return;
    // The removed passkey's refusal (step 5) is a 401 answer on purpose: Chromium reports its status.
    if (/\/passkeys\/sign-in\/verify$/.test(msg.location().url) && /status of 401/.test(msg.text())) return;
    problems.push(`${msg.text()} (${msg.location().url})`);
  });
  const shot = (name: string) => page.screenshot({ path: join(screenshots, `passkeys-${name}.png`), fullPage: true });

  // The virtual authenticator: a platform authenticator that keeps discoverable credentials and verifies the user.
  const cdp: CDPSession = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  const credentials = async () => (await cdp.send('WebAuthn.getCredentials', { authenticatorId })).credentials;

  async function signOut() {
    await page.goto(`${ctx.baseUrl}/login/sign-out`);
    const button = page.getByRole('button', { name: 'Sign out' });
    if (await button.count()) {
      await button.first().click();
      await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    }
  }

  // 1. Ada signs in with her password and adds a passkey named "Laptop" on the sign-in methods page.
  await page.goto(`${ctx.baseUrl}/login/account/sign-in-methods`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL(`${ctx.baseUrl}/login/account/sign-in-methods`);
  const csp = (await page.request.get(page.url())).headers()['content-security-policy'] ?? '';
  t.match(csp, /script-src 'self'/, 'the page may load our scripts');
  t.match(csp, /frame-ancestors 'none'/, 'and keeps the rest of the policy');
  t.notMatch(csp, /unsafe-inline/);
  await page.getByLabel('Name of the new passkey (optional)').fill('Laptop');
  await page.getByRole('button', { name: 'Add a passkey' }).click();
  await page.waitForURL(/\/login\/account\/sign-in-methods\?m=passkey-added/);
  t.match(await page.getByRole('status').first().innerText(), /Your passkey is added/);
  t.match(await page.locator('ul.passkeys').innerText(), /Laptop · On one device only/);
  t.equal((await credentials()).length, 1, 'the authenticator holds one credential');
  t.ok((await credentials())[0]?.isResidentCredential, 'discoverable');
  const stored = await ctx.app.services.passkeys.list(ada.id);
  t.equal(stored.length, 1, 'stored');
  await shot('added');
  t.same(await axeAtWidths(page), [], 'the sign-in methods page with a passkey passes axe-core');

  // Presence is simulated for every request, the conditional one too: the sign-in page's autofill request
  // answers by itself. Switched off, no request is answered (the password and button steps need that).
  const presence = (enabled: boolean) =>
    cdp.send('WebAuthn.setAutomaticPresenceSimulation', { authenticatorId, enabled });

  // 2. Conditional UI: an application's authorize request; the sign-in page's e-mail field offers the passkey
  // in its autofill, which (presence simulated) is chosen: signed in with the passkey alone, then consent and
  // the code exchange.
  await signOut();
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(rp, {
    redirect_uri: callback.redirectUri,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
  });
  await presence(false);
  await page.goto(url.toString());
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  t.equal(await page.getByLabel('E-mail address').getAttribute('autocomplete'), 'username webauthn');
  const conditional = await page.evaluate(() =>
    (
      globalThis as unknown as { PublicKeyCredential: { isConditionalMediationAvailable(): Promise<boolean> } }
    ).PublicKeyCredential.isConditionalMediationAvailable(),
  );
  t.ok(conditional, 'the browser offers conditional mediation');
  await shot('sign-in');
  t.same(await axeAtWidths(page), [], 'the sign-in page with the passkey button passes axe-core');
  await presence(true);
  await page.reload();
  await page.getByRole('heading', { name: 'Photo App wants to' }).waitFor();
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
  const tokens = await client.authorizationCodeGrant(rp, new URL(page.url()), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  t.equal(tokens.claims()?.sub, ada.id, 'the ID token is Ada');
  t.same(tokens.claims()?.amr, ['hwk', 'user', 'mfa'], "the ID token's amr: a passkey with user verification");
  t.equal(tokens.claims()?.acr, 'urn:idp:mfa', "the ID token's acr: two factors");
  t.same(await latestAmr(), ['hwk', 'user', 'mfa'], 'a passkey with user verification: two factors');
  t.ok((await ctx.app.services.passkeys.list(ada.id))[0]?.lastUsedAt, 'last used recorded');

  // 3. The "Use a passkey" button (the autofill request left unanswered).
  await signOut();
  await presence(false);
  await page.goto(`${ctx.baseUrl}/login/sign-in`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await presence(true);
  await page.getByRole('button', { name: 'Use a passkey' }).click();
  await page.waitForURL(`${ctx.baseUrl}/login/`);
  t.same(await latestAmr(), ['hwk', 'user', 'mfa'], 'the button signed in');

  // 4. The passkey as second factor after the password.
  await signOut();
  await presence(false);
  await page.goto(`${ctx.baseUrl}/login/sign-in?return_to=${encodeURIComponent('/login/account/sign-in-methods')}`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Second step of sign-in' }).waitFor();
  await shot('second-factor');
  t.same(await axeAtWidths(page), [], 'the second-factor page with the passkey passes axe-core');
  await presence(true);
  await page.getByRole('button', { name: 'Use a passkey' }).click();
  await page.waitForURL(`${ctx.baseUrl}/login/account/sign-in-methods`);
  t.same(await latestAmr(), ['pwd', 'hwk', 'user', 'mfa'], 'password and passkey');

  // 5. Rename, then remove; the removed passkey signs nobody in.
  await page.getByLabel('Name of this passkey').fill('Old laptop');
  await page.getByRole('button', { name: 'Rename Laptop' }).click();
  await page.waitForURL(/m=passkey-renamed/);
  t.match(await page.locator('ul.passkeys').innerText(), /Old laptop/);
  await page.getByRole('button', { name: 'Remove Old laptop' }).click();
  await page.waitForURL(/m=passkey-removed/);
  t.equal(await page.locator('ul.passkeys').count(), 0, 'no passkey left');
  await signOut();
  await presence(false);
  await page.goto(`${ctx.baseUrl}/login/sign-in`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await presence(true);
  await page.getByRole('button', { name: 'Use a passkey' }).click();
  await page.locator('#passkey-error').waitFor({ state: 'visible' });
  t.match(await page.locator('#passkey-error').innerText(), /not registered here/);
  t.equal(page.url(), `${ctx.baseUrl}/login/sign-in`, 'still on the sign-in page');
  await shot('removed');
  t.same(problems, [], 'no script errors');
});
