// openid-client, unmodified, asks for acr_values=urn:idp:mfa (issue 34) over real HTTP: a password-only session
// is sent to the second-factor page and stepped up in place with a code of the user's authenticator app (computed
// by otpauth, as the app would, on the server's fixed clock), then the code's ID token says acr urn:idp:mfa and amr
// pwd otp mfa, and so does the ID token of its refresh; prompt=none with the level unmet gets login_required;
// the step-up's Cancel gets unmet_authentication_requirements.
import t from 'tap';
import * as client from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';

let now = Date.UTC(2026, 10, 27, 12, 0, 0);
const ctx = await startTestServer(t, {}, { clock: () => now });
const redirectUri = 'http://localhost:7001/callback';
const application = await ctx.app.services.applications.create(
  { clientName: 'MFA RP', redirectUris: [redirectUri], allowedScopes: ['openid', 'email', 'offline_access'] },
  { actor: 'test' },
);
const email = 'mfa-rp-user@example.com';
const password = 'correct horse battery';
const user = await ctx.app.services.users.create({ email, password, emailVerified: true }, { actor: 'test' });

const config = await client.discovery(new URL(ctx.issuer), application.clientId, undefined, client.None(), {
  execute: [client.allowInsecureRequests],
});
const atCallback = (u: string) => u.startsWith(redirectUri);

async function authUrl(extra: Record<string, string>) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

// A password-only session, with the consent given: the first sign-in through the hosted pages.
const browser = new BrowserClient();
{
  const first = await authUrl({});
  let res = await browser.follow(first.url.toString(), atCallback);
  res = await browser.follow(`${ctx.baseUrl}/login/sign-in`, atCallback, {
    form: { ...BrowserClient.hiddenFields(res.body, '/login/sign-in'), email, password },
  });
  res = await browser.follow(`${ctx.baseUrl}/login/consent`, atCallback, {
    form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision: 'allow' },
  });
  if (!res.location?.startsWith(redirectUri)) throw new Error(`no callback: ${res.status} ${res.url}`);
}
const sessionId = (
  await ctx.database.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).executeTakeFirstOrThrow()
).id;
// The user sets up an authenticator app (in another tab; the service the sign-in methods page calls). Its first
// code would step that tab's session up; this session stays a password-only one.
const enrolment = await ctx.app.services.totp.start(user);
const secret = enrolment.secret.replaceAll(' ', '');
const codeAt = (at: number) =>
  new TOTP({ secret: Secret.fromBase32(secret), digits: 6, period: 30, algorithm: 'SHA1' }).generate({ timestamp: at });
await ctx.app.services.totp.confirm(user.id, codeAt(now), { keepSessionId: sessionId, ip: null });
now += 30_000; // the next code: each is accepted once

/** The error openid-client raises for an error authorization response (AuthorizationResponseError). */
async function refusal(location: string, asked: Awaited<ReturnType<typeof authUrl>>) {
  const error = await client
    .authorizationCodeGrant(config, new URL(location), {
      pkceCodeVerifier: asked.verifier,
      expectedState: asked.state,
      expectedNonce: asked.nonce,
    })
    .then(
      () => undefined,
      (e: unknown) => e as { error?: string; error_description?: string },
    );
  if (!error) throw new Error(`a code, not an error: ${location}`);
  return error;
}

t.test('prompt=none with the level unmet: login_required', async (t) => {
  const asked = await authUrl({ acr_values: 'urn:idp:mfa', prompt: 'none' });
  const res = await browser.follow(asked.url.toString(), atCallback);
  const refused = await refusal(res.location!, asked);
  t.equal(refused.error, 'login_required');
  t.equal(refused.error_description, 'the session does not meet the required level');
});

t.test('the step-up Cancel: unmet_authentication_requirements', async (t) => {
  const asked = await authUrl({ acr_values: 'urn:idp:mfa' });
  const page = await browser.follow(asked.url.toString(), atCallback);
  t.match(page.url, /\/login\/second-factor\?request=/);
  const res = await browser.follow(`${ctx.baseUrl}/login/second-factor/cancel`, atCallback, {
    form: BrowserClient.hiddenFields(page.body, '/login/second-factor/cancel'),
  });
  const refused = await refusal(res.location!, asked);
  t.equal(refused.error, 'unmet_authentication_requirements');
  t.equal(refused.error_description, 'the user did not give a second factor');
});

t.test('acr_values=urn:idp:mfa: stepped up, the ID tokens say acr urn:idp:mfa and amr pwd otp mfa', async (t) => {
  const asked = await authUrl({ acr_values: 'urn:idp:mfa' });
  const page = await browser.follow(asked.url.toString(), atCallback);
  t.match(page.url, /\/login\/second-factor\?request=/, 'the second-factor page');
  t.match(page.body, /Authenticator app/, 'the page asks for the app');
  const res = await browser.follow(`${ctx.baseUrl}/login/second-factor/totp`, atCallback, {
    form: { ...BrowserClient.hiddenFields(page.body, '/login/second-factor/totp'), code: codeAt(now) },
  });
  t.ok(res.location?.startsWith(redirectUri), 'the request goes on to the application');
  const tokens = await client.authorizationCodeGrant(config, new URL(res.location!), {
    pkceCodeVerifier: asked.verifier,
    expectedState: asked.state,
    expectedNonce: asked.nonce,
    idTokenExpected: true,
  });
  const claims = tokens.claims()!;
  t.equal(claims.acr, 'urn:idp:mfa');
  t.same(claims.amr, ['pwd', 'otp', 'mfa']);
  t.equal(claims.sid, sessionId, 'the same session, stepped up in place');

  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  const again = refreshed.claims()!;
  t.equal(again.acr, 'urn:idp:mfa', 'the refresh keeps acr');
  t.same(again.amr, ['pwd', 'otp', 'mfa'], 'and amr');
});
