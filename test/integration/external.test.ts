// /api/external/*, public metadata, and dynamic CORS.
import t from 'tap';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { obtainTokens } from '../helpers/flow.js';
import { staticApplicationsFrom, parseStaticApplications } from '../../src/static-applications.js';

const statics = parseStaticApplications(
  [
    {
      clientId: 'static-spa',
      clientName: 'Static SPA',
      redirectUris: ['https://static.example.com/cb'],
      allowedWebOrigins: ['https://static.example.com'],
    },
  ],
  'static.json',
);
// These tests fake expiry, revocation and impossible rows with raw SQL, which no invalidation announces: the
// bearer cache is off so that every request asks the database (the cache: test/integration/bearer-cache.test.ts).
const { app, database } = await buildTestApp(t, {
  staticApplications: staticApplicationsFrom(statics, 'static.json'),
  env: { BEARER_CACHE_SECONDS: '0' },
});
const actor = { actor: 'test' };
const redirectUri = 'https://spa.example.com/cb';
const spa = await app.services.applications.create(
  {
    clientName: 'SPA',
    clientDescription: 'A single-page app',
    clientLogoUrl: 'https://spa.example.com/logo.png',
    redirectUris: [redirectUri, 'http://localhost:5173/cb'],
    allowedWebOrigins: ['https://spa.example.com'],
    postVerificationRedirectPath: '/welcome',
    allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  },
  actor,
);
const other = await app.services.applications.create(
  {
    clientName: 'Other',
    redirectUris: ['https://other.example.com/cb'],
    allowedWebOrigins: ['https://other.example.com'],
  },
  actor,
);
await app.services.users.create(
  {
    email: 'ext@example.com',
    password: 'ext-password-1',
    emailVerified: true,
    name: 'Ex Ternal',
    givenName: 'Ex',
    permissions: ['read', 'write'],
  },
  actor,
);
// Every challenge of /api/external/* names its protected-resource metadata (RFC 9728 §5.1).
const RM = 'resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/api/external"';
const flow = { clientId: spa.clientId, redirectUri, email: 'ext@example.com', password: 'ext-password-1' };
const me = (authorization?: string, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { ...(authorization !== undefined && { authorization }), ...headers },
  });

t.test('GET /api/external/me returns the claims of the granted scopes, and no others', async (t) => {
  const cases: Array<[string, string[]]> = [
    ['openid', ['sub']],
    ['openid email', ['email', 'email_verified', 'sub']],
    ['openid profile', ['given_name', 'name', 'sub']],
    ['openid permissions', ['permissions', 'sub']],
    ['openid profile email permissions', ['email', 'email_verified', 'given_name', 'name', 'permissions', 'sub']],
  ];
  for (const [scope, claims] of cases) {
    const { tokens } = await obtainTokens(app, { ...flow, scope });
    const res = await me(`Bearer ${tokens.access_token}`);
    t.equal(res.statusCode, 200, scope);
    t.same(Object.keys(res.json()).sort(), claims, scope);
    t.equal(res.headers['cache-control'], 'no-store');
  }
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid profile email permissions' });
  const body = (await me(`bearer ${tokens.access_token}`)).json();
  t.same(
    body,
    {
      sub: body.sub,
      name: 'Ex Ternal',
      given_name: 'Ex',
      email: 'ext@example.com',
      email_verified: true,
      permissions: ['read', 'write'],
    },
    'absent values (family_name, picture) are omitted; the scheme is case-insensitive',
  );
});

t.test('every bearer failure is 401 UNAUTHORIZED with WWW-Authenticate', async (t) => {
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid' });
  const none = await me();
  t.equal(none.statusCode, 401);
  t.same(none.json(), { error: 'UNAUTHORIZED' });
  t.equal(none.headers['www-authenticate'], `Bearer ${RM}`);
  const basic = await me(`Basic ${Buffer.from('a:b').toString('base64')}`);
  t.equal(basic.statusCode, 401);
  t.same(basic.json(), { error: 'UNAUTHORIZED' });
  t.equal(
    basic.headers['www-authenticate'],
    `Bearer ${RM}`,
    'another scheme gets a challenge without an error code (RFC 6750 §3.1)',
  );
  for (const [name, header] of <Array<[string, string]>>[
    ['empty token', 'Bearer '],
    ['unknown token', 'Bearer 0123456789abcdefghijklmnopqrstuvwxyzABCDEFG'],
  ]) {
    const res = await me(header);
    t.equal(res.statusCode, 401, name);
    t.same(res.json(), { error: 'UNAUTHORIZED' }, name);
    t.equal(res.headers['www-authenticate'], `Bearer error="invalid_token", ${RM}`, name);
  }
  const noScheme = await me(tokens.access_token);
  t.equal(noScheme.statusCode, 401, 'a token without a scheme');
  t.equal(noScheme.headers['www-authenticate'], `Bearer ${RM}`);
  const query = await app.inject({ method: 'GET', url: `/api/external/me?access_token=${tokens.access_token}` });
  t.equal(query.statusCode, 401, 'never from the query string');
  const cookieOnly = await obtainTokens(app, { ...flow, scope: 'openid' });
  const withCookie = await app.inject({ method: 'GET', url: '/api/external/me', cookies: cookieOnly.jar });
  t.equal(withCookie.statusCode, 401, 'a cookie session alone is rejected');
});

t.test('expired, revoked, disabled-user, deleted-user and disabled-application tokens are 401', async (t) => {
  const expired = (await obtainTokens(app, { ...flow, scope: 'openid' })).tokens;
  await database.db
    .updateTable('access_tokens')
    .set({ expires_at: new Date(Date.now() - 1000) })
    .where('token_hash', '=', (await import('../../src/oauth/tokens.js')).hashToken(expired.access_token))
    .execute();
  t.equal((await me(`Bearer ${expired.access_token}`)).statusCode, 401, 'expired');

  const revoked = (await obtainTokens(app, { ...flow, scope: 'openid' })).tokens;
  await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: `client_id=${spa.clientId}&token=${revoked.access_token}`,
  });
  t.equal((await me(`Bearer ${revoked.access_token}`)).statusCode, 401, 'revoked');

  await app.services.users.create(
    { email: 'gone@example.com', password: 'gone-password-1', emailVerified: true },
    actor,
  );
  const gone = (
    await obtainTokens(app, { ...flow, email: 'gone@example.com', password: 'gone-password-1', scope: 'openid' })
  ).tokens;
  await app.services.users.setDisabled('gone@example.com', true, actor);
  t.equal((await me(`Bearer ${gone.access_token}`)).statusCode, 401, 'disabled user');
  await app.services.users.remove('gone@example.com', actor);
  t.equal((await me(`Bearer ${gone.access_token}`)).statusCode, 401, 'deleted user');

  const temp = await app.services.applications.create({ clientName: 'Temp', redirectUris: [redirectUri] }, actor);
  const tt = (await obtainTokens(app, { ...flow, clientId: temp.clientId, scope: 'openid' })).tokens;
  t.equal((await me(`Bearer ${tt.access_token}`)).statusCode, 200);
  await app.services.applications.setEnabled(temp.clientId, false, actor);
  t.equal((await me(`Bearer ${tt.access_token}`)).statusCode, 401, 'disabled application');
});

t.test('a token whose user row vanished under it is 404 USER_NOT_FOUND', async (t) => {
  await app.services.users.create(
    { email: 'vanish@example.com', password: 'vanish-password-1', emailVerified: true },
    actor,
  );
  const { tokens } = await obtainTokens(app, {
    ...flow,
    email: 'vanish@example.com',
    password: 'vanish-password-1',
    scope: 'openid',
  });
  // Delete the user without the cascades (as a concurrent deletion would be seen mid-request).
  await database.db.transaction().execute(async (trx) => {
    await sql`set local session_replication_role = replica`.execute(trx);
    await sql`delete from users where email = 'vanish@example.com'`.execute(trx);
  });
  const res = await me(`Bearer ${tokens.access_token}`);
  t.equal(res.statusCode, 404);
  t.same(res.json(), { error: 'USER_NOT_FOUND' });
});

t.test('a valid token without openid is 403 FORBIDDEN listing the missing scopes', async (t) => {
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid email offline_access' });
  const narrowed = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token!,
      client_id: spa.clientId,
      scope: 'email',
    }).toString(),
  });
  const res = await me(`Bearer ${narrowed.json().access_token}`);
  t.equal(res.statusCode, 403);
  t.same(res.json(), { error: 'FORBIDDEN', missingScopes: ['openid'] });
  t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="openid", ${RM}`);
});

t.test('GET /api/public/oidc/scopes lists the scope table', async (t) => {
  const res = await app.inject({ method: 'GET', url: '/api/public/oidc/scopes' });
  t.equal(res.statusCode, 200);
  const items = res.json().items as Array<{
    name: string;
    claims: string[];
    label: string;
    consentDescription: string;
    developerDescription: string;
  }>;
  t.same(
    items.map((i) => i.name),
    ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  );
  t.same(items[0]!.claims, ['sub']);
  for (const i of items) t.ok(i.label && i.consentDescription && i.developerDescription, i.name);
  t.match(res.headers['cache-control'], /public/);
});

t.test('GET /api/public/applications/{clientId}: fields, omissions, redirect_uri, errors', async (t) => {
  const full = await app.inject({
    method: 'GET',
    url: `/api/public/applications/${spa.clientId}?redirect_uri=${encodeURIComponent('http://localhost:5173/cb')}`,
  });
  t.equal(full.statusCode, 200);
  t.same(full.json(), {
    clientId: spa.clientId,
    clientName: 'SPA',
    clientDescription: 'A single-page app',
    clientLogoUrl: 'https://spa.example.com/logo.png',
    postVerificationRedirectPath: '/welcome',
    postVerificationRedirectUri: 'http://localhost:5173/welcome',
  });
  t.match(full.headers['cache-control'], /public, max-age=60/);
  const noRedirect = await app.inject({ method: 'GET', url: `/api/public/applications/${spa.clientId}` });
  t.notOk('postVerificationRedirectUri' in noRedirect.json());
  const unregistered = await app.inject({
    method: 'GET',
    url: `/api/public/applications/${spa.clientId}?redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
  });
  t.notOk('postVerificationRedirectUri' in unregistered.json(), 'only for a registered redirect_uri');
  const minimal = await app.inject({ method: 'GET', url: `/api/public/applications/${other.clientId}` });
  t.same(minimal.json(), { clientId: other.clientId, clientName: 'Other' }, 'unset fields are omitted');
  const fromStatic = await app.inject({ method: 'GET', url: '/api/public/applications/static-spa' });
  t.same(fromStatic.json(), { clientId: 'static-spa', clientName: 'Static SPA' });

  for (const bad of ['has space', 'x'.repeat(129), 'bad%2Fslash', 'ünïcode']) {
    const res = await app.inject({ method: 'GET', url: `/api/public/applications/${encodeURIComponent(bad)}` });
    t.equal(res.statusCode, 400, bad);
    t.same(res.json(), { error: 'INVALID_CLIENT_ID' }, bad);
  }
  const missing = await app.inject({ method: 'GET', url: '/api/public/applications/does-not-exist' });
  t.equal(missing.statusCode, 404);
  t.same(missing.json(), { error: 'NOT_FOUND' });
  const temp = await app.services.applications.create(
    { clientName: 'Disabled', redirectUris: [redirectUri], enabled: false },
    actor,
  );
  const disabled = await app.inject({ method: 'GET', url: `/api/public/applications/${temp.clientId}` });
  t.equal(disabled.statusCode, 404);
  t.same(disabled.json(), { error: 'NOT_FOUND' });
});

t.test('public metadata answers 500 INTERNAL_ERROR when the lookup fails', async (t) => {
  const broken = await buildTestApp(t);
  await broken.database.close();
  const res = await broken.app.inject({ method: 'GET', url: '/api/public/applications/anything' });
  t.equal(res.statusCode, 500);
  t.same(res.json(), { error: 'INTERNAL_ERROR' });
  const ext = await broken.app.inject({
    method: 'GET',
    url: '/api/external/me',
    headers: { authorization: 'Bearer abcdefghijklmnop' },
  });
  t.equal(ext.statusCode, 500);
  t.same(ext.json(), { error: 'INTERNAL_ERROR' });
  t.notMatch(ext.body, /closed|PGlite|pool|stack/i, 'nothing internal leaks');
});

t.test('CORS preflight: 204 with the spec headers for a registered origin; none for others', async (t) => {
  for (const url of ['/api/auth/oauth2/token', '/api/auth/oauth2/revoke', '/api/external/me']) {
    const ok = await app.inject({
      method: 'OPTIONS',
      url,
      headers: {
        origin: 'https://spa.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    t.equal(ok.statusCode, 204, url);
    t.equal(ok.headers['access-control-allow-origin'], 'https://spa.example.com', url);
    t.equal(ok.headers['access-control-allow-methods'], 'GET, POST, OPTIONS');
    t.equal(ok.headers['access-control-allow-headers'], 'Authorization, Content-Type');
    t.equal(ok.headers['access-control-max-age'], '600');
    t.notOk(ok.headers['access-control-allow-credentials'], 'credentials are never allowed');
    t.match(ok.headers.vary, /Origin/);
    const staticOrigin = await app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin: 'https://static.example.com', 'access-control-request-method': 'POST' },
    });
    t.equal(
      staticOrigin.headers['access-control-allow-origin'],
      'https://static.example.com',
      'static applications count',
    );
    for (const origin of ['https://evil.example', undefined]) {
      const denied = await app.inject({
        method: 'OPTIONS',
        url,
        headers: { ...(origin && { origin }), 'access-control-request-method': 'POST' },
      });
      t.equal(denied.statusCode, 204);
      t.notOk(denied.headers['access-control-allow-origin'], `${url} from ${origin ?? 'no origin'}`);
      t.notOk(denied.headers['access-control-allow-methods']);
    }
  }
  const authorize = await app.inject({
    method: 'OPTIONS',
    url: '/api/auth/oauth2/authorize',
    headers: { origin: 'https://spa.example.com', 'access-control-request-method': 'GET' },
  });
  t.notOk(authorize.headers['access-control-allow-origin'], 'authorize has no CORS');
  const discovery = await app.inject({
    method: 'GET',
    url: '/api/auth/.well-known/openid-configuration',
    headers: { origin: 'https://anyone.example' },
  });
  t.equal(discovery.headers['access-control-allow-origin'], '*');
  const jwks = await app.inject({
    method: 'GET',
    url: '/api/auth/jwks',
    headers: { origin: 'https://anyone.example' },
  });
  t.equal(jwks.headers['access-control-allow-origin'], '*');
});

t.test('CORS actual requests: only the origins of the client the request speaks for', async (t) => {
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid' });
  const own = await me(`Bearer ${tokens.access_token}`, { origin: 'https://spa.example.com' });
  t.equal(own.headers['access-control-allow-origin'], 'https://spa.example.com');
  t.match(own.headers.vary, /Origin/);
  const otherApp = await me(`Bearer ${tokens.access_token}`, { origin: 'https://other.example.com' });
  t.equal(otherApp.statusCode, 200);
  t.notOk(otherApp.headers['access-control-allow-origin'], "another application's origin cannot read it");
  const unregistered = await me(`Bearer ${tokens.access_token}`, { origin: 'https://evil.example' });
  t.notOk(unregistered.headers['access-control-allow-origin']);

  const token = (origin: string, clientId: string) =>
    app.inject({
      method: 'POST',
      url: '/api/auth/oauth2/token',
      headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      payload:
        `grant_type=authorization_code&client_id=${clientId}&code=x&code_verifier=${'v'.repeat(43)}` +
        `&redirect_uri=${encodeURIComponent(redirectUri)}`,
    });
  t.equal(
    (await token('https://spa.example.com', spa.clientId)).headers['access-control-allow-origin'],
    'https://spa.example.com',
    'even the error is readable by the client',
  );
  t.notOk((await token('https://other.example.com', spa.clientId)).headers['access-control-allow-origin']);
  const unauthenticated = await me('Bearer unknown-token-value', { origin: 'https://spa.example.com' });
  t.equal(unauthenticated.statusCode, 401);
  t.equal(
    unauthenticated.headers['access-control-allow-origin'],
    'https://spa.example.com',
    'a registered origin may read a 401 that speaks for no client',
  );
});

t.test('the origin list is cached 60 s and dropped at once when an application changes', async (t) => {
  const probe = (origin: string) =>
    app.inject({
      method: 'OPTIONS',
      url: '/api/external/me',
      headers: { origin, 'access-control-request-method': 'GET' },
    });
  t.notOk((await probe('https://new.example.com')).headers['access-control-allow-origin']);
  // A change through the service: visible at once.
  await app.services.applications.update(
    other.clientId,
    { allowedWebOrigins: ['https://other.example.com', 'https://new.example.com'] },
    actor,
  );
  t.equal((await probe('https://new.example.com')).headers['access-control-allow-origin'], 'https://new.example.com');
});

t.test('the cached origin list expires after CORS_CACHE_TTL', async (t) => {
  const short = await buildTestApp(t, { database, env: { CORS_CACHE_TTL: '1' } });
  const probe = (origin: string) =>
    short.app.inject({
      method: 'OPTIONS',
      url: '/api/external/me',
      headers: { origin, 'access-control-request-method': 'GET' },
    });
  t.notOk((await probe('https://late.example.com')).headers['access-control-allow-origin']);
  // A change behind the services' back (a manual SQL edit): the cached list holds until it expires.
  await database.db
    .updateTable('applications')
    .set({ allowed_web_origins: JSON.stringify(['https://late.example.com']) })
    .where('client_id', '=', other.clientId)
    .execute();
  // On PostgreSQL, test files running at once in other schemas of the same database send notices on the
  // same channel, which drop this cache early (harmless: a cache only ever empties too soon).
  if (database.engine === 'pglite') {
    t.notOk((await probe('https://late.example.com')).headers['access-control-allow-origin'], 'cached');
  }
  await new Promise((r) => setTimeout(r, 1100));
  t.equal(
    (await probe('https://late.example.com')).headers['access-control-allow-origin'],
    'https://late.example.com',
    'expired and re-read',
  );
});

t.test(
  'another instance on the same PostgreSQL database drops its cache at once (LISTEN/NOTIFY)',
  { skip: database.engine === 'pglite' ? 'PGlite is one process: no other instance can share it' : false },
  async (t) => {
    const second = await buildTestApp(t, { database });
    await second.app.ready();
    await new Promise((r) => setTimeout(r, 300)); // its listener connects
    const probe = (origin: string) =>
      second.app.inject({
        method: 'OPTIONS',
        url: '/api/external/me',
        headers: { origin, 'access-control-request-method': 'GET' },
      });
    t.notOk((await probe('https://notified.example.com')).headers['access-control-allow-origin']);
    // The change goes through the first instance; the second one only hears the NOTIFY.
    await app.services.applications.update(
      other.clientId,
      { allowedWebOrigins: ['https://notified.example.com'] },
      actor,
    );
    let seen: string | undefined;
    for (let i = 0; i < 20 && !seen; i++) {
      await new Promise((r) => setTimeout(r, 50));
      seen = (await probe('https://notified.example.com')).headers['access-control-allow-origin'] as string | undefined;
    }
    t.equal(seen, 'https://notified.example.com', 'well before the 60 s expiry');
  },
);

t.test('a token sent two ways (header and query) is 401 UNAUTHORIZED without a lookup (RFC 6750 §2)', async (t) => {
  const { tokens } = await obtainTokens(app, { ...flow, scope: 'openid' });
  const header = `Bearer ${tokens.access_token}`;
  t.equal((await me(header)).statusCode, 200, 'the header alone works');
  const cases: Array<[string, { method: 'GET'; url: string; headers: Record<string, string> }]> = [
    [
      'header and query',
      {
        method: 'GET',
        url: `/api/external/me?access_token=${tokens.access_token}`,
        headers: { authorization: header },
      },
    ],
    [
      'header and an empty query parameter',
      { method: 'GET', url: '/api/external/me?access_token=', headers: { authorization: header } },
    ],
    [
      'header and another token in the query',
      { method: 'GET', url: '/api/external/me?access_token=other', headers: { authorization: header } },
    ],
    // (A form body is never read on GET; a POST route here would be covered by the same hook, which
    // runs at preValidation and so sees the body: UserInfo's POST proves that path.)
  ];
  for (const [label, request] of cases) {
    const res = await app.inject(request);
    t.equal(res.statusCode, 401, label);
    t.same(res.json(), { error: 'UNAUTHORIZED' }, label);
    t.match(
      res.headers['www-authenticate'],
      /^Bearer error="invalid_request"/,
      `${label}: a Bearer challenge naming invalid_request`,
    );
    t.equal(res.headers['cache-control'], 'no-store', label);
  }
  // Refused before the token is looked up: an app whose database is gone answers 401, not 500.
  const broken = await buildTestApp(t);
  await broken.database.close();
  const unlooked = await broken.app.inject({
    method: 'GET',
    url: `/api/external/me?access_token=${tokens.access_token}`,
    headers: { authorization: header },
  });
  t.equal(unlooked.statusCode, 401, 'no lookup: the closed database is never reached');
  t.same(unlooked.json(), { error: 'UNAUTHORIZED' });
  const query = await app.inject({ method: 'GET', url: `/api/external/me?access_token=${tokens.access_token}` });
  t.equal(query.statusCode, 401, 'the query alone is no token, as before');
  t.equal(query.headers['www-authenticate'], `Bearer ${RM}`);
});

t.test(
  'GET /api/public/applications/{clientId}: a long or badly escaped id is 400 INVALID_CLIENT_ID, ' +
    'never a router error (414/400)',
  async (t) => {
    for (const [what, id] of [
      ['129 characters', 'a'.repeat(129)],
      ['600 characters', 'a'.repeat(600)],
      ['5,000 characters', 'a'.repeat(5000)],
      ['a malformed escape', '%ZZ'],
      ['a truncated UTF-8 escape', '%E0%A4%A'],
    ] as const) {
      const res = await app.inject({ method: 'GET', url: `/api/public/applications/${id}` });
      t.equal(res.statusCode, 400, what);
      t.same(res.json(), { error: 'INVALID_CLIENT_ID' }, what);
    }
    const longRedirect = await app.inject({
      method: 'GET',
      url:
        `/api/public/applications/${spa.clientId}?redirect_uri=` +
        `${encodeURIComponent(`${redirectUri}?${'a'.repeat(3000)}`)}`,
    });
    t.equal(longRedirect.statusCode, 200, 'a long redirect_uri simply matches no registered URI');
    t.notOk(longRedirect.json().postVerificationRedirectUri);
  },
);
