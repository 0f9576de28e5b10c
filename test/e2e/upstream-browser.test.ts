// Sign-in with another provider (issue 35), end to end in Chromium: a relying party (openid-client, unmodified)
// asks this provider to sign someone in; on our sign-in page the person clicks "Continue with Company" (a real
// node-oidc-provider) or "Continue with GitHub" (the GitHub-like server), comes back, allows the application,
// and the relying party's ID token carries our own `sub` (not the upstream's) and amr fed; its UserInfo the mapped
// claims.
import t from 'tap';
import * as client from 'openid-client';
import { chromiumSkip, fileChromium, startCallbackServer } from '../helpers/chromium.js';
import { startTestServer } from '../helpers/server.js';
import { startCompanyUpstream, startGitHubLike } from '../helpers/upstreams.js';

const ctx = await startTestServer(t);
const { db } = ctx.database;
const login = `${ctx.baseUrl}/login`;
const rp = await startCallbackServer(t);
const application = await ctx.app.services.applications.create(
  { clientName: 'Upstream RP', redirectUris: [rp.redirectUri], allowedScopes: ['openid', 'profile', 'email'] },
  { actor: 'test' },
);
const company = await startCompanyUpstream(t);
const github = await startGitHubLike(t, { clientId: 'gh-e2e', clientSecret: 'gh-e2e-secret' });
const { providers } = ctx.app.services.upstreams;
await providers.create({
  id: 'company',
  kind: 'oidc',
  name: 'Company',
  issuer: company.issuer,
  clientId: 'idp-e2e',
  clientSecret: 'e2e-secret',
  allowSignUp: true,
  trustEmailVerified: true,
});
await providers.create({
  id: 'github',
  kind: 'oauth2',
  name: 'GitHub',
  ...github.endpoints,
  clientId: 'gh-e2e',
  clientSecret: 'gh-e2e-secret',
  clientAuth: 'client_secret_post',
  scopes: ['read:user', 'user:email'],
  mapping: { subject: 'id', email: 'email', name: 'name', picture: 'avatar_url' },
  allowSignUp: true,
  trustEmailVerified: true,
});
await company.register([
  {
    client_id: 'idp-e2e',
    client_secret: 'e2e-secret',
    token_endpoint_auth_method: 'client_secret_basic',
    redirect_uris: [`${login}/upstream/company/callback`],
  },
]);

const config = await client.discovery(new URL(ctx.issuer), application.clientId, undefined, client.None(), {
  execute: [client.allowInsecureRequests],
});

/** The relying party's round trip in Chromium, through the provider's button; the RP's tokens. */
async function signInThrough(buttonName: string) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: rp.redirectUri,
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
  });
  const browser = await fileChromium();
  const context = await browser.newContext();
  t.teardown(() => context.close());
  const page = await context.newPage();
  await page.goto(url.href);
  await page.waitForURL(/\/login\/sign-in\?request=/);
  await page.getByRole('button', { name: `Continue with ${buttonName}` }).click();
  await page.waitForURL(/\/login\/consent\?request=/);
  await page.getByRole('button', { name: 'Allow' }).click();
  await page.waitForURL((u) => u.href.startsWith(rp.redirectUri));
  const tokens = await client.authorizationCodeGrant(config, new URL(page.url()), {
    pkceCodeVerifier: verifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  const idToken = tokens.claims()!;
  // The profile claims from UserInfo (this provider puts only the protocol's claims in the ID token).
  const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
  return { tokens, idToken, claims: { ...info, ...idToken }, page };
}

t.test('Chromium: an application signs someone in through the company provider', { skip: chromiumSkip }, async (t) => {
  company.login({
    sub: 'employee-17',
    email: 'Ines@Company.test',
    email_verified: true,
    name: 'Ines Example',
    given_name: 'Ines',
    family_name: 'Example',
  });
  const { claims } = await signInThrough('Company');
  const user = await db.selectFrom('users').selectAll().where('email', '=', 'ines@company.test').executeTakeFirst();
  t.ok(user, 'an account was made just in time');
  t.equal(claims.sub, user!.id, 'our own subject');
  t.not(claims.sub, 'employee-17', 'never the upstream subject');
  t.equal(claims.email, 'ines@company.test');
  t.equal(claims.email_verified, true);
  t.equal(claims.name, 'Ines Example');
  t.equal(claims.given_name, 'Ines');
  t.equal(claims.family_name, 'Example');
  t.ok((claims.amr as string[]).includes('fed'), `amr ${JSON.stringify(claims.amr)}`);
  t.notOk((claims.amr as string[]).includes('pwd'));
  const link = await db.selectFrom('upstream_identities').selectAll().where('user_id', '=', user!.id).execute();
  t.same(
    link.map((l) => [l.provider_id, l.subject]),
    [['company', 'employee-17']],
  );
});

t.test('Chromium: the same through the GitHub-like provider', { skip: chromiumSkip }, async (t) => {
  github.state.user = {
    id: 9001,
    login: 'octo',
    name: 'Octo Cat',
    email: null,
    avatar_url: 'https://avatars.example/9001',
  };
  github.state.emails = [{ email: 'octo@octo.test', primary: true, verified: true, visibility: 'private' }];
  const { claims, page } = await signInThrough('GitHub');
  const user = await db.selectFrom('users').selectAll().where('email', '=', 'octo@octo.test').executeTakeFirst();
  t.ok(user);
  t.equal(claims.sub, user!.id);
  t.not(claims.sub, '9001');
  t.equal(claims.email, 'octo@octo.test');
  t.equal(claims.name, 'Octo Cat');
  t.equal(claims.picture, 'https://avatars.example/9001');
  t.ok((claims.amr as string[]).includes('fed'));
  t.equal(await page.textContent('body'), 'callback ok');
});
