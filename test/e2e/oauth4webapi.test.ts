// oauth4webapi, unmodified, as the relying party: the same complete code flow as openid-client.test.ts
// through the real hosted pages over HTTP, plus a denied consent and prompt=none without a session.
import t, { type Test } from 'tap';
import * as oauth from 'oauth4webapi';
import * as jose from 'jose';
import { createHash } from 'node:crypto';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';

const ctx = await startTestServer(t);
const redirectUri = 'http://localhost:7002/callback';
const application = await ctx.app.services.applications.create(
  {
    clientName: 'oauth4webapi RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  },
  { actor: 'test' },
);
await ctx.app.services.users.create(
  {
    email: 'o4w-user@example.com',
    password: 'correct horse battery',
    name: 'Olga Webapi',
    emailVerified: true,
    permissions: ['reports:read', 'reports:write'],
  },
  { actor: 'test' },
);

const client: oauth.Client = { client_id: application.clientId };
const clientAuth = oauth.None();
const issuer = new URL(ctx.issuer);
const reachesCallback = (u: string) => u.startsWith(redirectUri);

async function discover(): Promise<oauth.AuthorizationServer> {
  const response = await oauth.discoveryRequest(issuer, { algorithm: 'oidc', [oauth.allowInsecureRequests]: true });
  return oauth.processDiscoveryResponse(issuer, response);
}

function authorizationUrl(as: oauth.AuthorizationServer, params: Record<string, string>): URL {
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set('client_id', client.client_id);
  url.searchParams.set('redirect_uri', redirectUri);
  url.searchParams.set('response_type', 'code');
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url;
}

/** Walks the hosted pages: sign in, then allow or deny on the consent page; returns the callback URL. */
async function walk(t: Test, authUrl: URL, decision: 'allow' | 'deny', browser = new BrowserClient()) {
  let res = await browser.follow(authUrl.toString(), reachesCallback);
  if (res.location && reachesCallback(res.location)) return { browser, callback: new URL(res.location) };
  t.match(res.url, /\/login\/sign-in\?request=/, 'an anonymous browser lands on the sign-in page');
  t.equal(res.status, 200);
  res = await browser.follow(`${ctx.baseUrl}/login/sign-in`, reachesCallback, {
    form: {
      ...BrowserClient.hiddenFields(res.body, '/login/sign-in'),
      email: 'o4w-user@example.com',
      password: 'correct horse battery',
    },
  });
  t.match(res.url, /\/login\/consent\?request=/, 'after sign-in, the consent page');
  t.match(res.body, /oauth4webapi RP wants to/);
  res = await browser.follow(`${ctx.baseUrl}/login/consent`, reachesCallback, {
    form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision },
  });
  if (!res.location || !reachesCallback(res.location))
    throw new Error(`did not reach the callback: ${res.status} ${res.url}`);
  return { browser, callback: new URL(res.location) };
}

/** OIDC Core §3.1.3.6: left half of the hash of the ASCII octets, the hash named by the JWS alg. */
function leftHalfHash(alg: string, value: string): string {
  const hash = /256$/.test(alg) ? 'sha256' : /384$/.test(alg) ? 'sha384' : 'sha512'; // EdDSA (Ed25519): SHA-512
  const digest = createHash(hash).update(value, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

t.test(
  'discovery, code flow with PKCE, state and nonce, ID token against JWKS, UserInfo',
  { timeout: 120000 },
  async (t) => {
    const as = await discover();
    t.equal(as.issuer, ctx.issuer, 'the discovered issuer is the configured one');
    t.equal(as.authorization_endpoint, `${ctx.issuer}/oauth2/authorize`);
    t.ok(as.authorization_response_iss_parameter_supported, 'RFC 9207 is advertised');
    t.same(as.code_challenge_methods_supported, ['S256']);

    const codeVerifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const nonce = oauth.generateRandomNonce();
    const authUrl = authorizationUrl(as, {
      scope: 'openid profile email offline_access permissions',
      code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const { browser, callback } = await walk(t, authUrl, 'allow');
    t.equal(callback.searchParams.get('iss'), ctx.issuer, 'iss on the redirect (RFC 9207)');
    t.equal(callback.searchParams.get('state'), state);

    // A response naming another issuer is refused: this is what the iss parameter is for.
    const forged = new URL(callback);
    forged.searchParams.set('iss', 'http://evil.example/api/auth');
    t.throws(
      () => oauth.validateAuthResponse(as, client, forged, state),
      { code: 'OAUTH_INVALID_RESPONSE' },
      'a mix-up (wrong iss) is detected',
    );
    t.throws(
      () => oauth.validateAuthResponse(as, client, callback, 'another-state'),
      { code: 'OAUTH_INVALID_RESPONSE' },
      'a wrong state is detected',
    );

    const params = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuth,
      params,
      redirectUri,
      codeVerifier,
      {
        [oauth.allowInsecureRequests]: true,
      },
    );
    t.equal(response.headers.get('cache-control'), 'no-store', 'the token response is not cached');
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, response, {
      expectedNonce: nonce,
      requireIdToken: true,
    });
    t.equal(tokens.token_type, 'bearer', 'oauth4webapi normalises the token type');
    t.equal(tokens.expires_in, 3600);
    t.equal(tokens.scope, 'openid profile email offline_access permissions');
    t.type(tokens.refresh_token, 'string', 'offline_access gives a refresh token');
    const claims = oauth.getValidatedIdTokenClaims(tokens)!;
    t.equal(claims.nonce, nonce, 'oauth4webapi saw the nonce');

    // oauth4webapi does not verify the ID token signature of a token endpoint response; jose does.
    const jwks = jose.createRemoteJWKSet(new URL(as.jwks_uri!));
    const { payload, protectedHeader } = await jose.jwtVerify(tokens.id_token!, jwks, {
      issuer: ctx.issuer,
      audience: application.clientId,
      algorithms: as.id_token_signing_alg_values_supported as string[],
    });
    t.equal(protectedHeader.alg, 'RS256');
    t.type(protectedHeader.kid, 'string', 'the header names the signing key');
    t.equal(payload.nonce, nonce, 'nonce in the verified ID token');
    t.equal(payload.at_hash, leftHalfHash(protectedHeader.alg, tokens.access_token), 'at_hash binds the access token');
    t.equal(payload.sub, claims.sub);
    t.equal(payload.azp, application.clientId);
    t.type(payload.auth_time, 'number');
    t.ok(payload.exp! > payload.iat!, 'exp after iat');
    t.notOk('email' in payload, 'claims of profile and email come from UserInfo');

    const userInfoResponse = await oauth.userInfoRequest(as, client, tokens.access_token, {
      [oauth.allowInsecureRequests]: true,
    });
    const userinfo = await oauth.processUserInfoResponse(as, client, claims.sub, userInfoResponse);
    t.same(userinfo, {
      sub: claims.sub,
      email: 'o4w-user@example.com',
      email_verified: true,
      name: 'Olga Webapi',
      permissions: ['reports:read', 'reports:write'],
    });

    // A second request in the same browser, with remembered consent, goes straight to the callback.
    const verifier2 = oauth.generateRandomCodeVerifier();
    const again = authorizationUrl(as, {
      scope: 'openid email',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier2),
      code_challenge_method: 'S256',
    });
    const second = await walk(t, again, 'allow', browser);
    const params2 = oauth.validateAuthResponse(as, client, second.callback, oauth.expectNoState);
    const tokens2 = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params2, redirectUri, verifier2, {
        [oauth.allowInsecureRequests]: true,
      }),
      { expectedNonce: oauth.expectNoNonce, requireIdToken: true },
    );
    t.equal(tokens2.scope, 'openid email');
    t.notOk(tokens2.refresh_token, 'no refresh token without offline_access');
    t.equal(oauth.getValidatedIdTokenClaims(tokens2)!.sub, claims.sub, 'the same subject');

    // The code is single use: a replay is refused with invalid_grant.
    const replay = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params2, redirectUri, verifier2, {
      [oauth.allowInsecureRequests]: true,
    });
    await t.rejects(oauth.processAuthorizationCodeResponse(as, client, replay), {
      code: 'OAUTH_RESPONSE_BODY_ERROR',
      error: 'invalid_grant',
      status: 400,
    });
  },
);

t.test(
  'a denied consent comes back as access_denied, surfaced by validateAuthResponse',
  { timeout: 120000 },
  async (t) => {
    const as = await discover();
    const state = oauth.generateRandomState();
    const authUrl = authorizationUrl(as, {
      scope: 'openid permissions',
      code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
      code_challenge_method: 'S256',
      state,
      nonce: oauth.generateRandomNonce(),
      prompt: 'consent',
    });
    // The first test remembered consent for more scopes than these; prompt=consent asks again anyway.
    const { callback } = await walk(t, authUrl, 'deny');
    t.notOk(callback.searchParams.has('code'), 'no code after a denial');
    t.equal(callback.searchParams.get('iss'), ctx.issuer);
    t.equal(callback.searchParams.get('state'), state);
    const error = (() => {
      try {
        oauth.validateAuthResponse(as, client, callback, state);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    t.type(error, oauth.AuthorizationResponseError, 'an AuthorizationResponseError');
    t.equal((error as oauth.AuthorizationResponseError).error, 'access_denied');
    t.type((error as oauth.AuthorizationResponseError).error_description, 'string');
  },
);

t.test('prompt=none without a session gives login_required', { timeout: 120000 }, async (t) => {
  const as = await discover();
  const state = oauth.generateRandomState();
  const authUrl = authorizationUrl(as, {
    scope: 'openid',
    code_challenge: await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()),
    code_challenge_method: 'S256',
    state,
    prompt: 'none',
  });
  const browser = new BrowserClient();
  const res = await browser.request(authUrl.toString());
  t.equal(res.status, 303);
  t.ok(res.location && reachesCallback(res.location), 'redirected straight back to the client, no page shown');
  const callback = new URL(res.location!);
  t.equal(callback.searchParams.get('state'), state);
  t.equal(callback.searchParams.get('iss'), ctx.issuer);
  t.throws(() => oauth.validateAuthResponse(as, client, callback, state), {
    name: 'AuthorizationResponseError',
    error: 'login_required',
  });
});
