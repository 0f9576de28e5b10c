// openid-client, unmodified, asks for acr_values=urn:idp:mfa (issue 34) over real HTTP: a password-only session
// is sent to the second-factor page and stepped up in place (the real sessions.stepUp; the factors' own pages are
// tested in their files), then the code's ID token says acr urn:idp:mfa and amr pwd otp mfa, and so does the ID
// token of its refresh; prompt=none with the level unmet gets login_required; the step-up's Cancel gets
// unmet_authentication_requirements.
import t from 'tap';
import * as client from 'openid-client';
import { randomUUID } from 'node:crypto';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { generateToken } from '../../src/oauth/tokens.js';

const ctx = await startTestServer(t);
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
// The user now holds a second factor (a passkey row, as services.factors.summary counts it).
await ctx.database.db
  .insertInto('webauthn_credentials')
  .values({
    id: randomUUID(),
    user_id: user.id,
    credential_id: generateToken(),
    public_key: generateToken(),
    counter: 0,
    transports: JSON.stringify(['internal']),
    device_type: 'singleDevice',
    backed_up: false,
    aaguid: null,
    name: 'Laptop',
  })
  .execute();
const sessionId = (
  await ctx.database.db.selectFrom('sessions').select('id').where('user_id', '=', user.id).executeTakeFirstOrThrow()
).id;

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
  const requestId = new URL(page.url).searchParams.get('request')!;
  await ctx.app.services.sessions.stepUp(sessionId, user.id, ['otp'], { ip: null });
  const res = await browser.follow(
    `${ctx.issuer}/oauth2/authorize/continue?request=${encodeURIComponent(requestId)}`,
    atCallback,
  );
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
