// openid-client, unmodified, signs a person in through the real hosted pages over HTTP.
import t from 'tap';
import * as client from 'openid-client';
import * as jose from 'jose';
import { createHash } from 'node:crypto';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';

const ctx = await startTestServer(t);
const redirectUri = 'http://localhost:7001/callback';
const application = await ctx.app.services.applications.create(
  {
    clientName: 'RP Test',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  },
  { actor: 'test' },
);
await ctx.app.services.users.create(
  {
    email: 'rp-user@example.com',
    password: 'correct horse battery',
    name: 'Rita Person',
    emailVerified: true,
    permissions: ['reports:read'],
  },
  { actor: 'test' },
);

async function signIn(authUrl: URL, browser = new BrowserClient(), consent = true) {
  let res = await browser.follow(authUrl.toString(), (u) => u.startsWith(redirectUri));
  if (res.location?.startsWith(redirectUri)) return { browser, callback: new URL(res.location) };
  t.match(res.url, /\/login\/sign-in\?request=/);
  res = await browser.follow(`${ctx.baseUrl}/login/sign-in`, (u) => u.startsWith(redirectUri), {
    form: {
      ...BrowserClient.hiddenFields(res.body, '/login/sign-in'),
      email: 'rp-user@example.com',
      password: 'correct horse battery',
    },
  });
  if (consent) {
    t.match(res.url, /\/login\/consent\?request=/);
    t.match(res.body, /RP Test wants to/);
    res = await browser.follow(`${ctx.baseUrl}/login/consent`, (u) => u.startsWith(redirectUri), {
      form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision: 'allow' },
    });
  }
  if (!res.location?.startsWith(redirectUri)) throw new Error(`did not reach the callback: ${res.status} ${res.url}`);
  return { browser, callback: new URL(res.location) };
}

t.test('discovery, code flow with PKCE, tokens, ID token against JWKS, and UserInfo', async (t) => {
  const config = await client.discovery(new URL(ctx.issuer), application.clientId, undefined, client.None(), {
    execute: [client.allowInsecureRequests],
  });
  t.equal(config.serverMetadata().issuer, ctx.issuer);

  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const authUrl = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid profile email offline_access permissions',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
  });
  const { browser, callback } = await signIn(authUrl);
  t.equal(callback.searchParams.get('iss'), ctx.issuer, 'RFC 9207 iss on the redirect');
  t.equal(callback.searchParams.get('state'), state);

  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  t.equal(tokens.token_type.toLowerCase(), 'bearer');
  t.equal(tokens.expires_in, 3600);
  t.equal(tokens.scope, 'openid profile email offline_access permissions');
  t.type(tokens.refresh_token, 'string', 'offline_access gives a refresh token');

  // The ID token verifies against the published JWKS, with the claims decisions.md lists.
  const jwks = jose.createRemoteJWKSet(new URL(`${ctx.issuer}/jwks`));
  const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token!, jwks, {
    issuer: ctx.issuer,
    audience: application.clientId,
  });
  t.equal(protectedHeader.alg, 'RS256');
  t.equal(payload.nonce, nonce);
  t.equal(payload.azp, application.clientId);
  t.type(payload.auth_time, 'number');
  t.type(payload.sid, 'string');
  const digest = createHash('sha256').update(tokens.access_token).digest();
  t.equal(payload.at_hash, digest.subarray(0, 16).toString('base64url'), 'at_hash binds the access token');
  t.notOk('email' in payload, 'profile and e-mail claims come from UserInfo, not the ID token');

  const userinfo = await client.fetchUserInfo(config, tokens.access_token, payload.sub!);
  t.same(userinfo, {
    sub: payload.sub,
    email: 'rp-user@example.com',
    email_verified: true,
    name: 'Rita Person',
    permissions: ['reports:read'],
  });

  // Consent is remembered: a second authorization in the same browser goes straight to the callback.
  const verifier2 = client.randomPKCECodeVerifier();
  const again = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier2),
    code_challenge_method: 'S256',
  });
  const second = await browser.follow(again.toString(), (u) => u.startsWith(redirectUri));
  t.match(second.location, /^http:\/\/localhost:7001\/callback\?code=/);
  const tokens2 = await client.authorizationCodeGrant(config, new URL(second.location!), {
    pkceCodeVerifier: verifier2,
    idTokenExpected: true,
  });
  t.equal(tokens2.scope, 'openid email');
  t.notOk(tokens2.refresh_token, 'no refresh token without offline_access');
  const info2 = await client.fetchUserInfo(config, tokens2.access_token, client.skipSubjectCheck);
  t.same(Object.keys(info2).sort(), ['email', 'email_verified', 'sub'], 'UserInfo is gated by the granted scopes');
});
