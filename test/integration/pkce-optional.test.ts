// PKCE optional (decisions.md, Protocol; issue 33 item 2) through authorize and the token endpoint, for an
// application whose operator made PKCE optional: a request without code_challenge is allowed when it carries a
// nonce (an OpenID Connect request), its code is sealed without a challenge, the exchange takes no verifier, and
// a verifier sent for it is invalid_grant (RFC 9700 §4.8.2, PKCE downgrade). A challenge sent is still checked.
// The optional application is a confidential client (client_secret_basic); the public one beside it is not.
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { signInWithInject, tokenRequest } from '../helpers/flow.js';
import { openCode } from '../../src/oauth/sealed-code.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken } from '../../src/oauth/tokens.js';

const { app, config } = await buildTestApp(t);
const actor = { actor: 'test' };
const REDIRECT = 'https://server-side.example.com/callback';
const PASSWORD = 'correct horse battery staple';

const optional = await app.services.applications.create(
  {
    clientName: 'Legacy server-side app',
    redirectUris: [REDIRECT],
    allowedScopes: ['openid', 'email'],
    tokenEndpointAuthMethod: 'client_secret_basic',
    pkce: 'optional',
  },
  actor,
);
const credentials = `${encodeURIComponent(optional.clientId)}:${encodeURIComponent(optional.clientSecret!)}`;
const basic = `Basic ${Buffer.from(credentials).toString('base64')}`;
const strict = await app.services.applications.create(
  { clientName: 'Public app', redirectUris: [REDIRECT], allowedScopes: ['openid', 'email'] },
  actor,
);
await app.services.users.create({ email: 'legacy@example.com', password: PASSWORD, emailVerified: true }, actor);

/** A signed-in browser that has consented to both applications. */
async function signedInBrowser() {
  const browser = { 'idp.authz': generateToken() };
  let jar: Record<string, string> = browser;
  for (const client of [optional, strict]) {
    const verifier = generateToken();
    const start = await authorize(client.clientId, { code_challenge: s256Challenge(verifier), nonce: 'n' }, jar);
    const requestId = new URL(String(start.headers.location)).searchParams.get('request')!;
    if (!jar['idp.session']) {
      const signed = await signInWithInject(app, 'legacy@example.com', PASSWORD, requestId, jar);
      jar = signed.jar;
    }
    const consentPage = await app.inject({ method: 'GET', url: `/login/consent?request=${requestId}`, cookies: jar });
    if (consentPage.statusCode !== 200) throw new Error(`consent page: ${consentPage.statusCode}`);
    const csrf = /name="csrf" value="([^"]+)"/.exec(consentPage.body)![1]!;
    const done = await app.inject({
      method: 'POST',
      url: '/login/consent',
      cookies: { ...jar, ...Object.fromEntries(consentPage.cookies.map((c) => [c.name, c.value])) },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, request: requestId, decision: 'allow' }).toString(),
    });
    if (!String(done.headers.location).startsWith(REDIRECT)) throw new Error(`no code: ${done.headers.location}`);
  }
  return jar;
}

function authorize(clientId: string, extra: Record<string, string | undefined>, jar: Record<string, string>) {
  const params: Record<string, string> = {
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid email',
    state: 'st-p',
  };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) params[k] = v;
  if (params.code_challenge) params.code_challenge_method = 'S256';
  return app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${new URLSearchParams(params)}`, cookies: jar });
}

function answer(res: LightMyRequestResponse) {
  const url = new URL(String(res.headers.location));
  return Object.fromEntries(url.searchParams);
}

function expectTokenError(t: Test, res: LightMyRequestResponse, error: string, description: string, label: string) {
  t.equal(res.statusCode, 400, `${label}: 400`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  t.same(res.json(), { error, error_description: description }, `${label}: ${error}`);
}

/** The token request: the confidential client authenticates with Basic, the public one with client_id. */
const exchange = (clientId: string, code: string, verifier?: string) => {
  const form = {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT,
    ...(verifier !== undefined && { code_verifier: verifier }),
  };
  if (clientId !== optional.clientId) return tokenRequest(app, { ...form, client_id: clientId });
  return app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
    payload: new URLSearchParams(form).toString(),
  });
};

t.test('PKCE optional: no challenge with a nonce; the code has none; the exchange takes no verifier', async (t) => {
  const jar = await signedInBrowser();

  const issued = answer(await authorize(optional.clientId, { nonce: 'n-1' }, jar));
  t.ok(issued.code, 'a code without PKCE');
  t.equal(openCode(issued.code!, config.secretKey!)?.codeChallenge, null, 'sealed without a challenge');
  const tokens = await exchange(optional.clientId, issued.code!);
  t.equal(tokens.statusCode, 200, 'exchanged without code_verifier');

  // Downgrade: a verifier for a code issued without a challenge.
  const second = answer(await authorize(optional.clientId, { nonce: 'n-2' }, jar));
  expectTokenError(
    t,
    await exchange(optional.clientId, second.code!, generateToken()),
    'invalid_grant',
    'code_verifier does not match the code_challenge',
    'a verifier for a code without a challenge',
  );

  // No nonce and no PKCE: invalid_request, redirected.
  const noNonce = answer(await authorize(optional.clientId, {}, jar));
  t.same(noNonce, {
    error: 'invalid_request',
    error_description: 'nonce is required when PKCE is not used',
    state: 'st-p',
    iss: config.issuer,
  });

  // A challenge sent is bound and checked as always.
  const verifier = generateToken();
  const withPkce = answer(await authorize(optional.clientId, { code_challenge: s256Challenge(verifier) }, jar));
  t.ok(withPkce.code, 'with PKCE, no nonce needed');
  expectTokenError(
    t,
    await exchange(optional.clientId, withPkce.code!),
    'invalid_grant',
    'the authorization code needs its code_verifier',
    'a code with a challenge, no verifier',
  );
  const again = answer(await authorize(optional.clientId, { code_challenge: s256Challenge(verifier) }, jar));
  t.equal((await exchange(optional.clientId, again.code!, verifier)).statusCode, 200, 'with its verifier');

  // The public application next to it: PKCE required; and it must send a verifier at the token endpoint.
  const refused = answer(await authorize(strict.clientId, { nonce: 'n-3' }, jar));
  t.equal(refused.error, 'invalid_request');
  t.equal(refused.error_description, 'code_challenge is required (PKCE)');
});
