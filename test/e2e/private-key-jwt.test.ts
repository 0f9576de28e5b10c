// openid-client 6, unmodified, as a server-side application authenticating with private_key_jwt (RFC 7523,
// issue 33): its keys published at a jwks_uri of its own, a whole code flow through the hosted pages, then a
// refresh and a revocation, each with a fresh assertion; and a replayed assertion refused.
import t from 'tap';
import * as client from 'openid-client';
import * as jose from 'jose';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';

const ctx = await startTestServer(t);
const redirectUri = 'http://localhost:7002/callback';

// The relying party's keys: an Ed25519 key at its jwks_uri (what a deployment does), an ES256 key inline.
const ed = await jose.generateKeyPair('Ed25519');
const es = await jose.generateKeyPair('ES256');
const edJwk = { ...(await jose.exportJWK(ed.publicKey)), kid: 'rp-ed', use: 'sig' };
const esJwk = { ...(await jose.exportJWK(es.publicKey)), kid: 'rp-es' };
let jwksFetches = 0;
const rpServer = createServer((req, res) => {
  if (req.url !== '/jwks') return res.writeHead(404).end();
  jwksFetches++;
  res.writeHead(200, { 'content-type': 'application/jwk-set+json' }).end(JSON.stringify({ keys: [edJwk] }));
});
await new Promise<void>((resolve) => rpServer.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => rpServer.close(() => resolve())));
const jwksUri = `http://127.0.0.1:${(rpServer.address() as AddressInfo).port}/jwks`;

const remoteKeys = await ctx.app.services.applications.create(
  {
    clientName: 'Server RP',
    redirectUris: [redirectUri],
    allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwksUri,
  },
  { actor: 'test' },
);
const inlineKeys = await ctx.app.services.applications.create(
  {
    clientName: 'Inline RP',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: { keys: [esJwk as { kty: string }] },
  },
  { actor: 'test' },
);
await ctx.app.services.users.create(
  { email: 'jwt-user@example.com', password: 'correct horse battery', name: 'Jay Doe', emailVerified: true },
  { actor: 'test' },
);

async function signIn(authUrl: URL, clientName: string) {
  const browser = new BrowserClient();
  let res = await browser.follow(authUrl.toString(), (u) => u.startsWith(redirectUri));
  t.match(res.url, /\/login\/sign-in\?request=/);
  res = await browser.follow(`${ctx.baseUrl}/login/sign-in`, (u) => u.startsWith(redirectUri), {
    form: {
      ...BrowserClient.hiddenFields(res.body, '/login/sign-in'),
      email: 'jwt-user@example.com',
      password: 'correct horse battery',
    },
  });
  t.match(res.url, /\/login\/consent\?request=/);
  t.match(res.body, new RegExp(`${clientName} wants to`));
  res = await browser.follow(`${ctx.baseUrl}/login/consent`, (u) => u.startsWith(redirectUri), {
    form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision: 'allow' },
  });
  if (!res.location?.startsWith(redirectUri)) throw new Error(`did not reach the callback: ${res.status} ${res.url}`);
  return new URL(res.location);
}

t.test('code flow, refresh and revocation with private_key_jwt and a jwks_uri', async (t) => {
  const config = await client.discovery(
    new URL(ctx.issuer),
    remoteKeys.clientId,
    undefined,
    client.PrivateKeyJwt({ key: ed.privateKey, kid: 'rp-ed' }),
    { execute: [client.allowInsecureRequests] },
  );
  const metadata = config.serverMetadata();
  t.ok(metadata.token_endpoint_auth_methods_supported?.includes('private_key_jwt'), 'discovery lists the method');
  t.ok(metadata.token_endpoint_auth_signing_alg_values_supported?.includes('Ed25519'));

  const verifier = client.randomPKCECodeVerifier();
  const nonce = client.randomNonce();
  const state = client.randomState();
  const authUrl = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email offline_access',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    nonce,
    state,
  });
  const callback = await signIn(authUrl, 'Server RP');
  const tokens = await client.authorizationCodeGrant(config, callback, {
    pkceCodeVerifier: verifier,
    expectedNonce: nonce,
    expectedState: state,
    idTokenExpected: true,
  });
  t.equal(tokens.scope, 'openid email offline_access');
  t.equal(tokens.claims()?.aud, remoteKeys.clientId);
  t.type(tokens.refresh_token, 'string');
  t.equal(jwksFetches, 1, 'the client keys were fetched from its jwks_uri');

  const info = await client.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
  t.equal(info.email, 'jwt-user@example.com');

  // Every request makes a new assertion (a new jti): refresh and revocation authenticate the same way.
  const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
  t.type(refreshed.access_token, 'string');
  await client.tokenRevocation(config, refreshed.refresh_token!);
  await t.rejects(client.refreshTokenGrant(config, refreshed.refresh_token!), {
    error: 'invalid_grant',
  } as never);
  t.equal(jwksFetches, 1, 'the key set is cached');
});

t.test('inline jwks; the token endpoint URL as aud; a replayed assertion refused', async (t) => {
  // The assertion openid-client makes is captured, then sent again as it is.
  let captured: string | undefined;
  const config = await client.discovery(
    new URL(ctx.issuer),
    inlineKeys.clientId,
    undefined,
    client.PrivateKeyJwt(es.privateKey, {
      [client.modifyAssertion]: (_header, payload) => {
        payload.aud = `${ctx.issuer}/oauth2/token`;
      },
    }),
    {
      execute: [client.allowInsecureRequests],
      [client.customFetch]: (url, options) => {
        const body = new URLSearchParams(String(options.body ?? ''));
        captured = body.get('client_assertion') ?? captured;
        return fetch(url, options as RequestInit);
      },
    },
  );
  const verifier = client.randomPKCECodeVerifier();
  const authUrl = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const callback = await signIn(authUrl, 'Inline RP');
  const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier });
  t.type(tokens.id_token, 'string');
  t.ok(captured, 'openid-client sent a client assertion');
  t.equal(jose.decodeJwt(captured!).aud, `${ctx.issuer}/oauth2/token`);

  const replay = await fetch(`${ctx.issuer}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: 'x'.repeat(43),
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: captured!,
    }),
  });
  t.equal(replay.status, 401);
  t.same(await replay.json(), {
    error: 'invalid_client',
    error_description: 'the client assertion was already used',
  });
  t.equal(replay.headers.get('cache-control'), 'no-store');
});
