// The operator's journey in headless Chromium (Debian's, driven by playwright-core), on a real server:
// first start → the logged setup link → create the admin → applications → "New application" with a
// redirect URI and a web origin → read the client id → openid-client signs a person in with it in the
// browser (the origin can call the API from the browser) → disable the application in the admin → the
// next authorize is refused, and the origin loses CORS. Screenshots go to .tap/screenshots/admin-*.png.
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium, startCallbackServer } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');

/** Collects console errors and warnings (CSP violations land there), page errors and failed requests. */
function watch(page: Page) {
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() !== 'error' && msg.type() !== 'warning') return;
    const source = msg.location().url;
    // Chromium asks every origin for /favicon.ico on its own; the server has none. Not a page error.
    if (new URL(source || 'about:blank').pathname === '/favicon.ico' && /status of 404/.test(msg.text())) return;
    problems.push(`${msg.type()}: ${msg.text()} [source ${source}] (page ${page.url()})`);
  });
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('requestfailed', (req) => problems.push(`${req.url()}: ${req.failure()?.errorText}`));
  return problems;
}

t.test(
  'operator journey: setup link → admin → new application → a login with its client id → disable → refused',
  {
    timeout: 240000,
    skip: chromiumSkip,
  },
  async (t) => {
    const ctx = await startTestServer(t);
    const callback = await startCallbackServer(t);
    const adminUrl = ctx.config.adminUrl;

    // First start: no admin, so the server printed a one-time setup link on its console (never in the log).
    const setupLink = ctx.printed.map((l) => l.trim()).find((l) => l.startsWith(`${adminUrl}/setup?token=`)) ?? '';
    t.ok(setupLink, 'the setup link is printed at start');
    t.match(setupLink, new RegExp(`^${adminUrl}/setup\\?token=[A-Za-z0-9_-]{43}$`));
    t.match(ctx.printed.join('\n'), /No admin user exists yet/);
    t.match(ctx.printed.join('\n'), /idp users create --admin/, 'and names the CLI alternative');
    t.notOk(
      ctx.logs.lines.some((l) => l.includes('setup?token=')),
      'no log record carries it',
    );

    const browser: Browser = await launchChromium(t);
    mkdirSync(screenshots, { recursive: true });
    const newPage = async (context: BrowserContext) => {
      const page = await context.newPage();
      page.setDefaultTimeout(30000);
      page.setDefaultNavigationTimeout(60000);
      return page;
    };

    // The operator's browser.
    const adminContext = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const admin = await newPage(adminContext);
    const adminProblems = watch(admin);
    const shot = (name: string, page: Page = admin) =>
      page.screenshot({ path: join(screenshots, `admin-${name}.png`), fullPage: true });

    // 1. The setup link: the form, with the hosted pages' headers.
    const setup = await admin.goto(setupLink);
    t.equal(setup?.status(), 200);
    const headers = setup!.headers();
    t.match(headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
    t.notMatch(headers['content-security-policy'] ?? '', /unsafe-inline/);
    t.equal(headers['x-frame-options'], 'DENY');
    t.match(headers['cache-control'] ?? '', /no-store/);
    t.equal(await admin.title(), 'Create the first admin · Admin');
    t.equal(
      await admin.locator('link[rel=stylesheet]').evaluate((l) => (l as unknown as { sheet: unknown }).sheet !== null),
      true,
      'the stylesheet loaded under the CSP',
    );
    const adminEmail = 'operator@example.com';
    const adminPassword = 'operator passphrase 1';
    await admin.getByLabel('Name', { exact: true }).fill('Olga Operator');
    await admin.getByLabel('E-mail address').fill(adminEmail);
    await admin.getByLabel(/^Password/).fill(adminPassword);
    await admin.getByLabel('Repeat the password').fill('something else');
    await shot('1-setup');
    await admin.getByRole('button', { name: 'Create admin account' }).click();
    await t.resolves(
      admin.getByText('The two passwords are not the same').waitFor(),
      'a mismatching confirmation is shown next to the field',
    );
    t.equal(await admin.getByLabel('E-mail address').inputValue(), adminEmail, 'the address is kept');
    await admin.getByLabel(/^Password/).fill(adminPassword);
    await admin.getByLabel('Repeat the password').fill(adminPassword);
    await admin.getByRole('button', { name: 'Create admin account' }).click();

    // 2. Signed in, on the applications page.
    await admin.waitForURL(`${adminUrl}/applications?done=created`);
    await t.resolves(admin.getByRole('heading', { name: 'Applications' }).waitFor());
    t.match(await admin.locator('header').innerText(), adminEmail, 'the admin is named in the header');
    t.match(await admin.locator('main').innerText(), /No applications yet\./);
    const session = (await adminContext.cookies(ctx.baseUrl)).find((c) => c.name === 'idp.session');
    t.equal(session?.httpOnly, true, 'an HttpOnly session cookie');
    await shot('2-applications');
    const reused = await fetch(setupLink);
    t.equal(reused.status, 400, 'the setup link works once');
    t.match(await reused.text(), /Setup is done/);

    // 3. New application: a name, the callback as redirect URI and its origin as a web origin.
    await admin.goto(`${adminUrl}/applications`);
    await admin.getByRole('link', { name: 'New application' }).click();
    await admin.waitForURL(`${adminUrl}/applications/new`);
    await admin.getByLabel('Name', { exact: true }).fill('Journey App');
    await admin.getByLabel('Description').fill('Made in the browser');
    await admin.getByLabel('Redirect URIs', { exact: true }).fill(`${callback.redirectUri}\nnot a uri`);
    await admin.getByLabel(/^Allowed web origins/).fill(callback.origin);
    await admin.getByRole('button', { name: 'Create application' }).click();
    await t.resolves(admin.getByText(/^Line 2: /).waitFor(), 'the bad second line is pointed out');
    t.equal(await admin.getByLabel('Redirect URIs', { exact: true }).getAttribute('aria-invalid'), 'true');
    await shot('3-new-application-error');
    await admin.getByLabel('Redirect URIs', { exact: true }).fill(callback.redirectUri);
    await shot('3-new-application');
    await admin.getByRole('button', { name: 'Create application' }).click();

    // 4. The created page: client id, discovery URL, snippets.
    await admin.waitForURL(/\/admin\/applications\/[A-Za-z0-9_-]+\/created$/);
    await t.resolves(admin.getByRole('heading', { name: 'Created Journey App' }).waitFor());
    const clientId = (await admin.locator('#client-id').innerText()).trim();
    t.match(clientId, /^[A-Za-z0-9_-]{32}$/, 'a generated client id');
    t.equal(
      (await admin.locator('#discovery-url').innerText()).trim(),
      `${ctx.issuer}/.well-known/openid-configuration`,
    );
    const snippet = await admin.locator('#snippet-openid-client').innerText();
    t.match(snippet, clientId);
    t.match(snippet, callback.redirectUri);
    const scope = /scope: '([^']+)'/.exec(snippet)?.[1];
    // The default scopes (DEFAULT_ALLOWED_SCOPES, as in the admin API and the CLI), offline_access included.
    t.equal(scope, 'openid profile email offline_access', 'the snippet requests the allowed scopes');
    t.match(await admin.locator('#snippet-oauth4webapi').innerText(), clientId);
    await shot('4-created');

    // 5. A relying party (openid-client) with that client id; a person signs in in their own browser.
    await ctx.app.services.users.create(
      { email: 'person@example.com', password: 'person passphrase 1', name: 'Pat Person', emailVerified: true },
      { actor: 'test' },
    );
    const config = await client.discovery(new URL(ctx.issuer), clientId, undefined, client.None(), {
      execute: [client.allowInsecureRequests],
    });
    const authorization = async () => {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: callback.redirectUri,
        scope: scope!,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });
      return { url, verifier, state };
    };
    const personContext = await browser.newContext({ viewport: { width: 800, height: 700 } });
    const person = await newPage(personContext);
    const first = await authorization();
    await person.goto(first.url.href);
    t.match(person.url(), new RegExp(`^${ctx.baseUrl}/login/sign-in\\?request=`));
    t.equal(await person.title(), 'Sign in · Journey App', 'the sign-in page names the new application');
    await person.getByLabel('E-mail address').fill('person@example.com');
    await person.getByLabel('Password', { exact: true }).fill('person passphrase 1');
    await person.getByRole('button', { name: 'Sign in' }).click();
    await person.waitForURL(/\/login\/consent\?request=/);
    await t.resolves(person.getByRole('heading', { name: 'Journey App wants to' }).waitFor());
    await person.getByRole('button', { name: 'Allow' }).click();
    await person.waitForURL((u) => u.toString().startsWith(callback.redirectUri));
    t.equal(await person.locator('body').innerText(), 'callback ok');
    t.equal(callback.received.length, 1);
    const tokens = await client.authorizationCodeGrant(config, new URL(person.url()), {
      pkceCodeVerifier: first.verifier,
      expectedState: first.state,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    t.equal(claims.aud, clientId, 'the ID token is for the new client id');
    t.equal(claims.iss, ctx.issuer);
    const info = await client.fetchUserInfo(config, tokens.access_token, claims.sub);
    t.equal(info.email, 'person@example.com');
    t.equal(info.name, 'Pat Person');

    // The allowed web origin can call the API from the browser (CORS), from the callback page itself.
    const callFromOrigin = () =>
      person.evaluate(
        async ([url, token]) => {
          try {
            const res = await fetch(url!, { headers: { authorization: `Bearer ${token}` } });
            return { status: res.status, body: (await res.json()) as { email?: string } };
          } catch (error) {
            return { error: String(error) };
          }
        },
        [`${ctx.baseUrl}/api/external/me`, tokens.access_token],
      );
    const allowed = await callFromOrigin();
    t.same(
      allowed,
      { status: 200, body: { sub: claims.sub, name: 'Pat Person', email: 'person@example.com', email_verified: true } },
      'the origin may call /api/external/me',
    );

    // 6. Back in the admin: the application is listed; disable it.
    await admin.goto(`${adminUrl}/applications`);
    await admin.getByRole('link', { name: 'Journey App' }).click();
    await admin.waitForURL(`${adminUrl}/applications/${clientId}`);
    t.match(await admin.locator('main').innerText(), callback.origin, 'the origin is listed');
    await shot('5-application');
    await admin.getByRole('button', { name: 'Disable' }).click();
    await admin.waitForURL(`${adminUrl}/applications/${clientId}?done=disabled`);
    await t.resolves(admin.getByText('Disabled.', { exact: true }).waitFor());
    t.equal(await admin.locator('h1 + .badge').innerText(), 'disabled');
    await shot('6-disabled');

    // 7. The next authorize for it is refused with the error page; the callback is not called.
    const second = await authorization();
    const refused = await person.goto(second.url.href);
    t.equal(refused?.status(), 400, 'authorize is refused');
    t.equal(new URL(person.url()).origin, ctx.baseUrl, 'the browser stays on the identity provider');
    await t.resolves(person.getByRole('heading', { name: 'This request cannot be completed' }).waitFor());
    t.match(await person.locator('main').innerText(), /this application is disabled/);
    t.match(await person.locator('main').innerText(), /invalid_client/);
    t.equal(callback.received.length, 1, 'the client got no second redirect');
    await shot('7-authorize-refused', person);
    // The origin lost CORS at once.
    await person.goto(`${callback.origin}/callback`);
    const blocked = await callFromOrigin();
    t.match(blocked, { error: /TypeError|Failed to fetch/ }, 'the origin can no longer call the API from the browser');

    // 8. The other main pages, and the audit trail of what the operator did.
    await admin.getByRole('link', { name: 'Users' }).click();
    await admin.waitForURL(`${adminUrl}/users`);
    t.match(await admin.locator('main').innerText(), /person@example\.com/);
    await shot('8-users');
    await admin.getByRole('link', { name: 'person@example.com' }).click();
    await t.resolves(admin.getByRole('heading', { name: 'Grants (1 live)' }).waitFor());
    await shot('9-user');
    await admin.getByRole('link', { name: 'Signing keys' }).click();
    await admin.waitForURL(`${adminUrl}/keys`);
    t.equal(await admin.locator('tbody tr').count(), 2, 'current and next key');
    await shot('10-keys');
    await admin.getByRole('link', { name: 'Audit log' }).click();
    await admin.waitForURL(`${adminUrl}/audit`);
    await admin.getByLabel('Client id').fill(clientId);
    await admin.getByRole('button', { name: 'Filter' }).click();
    await admin.waitForURL(/\/admin\/audit\?/);
    const auditText = await admin.locator('tbody').innerText();
    t.match(auditText, /application\.updated\s+admin:operator@example\.com/, 'the disable, by the operator');
    t.match(auditText, /application\.created\s+admin:operator@example\.com/, 'the creation, by the operator');
    await shot('11-audit');

    // 9. Sign out.
    await admin.getByRole('button', { name: 'Sign out' }).click();
    await admin.waitForURL(/\/login\/sign-in\?return_to=/);
    await admin.goto(`${adminUrl}/applications`);
    t.match(admin.url(), /\/login\/sign-in\?return_to=/, 'signed out: back to sign-in');

    // The two forms sent back with errors answer 400 on purpose, which Chromium reports on the console.
    const isFormError = (p: string) =>
      new RegExp(
        /^error: Failed to load resource: the server responded with a status of 400 /.source +
          /\(Bad Request\) \[source [^\]]+\/admin\/(setup|applications)\]/.source,
      ).test(p);
    t.equal(adminProblems.filter(isFormError).length, 2, 'the two refused forms answered 400');
    t.same(
      adminProblems.filter((p) => !isFormError(p)),
      [],
      'no console errors or warnings (a CSP violation would be one), no failed requests on admin pages',
    );
    t.comment(`screenshots in ${screenshots}`);
  },
);
