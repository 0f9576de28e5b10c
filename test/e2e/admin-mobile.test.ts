// The admin web on a phone: headless Chromium (Debian's, driven by playwright-core) at a 390 px wide viewport
// opens every admin page, with data that makes the tables wide (long addresses, URIs, key ids, audit
// details), and no page is wider than the viewport: wide tables scroll inside their own container.
// Screenshots go to .tap/screenshots/admin-mobile-*.png (ignored by git).
import t from 'tap';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const screenshots = join(root, '.tap', 'screenshots');
const WIDTH = 390;

t.test('every admin page fits a 390 px wide phone', { timeout: 240000, skip: chromiumSkip }, async (t) => {
  const ctx = await startTestServer(t);
  const { app } = ctx;
  const actor = { actor: 'test' };
  const adminEmail = 'operator@example.com';
  const password = 'operator passphrase 1';
  await app.services.users.create({ email: adminEmail, password, role: 'admin', emailVerified: true }, actor);
  const person = await app.services.users.create(
    {
      email: 'a.person.with.a.rather.long.address@subdomain.example-company.example.com',
      password,
      name: 'Pat Example-Longname',
      permissions: ['reports:read', 'reports:write', 'billing:administer-everything'],
    },
    actor,
  );
  const application = await app.services.applications.create(
    {
      clientName: 'A Mobile Test Application',
      redirectUris: ['https://a-long-application-host-name.example.com/auth/callback/openid-connect/provider'],
      allowedWebOrigins: ['https://a-long-application-host-name.example.com'],
      postLogoutRedirectUris: ['https://a-long-application-host-name.example.com/signed-out/goodbye'],
    },
    actor,
  );
  await app.services.applications.update(application.clientId, { clientDescription: 'Changed' }, actor);
  await app.services.signingKeys.rotate(actor, { force: true });
  const api = await app.services.resourceServers.create(
    {
      identifier: 'https://a-long-api-host-name.example.com/v1/orders-and-everything-else-about-them',
      name: 'An API with a long identifier',
      scopes: [
        { name: 'orders:read-everything', label: 'Read every order', consentDescription: 'See every order you placed' },
      ],
      allowedClients: [application.clientId],
    },
    actor,
  );
  // The person signs in (a session and audit events with an IP and a detail).
  await app.services.accounts.signIn({ email: person.email, password }, { ip: '203.0.113.10', userAgent: 'phone' });

  const browser = await launchChromium(t);
  mkdirSync(screenshots, { recursive: true });
  const context = await browser.newContext({ viewport: { width: WIDTH, height: 844 }, isMobile: true });
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  page.setDefaultNavigationTimeout(60000);

  const adminUrl = ctx.config.adminUrl;
  await page.goto(`${adminUrl}/applications`);
  await page.getByLabel('E-mail address').fill(adminEmail);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${adminUrl}/applications`);

  const id = encodeURIComponent(application.clientId);
  const pages: Array<[string, string]> = [
    ['applications', '/applications'],
    ['application-new', '/applications/new'],
    ['application', `/applications/${id}`],
    ['application-created', `/applications/${id}/created`],
    ['application-edit', `/applications/${id}/edit`],
    ['application-delete', `/applications/${id}/delete`],
    ['users', '/users'],
    ['user', `/users/${person.id}`],
    ['user-delete', `/users/${person.id}/delete`],
    ['apis', '/apis'],
    ['api-new', '/apis/new'],
    ['api', `/apis/${encodeURIComponent(api.identifier)}`],
    ['api-edit', `/apis/${encodeURIComponent(api.identifier)}/edit`],
    ['api-delete', `/apis/${encodeURIComponent(api.identifier)}/delete`],
    ['keys', '/keys'],
    ['keys-rotate', '/keys/rotate'],
    ['audit', '/audit'],
  ];
  for (const [name, path] of pages) {
    const res = await page.goto(`${adminUrl}${path}`);
    t.equal(res?.status(), 200, `${path}: 200`);
    // document.documentElement.scrollWidth (no DOM types in this project's TypeScript configuration)
    const width = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    t.ok(width <= WIDTH, `${path}: the page is ${width} px wide (at most ${WIDTH})`);
    await page.screenshot({ path: join(screenshots, `admin-mobile-${name}.png`), fullPage: true });
  }
  t.comment(`screenshots: ${screenshots}/admin-mobile-*.png`);
});
