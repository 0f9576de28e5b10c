// express-openid-connect 3.4 (with openid-client 6 inside), unmodified, as a server-side relying party of this
// provider: a confidential client with a client secret, the code flow (with the PKCE and nonce the library
// sends), sign-in and consent on the hosted pages in headless Chromium, req.oidc.user and UserInfo, and
// RP-initiated logout through the library's /logout. The library turns on openid-client's
// allowInsecureRequests itself when issuerBaseURL is http (lib/client.js buildDiscoveryExecute), so the
// provider runs over plain HTTP on a loopback port; the relying party runs at http://localhost:<port>, another
// site than the provider's 127.0.0.1 (the cookies of the two never meet).
import t, { type Test } from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import eoc, { type ConfigParams } from 'express-openid-connect';
import type { BrowserContext, Page } from 'playwright-core';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, fileChromium } from '../helpers/chromium.js';

// A CommonJS package: its functions come through the default export under ESM.
const { auth, requiresAuth } = eoc;
const ctx = await startTestServer(t);
const email = 'eoc-user@example.com';
const password = 'correct horse battery';
const user = await ctx.app.services.users.create(
  { email, password, name: 'Erin Express', emailVerified: true },
  { actor: 'test' },
);
const tokenEndpoint = `${ctx.issuer}/oauth2/token`;

interface TokenCall {
  authorization: string | null;
  body: URLSearchParams;
  status: number;
  wwwAuthenticate: string | null;
  response: Record<string, unknown>;
}

/** What the relying party saw: its token requests (through the library's own customFetch hook) and its errors. */
interface RelyingParty {
  name: string;
  baseURL: string;
  clientId: string;
  clientSecret: string;
  tokenCalls: TokenCall[];
  errors: Error[];
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/**
 * A confidential application registered with `method`, and an express app on its own port that signs people in
 * with it. `configure` changes the library's configuration (the secret or method it uses, the response mode).
 */
async function startRelyingParty(
  t: Test,
  method: 'client_secret_basic' | 'client_secret_post',
  configure: (config: ConfigParams) => ConfigParams = (config) => config,
): Promise<RelyingParty> {
  const server = createServer();
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const baseURL = `http://localhost:${await listen(server)}`;
  const name = `Express RP (${method})`;
  const application = await ctx.app.services.applications.create(
    {
      clientName: name,
      redirectUris: [`${baseURL}/callback`],
      postLogoutRedirectUris: [`${baseURL}/signed-out`],
      allowedScopes: ['openid', 'profile', 'email'],
      tokenEndpointAuthMethod: method,
    },
    { actor: 'test' },
  );
  const rp: RelyingParty = {
    name,
    baseURL,
    clientId: application.clientId,
    clientSecret: application.clientSecret!,
    tokenCalls: [],
    errors: [],
  };

  const app = express();
  app.use(
    auth(
      configure({
        issuerBaseURL: ctx.issuer,
        baseURL,
        clientID: rp.clientId,
        clientSecret: rp.clientSecret,
        clientAuthMethod: method,
        secret: 'express-session-cookie-secret-0123456789',
        authRequired: false,
        idpLogout: true,
        enableTelemetry: false,
        routes: { postLogoutRedirect: '/signed-out' },
        authorizationParams: { response_type: 'code', scope: 'openid profile email' },
        // The library's documented hook for its HTTP calls: here it only records the token requests.
        customFetch: async (input, init) => {
          const response = await fetch(input, init);
          if (String(input) === tokenEndpoint) {
            rp.tokenCalls.push({
              authorization: new Headers(init?.headers).get('authorization'),
              body: new URLSearchParams(String(init?.body)),
              status: response.status,
              wwwAuthenticate: response.headers.get('www-authenticate'),
              response: (await response.clone().json()) as Record<string, unknown>,
            });
          }
          return response;
        },
      }),
    ),
  );
  app.get('/', (req, res) => {
    res.type('text').send(req.oidc.isAuthenticated() ? `signed in as ${req.oidc.user?.sub}` : 'not signed in');
  });
  app.get('/profile', requiresAuth(), async (req, res) => {
    res.json({ user: req.oidc.user, userinfo: await req.oidc.fetchUserInfo() });
  });
  app.get('/signed-out', (req, res) => {
    res.type('text').send(req.oidc.isAuthenticated() ? 'still signed in' : 'signed out of the relying party');
  });
  app.use((error: Error & { status?: number }, _req: Request, res: Response, _next: NextFunction) => {
    rp.errors.push(error);
    res
      .status(error.status ?? 500)
      .type('text')
      .send(`relying party error: ${error.message}`);
  });
  server.on('request', app);
  return rp;
}

async function newPage(t: Test): Promise<{ context: BrowserContext; page: Page }> {
  const browser = await fileChromium();
  const context = await browser.newContext({ viewport: { width: 800, height: 700 } });
  t.teardown(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(30000);
  page.setDefaultNavigationTimeout(60000);
  return { context, page };
}

const providerUrl = (path: string) => new RegExp(`^${ctx.baseUrl}${path}`);

/** The authorization requests the browser sent to the provider, and what reached the relying party's callback. */
function watch(page: Page, rp: RelyingParty) {
  const authorize: URL[] = [];
  const callbacks: { method: string; url: URL; body: URLSearchParams }[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (`${url.origin}${url.pathname}` === `${ctx.issuer}/oauth2/authorize`) authorize.push(url);
    if (request.url().startsWith(`${rp.baseURL}/callback`)) {
      callbacks.push({ method: request.method(), url, body: new URLSearchParams(request.postData() ?? '') });
    }
  });
  return { authorize, callbacks };
}

/** /login on the relying party → the hosted sign-in page → consent → back at the relying party. */
async function signInThroughTheLibrary(t: Test, page: Page, rp: RelyingParty) {
  await page.goto(`${rp.baseURL}/login`);
  // The redirects are over when goto returns: anything but the sign-in page fails now, saying where it went.
  if (!providerUrl('/login/sign-in\\?request=').test(page.url())) {
    throw new Error(
      `not at the sign-in page: ${page.url()}: ${(await page.locator('body').innerText()).slice(0, 300)}`,
    );
  }
  t.equal(await page.title(), `Sign in · ${rp.name}`);
  await page.getByLabel('E-mail address').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: `${rp.name} wants to` }).waitFor();
  await page.getByRole('button', { name: 'Allow' }).click();
}

t.test(
  'client_secret_basic (the library default for code): sign-in, consent, claims, UserInfo and logout',
  { skip: chromiumSkip, timeout: 120000 },
  async (t) => {
    const rp = await startRelyingParty(t, 'client_secret_basic');
    const { context, page } = await newPage(t);
    const seen = watch(page, rp);

    // The app's public page, before anyone signs in.
    await page.goto(`${rp.baseURL}/`);
    t.equal(await page.locator('body').innerText(), 'not signed in');

    await signInThroughTheLibrary(t, page, rp);
    await page.waitForURL(`${rp.baseURL}/`);
    t.same(rp.errors, [], 'the library reported no error');
    t.match(await page.locator('body').innerText(), /^signed in as [0-9a-f-]{36}$/, 'back at the app, signed in');

    // The authorization request the library built: code flow with PKCE S256 and a nonce, default response mode.
    t.equal(seen.authorize.length, 1);
    const request = seen.authorize[0]!.searchParams;
    t.equal(request.get('client_id'), rp.clientId);
    t.equal(request.get('response_type'), 'code');
    t.equal(request.get('scope'), 'openid profile email');
    t.equal(request.get('redirect_uri'), `${rp.baseURL}/callback`);
    t.equal(request.get('code_challenge_method'), 'S256');
    t.match(request.get('nonce'), /.{16,}/);
    t.equal(request.get('response_mode'), null, 'no response_mode: the code flow default, query');
    t.equal(seen.callbacks.length, 1);
    t.equal(seen.callbacks[0]!.method, 'GET', 'the code came back in the query');
    t.equal(seen.callbacks[0]!.url.searchParams.get('iss'), ctx.issuer);

    // The token request: HTTP Basic with the id and secret form-urlencoded (RFC 6749 §2.3.1: openid-client
    // escapes even '_' and '-', which the provider decodes), and no secret in the body.
    t.equal(rp.tokenCalls.length, 1);
    const call = rp.tokenCalls[0]!;
    t.equal(call.status, 200);
    const [scheme, credentials] = (call.authorization ?? '').split(' ');
    t.equal(scheme, 'Basic');
    const [id, secret] = Buffer.from(credentials ?? '', 'base64')
      .toString()
      .split(':');
    t.same([decodeURIComponent(id ?? ''), decodeURIComponent(secret ?? '')], [rp.clientId, rp.clientSecret]);
    t.equal(call.body.get('grant_type'), 'authorization_code');
    t.equal(call.body.get('client_secret'), null);
    t.match(call.body.get('code_verifier'), /^[A-Za-z0-9_-]{43,128}$/);

    // req.oidc.user is the ID token's claims (the library filters the protocol ones); UserInfo has the profile.
    await page.goto(`${rp.baseURL}/profile`);
    const profile = JSON.parse(await page.locator('body').innerText()) as {
      user: Record<string, unknown>;
      userinfo: Record<string, unknown>;
    };
    t.equal(profile.user.sub, user.id);
    t.type(profile.user.sid, 'string');
    t.same(profile.userinfo, { sub: user.id, email, email_verified: true, name: 'Erin Express' });

    // Logout through the library: /logout → end_session_endpoint with id_token_hint → back at /signed-out.
    const endSession: URL[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${ctx.issuer}/oauth2/end-session`)) endSession.push(new URL(r.url()));
    });
    t.ok(
      (await context.cookies(ctx.baseUrl)).some((c) => c.name === 'idp.session'),
      'the provider has a session before logout',
    );
    await page.goto(`${rp.baseURL}/logout`);
    await page.waitForURL(`${rp.baseURL}/signed-out`);
    t.equal(await page.locator('body').innerText(), 'signed out of the relying party');
    t.equal(endSession.length, 1, 'the library went through the end_session_endpoint');
    t.equal(endSession[0]!.searchParams.get('post_logout_redirect_uri'), `${rp.baseURL}/signed-out`);
    t.type(endSession[0]!.searchParams.get('id_token_hint'), 'string');
    t.notOk(
      (await context.cookies(ctx.baseUrl)).some((c) => c.name === 'idp.session' && c.value !== ''),
      'the provider session ended without a confirmation page (the hint named it)',
    );

    // Signed out at both: the protected route asks for the password again.
    await page.goto(`${rp.baseURL}/profile`);
    await page.waitForURL(providerUrl('/login/sign-in\\?request='));
    t.equal(seen.authorize.length, 2);
  },
);

t.test(
  'client_secret_post, chosen with the library clientAuthMethod option',
  { skip: chromiumSkip, timeout: 120000 },
  async (t) => {
    const rp = await startRelyingParty(t, 'client_secret_post');
    const { page } = await newPage(t);
    await signInThroughTheLibrary(t, page, rp);
    await page.waitForURL(`${rp.baseURL}/`);
    t.same(rp.errors, []);
    t.match(await page.locator('body').innerText(), /^signed in as /);
    t.equal(rp.tokenCalls.length, 1);
    const call = rp.tokenCalls[0]!;
    t.equal(call.status, 200);
    t.equal(call.authorization, null, 'no Authorization header');
    t.equal(call.body.get('client_id'), rp.clientId);
    t.equal(call.body.get('client_secret'), rp.clientSecret);
  },
);

t.test(
  'a wrong secret or another method: the token endpoint refuses, the library reports invalid_client',
  { skip: chromiumSkip, timeout: 120000 },
  async (t) => {
    const cases = [
      {
        name: 'a wrong secret in Basic: 401 with WWW-Authenticate, which openid-client reports as a challenge',
        configure: (c: ConfigParams) => ({ ...c, clientSecret: `${c.clientSecret}x` }),
        response: { error: 'invalid_client', error_description: 'client authentication failed' },
        wwwAuthenticate: 'Basic realm="token"',
        reported: { error: 'OAUTH_WWW_AUTHENTICATE_CHALLENGE', message: /challenge in the WWW-Authenticate/ },
      },
      {
        name: 'client_secret_post for a client_secret_basic application: 401, the error from the body',
        configure: (c: ConfigParams) => ({ ...c, clientAuthMethod: 'client_secret_post' as const }),
        response: {
          error: 'invalid_client',
          error_description: 'this client authenticates with client_secret_basic',
        },
        wwwAuthenticate: null,
        reported: { error: 'invalid_client', message: /error in the response body/ },
      },
    ];
    for (const c of cases) {
      await t.test(c.name, async (t) => {
        const rp = await startRelyingParty(t, 'client_secret_basic', c.configure);
        const { page } = await newPage(t);
        const callback = page.waitForResponse((r) => r.url().startsWith(`${rp.baseURL}/callback`));
        await signInThroughTheLibrary(t, page, rp);
        const response = await callback;
        t.equal(rp.tokenCalls.length, 1);
        const call = rp.tokenCalls[0]!;
        t.equal(call.status, 401, 'the token endpoint answered 401');
        t.same(call.response, c.response);
        t.equal(call.wwwAuthenticate, c.wwwAuthenticate);
        t.equal(rp.errors.length, 1);
        t.match(rp.errors[0], { status: 400, ...c.reported }, "the library's callback fails");
        t.equal(response.status(), 400);
        t.match(await response.text(), /^relying party error: /);
        await page.goto(`${rp.baseURL}/`);
        t.equal(await page.locator('body').innerText(), 'not signed in');
      });
    }
  },
);

t.test(
  'response_mode=form_post through the library: the code is POSTed to its callback',
  { skip: chromiumSkip, timeout: 120000 },
  async (t) => {
    const rp = await startRelyingParty(t, 'client_secret_basic', (c) => ({
      ...c,
      authorizationParams: { ...c.authorizationParams, response_mode: 'form_post' },
    }));
    const { page } = await newPage(t);
    const seen = watch(page, rp);
    await signInThroughTheLibrary(t, page, rp);
    await page.waitForURL(`${rp.baseURL}/`);
    t.same(rp.errors, []);
    t.match(await page.locator('body').innerText(), /^signed in as /);
    t.equal(seen.authorize[0]!.searchParams.get('response_mode'), 'form_post');
    t.equal(seen.callbacks.length, 1);
    const posted = seen.callbacks[0]!;
    t.equal(posted.method, 'POST', 'the provider posted the response');
    t.equal(posted.url.search, '', 'nothing in the query');
    t.match(posted.body.get('code'), /.+/);
    t.match(posted.body.get('state'), /.+/);
    t.equal(posted.body.get('iss'), ctx.issuer);
    t.equal(rp.tokenCalls[0]!.status, 200);
  },
);
