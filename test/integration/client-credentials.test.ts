// grant_type=client_credentials (RFC 6749 §4.4, issue 33): confidential clients whose grant types include it get an
// opaque access token of their own, scoped within their allowed scopes, with no refresh token and no ID token; the
// token has no user, so UserInfo and /api/external/me answer it as they answer an unknown token (401); revocation
// (RFC 7009) ends it, only at the request of its own client.
import t, { type Test } from 'tap';
import { sql } from 'kysely';
import type { LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { hashToken } from '../../src/oauth/tokens.js';

const { app, database, config } = await buildTestApp(t, { env: { METRICS: 'on', BEARER_CACHE_SECONDS: '0' } });
const redirectUri = 'https://server.example.com/cb';
const ctx = { actor: 'test' };

const service = await app.services.applications.create(
  {
    clientName: 'Batch job',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'client_secret_basic',
    grantTypes: ['client_credentials'],
    allowedScopes: ['openid', 'profile', 'offline_access', 'permissions'],
  },
  ctx,
);
const postService = await app.services.applications.create(
  {
    clientName: 'Post job',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'client_secret_post',
    grantTypes: ['authorization_code', 'client_credentials'],
  },
  ctx,
);
const webApp = await app.services.applications.create(
  { clientName: 'Server RP', redirectUris: [redirectUri], tokenEndpointAuthMethod: 'client_secret_basic' },
  ctx,
);
const spa = await app.services.applications.create({ clientName: 'SPA', redirectUris: [redirectUri] }, ctx);

const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;
const serviceAuth = { authorization: basic(service.clientId, service.clientSecret!) };

const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/auth/oauth2/${path}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(form).toString(),
  });
const clientCredentials = (form: Record<string, string> = {}, headers: Record<string, string> = serviceAuth) =>
  post('token', { grant_type: 'client_credentials', ...form }, headers);

function refused(
  t: Test,
  res: LightMyRequestResponse,
  expected: { status: number; error: string; description: string; challenge?: string },
) {
  t.equal(res.statusCode, expected.status);
  t.same(res.json(), { error: expected.error, error_description: expected.description });
  t.equal(res.headers['www-authenticate'], expected.challenge);
  t.equal(res.headers['cache-control'], 'no-store');
}

const rowOf = async (token: string) =>
  (
    await sql<{
      client_id: string;
      scope: string;
      expires_at: Date;
      revoked_at: Date | null;
    }>`select client_id, scope, expires_at, revoked_at from client_access_tokens where token_hash = ${hashToken(
      token,
    )}`.execute(database.db)
  ).rows[0];

t.test('a confidential client with the grant gets an access token of its own, and nothing else', async (t) => {
  const before = Date.now();
  const res = await clientCredentials({ scope: 'permissions profile' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /^application\/json/);
  t.equal(res.headers['cache-control'], 'no-store');
  t.equal(res.headers.pragma, 'no-cache');
  const body = res.json();
  t.same(Object.keys(body).sort(), ['access_token', 'expires_in', 'scope', 'token_type'], 'no id_token, no refresh');
  t.match(body.access_token, /^[A-Za-z0-9_-]{43}$/, 'opaque, 256 bits');
  t.equal(body.token_type, 'Bearer');
  t.equal(body.expires_in, config.ttl.accessToken, 'ACCESS_TOKEN_TTL');
  t.equal(body.scope, 'profile permissions', 'the scope table order');

  const row = await rowOf(body.access_token);
  t.ok(row, 'stored by its hash only');
  t.equal(row!.client_id, service.clientId);
  t.equal(row!.scope, 'profile permissions');
  const expires = new Date(row!.expires_at).getTime();
  t.ok(
    expires >= before + config.ttl.accessToken * 1000 - 2000 && expires <= Date.now() + config.ttl.accessToken * 1000,
  );
  const stored = await sql<{ n: number }>`select count(*)::int as n from client_access_tokens where token_hash = ${
    body.access_token
  }`.execute(database.db);
  t.equal(stored.rows[0]!.n, 0, 'the token itself is never stored');
  const inBearerStore = await sql<{ n: number }>`select count(*)::int as n from access_tokens where client_id = ${
    service.clientId
  }`.execute(database.db);
  t.equal(inBearerStore.rows[0]!.n, 0, 'nothing in access_tokens, where the bearer lookup reads');

  const issued = (await listAuditEvents(database.db, { type: 'token.issued', clientId: service.clientId })).at(-1);
  t.ok(issued, 'token.issued recorded');
  t.equal(issued!.user_id, null, 'no user');
  t.same(issued!.detail, { grantType: 'client_credentials', scope: 'profile permissions', refresh: false });
  t.notMatch(JSON.stringify(issued), body.access_token, 'the audit trail never holds the token');

  const metrics = await app.inject({ method: 'GET', url: '/metrics' });
  t.match(metrics.body, /idp_tokens_issued_total\{grant_type="client_credentials"\} [1-9]/, 'counted as a grant');
});

t.test('no scope asked: no scope granted, and the answer leaves scope out', async (t) => {
  for (const form of [{}, { scope: '' }, { scope: '  ' }] as Record<string, string>[]) {
    const res = await clientCredentials(form);
    t.equal(res.statusCode, 200, JSON.stringify(form));
    t.notOk('scope' in res.json(), 'no scope member');
    t.equal((await rowOf(res.json().access_token))!.scope, '');
  }
});

t.test('client_secret_post works too; a client_id in the body must match', async (t) => {
  const res = await clientCredentials(
    { client_id: postService.clientId, client_secret: postService.clientSecret!, scope: 'profile' },
    {},
  );
  t.equal(res.statusCode, 200);
  t.equal(res.json().scope, 'profile');
  refused(t, await clientCredentials({ client_id: postService.clientId }), {
    status: 400,
    error: 'invalid_request',
    description: 'client_id does not match the client authentication',
  });
});

t.test('scopes: nothing beyond the allowed ones; openid and offline_access need a user', async (t) => {
  refused(t, await clientCredentials({ scope: 'profile email' }), {
    status: 400,
    error: 'invalid_scope',
    description: 'scope contains a value this client may not request',
  });
  refused(t, await clientCredentials({ scope: 'admin' }), {
    status: 400,
    error: 'invalid_scope',
    description: 'scope contains a value that is not known here',
  });
  for (const scope of ['openid', 'offline_access', 'profile openid']) {
    refused(t, await clientCredentials({ scope }), {
      status: 400,
      error: 'invalid_scope',
      description: 'openid and offline_access need a user; a client_credentials token has none',
    });
  }
  refused(t, await clientCredentials({ scope: 'profile\tpermissions' }), {
    status: 400,
    error: 'invalid_scope',
    description: 'scope contains characters that RFC 6749 section 3.3 does not allow',
  });
  const rows = await sql<{
    n: number;
  }>`select count(*)::int as n from client_access_tokens where scope like ${'%email%'}`.execute(database.db);
  t.equal(rows.rows[0]!.n, 0, 'no refused request left a token');
});

t.test('a client without the grant, or a public one, is unauthorized_client', async (t) => {
  refused(t, await clientCredentials({}, { authorization: basic(webApp.clientId, webApp.clientSecret!) }), {
    status: 400,
    error: 'unauthorized_client',
    description: 'this client may not use this grant type',
  });
  refused(t, await clientCredentials({ client_id: spa.clientId }, {}), {
    status: 400,
    error: 'unauthorized_client',
    description: 'this client may not use this grant type',
  });
});

t.test('client authentication comes first: a wrong or missing secret is invalid_client', async (t) => {
  refused(t, await clientCredentials({}, { authorization: basic(service.clientId, `${service.clientSecret}x`) }), {
    status: 401,
    error: 'invalid_client',
    description: 'client authentication failed',
    challenge: 'Basic realm="token"',
  });
  refused(t, await clientCredentials({ client_id: service.clientId }, {}), {
    status: 401,
    error: 'invalid_client',
    description: 'this client authenticates with client_secret_basic',
  });
});

t.test('a disabled application gets no token', async (t) => {
  const job = await app.services.applications.create(
    {
      clientName: 'Disabled job',
      redirectUris: [redirectUri],
      tokenEndpointAuthMethod: 'client_secret_post',
      grantTypes: ['client_credentials'],
    },
    ctx,
  );
  const form = { client_id: job.clientId, client_secret: job.clientSecret! };
  const issued = await clientCredentials(form, {});
  t.equal(issued.statusCode, 200);
  await app.services.applications.update(job.clientId, { enabled: false }, ctx);
  refused(t, await clientCredentials(form, {}), {
    status: 401,
    error: 'invalid_client',
    description: 'this application is disabled',
  });
  // After Basic authentication the 401 names the scheme (RFC 6749 §5.2).
  await app.services.applications.update(service.clientId, { enabled: false }, ctx);
  try {
    refused(t, await clientCredentials(), {
      status: 401,
      error: 'invalid_client',
      description: 'this application is disabled',
      challenge: 'Basic realm="token"',
    });
  } finally {
    await app.services.applications.update(service.clientId, { enabled: true }, ctx);
  }
});

t.test('UserInfo and /api/external/me answer a client token exactly as an unknown token: 401', async (t) => {
  const token = (await clientCredentials({ scope: 'profile permissions' })).json().access_token as string;
  const unknown = 'u'.repeat(43);
  const answers = async (path: string, method: 'GET' | 'POST', bearerToken: string) => {
    const res = await app.inject({ method, url: path, headers: { authorization: `Bearer ${bearerToken}` } });
    return {
      status: res.statusCode,
      body: res.json(),
      challenge: res.headers['www-authenticate'],
      cache: res.headers['cache-control'],
    };
  };
  for (const [path, method] of [
    ['/api/auth/oauth2/userinfo', 'GET'],
    ['/api/auth/oauth2/userinfo', 'POST'],
    ['/api/external/me', 'GET'],
  ] as const) {
    const answer = await answers(path, method, token);
    t.same(answer, await answers(path, method, unknown), `${method} ${path}: the same answer as an unknown token`);
    t.equal(answer.status, 401, `${method} ${path}`);
    t.same(answer.body, { error: 'UNAUTHORIZED' });
    // /api/external/* also names its protected-resource metadata (RFC 9728 §5.1).
    const metadata = ', resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/api/external"';
    t.equal(answer.challenge, `Bearer error="invalid_token"${path === '/api/external/me' ? metadata : ''}`);
  }
});

t.test('revocation (RFC 7009): by its own client only', async (t) => {
  const token = (await clientCredentials({ scope: 'profile' })).json().access_token as string;
  const byOther = await post('revoke', {
    token,
    token_type_hint: 'access_token',
    client_id: postService.clientId,
    client_secret: postService.clientSecret!,
  });
  t.equal(byOther.statusCode, 200, 'answered like any other (nothing to learn)');
  t.equal((await rowOf(token))!.revoked_at, null, 'another client cannot revoke it');
  const introspect = () => post('introspect', { token }, serviceAuth);
  t.equal((await introspect()).json().active, true);

  for (const hint of ['access_token', 'refresh_token']) {
    const again = (await clientCredentials()).json().access_token as string;
    const res = await post('revoke', { token: again, token_type_hint: hint }, serviceAuth);
    t.equal(res.statusCode, 200, `hint ${hint}`);
    t.equal(res.body, '');
    t.equal(res.headers['cache-control'], 'no-store');
    t.not((await rowOf(again))!.revoked_at, null, `hint ${hint}: revoked`);
  }
  const res = await post('revoke', { token }, serviceAuth);
  t.equal(res.statusCode, 200);
  t.not((await rowOf(token))!.revoked_at, null);
  t.same((await introspect()).json(), { active: false });
  const revoked = (await listAuditEvents(database.db, { type: 'token.revoked', clientId: service.clientId })).at(-1);
  t.same(revoked?.detail, { kind: 'access_token', grantType: 'client_credentials' });
  t.equal(revoked?.user_id, null);
});
