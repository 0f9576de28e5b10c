// /api/me (issue 17): the profile, and the rules every /api/me/* route shares: the session cookie
// only (an access token is refused), CSRF (foreign Origin 403, non-JSON 415), no CORS, no-store.
import t from 'tap';
import { corsHeaders, meTestApp } from '../helpers/me.js';
import { obtainTokens } from '../helpers/flow.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const { app, database, newUser, signIn, me } = await meTestApp(t);
const redirectUri = 'https://rp.example/cb';
const client = await app.services.applications.create(
  { clientName: 'Profile RP', redirectUris: [redirectUri], allowedWebOrigins: ['https://rp.example'] },
  { actor: 'test' },
);

const alice = await newUser({ name: 'Alice' });
const jar = await signIn(alice.email);

t.test('GET /api/me answers the profile of the session user, no-store', async (t) => {
  const res = await me('GET', '', { jar });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  const body = res.json();
  t.match(body, {
    id: alice.id,
    email: alice.email,
    emailVerified: true,
    name: 'Alice',
    givenName: null,
    familyName: null,
    picture: null,
    pendingEmail: null,
  });
  t.ok(Date.parse(body.createdAt));
  t.notOk('passwordHash' in body || 'password_hash' in body);
  t.same(corsHeaders(res), []);
});

t.test('GET /api/me/ (trailing slash) is no route: a first-party 404', async (t) => {
  const res = await me('GET', '/', { jar });
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'NOT_FOUND');
});

t.test('without a session cookie: 401 UNAUTHENTICATED, no-store', async (t) => {
  for (const [method, path] of [
    ['GET', ''],
    ['GET', '/applications'],
    ['GET', '/sessions'],
    ['GET', '/export'],
    ['DELETE', '/sessions/00000000-0000-4000-8000-000000000000'],
    ['DELETE', '/applications/x'],
  ] as const) {
    const res = await me(method, path);
    t.equal(res.statusCode, 401, `${method} ${path}`);
    t.same(res.json(), { error: 'UNAUTHENTICATED', message: 'Sign in first' });
    t.equal(res.headers['cache-control'], 'no-store');
    t.notOk(res.headers['www-authenticate']);
  }
  const post = await me('POST', '/password', { body: { currentPassword: 'x', newPassword: 'y' } });
  t.equal(post.statusCode, 401);
  const bad = await me('GET', '', { jar: { 'idp.session': 'not-a-session' } });
  t.equal(bad.statusCode, 401);
});

t.test('an access token alone is refused: 401, says so, no WWW-Authenticate', async (t) => {
  const { tokens } = await obtainTokens(app, {
    clientId: client.clientId,
    redirectUri,
    email: alice.email,
    password: alice.password,
    scope: 'openid profile email',
  });
  const res = await me('GET', '', { headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.equal(res.statusCode, 401);
  t.equal(res.json().error, 'UNAUTHENTICATED');
  t.match(res.json().message, /session cookie.*not access tokens/);
  t.notOk(res.headers['www-authenticate']);
  t.equal(res.headers['cache-control'], 'no-store');
  // The token itself is good where it belongs.
  const external = await app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(external.statusCode, 200);
});

t.test('a session cookie on /api/external/* is refused: 401', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/external/me', cookies: jar });
  t.equal(res.statusCode, 401);
  t.equal(res.json().error, 'UNAUTHORIZED');
});

t.test('a foreign Origin is 403 FORBIDDEN_ORIGIN on every method; first-party origins pass', async (t) => {
  for (const [method, path, body] of [
    ['GET', '', undefined],
    ['PATCH', '', { name: 'Mallory' }],
    ['DELETE', '/sessions/00000000-0000-4000-8000-000000000000', undefined],
    ['POST', '/password', { currentPassword: 'x', newPassword: 'yyyyyyyyy' }],
  ] as const) {
    const res = await me(method, path, { jar, body, headers: { origin: 'https://evil.example' } });
    t.equal(res.statusCode, 403, `${method} ${path}`);
    t.same(res.json(), { error: 'FORBIDDEN_ORIGIN', message: 'This endpoint is first-party only' });
    t.equal(res.headers['cache-control'], 'no-store');
    t.same(corsHeaders(res), []);
  }
  // A registered application's origin is a third party too.
  const rp = await me('GET', '', { jar, headers: { origin: 'https://rp.example' } });
  t.equal(rp.statusCode, 403);
  const own = await me('GET', '', { jar, headers: { origin: 'http://localhost:3000' } });
  t.equal(own.statusCode, 200);
  t.same(
    (await database.db.selectFrom('users').select('name').where('id', '=', alice.id).executeTakeFirst())?.name,
    'Alice',
  );
});

t.test('a form or text body is 415 (no cross-site form can change anything)', async (t) => {
  for (const type of ['application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x']) {
    const res = await me('PATCH', '', { jar, body: 'name=Mallory', headers: { 'content-type': type } });
    t.equal(res.statusCode, 415, type);
    t.equal(res.json().error, 'UNSUPPORTED_MEDIA_TYPE');
    t.equal(res.headers['cache-control'], 'no-store');
  }
  const del = await me('DELETE', '', { jar, body: 'password=x', headers: { 'content-type': 'text/plain' } });
  t.equal(del.statusCode, 415, 'a DELETE with a body needs JSON too');
  const none = await app.inject({ method: 'POST', url: '/api/me/email', cookies: jar });
  t.equal(none.statusCode, 415, 'a POST without a content type');
});

t.test('no CORS: a preflight is not answered, no route gives CORS headers', async (t) => {
  const preflight = await me('OPTIONS', '', {
    headers: {
      origin: 'http://localhost:3000',
      'access-control-request-method': 'DELETE',
    },
  });
  t.equal(preflight.statusCode, 401, 'no preflight answer (and no cookie: unauthenticated)');
  t.same(corsHeaders(preflight), []);
  const signedIn = await me('OPTIONS', '', { jar, headers: { origin: 'http://localhost:3000' } });
  t.equal(signedIn.statusCode, 404);
  t.same(corsHeaders(signedIn), []);
  t.equal(preflight.headers['cache-control'], 'no-store');
  for (const path of ['', '/applications', '/sessions', '/export']) {
    const res = await me('GET', path, { jar, headers: { origin: 'http://localhost:3000' } });
    t.equal(res.statusCode, 200, path);
    t.same(corsHeaders(res), [], path);
  }
});

t.test('an unknown route under /api/me is a first-party 404, no-store', async (t) => {
  const res = await me('GET', '/nothing', { jar });
  t.equal(res.statusCode, 404);
  t.equal(res.json().error, 'NOT_FOUND');
  t.equal(res.headers['cache-control'], 'no-store');
});

t.test('PATCH /api/me changes names and picture, null or empty clears, audited by field name', async (t) => {
  const res = await me('PATCH', '', {
    jar,
    body: { name: '  Alice Liddell ', givenName: 'Alice', familyName: 'Liddell', picture: 'https://img.example/a.png' },
  });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.json(), {
    name: 'Alice Liddell',
    givenName: 'Alice',
    familyName: 'Liddell',
    picture: 'https://img.example/a.png',
    email: alice.email,
  });
  const cleared = await me('PATCH', '', { jar, body: { familyName: null, givenName: '' } });
  t.equal(cleared.statusCode, 200);
  t.match(cleared.json(), { name: 'Alice Liddell', givenName: null, familyName: null });
  const loopback = await me('PATCH', '', { jar, body: { picture: 'http://localhost:8080/me.png' } });
  t.equal(loopback.statusCode, 200);
  const events = await listAuditEvents(database.db, { type: 'user.updated', userId: alice.id });
  t.same(events.at(-1)?.detail, { fields: ['picture'] });
  t.equal(events.at(-1)?.actor, 'self');
  t.same(events.at(-3)?.detail, { fields: ['name', 'givenName', 'familyName', 'picture'] });
});

t.test('PATCH /api/me refuses bad input with 400 and changes nothing', async (t) => {
  const before = (await me('GET', '', { jar })).json();
  const cases: Array<[unknown, string]> = [
    [{}, 'VALIDATION_ERROR'],
    [{ name: 'x'.repeat(201) }, 'VALIDATION_ERROR'],
    [{ picture: 'http://img.example/a.png' }, 'VALIDATION_ERROR'],
    [{ picture: 'javascript:alert(1)' }, 'VALIDATION_ERROR'],
    [{ picture: 'not a url' }, 'VALIDATION_ERROR'],
    [{ email: 'other@example.com' }, 'VALIDATION_ERROR'],
    [{ emailVerified: false }, 'VALIDATION_ERROR'],
    [{ name: 42 }, 'VALIDATION_ERROR'],
    [{ name: 'a\u0007b' }, 'VALIDATION_ERROR'],
    ['[]', 'VALIDATION_ERROR'],
    ['{"name":', 'INVALID_JSON'],
  ];
  for (const [body, error] of cases) {
    const res = await me('PATCH', '', { jar, body });
    t.equal(res.statusCode, 400, JSON.stringify(body));
    t.equal(res.json().error, error, JSON.stringify(body));
    t.type(res.json().message, 'string');
    t.notOk('statusCode' in res.json(), 'never a Fastify body');
    t.equal(res.headers['cache-control'], 'no-store');
  }
  t.same((await me('GET', '', { jar })).json(), before);
});

t.test('a body over 16 KiB is 413 in the first-party shape', async (t) => {
  const res = await me('PATCH', '', { jar, body: { name: 'x'.repeat(17 * 1024) } });
  t.equal(res.statusCode, 413);
  t.equal(res.json().error, 'PAYLOAD_TOO_LARGE');
  t.equal(res.headers['cache-control'], 'no-store');
});

t.test('the profile change is what UserInfo and /api/external/me say next', async (t) => {
  const { tokens } = await obtainTokens(
    app,
    { clientId: client.clientId, redirectUri, email: alice.email, password: alice.password, scope: 'openid profile' },
    jar,
  );
  const ask = () =>
    app.inject({ method: 'GET', url: '/api/external/me', headers: { authorization: `Bearer ${tokens.access_token}` } });
  t.equal((await ask()).json().name, 'Alice Liddell');
  t.equal((await me('PATCH', '', { jar, body: { name: 'Alice L.' } })).statusCode, 200);
  t.equal((await ask()).json().name, 'Alice L.', 'the bearer cache was dropped');
});

t.test('every /api/me route is in the OpenAPI document, tagged me, with the cookie as security', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  for (const [method, path] of [
    ['get', '/api/me'],
    ['patch', '/api/me'],
    ['delete', '/api/me'],
    ['post', '/api/me/email'],
    ['post', '/api/me/password'],
    ['get', '/api/me/applications'],
    ['delete', '/api/me/applications/{clientId}'],
    ['get', '/api/me/sessions'],
    ['delete', '/api/me/sessions/{id}'],
    ['get', '/api/me/export'],
  ]) {
    const op = doc.paths[path!]?.[method!];
    t.ok(op, `${method} ${path}`);
    t.same(op?.tags, ['me']);
    t.same(op?.security, [{ sessionCookie: [] }]);
  }
});
