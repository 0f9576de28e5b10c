// A server-side application made in the admin web, in headless Chromium on a real server (issue 33, item 7): the
// operator picks "Server-side application (confidential)", reads the client secret once on the page that answers
// the form (never in the address bar or a cookie), an unmodified openid-client signs a person in with that secret
// (client_secret_basic), and no page shown afterwards holds it. Screenshots: .tap/screenshots/admin-secret-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, startCallbackServer } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

t.test(
  'admin web: a server-side application, its secret read once, used by openid-client',
  { timeout: 240000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const callback = await startCallbackServer(t);
    const adminUrl = ctx.config.adminUrl;
    const email = 'operator@example.com';
    const password = 'operator passphrase 1';
    await ctx.app.services.users.create(
      { email, password, role: 'admin', emailVerified: true, name: 'Olga' },
      { actor: 'test' },
    );

    const browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30000);
    const shot = (name: string) =>
      page.screenshot({ path: join(screenshots, `admin-secret-${name}.png`), fullPage: true });
    const seen: string[] = [];
    page.on('response', (res) => seen.push(res.url(), JSON.stringify(res.headers())));

    await page.goto(`${adminUrl}/applications/new`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password', { exact: true }).fill(password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${adminUrl}/applications/new`);

    t.equal(
      await page.getByRole('radio', { name: /Browser or mobile app/ }).isChecked(),
      true,
      'a public PKCE client unless the operator says otherwise',
    );
    await page.getByLabel('Name', { exact: true }).fill('Server App');
    await page.getByLabel('Redirect URIs', { exact: true }).fill(callback.redirectUri);
    await page.getByRole('radio', { name: /Server-side application \(confidential\)/ }).check();
    t.equal(
      await page.getByRole('radio', { name: /client_secret_basic/ }).isChecked(),
      true,
      'client_secret_basic by default',
    );
    await shot('1-form');
    const answer = page.waitForResponse((r) => r.request().method() === 'POST');
    await page.getByRole('button', { name: 'Create application' }).click();
    const res = await answer;
    t.equal(res.status(), 200, 'the answer to the POST is the page with the secret');
    t.match(res.headers()['cache-control'] ?? '', /no-store/);
    await t.resolves(page.getByRole('heading', { name: 'Created Server App' }).waitFor());
    t.equal(page.url(), `${adminUrl}/applications`, 'the address is the form’s: no secret in a URL');
    await t.resolves(page.getByText('Copy this secret now: it will not be shown again.').waitFor());
    const secret = (await page.locator('#client-secret').innerText()).trim();
    const clientId = (await page.locator('#client-id').innerText()).trim();
    t.match(secret, /^[A-Za-z0-9_-]{43}$/);
    await shot('2-secret-once');
    t.notOk(
      (await context.cookies()).some((c) => c.value.includes(secret)),
      'not in a cookie',
    );
    t.notOk(
      seen.some((s) => s.includes(secret)),
      'not in any address or response header',
    );

    // An unmodified relying party authenticates with it (client_secret_basic), for a person signed in here.
    const config = await client.discovery(new URL(ctx.issuer), clientId, undefined, client.ClientSecretBasic(secret), {
      execute: [client.allowInsecureRequests],
    });
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: callback.redirectUri,
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    await page.goto(url.href);
    await page.waitForURL(/\/login\/consent\?request=/);
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
      pkceCodeVerifier: verifier,
      expectedState: state,
      idTokenExpected: true,
    });
    t.equal(tokens.claims()?.aud, clientId, 'tokens for the server-side application, with its secret');
    const wrong = await client.discovery(new URL(ctx.issuer), clientId, undefined, client.ClientSecretBasic('nope'), {
      execute: [client.allowInsecureRequests],
    });
    const refused = await client.refreshTokenGrant(wrong, tokens.refresh_token ?? 'none').catch((e: unknown) => e);
    // 401 with WWW-Authenticate: Basic (Basic was tried), which openid-client reports as a challenge.
    t.match(refused, { name: 'WWWAuthenticateChallengeError', status: 401, cause: [{ scheme: 'basic' }] });

    // Afterwards: the detail page shows the type and the secret's id and dates, never the secret.
    await page.goto(`${adminUrl}/applications/${clientId}`);
    t.equal((await page.locator('#client-type').innerText()).trim(), 'Server-side application (confidential)');
    t.equal((await page.locator('#auth-method').innerText()).trim(), 'client_secret_basic');
    await t.resolves(page.getByRole('button', { name: 'Rotate secret' }).waitFor());
    t.notMatch(await page.content(), secret, 'the detail page does not hold it');
    await shot('3-detail');
    await page.goto(`${adminUrl}/applications/${clientId}/created`);
    t.notMatch(await page.content(), secret, 'nor the integration page');
    t.equal(await page.locator('#client-secret').count(), 0);
    t.notMatch(ctx.logs.text(), secret, 'nor the log');
  },
);
