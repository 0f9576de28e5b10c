// The level a request requires (issue 34, policy): acr_values, the claims parameter, an application's requireMfa
// and MFA=off|optional|required, through HTTP with app.inject. A password-only session asked for urn:idp:mfa is
// sent to the second-factor page (a step-up, in place) or, without a factor, to enrol; prompt=none gets
// login_required; MFA=off gets unmet_authentication_requirements; the step-up's Cancel answers the application
// with unmet_authentication_requirements. The ID token of the code, and of its refreshes, carries the session's
// amr and the acr that follows. The step-up itself is the real service (sessions.stepUp): TOTP and passkeys are
// tested by their own files.
import t, { type Test } from 'tap';
import * as jose from 'jose';
import { randomUUID } from 'node:crypto';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { cookiesOf, hiddenField, obtainTokens, signInWithInject, tokenRequest } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken } from '../../src/oauth/tokens.js';

const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://rp.example.com/callback';
const LOGIN = 'http://localhost:3000/login';
const ISSUER = 'http://localhost:3000/api/auth';
const actor = { actor: 'test' };

type Jar = Record<string, string>;

/** One app per MFA mode, made on first use (each has a database of its own). */
const apps = new Map<string, Promise<TestApp>>();
const appFor = (mfa: 'off' | 'optional' | 'required') => {
  if (!apps.has(mfa)) apps.set(mfa, buildTestApp(t, { env: { MFA: mfa } }));
  return apps.get(mfa)!;
};

let counter = 0;
async function setUp(mfa: 'off' | 'optional' | 'required', options: { requireMfa?: boolean } = {}) {
  const { app, database } = await appFor(mfa);
  const client = await app.services.applications.create(
    {
      clientName: `MFA RP ${++counter}`,
      redirectUris: [REDIRECT],
      allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
      ...(options.requireMfa !== undefined && { requireMfa: options.requireMfa }),
    },
    actor,
  );
  const email = `mfa-${counter}@example.com`;
  const user = await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  /** A first code for this client (consent remembered) and the browser's cookies: a password-only session. */
  const first = await obtainTokens(app, {
    clientId: client.clientId,
    redirectUri: REDIRECT,
    email,
    password: PASSWORD,
  });
  const session = await database.db
    .selectFrom('sessions')
    .select(['id', 'amr'])
    .where('user_id', '=', user.id)
    .where('revoked_at', 'is', null)
    .executeTakeFirstOrThrow();
  /** Gives the user a second factor, as services.factors.summary counts it (a passkey row). */
  const addPasskey = () =>
    database.db
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
  return {
    app,
    database,
    client,
    user,
    email,
    jar: first.jar,
    sessionId: session.id,
    sessionAmr: session.amr,
    addPasskey,
  };
}

type Setup = Awaited<ReturnType<typeof setUp>>;

/** An authorize request of this browser; the PKCE verifier to exchange its code with. */
async function authorize(s: Setup, params: Record<string, string>, jar: Jar = s.jar) {
  const verifier = generateToken();
  const query = new URLSearchParams({
    client_id: s.client.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid offline_access',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
    state: 'st',
    nonce: 'nn',
    ...params,
  });
  const res = await s.app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar });
  return { res, verifier, jar: { ...jar, ...cookiesOf(res) }, location: String(res.headers.location ?? '') };
}

const requestOf = (location: string) => new URL(location).searchParams.get('request')!;

async function exchange(s: Setup, location: string, verifier: string) {
  const code = new URL(location).searchParams.get('code');
  if (!code) throw new Error(`no code: ${location}`);
  const res = await tokenRequest(s.app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: s.client.clientId,
    redirect_uri: REDIRECT,
  });
  if (res.statusCode !== 200) throw new Error(`exchange: ${res.statusCode} ${res.body}`);
  return res.json() as { id_token: string; refresh_token: string };
}

const continueAt = (s: Setup, requestId: string, jar: Jar) =>
  s.app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize/continue?request=${requestId}`, cookies: jar });

function expectError(t: Test, location: string, error: string) {
  t.ok(location.startsWith(REDIRECT), `to the redirect URI: ${location}`);
  const q = new URL(location).searchParams;
  t.equal(q.get('error'), error);
  t.equal(q.get('state'), 'st', 'with the state');
  t.equal(q.get('iss'), ISSUER, 'and iss');
  return q.get('error_description');
}

t.test('discovery advertises the levels and the acr and amr claims', async (t) => {
  const { app } = await appFor('optional');
  const res = await app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration' });
  const doc = res.json() as { acr_values_supported: string[]; claims_supported: string[] };
  t.same(doc.acr_values_supported, ['urn:idp:pwd', 'urn:idp:mfa']);
  t.ok(doc.claims_supported.includes('acr') && doc.claims_supported.includes('amr'), 'acr and amr claims');
});

t.test('a password-only session: the ID token says pwd, and nothing is asked below urn:idp:mfa', async (t) => {
  const s = await setUp('optional');
  t.same(s.sessionAmr, ['pwd']);
  const asked = await authorize(s, { acr_values: 'urn:idp:pwd' });
  const tokens = await exchange(s, asked.location, asked.verifier);
  const claims = jose.decodeJwt(tokens.id_token);
  t.equal(claims.acr, 'urn:idp:pwd');
  t.same(claims.amr, ['pwd']);
  const unknown = await authorize(s, { acr_values: 'urn:example:gold' });
  t.ok(unknown.location.startsWith(REDIRECT), 'an unknown acr value is ignored');
  t.ok(new URL(unknown.location).searchParams.get('code'), 'a code');
});

t.test('acr_values=urn:idp:mfa: step-up on the second-factor page, then a code whose ID tokens say mfa', async (t) => {
  const s = await setUp('optional');
  await s.addPasskey();
  const first = await authorize(s, { acr_values: 'urn:idp:mfa' });
  t.equal(first.res.statusCode, 303);
  t.match(first.location, new RegExp(`^${LOGIN}/second-factor\\?request=[\\w-]+$`), 'to the second-factor page');
  const requestId = requestOf(first.location);

  const page = await s.app.inject({
    method: 'GET',
    url: `/login/second-factor?request=${requestId}`,
    cookies: first.jar,
  });
  t.equal(page.statusCode, 200);
  t.match(page.body, /Confirm it is you/, 'a step-up page');

  // Not stepped up yet: continuing asks again, no code.
  const again = await continueAt(s, requestId, first.jar);
  t.match(String(again.headers.location), `${LOGIN}/second-factor?request=${requestId}`, 'still the step-up');

  // Another browser (without this one's binding cookie) cannot continue the request.
  const { 'idp.authz': _binding, ...elsewhere } = first.jar;
  const stranger = await continueAt(s, requestId, elsewhere);
  t.equal(stranger.statusCode, 400, 'another browser: the request is not found');

  const stepped = await s.app.services.sessions.stepUp(s.sessionId, s.user.id, ['otp'], { ip: null });
  t.same(stepped?.amr, ['pwd', 'otp', 'mfa'], 'the session stepped up in place');
  const done = await continueAt(s, requestId, first.jar);
  const tokens = await exchange(s, String(done.headers.location), first.verifier);
  const claims = jose.decodeJwt(tokens.id_token);
  t.equal(claims.acr, 'urn:idp:mfa');
  t.same(claims.amr, ['pwd', 'otp', 'mfa']);
  t.equal(claims.sid, s.sessionId, 'the same session');

  const grant = await s.database.db
    .selectFrom('grants')
    .select('amr')
    .where('user_id', '=', s.user.id)
    .orderBy('created_at', 'desc')
    .executeTakeFirstOrThrow();
  t.same(grant.amr, ['pwd', 'otp', 'mfa'], 'grants.amr');

  const refreshed = await tokenRequest(s.app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token,
    client_id: s.client.clientId,
  });
  t.equal(refreshed.statusCode, 200);
  const again2 = jose.decodeJwt((refreshed.json() as { id_token: string }).id_token);
  t.equal(again2.acr, 'urn:idp:mfa', 'the refresh keeps acr');
  t.same(again2.amr, ['pwd', 'otp', 'mfa'], 'and amr');

  // Now that the session has mfa, single sign-on issues at once.
  const sso = await authorize(s, { acr_values: 'urn:idp:mfa' });
  t.ok(new URL(sso.location).searchParams.get('code'), 'single sign-on with the level met');
});

t.test('the claims parameter asks for the level as acr_values does', async (t) => {
  const s = await setUp('optional');
  await s.addPasskey();
  const claims = JSON.stringify({ id_token: { acr: { essential: true, values: ['urn:idp:mfa'] } } });
  const asked = await authorize(s, { claims });
  t.match(asked.location, `${LOGIN}/second-factor?request=`);
});

t.test('prompt=none with an unmet level: login_required at the redirect URI', async (t) => {
  const s = await setUp('optional');
  await s.addPasskey();
  const asked = await authorize(s, { acr_values: 'urn:idp:mfa', prompt: 'none' });
  t.equal(expectError(t, asked.location, 'login_required'), 'the session does not meet the required level');
});

t.test('the step-up Cancel answers the application unmet_authentication_requirements', async (t) => {
  const s = await setUp('optional');
  await s.addPasskey();
  const asked = await authorize(s, { acr_values: 'urn:idp:mfa' });
  const requestId = requestOf(asked.location);
  const page = await s.app.inject({
    method: 'GET',
    url: `/login/second-factor?request=${requestId}`,
    cookies: asked.jar,
  });
  const jar = { ...asked.jar, ...cookiesOf(page) };
  const csrf = hiddenField(page.body, 'csrf');
  const cancel = (cookies: Jar) =>
    s.app.inject({
      method: 'POST',
      url: '/login/second-factor/cancel',
      cookies,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ csrf, request: requestId }).toString(),
    });
  // Another browser, signed in as the same user but without the request's binding cookie: nothing ends.
  const { 'idp.authz': _binding, ...elsewhere } = jar;
  const stranger = await cancel(elsewhere);
  t.equal(stranger.statusCode, 400, 'another browser cannot cancel the request');
  const still = await continueAt(s, requestId, asked.jar);
  t.match(String(still.headers.location), `${LOGIN}/second-factor?request=${requestId}`, 'the request goes on');

  const res = await cancel(jar);
  t.equal(res.statusCode, 303);
  const description = expectError(t, String(res.headers.location), 'unmet_authentication_requirements');
  t.equal(description, 'the user did not give a second factor');
  const after = await continueAt(s, requestId, asked.jar);
  t.equal(after.statusCode, 400, 'the request ended');
  const session = await s.app.services.sessions.resolve(jar['idp.session']);
  t.ok(session, 'the session is kept');
});

t.test('Cancel on a request not at the step-up answers nothing of the kind', async (t) => {
  const s = await setUp('optional');
  // prompt=consent: the request is at the consent step, not the step-up.
  const asked = await authorize(s, { prompt: 'consent' });
  t.match(asked.location, `${LOGIN}/consent?request=`);
  const requestId = requestOf(asked.location);
  const page = await s.app.inject({ method: 'GET', url: `/login/consent?request=${requestId}`, cookies: asked.jar });
  const jar = { ...asked.jar, ...cookiesOf(page) };
  const res = await s.app.inject({
    method: 'POST',
    url: '/login/second-factor/cancel',
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf: hiddenField(page.body, 'csrf'), request: requestId }).toString(),
  });
  t.equal(res.statusCode, 303);
  t.match(String(res.headers.location), `${LOGIN}/consent?request=${requestId}`, 'back to the step that is due');
});

t.test('a password session without a factor asked for mfa: the enrol page, returning to the request', async (t) => {
  const s = await setUp('optional');
  const asked = await authorize(s, { acr_values: 'urn:idp:mfa' });
  const url = new URL(asked.location);
  t.equal(`${url.origin}${url.pathname}`, `${LOGIN}/account/sign-in-methods`, 'the sign-in methods page');
  const returnTo = url.searchParams.get('return_to')!;
  t.match(returnTo, new RegExp(`^${ISSUER}/oauth2/authorize/continue\\?request=[\\w-]+$`), 'back to the request');
  // Once a factor exists, the request's continuation asks for it (the session itself is still password-only).
  await s.addPasskey();
  const path = new URL(returnTo);
  const next = await s.app.inject({ method: 'GET', url: `${path.pathname}${path.search}`, cookies: asked.jar });
  t.match(String(next.headers.location), `${LOGIN}/second-factor?request=${requestOf(returnTo)}`, 'then the step-up');
});

t.test('an application that requires MFA: a password session is stepped up, then asked its consent', async (t) => {
  const s = await setUp('optional');
  await s.addPasskey();
  const strict = await s.app.services.applications.create(
    { clientName: 'Strict RP', redirectUris: [REDIRECT], requireMfa: true },
    actor,
  );
  t.equal(strict.requireMfa, true);
  const asked = await authorize({ ...s, client: strict }, {});
  t.match(asked.location, `${LOGIN}/second-factor?request=`, 'a step-up, before consent');
  const requestId = requestOf(asked.location);
  await s.app.services.sessions.stepUp(s.sessionId, s.user.id, ['otp'], { ip: null });
  const next = await continueAt(s, requestId, asked.jar);
  t.match(String(next.headers.location), `${LOGIN}/consent?request=${requestId}`, 'then consent');
  // The same session asks the first (lenient) application nothing more: its level was never required.
  const lenient = await authorize(s, {});
  t.ok(new URL(lenient.location).searchParams.get('code'), 'the other application: a code');
});

t.test('MFA=required and a user without a factor: the enrol page', async (t) => {
  const { app } = await appFor('required');
  const client = await app.services.applications.create({ clientName: 'Req RP', redirectUris: [REDIRECT] }, actor);
  const email = 'mfa-required@example.com';
  await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  const signed = await signInWithInject(app, email, PASSWORD);
  const s = { app, client } as unknown as Setup;
  const asked = await authorize(s, {}, signed.jar);
  const url = new URL(asked.location);
  t.equal(`${url.origin}${url.pathname}`, `${LOGIN}/account/sign-in-methods`, 'the sign-in methods page');
  t.match(url.searchParams.get('return_to'), `${ISSUER}/oauth2/authorize/continue?request=`);
  const none = await authorize(s, { prompt: 'none' }, signed.jar);
  t.equal(expectError(t, none.location, 'login_required'), 'the session does not meet the required level');
});

t.test('MFA=off and an application that requires MFA: unmet_authentication_requirements', async (t) => {
  const { app } = await appFor('off');
  const client = await app.services.applications.create(
    { clientName: 'Off RP', redirectUris: [REDIRECT], requireMfa: true },
    actor,
  );
  const email = 'mfa-off@example.com';
  await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  await t.rejects(
    obtainTokens(app, { clientId: client.clientId, redirectUri: REDIRECT, email, password: PASSWORD }),
    /no code: https:\/\/rp\.example\.com\/callback\?error=unmet_authentication_requirements/,
  );
});
