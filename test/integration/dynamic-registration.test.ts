// Dynamic client registration (RFC 7591) and its management (RFC 7592), issue 36: off by default; open and token
// modes; the RFC's error bodies; the registration access token binds management to the client it was issued for;
// registered clients are public PKCE clients that always see the consent page; the admin web marks them; the
// clean-up job deletes unused ones.
import t from 'tap';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { cookiesOf, obtainCode, signInWithInject, tokenRequest } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';

// Several apps, each with its own database: slower than one app on a loaded machine.
t.setTimeout(400_000);

const actor = { actor: 'test' };
const PASSWORD = 'registration-password-1';
const REDIRECT = 'http://127.0.0.1:7777/callback';

const register = (app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/api/auth/register',
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });

t.test('off by default: no endpoint, nothing advertised', async (t) => {
  const { app } = await buildTestApp(t);
  const discovery = (await app.inject({ url: '/api/auth/.well-known/openid-configuration' })).json();
  t.notOk('registration_endpoint' in discovery, 'no registration_endpoint');
  t.notOk('client_id_metadata_document_supported' in discovery, 'no metadata documents');
  t.equal((await register(app, { redirect_uris: [REDIRECT] })).statusCode, 404, 'POST /register is not a route');
});

t.test('REGISTRATION=open: register, use, read, update, delete', async (t) => {
  const { app, database } = await buildTestApp(t, { env: { REGISTRATION: 'open' } });
  await app.services.users.create({ email: 'dyn@example.com', password: PASSWORD, emailVerified: true }, actor);
  const discovery = (await app.inject({ url: '/api/auth/.well-known/openid-configuration' })).json();
  t.equal(discovery.registration_endpoint, 'http://localhost:3000/api/auth/register', 'advertised');

  const res = await register(app, {
    redirect_uris: [REDIRECT],
    client_name: 'Agent Smith',
    grant_types: ['authorization_code', 'refresh_token'],
    scope: 'openid email offline_access mcp:tools',
    software_statement: 'ignored',
    unknown_member: 42,
  });
  t.equal(res.statusCode, 201, res.body);
  t.equal(res.headers['cache-control'], 'no-store');
  const client = res.json();
  t.match(client, {
    client_id: String,
    client_name: 'Agent Smith',
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    scope: 'openid email offline_access',
    registration_access_token: String,
    registration_client_uri: `http://localhost:3000/api/auth/register/${client.client_id}`,
    client_id_issued_at: Number,
  });
  t.notOk('client_secret' in client, 'a public client has no secret');
  const row = await database.db
    .selectFrom('applications')
    .selectAll()
    .where('client_id', '=', client.client_id)
    .executeTakeFirstOrThrow();
  t.equal(row.registration, 'dynamic');
  t.not(row.registration_access_token_hash, client.registration_access_token, 'the token is stored hashed');
  t.equal(row.registration_access_token_hash?.length, 43, 'as a SHA-256');

  // It signs a user in like any public PKCE client, and the consent page says who it is.
  const { code, verifier } = await obtainCode(app, {
    clientId: client.client_id,
    redirectUri: REDIRECT,
    email: 'dyn@example.com',
    password: PASSWORD,
    scope: 'openid email',
  });
  const tokens = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: client.client_id,
    redirect_uri: REDIRECT,
  });
  t.equal(tokens.statusCode, 200, tokens.body);

  // RFC 7592 read: with its token only.
  const bearer = { authorization: `Bearer ${client.registration_access_token}` };
  const url = `/api/auth/register/${client.client_id}`;
  const read = await app.inject({ method: 'GET', url, headers: bearer });
  t.equal(read.statusCode, 200);
  t.match(read.json(), { client_id: client.client_id, client_name: 'Agent Smith' });
  t.notOk('registration_access_token' in read.json(), 'the token is shown once');
  for (const [what, headers] of [
    ['no token', {}],
    ['a wrong token', { authorization: 'Bearer wrong-token' }],
    ['a Basic header', { authorization: `Basic ${client.registration_access_token}` }],
  ] as const) {
    const refused = await app.inject({ method: 'GET', url, headers });
    t.equal(refused.statusCode, 401, what);
    t.equal(refused.json().error, 'invalid_token', what);
    t.match(refused.headers['www-authenticate'], /^Bearer error="invalid_token"/, what);
  }

  // Another client's token does not manage this one.
  const other = (await register(app, { redirect_uris: ['https://other.example.com/cb'] })).json();
  const cross = await app.inject({
    method: 'DELETE',
    url,
    headers: { authorization: `Bearer ${other.registration_access_token}` },
  });
  t.equal(cross.statusCode, 401, "another client's registration access token is refused");
  // An operator's application has no registration access token: its id is not manageable here.
  const operatorApp = await app.services.applications.create({ clientName: 'Op', redirectUris: [REDIRECT] }, actor);
  const op = await app.inject({
    method: 'GET',
    url: `/api/auth/register/${operatorApp.clientId}`,
    headers: bearer,
  });
  t.equal(op.statusCode, 401, "an operator's application is not managed by RFC 7592");

  // Update: a full replacement; client_id must match; the method cannot change.
  const put = (body: unknown) =>
    app.inject({
      method: 'PUT',
      url,
      headers: { ...bearer, 'content-type': 'application/json' },
      payload: JSON.stringify(body),
    });
  const mismatch = await put({ client_id: other.client_id, redirect_uris: [REDIRECT] });
  t.equal(mismatch.statusCode, 400);
  t.equal(mismatch.json().error, 'invalid_client_metadata');
  const confidential = await put({
    client_id: client.client_id,
    redirect_uris: [REDIRECT],
    token_endpoint_auth_method: 'client_secret_basic',
  });
  t.equal(confidential.json().error, 'invalid_client_metadata', 'cannot become confidential');
  const updated = await put({
    client_id: client.client_id,
    redirect_uris: ['https://agent.example.com/cb'],
    client_name: 'Agent Smith 2',
  });
  t.equal(updated.statusCode, 200, updated.body);
  t.match(updated.json(), { redirect_uris: ['https://agent.example.com/cb'], client_name: 'Agent Smith 2' });
  const stale = await app.inject({
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      code_challenge: s256Challenge('v'.repeat(43)),
      code_challenge_method: 'S256',
    })}`,
    headers: { accept: 'application/json' },
  });
  t.equal(stale.statusCode, 400, 'the replaced redirect URI is refused at once');
  t.equal(stale.json().error_description, 'redirect_uri is not registered for this client');

  // Delete: the client is gone, and so is the management of it.
  const deleted = await app.inject({ method: 'DELETE', url, headers: bearer });
  t.equal(deleted.statusCode, 204);
  t.equal((await app.inject({ method: 'GET', url, headers: bearer })).statusCode, 401);
  t.equal(await app.services.applications.find(client.client_id), undefined);
  const gone = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: 'x'.repeat(43),
    client_id: client.client_id,
  });
  t.equal(gone.json().error, 'invalid_client', 'the deleted client is unknown at the token endpoint');
});

t.test('RFC 7591 §3.2.2 errors', async (t) => {
  const { app } = await buildTestApp(t, { env: { REGISTRATION: 'open' } });
  const cases: Array<[string, unknown, string]> = [
    ['no redirect_uris', { client_name: 'x' }, 'invalid_redirect_uri'],
    ['empty redirect_uris', { redirect_uris: [] }, 'invalid_redirect_uri'],
    ['http on a public host', { redirect_uris: ['http://agent.example.com/cb'] }, 'invalid_redirect_uri'],
    ['a fragment', { redirect_uris: ['https://agent.example.com/cb#x'] }, 'invalid_redirect_uri'],
    ['javascript:', { redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [
      '21 redirect URIs',
      { redirect_uris: Array.from({ length: 21 }, (_, i) => `https://a.example/${i}`) },
      'invalid_redirect_uri',
    ],
    ['a number as a URI', { redirect_uris: [42] }, 'invalid_redirect_uri'],
    [
      'a secret method while confidential clients are off',
      { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' },
      'invalid_client_metadata',
    ],
    [
      'private_key_jwt',
      { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'private_key_jwt' },
      'invalid_client_metadata',
    ],
    ['jwks', { redirect_uris: [REDIRECT], jwks: { keys: [] } }, 'invalid_client_metadata'],
    [
      'client_credentials',
      { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] },
      'invalid_client_metadata',
    ],
    ['implicit', { redirect_uris: [REDIRECT], response_types: ['token'] }, 'invalid_client_metadata'],
    ['refresh alone', { redirect_uris: [REDIRECT], grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
    ['a name of the wrong type', { redirect_uris: [REDIRECT], client_name: { x: 1 } }, 'invalid_client_metadata'],
    ['a long name', { redirect_uris: [REDIRECT], client_name: 'n'.repeat(201) }, 'invalid_client_metadata'],
    [
      'an http logo',
      { redirect_uris: [REDIRECT], logo_uri: 'http://cdn.example.com/x.png' },
      'invalid_client_metadata',
    ],
    ['an array body', [REDIRECT], 'invalid_client_metadata'],
    ['not JSON', '{"redirect_uris": [', 'invalid_client_metadata'],
  ];
  for (const [what, body, error] of cases) {
    const res = await register(app, body);
    t.equal(res.statusCode, 400, what);
    t.equal(res.json().error, error, what);
    t.type(res.json().error_description, 'string', what);
  }
  const form = await app.inject({
    method: 'POST',
    url: '/api/auth/register',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `redirect_uris=${encodeURIComponent(REDIRECT)}`,
  });
  t.equal(form.statusCode, 400, 'a form body');
  t.equal(form.json().error, 'invalid_client_metadata');
  t.equal((await app.services.applications.list()).items.length, 0, 'nothing was registered');
});

t.test('REGISTRATION_CONFIDENTIAL=on: a confidential client gets its secret once', async (t) => {
  const { app } = await buildTestApp(t, { env: { REGISTRATION: 'open', REGISTRATION_CONFIDENTIAL: 'on' } });
  const res = await register(app, { redirect_uris: ['https://rp.example.com/cb'] });
  t.equal(res.statusCode, 201, res.body);
  const client = res.json();
  t.equal(client.token_endpoint_auth_method, 'client_secret_basic', "RFC 7591's default");
  t.equal(client.client_secret_expires_at, 0);
  t.ok(await app.services.applications.verifySecret(client.client_id, client.client_secret), 'the secret works');
  const pub = await register(app, { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' });
  t.equal(pub.json().token_endpoint_auth_method, 'none');
  t.notOk('client_secret' in pub.json());
});

t.test('REGISTRATION=token: initial access tokens from the admin API, spent and revoked', async (t) => {
  const { app } = await buildTestApp(t, { env: { REGISTRATION: 'token' } });
  const body = { redirect_uris: [REDIRECT] };
  const none = await register(app, body);
  t.equal(none.statusCode, 401, 'no initial access token');
  t.equal(none.json().error, 'invalid_token');
  t.match(none.headers['www-authenticate'], /^Bearer/);
  t.equal((await register(app, body, { authorization: 'Bearer made-up' })).statusCode, 401, 'a made-up token');

  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/registration-tokens',
    headers: adminHeaders,
    payload: { description: 'for the MCP test', uses: 2, expiresInDays: 1 },
  });
  t.equal(created.statusCode, 201, created.body);
  const initial = created.json();
  t.match(initial, { id: /^rt_/, token: String, usesLeft: 2, description: 'for the MCP test' });
  const listed = (await app.inject({ url: '/api/admin/registration-tokens', headers: adminHeaders })).json();
  t.equal(listed.items.length, 1);
  t.notOk('token' in listed.items[0], 'the list never shows a token');

  const withToken = { authorization: `Bearer ${initial.token}` };
  t.equal((await register(app, body, withToken)).statusCode, 201, 'first use');
  t.equal((await register(app, body, withToken)).statusCode, 201, 'second use');
  const spent = await register(app, body, withToken);
  t.equal(spent.statusCode, 401, 'used up');
  t.equal(spent.json().error_description, 'the initial access token is invalid, expired or used up');

  const another = (
    await app.inject({ method: 'POST', url: '/api/admin/registration-tokens', headers: adminHeaders, payload: {} })
  ).json();
  const revoked = await app.inject({
    method: 'DELETE',
    url: `/api/admin/registration-tokens/${another.id}`,
    headers: adminHeaders,
  });
  t.equal(revoked.statusCode, 204);
  t.equal((await register(app, body, { authorization: `Bearer ${another.token}` })).statusCode, 401, 'revoked');
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/api/admin/registration-tokens/${another.id}`, headers: adminHeaders }))
      .statusCode,
    404,
  );
  const unauthenticated = await app.inject({ method: 'POST', url: '/api/admin/registration-tokens', payload: {} });
  t.equal(unauthenticated.statusCode, 401, 'only the operator issues them');
});

t.test('REGISTRATION=open is rate limited per IP', async (t) => {
  const { app } = await buildTestApp(t, {
    env: { REGISTRATION: 'open', RATE_LIMITS: 'on', RATE_LIMIT_REGISTRATION_IP: '2/3600' },
  });
  const body = { redirect_uris: [REDIRECT] };
  t.equal((await register(app, body)).statusCode, 201);
  t.equal((await register(app, body)).statusCode, 201);
  const third = await register(app, body);
  t.equal(third.statusCode, 429);
  t.ok(third.headers['retry-after'], 'Retry-After');
  t.equal(third.json().error, 'temporarily_unavailable');
});

t.test('consent is always asked of a self-registered client, and never of it by prompt=none', async (t) => {
  const { app } = await buildTestApp(t, { env: { REGISTRATION: 'open' } });
  await app.services.users.create({ email: 'agent-user@example.com', password: PASSWORD, emailVerified: true }, actor);
  const client = (await register(app, { redirect_uris: [REDIRECT], client_name: 'Helpful Agent' })).json();
  const flow = {
    clientId: client.client_id,
    redirectUri: REDIRECT,
    email: 'agent-user@example.com',
    password: PASSWORD,
  };
  const first = await obtainCode(app, { ...flow, scope: 'openid email' });
  t.ok(first.code, 'the first flow consents');

  // Signed in, consent remembered: an operator's application would get its code at once; this one is asked again.
  const authorize = (prompt?: string) =>
    app.inject({
      url: `/api/auth/oauth2/authorize?${new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        response_type: 'code',
        scope: 'openid email',
        code_challenge: s256Challenge('v'.repeat(43)),
        code_challenge_method: 'S256',
        ...(prompt && { prompt }),
      })}`,
      cookies: first.jar,
    });
  const again = await authorize();
  t.match(again.headers.location, /\/login\/consent\?request=/, 'the consent page again');
  const page = await app.inject({
    url: again.headers.location as string,
    cookies: { ...first.jar, ...cookiesOf(again) },
  });
  t.match(page.body, /id="self-registered"/, 'the page says it registered itself');
  t.match(page.body, /vouched for only by <strong>127\.0\.0\.1:7777<\/strong>/, 'and names its redirect host');
  const none = await authorize('none');
  t.match(new URL(none.headers.location as string).searchParams.get('error'), 'consent_required', 'prompt=none');

  // The user's account page lists it, and revokes it in one click.
  const signed = await signInWithInject(app, 'agent-user@example.com', PASSWORD);
  const list = await app.inject({ url: '/login/account/applications', cookies: signed.jar });
  t.match(list.body, /Helpful Agent/);
});

t.test('the admin web marks self-registered clients; disable refuses them; clean-up deletes unused ones', async (t) => {
  const { app, database } = await buildTestApp(t, {
    env: { REGISTRATION: 'open', SELF_REGISTERED_CLIENT_TTL: '30' },
  });
  const client = (await register(app, { redirect_uris: [REDIRECT], client_name: 'Old Agent' })).json();
  const fresh = (await register(app, { redirect_uris: [REDIRECT], client_name: 'New Agent' })).json();
  const operator = await app.services.applications.create(
    { clientName: 'Operator app', redirectUris: [REDIRECT] },
    actor,
  );

  await app.services.applications.setEnabled(client.client_id, false, actor);
  const refused = await app.inject({
    url: `/api/auth/oauth2/authorize?${new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      code_challenge: s256Challenge('v'.repeat(43)),
      code_challenge_method: 'S256',
    })}`,
    headers: { accept: 'application/json' },
  });
  t.equal(refused.json().error_description, 'this application is disabled');

  // Unused for 31 days (and the operator's application, older still, is never touched).
  await sql`update applications set last_used_at = now() - interval '31 days', created_at = now() - interval '40 days'
    where client_id in (${client.client_id}, ${operator.clientId})`.execute(database.db);
  const deleted = await app.services.cleanup.runOnce();
  t.equal(deleted.self_registered_applications, 1);
  t.equal(await app.services.applications.find(client.client_id), undefined, 'the unused one is gone');
  t.ok(await app.services.applications.find(fresh.client_id), 'the recent one stays');
  t.ok(await app.services.applications.find(operator.clientId), "the operator's stays");
});
