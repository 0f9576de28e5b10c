// The OpenID Connect authorize parameters the OIDF Basic plan sends, through the endpoint (issue 33):
// display / ui_locales / claims_locales / acr_values / claims accepted (OIDCCDisplayPage, OIDCCUiLocales,
// OIDCCClaimsLocales, OIDCCEnsureRequestWithAcrValuesSucceeds, OIDCCClaimsEssential), the ID token asserting no
// acr it cannot back; id_token_hint (OIDCCIdTokenHint: prompt=none with the first login's ID token succeeds at
// once; OpenID Connect Core §3.1.2.1 for the rest); login_hint prefilling the e-mail (OIDCCLoginHint); request
// and request_uri refused to the client; and a code sealed without a PKCE challenge at the token endpoint.
import { randomUUID } from 'node:crypto';
import * as jose from 'jose';
import t, { type Test } from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens, tokenRequest } from '../helpers/flow.js';
import { signIdToken } from '../../src/oauth/id-token.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { redirectUriHash, sealCode } from '../../src/oauth/sealed-code.js';
import { generateToken } from '../../src/oauth/tokens.js';

const { app, config, database } = await buildTestApp(t);
const actor = { actor: 'test' };
const ISSUER = 'http://localhost:3000/api/auth';
const AUTHORIZE = '/api/auth/oauth2/authorize';
const REDIRECT = 'https://rp.example.com/callback';
const PASSWORD = 'correct horse battery staple';
const VERIFIER = generateToken();

const client = await app.services.applications.create(
  { clientName: 'OIDC params RP', redirectUris: [REDIRECT], allowedScopes: ['openid', 'profile', 'email'] },
  actor,
);
const otherClient = await app.services.applications.create(
  { clientName: 'Another RP', redirectUris: [REDIRECT], allowedScopes: ['openid'] },
  actor,
);

let counter = 0;
async function createUser(label: string) {
  const email = `${label}-${++counter}@example.com`;
  const user = await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  return { ...user, email };
}

/** A user signed in at the client (consent given): the ID token and the browser's cookies. */
async function signedInUser(label: string) {
  const user = await createUser(label);
  const browser = { 'idp.authz': generateToken() };
  const { tokens, jar } = await obtainTokens(
    app,
    {
      clientId: client.clientId,
      redirectUri: REDIRECT,
      email: user.email,
      password: PASSWORD,
      nonce: 'n',
      scope: 'openid',
    },
    browser,
  );
  return { user, idToken: tokens.id_token, jar };
}

const query = (extra: Record<string, string | undefined> = {}) => {
  const params: Record<string, string> = {
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'st-o',
    nonce: 'n-o',
    code_challenge: s256Challenge(VERIFIER),
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete params[k];
    else params[k] = v;
  }
  return new URLSearchParams(params).toString();
};

const authorize = (extra: Record<string, string | undefined>, jar: Record<string, string> = {}) =>
  app.inject({ method: 'GET', url: `${AUTHORIZE}?${query(extra)}`, cookies: { 'idp.authz': generateToken(), ...jar } });

/** A 303 to the client with a code (state and iss too); the code. */
function expectCode(t: Test, res: LightMyRequestResponse, label: string): string {
  t.equal(res.statusCode, 303, `${label}: 303`);
  const url = new URL(String(res.headers.location));
  t.equal(`${url.origin}${url.pathname}`, REDIRECT, `${label}: to the client`);
  t.equal(url.searchParams.get('state'), 'st-o', `${label}: state`);
  t.equal(url.searchParams.get('iss'), ISSUER, `${label}: iss`);
  t.notOk(url.searchParams.has('error'), `${label}: no error (${url.searchParams.get('error')})`);
  t.ok(url.searchParams.get('code'), `${label}: a code`);
  return url.searchParams.get('code')!;
}

/** A 303 to the client with this error, its fixed description, state and iss. */
function expectError(t: Test, res: LightMyRequestResponse, error: string, description: string, label: string) {
  t.equal(res.statusCode, 303, `${label}: 303`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  const url = new URL(String(res.headers.location));
  t.equal(`${url.origin}${url.pathname}`, REDIRECT, `${label}: to the client`);
  t.equal(url.searchParams.get('error'), error, `${label}: ${error}`);
  t.equal(url.searchParams.get('error_description'), description, `${label}: description`);
  t.equal(url.searchParams.get('state'), 'st-o', `${label}: state`);
  t.equal(url.searchParams.get('iss'), ISSUER, `${label}: iss`);
  t.notOk(url.searchParams.has('code'), `${label}: no code`);
}

const exchange = (code: string, verifier: string | null = VERIFIER) =>
  tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    ...(verifier !== null && { code_verifier: verifier }),
    client_id: client.clientId,
    redirect_uri: REDIRECT,
  });

t.test('display, ui_locales, claims_locales, acr_values, claims and unknown parameters: a code', async (t) => {
  const { jar } = await signedInUser('params');
  for (const [label, extra] of [
    ['display=page', { display: 'page' }],
    ['display=popup', { display: 'popup' }],
    ['display=touch', { display: 'touch' }],
    ['display=wap', { display: 'wap' }],
    ['ui_locales', { ui_locales: 'se fr-CA en' }],
    ['claims_locales', { claims_locales: 'se fr-CA en' }],
    ['acr_values', { acr_values: '1 2' }],
    ['claims of a granted scope', { claims: JSON.stringify({ userinfo: { sub: { essential: true } } }) }],
    ['unknown parameters', { foo: 'bar', extra_unknown_param: '1' }],
  ] as const) {
    const code = expectCode(t, await authorize(extra, jar), label);
    if (label === 'acr_values') {
      const token = await exchange(code);
      t.equal(token.statusCode, 200);
      const claims = jose.decodeJwt(token.json().id_token);
      // Unknown values are ignored (voluntary); the ID token says the level achieved (issue 34), which the
      // relying party checks.
      t.equal(claims.acr, 'urn:idp:pwd', 'acr_values of unknown values: the achieved level, urn:idp:pwd');
      t.same(claims.amr, ['pwd'], 'and how: a password');
    }
  }
  expectError(
    t,
    await authorize({ display: 'fullscreen' }, jar),
    'invalid_request',
    'display has a value that is not supported',
    'display=fullscreen',
  );
  expectError(
    t,
    await authorize({ claims: 'name' }, jar),
    'invalid_request',
    'claims is not a valid claims request',
    'claims not JSON',
  );

  // Not signed in: the claims request is kept with the pending request.
  const pending = await authorize({ claims: JSON.stringify({ userinfo: { name: { essential: true } } }) });
  const requestId = new URL(String(pending.headers.location)).searchParams.get('request')!;
  const stored = await database.db
    .selectFrom('authorization_requests')
    .select('params')
    .where('id', '=', requestId)
    .executeTakeFirstOrThrow();
  t.same(stored.params.claims, { userinfo: { name: { essential: true } } }, 'claims kept');
  t.same(stored.params.scope, ['openid', 'profile'], 'a claim asks for the scope that carries it');
});

t.test('claims: a claim by name asks for its scope, so the user is asked to consent to it', async (t) => {
  const { jar } = await signedInUser('claims-scope');
  for (const [label, claims, scope] of [
    ['userinfo name (essential)', { userinfo: { name: { essential: true } } }, ['openid', 'profile']],
    ['id_token email, unknown acr', { id_token: { email: null, acr: { essential: true } } }, ['openid', 'email']],
  ] as const) {
    const res = await authorize({ claims: JSON.stringify(claims) }, jar);
    t.equal(res.statusCode, 303, label);
    const location = new URL(String(res.headers.location));
    t.match(location.pathname, /\/consent$/, `${label}: to the consent page, for the scope not yet consented`);
    const stored = await database.db
      .selectFrom('authorization_requests')
      .select('params')
      .where('id', '=', location.searchParams.get('request')!)
      .executeTakeFirstOrThrow();
    t.same(stored.params.scope, scope, `${label}: the scope`);
  }
  // A claim of a scope the application may not have is ignored (a request, not a demand).
  const narrow = await authorize(
    { client_id: otherClient.clientId, claims: JSON.stringify({ userinfo: { name: { essential: true } } }) },
    jar,
  );
  const narrowStored = await database.db
    .selectFrom('authorization_requests')
    .select('params')
    .where('id', '=', new URL(String(narrow.headers.location)).searchParams.get('request')!)
    .executeTakeFirstOrThrow();
  t.same(narrowStored.params.scope, ['openid'], 'a scope the application may not have is not added');
});

t.test(
  'request and request_uri: refused to the client, request_not_supported / request_uri_not_supported',
  async (t) => {
    expectError(
      t,
      await authorize({ request: 'eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.' }),
      'request_not_supported',
      'request objects are not supported',
      'request',
    );
    expectError(
      t,
      await authorize({ request_uri: 'https://rp.example.com/request.jwt' }),
      'request_uri_not_supported',
      'request_uri is not supported',
      'request_uri',
    );
  },
);

t.test('login_hint prefills the e-mail on the sign-in page', async (t) => {
  const browser = { 'idp.authz': generateToken() };
  const started = await authorize({ login_hint: 'hinted@example.com' }, browser);
  const location = new URL(String(started.headers.location));
  const signIn = await app.inject({ method: 'GET', url: location.pathname + location.search, cookies: browser });
  t.equal(signIn.statusCode, 200);
  t.match(signIn.body, /name="email"[^>]*value="hinted@example\.com"|value="hinted@example\.com"[^>]*name="email"/);
});

t.test('id_token_hint (OIDCCIdTokenHint): prompt=none with the user’s own ID token succeeds at once', async (t) => {
  const alice = await signedInUser('alice');
  const bob = await signedInUser('bob');

  const code = expectCode(t, await authorize({ prompt: 'none', id_token_hint: alice.idToken }, alice.jar), 'own hint');
  const token = await exchange(code);
  t.equal(token.statusCode, 200);
  const first = jose.decodeJwt(alice.idToken);
  const second = jose.decodeJwt(token.json().id_token);
  t.equal(second.sub, first.sub, 'the same sub');
  t.equal(second.auth_time, first.auth_time, 'the same auth_time (no new sign-in)');

  // An expired ID token of ours is still a hint (OpenID Connect Core §3.1.2.1).
  const key = await app.services.keys.currentKey();
  const expired = await signIdToken(
    {
      issuer: ISSUER,
      subject: alice.user.id,
      clientId: client.clientId,
      authTime: new Date(Date.now() - 7 * 86400_000),
      accessToken: 'x',
      lifetimeSeconds: 60,
      now: new Date(Date.now() - 7 * 86400_000),
    },
    key,
  );
  expectCode(t, await authorize({ prompt: 'none', id_token_hint: expired }, alice.jar), 'expired hint');

  // Bob's hint in Alice's browser: login_required with prompt=none, the sign-in page without.
  expectError(
    t,
    await authorize({ prompt: 'none', id_token_hint: bob.idToken }, alice.jar),
    'login_required',
    'the signed-in user is not the one of the id_token_hint',
    "another user's hint, prompt=none",
  );
  const interactive = await authorize({ id_token_hint: bob.idToken }, alice.jar);
  t.equal(interactive.statusCode, 303);
  t.match(String(interactive.headers.location), /\/login\/sign-in\?request=/, "another user's hint: sign in");
  // No session at all: login_required with prompt=none, as without a hint.
  expectError(
    t,
    await authorize({ prompt: 'none', id_token_hint: alice.idToken }),
    'login_required',
    'the user is not signed in',
    'hint without a session',
  );
});

t.test('id_token_hint that is not our ID token for this client: invalid_request, redirected', async (t) => {
  const alice = await signedInUser('hints');
  const key = await app.services.keys.currentKey();
  const forOther = await signIdToken(
    {
      issuer: ISSUER,
      subject: alice.user.id,
      clientId: otherClient.clientId,
      authTime: new Date(),
      accessToken: 'x',
      lifetimeSeconds: 60,
    },
    key,
  );
  const foreignKey = await jose.generateKeyPair('RS256', { extractable: true });
  const foreign = await signIdToken(
    {
      issuer: ISSUER,
      subject: alice.user.id,
      clientId: client.clientId,
      authTime: new Date(),
      accessToken: 'x',
      lifetimeSeconds: 60,
    },
    { kid: key.kid, alg: 'RS256', key: foreignKey.privateKey },
  );
  const otherIssuer = await signIdToken(
    {
      issuer: 'https://evil.example',
      subject: alice.user.id,
      clientId: client.clientId,
      authTime: new Date(),
      accessToken: 'x',
      lifetimeSeconds: 60,
    },
    key,
  );
  const [header, payload] = alice.idToken.split('.');
  for (const [label, hint] of [
    ['for another client', forOther],
    ['signed by a foreign key under our kid', foreign],
    ['another issuer', otherIssuer],
    ['alg none', `${header}.${payload}.`],
    ['not a JWT', 'garbage'],
    ['a random uuid', randomUUID()],
  ] as const) {
    for (const prompt of ['none', undefined]) {
      expectError(
        t,
        await authorize({ prompt, id_token_hint: hint }, alice.jar),
        'invalid_request',
        'id_token_hint is not an ID token issued to this client',
        `${label}${prompt ? ', prompt=none' : ''}`,
      );
    }
  }
  expectError(
    t,
    await authorize({ id_token_hint: 'x'.repeat(8193) }, alice.jar),
    'invalid_request',
    'id_token_hint is too long',
    'a too long hint',
  );
});

t.test('a code sealed without a PKCE challenge: a public client is still asked for its verifier', async (t) => {
  // Such codes are issued only to a confidential client whose PKCE is optional; a public client presenting one
  // (it could not get one) still must send code_verifier, and a verifier for it is refused (PKCE downgrade).
  const { user } = await signedInUser('sealed');
  const session = await database.db
    .selectFrom('sessions')
    .select(['id', 'auth_time'])
    .where('user_id', '=', user.id)
    .executeTakeFirstOrThrow();
  const seal = () =>
    sealCode(
      {
        grantId: randomUUID(),
        clientId: client.clientId,
        userId: user.id,
        sessionId: session.id,
        authTime: new Date(session.auth_time),
        issuedAt: new Date().toISOString(),
        expiresAt: new Date(Date.now() + 60_000),
        redirectUriHash: redirectUriHash(REDIRECT),
        codeChallenge: null,
        nonce: 'n',
        scope: 'openid',
        amr: ['pwd'],
      },
      config.secretKey!,
    );
  const missing = await exchange(seal(), null);
  t.equal(missing.statusCode, 400);
  t.same(missing.json(), { error: 'invalid_request', error_description: 'code_verifier is required' });
  const downgrade = await exchange(seal());
  t.equal(downgrade.statusCode, 400);
  t.equal(downgrade.headers['cache-control'], 'no-store');
  t.same(downgrade.json(), {
    error: 'invalid_grant',
    error_description: 'code_verifier does not match the code_challenge',
  });
});
