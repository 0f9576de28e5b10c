// Issue 12, item 2, played in a real browser: the owner of a registered application tries to have the
// victim's genuine password-reset mail deliver the reset token to the application's own page (a
// redirectTo on the application's web origin, or on its redirect-URI origin). Two browser contexts of
// headless Chromium are two people's browsers: the attacker, on a page served from the application's
// registered origin, and the victim, who then asks for a reset on the hosted page. Every mail the
// victim receives (read from the in-process SMTP server) only ever links to first-party targets, and
// the attacker's origin never sees a request with a token.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, launchChromium } from '../helpers/chromium.js';

/** The attacker's site on the application's registered origin: an attack page, and a log of every request. */
async function startAttackerSite(t: { teardown(fn: () => unknown): void }, page: () => string) {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(page());
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('thanks');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, requests };
}

/** Every http(s) URL in a mail, text and HTML parts alike. */
const urlsIn = (text: string) => [...text.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => m[0].replace(/&amp;/g, '&'));

t.test(
  'a registered application cannot have the reset mail deliver a token to its own origin',
  { timeout: 180000, skip: chromiumSkip },
  async (t) => {
    const ctx = await startTestServer(t);
    const victimEmail = 'reset-victim@example.com';
    let attackConfig = '';
    const attackerSite = await startAttackerSite(t, () => attackConfig);
    // The attacker's application: its web origin and its redirect URI are both on the attacker's site.
    const rp = await ctx.app.services.applications.create(
      {
        clientName: 'Attacker RP',
        redirectUris: [`${attackerSite.origin}/callback`],
        allowedWebOrigins: [attackerSite.origin],
      },
      { actor: 'test' },
    );
    t.ok(rp.clientId, 'the attacker registered an application');
    await ctx.app.services.users.create(
      { email: victimEmail, password: 'the victim passphrase 1', emailVerified: true },
      { actor: 'test' },
    );
    const firstParty = new Set([new URL(ctx.config.loginUrl).origin, ...ctx.config.firstPartyOrigins]);
    const endpoint = `${ctx.issuer}/request-password-reset`;
    const targets = [`${attackerSite.origin}/steal`, `${attackerSite.origin}/callback`];

    const browser = await launchChromium(t);
    const attackerContext = await browser.newContext();
    const victimContext = await browser.newContext();
    const attacker = await attackerContext.newPage();
    const victim = await victimContext.newPage();
    attacker.setDefaultTimeout(30000);
    victim.setDefaultTimeout(30000);

    // 1. From a page on the application's registered origin, the attacker's script asks for a reset of
    //    the victim's account with redirectTo on its own origin: as JSON (needs a CORS preflight), and as
    //    a "simple" request that needs none.
    attackConfig =
      `<!doctype html><meta charset="utf-8"><title>attack</title><script>
    const results = [];
    const ask = async (init, redirectTo) => {
      try {
        const res = await fetch(${JSON.stringify(endpoint)}, ` +
      `{ method: 'POST', ...init(JSON.stringify({ email: ${JSON.stringify(victimEmail)}, redirectTo })) });
        results.push(res.type === 'opaque' ? 'opaque' : String(res.status));
      } catch (e) { results.push('blocked'); }
    };
    (async () => {
      for (const target of ${JSON.stringify(targets)}) {
        await ask((body) => ({ headers: { 'content-type': 'application/json' }, body }), target);
        await ask((body) => ({ mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body }), target);
      }
      document.title = 'done ' + results.join(',');
    })();
  </script>`;
    await attacker.goto(`${attackerSite.origin}/`);
    await attacker.waitForFunction(() =>
      (globalThis as unknown as { document: { title: string } }).document.title.startsWith('done '),
    );
    const pageResults = (await attacker.title()).slice(5).split(',');
    t.equal(pageResults.length, 4);
    t.comment(`attack page results: ${pageResults.join(', ')}`);
    t.ok(
      pageResults.every((r) => r === 'blocked' || r === 'opaque' || r === '400' || r === '403' || r === '415'),
      `the browser requests got nowhere: ${pageResults.join(', ')}`,
    );

    // 2. The same request without a browser's Origin (as curl sends it), through the attacker's context:
    //    refused with 400 INVALID_REDIRECT, whatever the application origin.
    for (const redirectTo of targets) {
      const res = await attackerContext.request.post(endpoint, {
        data: { email: victimEmail, redirectTo },
        headers: { 'content-type': 'application/json' },
      });
      t.equal(res.status(), 400, `redirectTo ${redirectTo} is refused`);
      t.same(await res.json(), {
        error: 'INVALID_REDIRECT',
        message: 'redirectTo must be a URL on the login origin or on one of the FIRST_PARTY_ORIGINS',
      });
    }
    await ctx.app.services.recovery.drain();
    await ctx.app.services.mailer.drain();
    await delay(300);
    t.same(
      ctx.smtp.mails.filter((m) => m.to.includes(victimEmail)),
      [],
      'the attacker made no mail reach the victim',
    );

    // 3. The victim asks for a reset on the hosted page, in their own browser.
    await victim.goto(`${ctx.baseUrl}/login/forgot-password`);
    await victim.getByLabel('E-mail address').fill(victimEmail);
    await victim.getByRole('button', { name: 'Send the link' }).click();
    await t.resolves(
      victim.getByRole('heading', { name: 'Check your e-mail' }).waitFor(),
      'the check-your-e-mail page is shown',
    );
    const mail = await ctx.smtp.waitFor(victimEmail, 30000);
    t.equal(mail.subject, 'Reset your password');

    // 4. Every link in every mail the victim got leads to a first-party origin, and so does every
    //    redirectTo a link carries.
    const victimMails = ctx.smtp.mails.filter((m) => m.to.includes(victimEmail));
    t.equal(victimMails.length, 1, 'exactly the one mail the victim asked for');
    const links = victimMails.flatMap((m) => [...urlsIn(m.text), ...urlsIn(m.html)]);
    t.ok(links.length >= 2, 'the mail carries its link in the text and the HTML part');
    for (const link of links) {
      const url = new URL(link);
      t.ok(firstParty.has(url.origin) || url.origin === new URL(ctx.baseUrl).origin, `${url.origin} is first-party`);
      const target = url.searchParams.get('redirectTo');
      if (target)
        t.ok(firstParty.has(new URL(target, ctx.config.loginUrl).origin), `its redirectTo ${target} is first-party`);
    }

    // 5. The victim follows the link: it ends on the hosted reset page, never on the attacker's origin.
    const resetLink = links.find((l) => l.includes('/reset-password/'))!;
    await victim.goto(resetLink);
    t.equal(new URL(victim.url()).origin, new URL(ctx.config.loginUrl).origin, 'the browser lands on the login origin');
    t.match(victim.url(), /\/login\/reset-password\?token=/);
    await t.resolves(
      victim.getByRole('heading', { name: 'Choose a new password' }).waitFor(),
      'the hosted reset page asks for the new password',
    );
    t.notOk(
      attackerSite.requests.some((r) => /token|reset/i.test(r) && !r.startsWith('GET / ')),
      `the attacker's origin never saw a token (${attackerSite.requests.join('; ')})`,
    );
    // (Chromium asks every origin for /favicon.ico on its own.)
    t.same(
      attackerSite.requests.filter((r) => r !== 'GET /favicon.ico'),
      ['GET /'],
      "the attacker's site served its own page and nothing else",
    );
  },
);
