import t from 'tap';
import type { InjectOptions as Inject } from 'fastify';
import { sql } from 'kysely';
import { adminHeaders, ADMIN_TOKEN, buildTestApp } from '../helpers/app.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { parseStaticApplications, staticApplicationsFrom } from '../../src/static-applications.js';

/** What every application is unless it is made confidential: a public PKCE client (issue 33). */
const PUBLIC_CLIENT = {
  tokenEndpointAuthMethod: 'none',
  clientType: 'public',
  pkce: 'required',
  grantTypes: ['authorization_code', 'refresh_token'],
  jwks: null,
  jwksUri: null,
  requireMfa: false,
};

// One app (and one database) for the whole file; every subtest makes the data it needs under its own ids.
const { app, database } = await buildTestApp(t);

const BASE = '/api/admin/applications';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const DEFAULT_SCOPES = ['openid', 'profile', 'email', 'offline_access'];
const HTTP_NOT_LOOPBACK = 'http is allowed only for loopback hosts (localhost, 127.0.0.1, [::1]); use https';
const NOT_AN_ORIGIN = (origin: string) =>
  `must be a bare origin with no path, trailing slash, default port or upper case (did you mean ${origin}?)`;
const BAD_PATH = 'must be a path starting with a single "/" (for example /welcome)';

let counter = 0;
/** A client id of its own for each caller: the subtests share one database. */
const uniqueId = (label: string) => `${label}-${process.pid}-${++counter}`;

const admin = (options: Inject) => app.inject({ ...options, headers: { ...adminHeaders, ...options.headers } });

async function createApp(body: Record<string, unknown> = {}) {
  const res = await admin({
    method: 'POST',
    url: BASE,
    payload: { clientName: 'Test app', redirectUris: ['https://app.example.com/callback'], ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`);
  return res.json();
}

async function countRows(table: 'applications' | 'audit_events') {
  const row = await database.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Every application of the list, page by page, asserting each page holds at most `limit` items. */
async function walk(
  tt: Pick<typeof t, 'equal' | 'ok' | 'type'>,
  query: Record<string, string>,
  limit: number,
  target = app,
) {
  const seen: Array<{ clientId: string; source: string }> = [];
  let cursor: string | undefined;
  for (let page = 0; page < 100; page++) {
    const params = new URLSearchParams({ ...query, limit: String(limit), ...(cursor ? { cursor } : {}) });
    const res = await target.inject({ method: 'GET', url: `${BASE}?${params}`, headers: adminHeaders });
    tt.equal(res.statusCode, 200, `page ${page} is 200`);
    const body = res.json();
    tt.ok(body.items.length <= limit, `page ${page} holds at most ${limit} items`);
    seen.push(...body.items);
    if (body.nextCursor === undefined) return seen;
    tt.type(body.nextCursor, 'string');
    cursor = body.nextCursor;
  }
  throw new Error('the list never ended');
}

t.test('authentication', async (t) => {
  t.test('no Authorization header is 401 with a Bearer challenge', async (t) => {
    const res = await app.inject({ method: 'GET', url: BASE });
    t.equal(res.statusCode, 401);
    t.same(res.json(), { error: 'UNAUTHORIZED', message: 'Send Authorization: Bearer <ADMIN_API_TOKEN>' });
    t.equal(res.headers['www-authenticate'], 'Bearer realm="admin"');
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('a wrong token is 401 invalid_token', async (t) => {
    const res = await app.inject({ method: 'GET', url: BASE, headers: { authorization: 'Bearer not-the-token' } });
    t.equal(res.statusCode, 401);
    t.same(res.json(), { error: 'UNAUTHORIZED', message: 'The admin API token is not valid' });
    t.equal(res.headers['www-authenticate'], 'Bearer realm="admin", error="invalid_token"');
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('a token that is only a prefix or an extension of the right one is rejected', async (t) => {
    for (const token of [ADMIN_TOKEN.slice(0, -1), `${ADMIN_TOKEN}x`]) {
      const res = await app.inject({ method: 'GET', url: BASE, headers: { authorization: `Bearer ${token}` } });
      t.equal(res.statusCode, 401);
      t.same(res.json(), { error: 'UNAUTHORIZED', message: 'The admin API token is not valid' });
    }
  });

  t.test('the Basic scheme is rejected even when it carries the right token', async (t) => {
    for (const credentials of [ADMIN_TOKEN, Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')]) {
      const res = await app.inject({ method: 'GET', url: BASE, headers: { authorization: `Basic ${credentials}` } });
      t.equal(res.statusCode, 401);
      t.same(res.json(), { error: 'UNAUTHORIZED', message: 'The admin API token is not valid' });
      t.equal(res.headers['www-authenticate'], 'Bearer realm="admin", error="invalid_token"');
    }
  });

  t.test('a bare token without a scheme is rejected', async (t) => {
    const res = await app.inject({ method: 'GET', url: BASE, headers: { authorization: ADMIN_TOKEN } });
    t.equal(res.statusCode, 401);
    t.equal(res.json().error, 'UNAUTHORIZED');
  });

  t.test('the scheme name is case-insensitive: lowercase bearer with the right token works', async (t) => {
    const res = await app.inject({ method: 'GET', url: BASE, headers: { authorization: `bearer ${ADMIN_TOKEN}` } });
    t.equal(res.statusCode, 200);
    t.equal(res.headers['cache-control'], 'no-store');
    t.type(res.json().items, Array);
  });

  t.test('every application route requires the token, and a refused request changes nothing', async (t) => {
    const existing = await createApp({ clientId: uniqueId('auth-guard') });
    const id = existing.clientId;
    const routes: Inject[] = [
      { method: 'GET', url: BASE },
      { method: 'POST', url: BASE, payload: { clientName: 'Sneaky', redirectUris: ['https://evil.example.com/cb'] } },
      { method: 'GET', url: `${BASE}/${id}` },
      { method: 'PATCH', url: `${BASE}/${id}`, payload: { clientName: 'Hijacked' } },
      { method: 'POST', url: `${BASE}/${id}/disable` },
      { method: 'POST', url: `${BASE}/${id}/enable` },
      { method: 'DELETE', url: `${BASE}/${id}` },
    ];
    const before = await countRows('applications');
    for (const route of routes) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
        const res = await app.inject({ ...route, headers });
        t.equal(
          res.statusCode,
          401,
          `${route.method} ${route.url} ${Object.keys(headers).length ? 'wrong token' : 'no token'}`,
        );
        t.equal(res.json().error, 'UNAUTHORIZED');
        t.match(res.headers['www-authenticate'], /^Bearer realm="admin"/);
      }
    }
    t.equal(await countRows('applications'), before);
    const after = await admin({ method: 'GET', url: `${BASE}/${id}` });
    t.same(after.json(), existing);
  });

  t.test('when ADMIN_API_TOKEN is unset (empty) the admin routes do not exist', async (t) => {
    const { app: closed } = await buildTestApp(t, { env: { ADMIN_API_TOKEN: '' }, database });
    for (const [method, url] of [
      ['GET', BASE],
      ['POST', BASE],
      ['GET', `${BASE}/some-app`],
      ['DELETE', `${BASE}/some-app`],
    ] as const) {
      const res = await closed.inject({ method, url, headers: adminHeaders });
      t.equal(res.statusCode, 404, `${method} ${url}`);
      t.same(res.json(), { error: 'NOT_FOUND', message: `No route ${method} ${url}` });
      t.notOk(res.headers['www-authenticate']);
    }
  });
});

t.test('creating applications', async (t) => {
  t.test('without a clientId generates a URL-safe 32-character one and applies the defaults', async (t) => {
    const before = Date.now();
    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: { clientName: 'Generated', redirectUris: ['https://gen.example.com/cb'] },
    });
    t.equal(res.statusCode, 201);
    t.equal(res.headers['cache-control'], 'no-store');
    const body = res.json();
    t.type(body.clientId, 'string');
    t.equal(body.clientId.length, 32);
    t.match(body.clientId, /^[A-Za-z0-9_-]+$/);
    t.same(body, {
      clientId: body.clientId,
      clientName: 'Generated',
      clientDescription: null,
      clientLogoUrl: null,
      redirectUris: ['https://gen.example.com/cb'],
      allowedWebOrigins: [],
      postLogoutRedirectUris: [],
      postVerificationRedirectPath: null,
      allowedScopes: DEFAULT_SCOPES,
      enabled: true,
      ...PUBLIC_CLIENT,
      registration: 'operator',
      source: 'database',
      createdAt: body.createdAt,
      updatedAt: body.updatedAt,
    });
    t.match(body.createdAt, ISO);
    t.equal(body.updatedAt, body.createdAt);
    t.ok(Date.parse(body.createdAt) >= before - 5000 && Date.parse(body.createdAt) <= Date.now() + 5000);
    t.equal(res.headers.location, `${BASE}/${body.clientId}`);
  });

  t.test('generated client ids differ from one application to the next', async (t) => {
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) ids.add((await createApp({ clientName: `Gen ${i}` })).clientId);
    t.equal(ids.size, 5);
  });

  t.test('with a given clientId and every field keeps them as written', async (t) => {
    const clientId = uniqueId('My.App_~x');
    const payload = {
      clientId,
      clientName: 'Full app',
      clientDescription: 'Does everything',
      clientLogoUrl: 'https://cdn.example.com/logo.png',
      redirectUris: ['https://full.example.com/cb', 'https://full.example.com/cb2?x=1'],
      allowedWebOrigins: ['https://full.example.com', 'https://other.example.com:8443'],
      postLogoutRedirectUris: ['https://full.example.com/signed-out'],
      postVerificationRedirectPath: '/welcome?from=verify',
      allowedScopes: ['openid', 'permissions'],
      enabled: false,
    };
    const res = await admin({ method: 'POST', url: BASE, payload });
    t.equal(res.statusCode, 201);
    const body = res.json();
    t.same(body, {
      ...payload,
      ...PUBLIC_CLIENT,
      registration: 'operator',
      source: 'database',
      createdAt: body.createdAt,
      updatedAt: body.updatedAt,
    });
    t.match(body.createdAt, ISO);
    t.equal(res.headers.location, `${BASE}/${clientId}`);

    const fetched = await admin({ method: 'GET', url: res.headers.location as string });
    t.equal(fetched.statusCode, 200);
    t.same(fetched.json(), body);
  });

  t.test('the Location of a created application is its URL even when the request had a query string', async (t) => {
    const res = await admin({
      method: 'POST',
      url: `${BASE}?trace=1`,
      payload: { clientName: 'Query', redirectUris: ['https://q.example.com/cb'] },
    });
    t.equal(res.statusCode, 201);
    t.equal(res.headers.location, `${BASE}/${res.json().clientId}`);
  });

  t.test('loopback http redirect URIs and origins are accepted', async (t) => {
    const redirectUris = [
      'http://localhost/cb',
      'http://127.0.0.1:8080/callback',
      'http://[::1]/cb',
      'http://app.localhost:3000/cb',
    ];
    const allowedWebOrigins = ['http://localhost:3000', 'http://127.0.0.1:8080', 'http://[::1]:5173'];
    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: { clientName: 'Local dev', redirectUris, allowedWebOrigins },
    });
    t.equal(res.statusCode, 201, res.body);
    t.same(res.json().redirectUris, redirectUris);
    t.same(res.json().allowedWebOrigins, allowedWebOrigins);
  });

  t.test('a duplicate clientId is 409 CLIENT_ID_TAKEN and changes nothing', async (t) => {
    const clientId = uniqueId('dup');
    const first = await createApp({ clientId, clientName: 'First' });
    const apps = await countRows('applications');
    const events = await countRows('audit_events');

    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: { clientId, clientName: 'Second', redirectUris: ['https://second.example.com/cb'] },
    });
    t.equal(res.statusCode, 409);
    t.same(res.json(), { error: 'CLIENT_ID_TAKEN', message: `Client id ${clientId} is already taken` });
    t.equal(res.headers['cache-control'], 'no-store');
    t.notOk(res.headers.location);

    t.equal(await countRows('applications'), apps, 'no application row added');
    t.equal(await countRows('audit_events'), events, 'no audit event added');
    t.same((await admin({ method: 'GET', url: `${BASE}/${clientId}` })).json(), first, 'the first one is untouched');
  });
});

t.test('invalid application input is 400 VALIDATION_ERROR naming the field', async (t) => {
  const valid = { clientName: 'Valid', redirectUris: ['https://valid.example.com/cb'] };
  const cases: Array<{
    name: string;
    payload: Record<string, unknown>;
    details: Array<{ field: string; message: string }>;
  }> = [
    {
      name: 'an unknown field',
      payload: { ...valid, secret: 'x' },
      details: [{ field: 'secret', message: 'is not a known field' }],
    },
    {
      name: 'a missing clientName',
      payload: { redirectUris: valid.redirectUris },
      details: [{ field: 'clientName', message: 'is required' }],
    },
    {
      name: 'an empty clientName',
      payload: { ...valid, clientName: '' },
      details: [{ field: 'clientName', message: 'must not have fewer than 1 characters' }],
    },
    {
      name: 'missing redirectUris',
      payload: { clientName: 'x' },
      details: [{ field: 'redirectUris', message: 'is required' }],
    },
    {
      name: 'empty redirectUris',
      payload: { ...valid, redirectUris: [] },
      details: [{ field: 'redirectUris', message: 'must not have fewer than 1 items' }],
    },
    {
      name: 'an http redirect URI on a non-loopback host',
      payload: { ...valid, redirectUris: ['https://ok.example.com/cb', 'http://app.example.com/cb'] },
      details: [{ field: 'redirectUris.1', message: HTTP_NOT_LOOPBACK }],
    },
    {
      name: 'a redirect URI with a fragment',
      payload: { ...valid, redirectUris: ['https://app.example.com/cb#frag'] },
      details: [{ field: 'redirectUris.0', message: 'must not contain a fragment (RFC 6749 §3.1.2)' }],
    },
    {
      name: 'a relative redirect URI',
      payload: { ...valid, redirectUris: ['/callback'] },
      details: [{ field: 'redirectUris.0', message: 'must be an absolute URL' }],
    },
    {
      name: 'a redirect URI with another scheme',
      payload: { ...valid, redirectUris: ['javascript:alert(1)'] },
      details: [
        {
          field: 'redirectUris.0',
          message: 'scheme javascript: is not allowed; use https (or http on a loopback host)',
        },
      ],
    },
    {
      name: 'a redirect URI with credentials',
      payload: { ...valid, redirectUris: ['https://user:pass@app.example.com/cb'] },
      details: [{ field: 'redirectUris.0', message: 'must not contain credentials' }],
    },
    {
      name: 'duplicate redirect URIs',
      payload: { ...valid, redirectUris: ['https://app.example.com/cb', 'https://app.example.com/cb'] },
      details: [{ field: 'redirectUris', message: 'must not contain duplicates' }],
    },
    {
      name: 'a web origin with a path',
      payload: { ...valid, allowedWebOrigins: ['https://app.example.com/app'] },
      details: [{ field: 'allowedWebOrigins.0', message: NOT_AN_ORIGIN('https://app.example.com') }],
    },
    {
      name: 'a web origin with a trailing slash',
      payload: { ...valid, allowedWebOrigins: ['https://app.example.com', 'https://app.example.com/'] },
      details: [{ field: 'allowedWebOrigins.1', message: NOT_AN_ORIGIN('https://app.example.com') }],
    },
    {
      name: 'a web origin in upper case',
      payload: { ...valid, allowedWebOrigins: ['https://App.Example.com'] },
      details: [{ field: 'allowedWebOrigins.0', message: NOT_AN_ORIGIN('https://app.example.com') }],
    },
    {
      name: 'a web origin that is http on a public host',
      payload: { ...valid, allowedWebOrigins: ['http://app.example.com'] },
      details: [{ field: 'allowedWebOrigins.0', message: HTTP_NOT_LOOPBACK }],
    },
    {
      name: 'an unknown scope',
      payload: { ...valid, allowedScopes: ['openid', 'admin'] },
      details: [{ field: 'allowedScopes.1', message: 'must be equal to one of the allowed values' }],
    },
    {
      name: 'allowedScopes without openid',
      payload: { ...valid, allowedScopes: ['profile', 'email'] },
      details: [{ field: 'allowedScopes', message: 'must include openid (this is an OpenID Connect provider)' }],
    },
    {
      name: 'a postVerificationRedirectPath without a leading slash',
      payload: { ...valid, postVerificationRedirectPath: 'welcome' },
      details: [{ field: 'postVerificationRedirectPath', message: BAD_PATH }],
    },
    {
      name: 'a protocol-relative postVerificationRedirectPath',
      payload: { ...valid, postVerificationRedirectPath: '//evil.com' },
      details: [{ field: 'postVerificationRedirectPath', message: BAD_PATH }],
    },
    {
      name: 'a postVerificationRedirectPath that is a full URL',
      payload: { ...valid, postVerificationRedirectPath: 'https://evil.com/' },
      details: [{ field: 'postVerificationRedirectPath', message: BAD_PATH }],
    },
    {
      name: 'a logo URL that is not https',
      payload: { ...valid, clientLogoUrl: 'http://cdn.example.com/logo.png' },
      details: [{ field: 'clientLogoUrl', message: HTTP_NOT_LOOPBACK }],
    },
    {
      name: 'a logo URL that is not a URL',
      payload: { ...valid, clientLogoUrl: 'logo.png' },
      details: [{ field: 'clientLogoUrl', message: 'must be an absolute URL' }],
    },
    {
      name: 'a clientId with characters outside the allowed set',
      payload: { ...valid, clientId: 'bad id/with?chars' },
      details: [{ field: 'clientId', message: 'must match pattern "^[A-Za-z0-9._~-]{1,128}$"' }],
    },
    {
      name: 'a clientId longer than 128 characters',
      payload: { ...valid, clientId: 'a'.repeat(129) },
      details: [{ field: 'clientId', message: 'must match pattern "^[A-Za-z0-9._~-]{1,128}$"' }],
    },
    {
      name: 'the client id "demo", reserved for the built-in demo (issue 31, 7(e))',
      payload: { ...valid, clientId: 'demo' },
      details: [
        {
          field: 'clientId',
          message: '"demo" is reserved for the built-in demo application (DEMO); choose another client id',
        },
      ],
    },
    {
      name: 'a clientName of the wrong type',
      payload: { ...valid, clientName: 42 },
      details: [{ field: 'clientName', message: 'must be string' }],
    },
    {
      name: 'enabled that is not a boolean',
      payload: { ...valid, enabled: 'yes' },
      details: [{ field: 'enabled', message: 'must be boolean' }],
    },
  ];

  for (const c of cases) {
    t.test(`rejects ${c.name}`, async (t) => {
      const before = await countRows('applications');
      const res = await admin({ method: 'POST', url: BASE, payload: c.payload });
      t.equal(res.statusCode, 400);
      t.same(res.json(), {
        error: 'VALIDATION_ERROR',
        message:
          c.details.length === 1
            ? `${c.details[0]!.field}: ${c.details[0]!.message}`
            : `${c.details.length} fields are invalid`,
        details: c.details,
      });
      t.equal(res.headers['cache-control'], 'no-store');
      t.equal(await countRows('applications'), before, 'nothing was stored');
    });
  }

  t.test('reports every problem at once', async (t) => {
    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: {
        ...valid,
        redirectUris: ['http://app.example.com/cb'],
        allowedScopes: ['email'],
        postVerificationRedirectPath: '//evil.com',
      },
    });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: '3 fields are invalid',
      details: [
        { field: 'redirectUris.0', message: HTTP_NOT_LOOPBACK },
        { field: 'postVerificationRedirectPath', message: BAD_PATH },
        { field: 'allowedScopes', message: 'must include openid (this is an OpenID Connect provider)' },
      ],
    });
  });

  t.test('a malformed JSON body is 400 INVALID_JSON', async (t) => {
    const res = await admin({
      method: 'POST',
      url: BASE,
      headers: { 'content-type': 'application/json' },
      payload: '{"clientName": "x", "redirectUris": [',
    });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'INVALID_JSON',
      message: "Body is not valid JSON but content-type is set to 'application/json'",
    });
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('a body that is a JSON array rather than an object is 400', async (t) => {
    const res = await admin({ method: 'POST', url: BASE, payload: [valid] });
    t.equal(res.statusCode, 400);
    t.equal(res.json().error, 'VALIDATION_ERROR');
  });

  t.test('a body larger than 16 KiB is 413 PAYLOAD_TOO_LARGE', async (t) => {
    const before = await countRows('applications');
    const res = await admin({
      method: 'POST',
      url: BASE,
      payload: { ...valid, clientDescription: 'x'.repeat(16 * 1024) },
    });
    t.equal(res.statusCode, 413);
    t.same(res.json(), { error: 'PAYLOAD_TOO_LARGE', message: 'The body is larger than 16384 bytes' });
    t.equal(await countRows('applications'), before);
  });

  t.test('a body just under 16 KiB is accepted', async (t) => {
    const redirectUris = Array.from({ length: 7 }, (_, i) => `https://big.example.com/cb/${i}/${'x'.repeat(2000)}`);
    const payload = { ...valid, redirectUris, clientDescription: 'd'.repeat(1500) };
    const size = Buffer.byteLength(JSON.stringify(payload));
    t.ok(size > 14 * 1024 && size < 16 * 1024, `the body is ${size} bytes`);
    const res = await admin({ method: 'POST', url: BASE, payload });
    t.equal(res.statusCode, 201);
    t.same(res.json().redirectUris, redirectUris);
    t.equal(res.json().clientDescription, payload.clientDescription);
  });

  t.test('a body of an unsupported media type is 415 UNSUPPORTED_MEDIA_TYPE', async (t) => {
    const before = await countRows('applications');
    const res = await admin({
      method: 'POST',
      url: BASE,
      headers: { 'content-type': 'application/xml' },
      payload: '<app/>',
    });
    t.equal(res.statusCode, 415);
    t.same(res.json(), { error: 'UNSUPPORTED_MEDIA_TYPE', message: 'Unsupported Media Type' });
    t.equal(await countRows('applications'), before);
  });

  t.test('a text/plain body is not an object: 400', async (t) => {
    const res = await admin({
      method: 'POST',
      url: BASE,
      headers: { 'content-type': 'text/plain' },
      payload: 'clientName=x',
    });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: '(body): must be object',
      details: [{ field: '(body)', message: 'must be object' }],
    });
  });
});

t.test('listing applications', async (t) => {
  t.test('limit and nextCursor walk every matching application once, in client id order', async (t) => {
    const prefix = uniqueId('page');
    // Mixed case, digits, dots, dashes and underscores: the order must hold across the whole alphabet.
    const suffixes = ['a', 'B', 'c', '0', 'z', 'Z', '_x', '-y', '.d', '~e', 'aa'];
    const ids = [];
    for (const s of suffixes)
      ids.push((await createApp({ clientId: `${prefix}${s}`, clientName: `Paged ${s}` })).clientId);

    for (const limit of [1, 2, 3, 50]) {
      const seen = (await walk(t, { q: prefix }, limit)).map((a) => a.clientId);
      t.same(
        seen,
        [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        `limit ${limit}: all, once, in order`,
      );
    }
  });

  t.test('walking the whole list with no search sees every stored application exactly once', async (t) => {
    await createApp();
    await createApp();
    const seen = (await walk(t, {}, 7)).map((a) => a.clientId);
    t.equal(new Set(seen).size, seen.length, 'no duplicates');
    const stored = await database.db.selectFrom('applications').select('client_id').execute();
    t.same(new Set(seen), new Set(stored.map((r) => r.client_id)));
  });

  t.test('the last page has no nextCursor', async (t) => {
    const prefix = uniqueId('last');
    const a = await createApp({ clientId: `${prefix}-a` });
    const b = await createApp({ clientId: `${prefix}-b` });
    const first = await admin({ method: 'GET', url: `${BASE}?q=${prefix}&limit=1` });
    t.equal(first.statusCode, 200);
    t.same(first.json().items, [a]);
    t.type(first.json().nextCursor, 'string');
    const second = await admin({ method: 'GET', url: `${BASE}?q=${prefix}&limit=1&cursor=${first.json().nextCursor}` });
    t.same(second.json(), { items: [b] });
    const exact = await admin({ method: 'GET', url: `${BASE}?q=${prefix}&limit=2` });
    t.same(exact.json(), { items: [a, b] }, 'exactly limit items: no cursor either');
    t.equal(exact.headers['cache-control'], 'no-store');
  });

  t.test('q searches client ids and names, case-insensitively', async (t) => {
    const tag = uniqueId('srch').toLowerCase();
    const byName = await createApp({ clientName: `Payroll ${tag.toUpperCase()} portal` });
    const byId = await createApp({ clientId: `${tag}-crm`, clientName: 'CRM' });
    await createApp({ clientName: 'Unrelated' });

    const res = await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(tag)}` });
    t.equal(res.statusCode, 200);
    const found = res.json().items.map((a: { clientId: string }) => a.clientId);
    t.same(new Set(found), new Set([byName.clientId, byId.clientId]));

    const upper = await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(tag.toUpperCase())}-CRM` });
    t.same(upper.json(), { items: [byId] });

    const nothing = await admin({ method: 'GET', url: `${BASE}?q=${tag}-no-such-thing` });
    t.same(nothing.json(), { items: [] });
  });

  t.test('without limit a page holds 50 applications', async (t) => {
    const prefix = uniqueId('deflimit');
    for (let i = 0; i < 51; i++) await createApp({ clientId: `${prefix}-${String(i).padStart(2, '0')}` });
    const res = await admin({ method: 'GET', url: `${BASE}?q=${prefix}` });
    t.equal(res.statusCode, 200);
    t.equal(res.json().items.length, 50);
    t.equal(res.json().items[49].clientId, `${prefix}-49`);
    const rest = await admin({ method: 'GET', url: `${BASE}?q=${prefix}&cursor=${res.json().nextCursor}` });
    t.same(
      rest.json().items.map((a: { clientId: string }) => a.clientId),
      [`${prefix}-50`],
    );
    t.notOk('nextCursor' in rest.json());
  });

  t.test('q matches accented names in any case', async (t) => {
    const tag = uniqueId('umlaut');
    const app1 = await createApp({ clientName: `Ärzte Portal ${tag}` });
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`ärzte portal ${tag}`)}` })).json(), {
      items: [app1],
    });
    t.same((await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`ÄRZTE PORTAL ${tag}`)}` })).json(), {
      items: [app1],
    });
  });

  t.test('q finds a name by its exact spelling, whatever letters it uses', async (t) => {
    const tag = uniqueId('greek');
    for (const name of [`ΟΔΟΣ ${tag}`, `İstanbul ${tag}`]) {
      const created = await createApp({ clientName: name });
      const res = await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(name)}` });
      t.same(res.json(), { items: [created] }, name);
    }
  });

  t.test('q treats % and _ literally', async (t) => {
    const tag = uniqueId('lit');
    const percent = await createApp({ clientName: `${tag} 100% done` });
    await createApp({ clientName: `${tag} 100 done` });
    const res = await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`${tag} 100%`)}` });
    t.same(res.json(), { items: [percent] });
    const underscore = await admin({ method: 'GET', url: `${BASE}?q=${encodeURIComponent(`${tag}_`)}` });
    t.same(underscore.json(), { items: [] });
  });

  t.test('bad list parameters are 400 naming the query field', async (t) => {
    for (const [query, field, message] of [
      ['limit=0', 'querystring.limit', 'must be >= 1'],
      ['limit=201', 'querystring.limit', 'must be <= 200'],
      ['limit=ten', 'querystring.limit', 'must be integer'],
      ['sort=name', 'querystring.sort', 'is not a known field'],
    ] as const) {
      const res = await admin({ method: 'GET', url: `${BASE}?${query}` });
      t.equal(res.statusCode, 400, query);
      t.same(
        res.json(),
        { error: 'VALIDATION_ERROR', message: `${field}: ${message}`, details: [{ field, message }] },
        query,
      );
    }
  });

  t.test('a cursor this API never returned is 400', async (t) => {
    const res = await admin({ method: 'GET', url: `${BASE}?cursor=!!!` });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: 'cursor: is not a cursor this API returned',
      details: [{ field: 'cursor', message: 'is not a cursor this API returned' }],
    });
  });
});

// A PostgreSQL database created with a linguistic locale (the official Docker image uses en_US.utf8) orders
// client ids differently from JavaScript's code-unit order, which the merge with static applications uses.
async function findLinguisticCollation(): Promise<string | undefined> {
  for (const name of ['en-US-x-icu', 'und-x-icu', 'en_US.utf8']) {
    try {
      // Some engines list a collation that still sorts bytewise: keep only one that puts 'a' before 'B'.
      const { rows } = await sql<{
        linguistic: boolean;
      }>`select 'a' < ${sql.raw(`'B' collate "${name}"`)} as linguistic`.execute(database.db);
      if (rows[0]?.linguistic) return name;
    } catch {
      // not installed here
    }
  }
  return undefined;
}
const linguisticCollation = await findLinguisticCollation();

t.test(
  'paging walks every application once when the database collation is not byte order',
  linguisticCollation ? {} : { skip: 'this database engine has no linguistic collation' },
  async (t) => {
    // A database of its own: the column's collation is changed for this test only.
    const { app: other, database: otherDb } = await buildTestApp(t);
    await sql
      .raw(`alter table applications alter column client_id type text collate "${linguisticCollation}"`)
      .execute(otherDb.db);
    const ids = ['coll-a1', 'coll-B2', 'coll-c3', 'coll-D4'];
    for (const clientId of ids) {
      const res = await other.inject({
        method: 'POST',
        url: BASE,
        headers: adminHeaders,
        payload: { clientId, clientName: clientId, redirectUris: ['https://c.example.com/cb'] },
      });
      t.equal(res.statusCode, 201);
    }
    const seen = (await walk(t, { q: 'coll-' }, 1, other)).map((a) => a.clientId);
    t.same(new Set(seen), new Set(ids), 'every application is seen');
    t.equal(seen.length, ids.length, 'once');
  },
);

t.test('reading one application', async (t) => {
  t.test('GET returns it with no-store', async (t) => {
    const created = await createApp({ clientId: uniqueId('get') });
    const res = await admin({ method: 'GET', url: `${BASE}/${created.clientId}` });
    t.equal(res.statusCode, 200);
    t.same(res.json(), created);
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('an unknown client id is 404 NOT_FOUND', async (t) => {
    const res = await admin({ method: 'GET', url: `${BASE}/no-such-app` });
    t.equal(res.statusCode, 404);
    t.same(res.json(), { error: 'NOT_FOUND', message: 'No application with client id no-such-app' });
    t.equal(res.headers['cache-control'], 'no-store');
  });

  t.test('client ids are case-sensitive', async (t) => {
    const created = await createApp({ clientId: uniqueId('CaseApp') });
    const res = await admin({ method: 'GET', url: `${BASE}/${created.clientId.toLowerCase()}` });
    t.equal(res.statusCode, 404);
  });

  t.test('an over-long client id in the path is 400 naming the parameter', async (t) => {
    const res = await admin({ method: 'GET', url: `${BASE}/${'x'.repeat(257)}` });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: 'params.clientId: must not have more than 256 characters',
      details: [{ field: 'params.clientId', message: 'must not have more than 256 characters' }],
    });
  });
});

t.test('updating applications', async (t) => {
  t.test('PATCH changes the given fields only and moves updatedAt', async (t) => {
    const created = await createApp({ clientId: uniqueId('patch'), clientDescription: 'Before' });
    await new Promise((resolve) => setTimeout(resolve, 5));
    const changes = {
      clientName: 'Renamed',
      redirectUris: ['https://new.example.com/cb'],
      allowedWebOrigins: ['https://new.example.com'],
      allowedScopes: ['openid', 'email'],
      postVerificationRedirectPath: '/done',
      clientLogoUrl: 'https://new.example.com/logo.svg',
    };
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.clientId}`, payload: changes });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(body, { ...created, ...changes, updatedAt: body.updatedAt });
    t.match(body.updatedAt, ISO);
    t.ok(Date.parse(body.updatedAt) > Date.parse(created.updatedAt), 'updatedAt moved forward');
    t.equal(body.createdAt, created.createdAt, 'createdAt kept');
    t.equal(res.headers['cache-control'], 'no-store');
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.clientId}` })).json(), body, 'GET sees the change');
  });

  t.test('null clears the optional fields', async (t) => {
    const created = await createApp({
      clientId: uniqueId('clear'),
      clientDescription: 'Some text',
      clientLogoUrl: 'https://cdn.example.com/l.png',
      postVerificationRedirectPath: '/welcome',
    });
    const res = await admin({
      method: 'PATCH',
      url: `${BASE}/${created.clientId}`,
      payload: { clientDescription: null, clientLogoUrl: null, postVerificationRedirectPath: null },
    });
    t.equal(res.statusCode, 200);
    const body = res.json();
    t.same(body, {
      ...created,
      clientDescription: null,
      clientLogoUrl: null,
      postVerificationRedirectPath: null,
      updatedAt: body.updatedAt,
    });
  });

  t.test('null is refused for required fields', async (t) => {
    const created = await createApp({ clientId: uniqueId('nonull') });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.clientId}`, payload: { clientName: null } });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: 'clientName: must be string',
      details: [{ field: 'clientName', message: 'must be string' }],
    });
  });

  t.test('an empty PATCH body is 400', async (t) => {
    const created = await createApp({ clientId: uniqueId('empty') });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.clientId}`, payload: {} });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: '(body): must not have fewer than 1 properties',
      details: [{ field: '(body)', message: 'must not have fewer than 1 properties' }],
    });
  });

  t.test('PATCH cannot change the client id', async (t) => {
    const created = await createApp({ clientId: uniqueId('rename') });
    const res = await admin({ method: 'PATCH', url: `${BASE}/${created.clientId}`, payload: { clientId: 'other' } });
    t.equal(res.statusCode, 400);
    t.same(res.json(), {
      error: 'VALIDATION_ERROR',
      message: 'clientId: is not a known field',
      details: [{ field: 'clientId', message: 'is not a known field' }],
    });
  });

  t.test('invalid PATCH values are 400 and leave the application unchanged', async (t) => {
    const created = await createApp({ clientId: uniqueId('badpatch') });
    for (const [payload, field, message] of [
      [{ redirectUris: ['http://evil.example.com/cb'] }, 'redirectUris.0', HTTP_NOT_LOOPBACK],
      [{ redirectUris: [] }, 'redirectUris', 'must not have fewer than 1 items'],
      [{ allowedScopes: ['profile'] }, 'allowedScopes', 'must include openid (this is an OpenID Connect provider)'],
      [
        { allowedWebOrigins: ['https://x.example.com/'] },
        'allowedWebOrigins.0',
        NOT_AN_ORIGIN('https://x.example.com'),
      ],
      [{ postVerificationRedirectPath: '//evil.com' }, 'postVerificationRedirectPath', BAD_PATH],
      [{ clientLogoUrl: 'http://cdn.example.com/logo.png' }, 'clientLogoUrl', HTTP_NOT_LOOPBACK],
    ] as const) {
      const res = await admin({ method: 'PATCH', url: `${BASE}/${created.clientId}`, payload });
      t.equal(res.statusCode, 400, JSON.stringify(payload));
      t.same(res.json(), { error: 'VALIDATION_ERROR', message: `${field}: ${message}`, details: [{ field, message }] });
    }
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.clientId}` })).json(), created);
  });

  t.test('PATCH of an unknown application is 404', async (t) => {
    const before = await countRows('audit_events');
    const res = await admin({ method: 'PATCH', url: `${BASE}/no-such-app`, payload: { clientName: 'x' } });
    t.equal(res.statusCode, 404);
    t.same(res.json(), { error: 'NOT_FOUND', message: 'No application with client id no-such-app' });
    t.equal(await countRows('audit_events'), before, 'no audit event for a change that did not happen');
  });

  t.test('disable and enable switch enabled and nothing else', async (t) => {
    const created = await createApp({ clientId: uniqueId('toggle') });
    const disabled = await admin({ method: 'POST', url: `${BASE}/${created.clientId}/disable` });
    t.equal(disabled.statusCode, 200);
    t.same(disabled.json(), { ...created, enabled: false, updatedAt: disabled.json().updatedAt });
    t.equal(disabled.headers['cache-control'], 'no-store');
    t.equal((await admin({ method: 'GET', url: `${BASE}/${created.clientId}` })).json().enabled, false);

    const again = await admin({ method: 'POST', url: `${BASE}/${created.clientId}/disable` });
    t.equal(again.statusCode, 200, 'disabling twice is fine');
    t.equal(again.json().enabled, false);

    const enabled = await admin({ method: 'POST', url: `${BASE}/${created.clientId}/enable` });
    t.equal(enabled.statusCode, 200);
    t.same(enabled.json(), { ...created, enabled: true, updatedAt: enabled.json().updatedAt });
  });

  t.test('disable and enable of an unknown application are 404', async (t) => {
    for (const action of ['disable', 'enable']) {
      const res = await admin({ method: 'POST', url: `${BASE}/no-such-app/${action}` });
      t.equal(res.statusCode, 404, action);
      t.same(res.json(), { error: 'NOT_FOUND', message: 'No application with client id no-such-app' });
    }
  });
});

t.test('deleting applications', async (t) => {
  t.test('DELETE is 204 with an empty body, then the application is gone', async (t) => {
    const created = await createApp({ clientId: uniqueId('del') });
    const res = await admin({ method: 'DELETE', url: `${BASE}/${created.clientId}` });
    t.equal(res.statusCode, 204);
    t.equal(res.body, '');
    t.equal(res.headers['cache-control'], 'no-store');
    const gone = await admin({ method: 'GET', url: `${BASE}/${created.clientId}` });
    t.equal(gone.statusCode, 404);
    t.same(gone.json(), { error: 'NOT_FOUND', message: `No application with client id ${created.clientId}` });
    const list = await admin({ method: 'GET', url: `${BASE}?q=${created.clientId}` });
    t.same(list.json(), { items: [] });
  });

  t.test('DELETE of an unknown application is 404, also the second time', async (t) => {
    const created = await createApp({ clientId: uniqueId('del2') });
    t.equal((await admin({ method: 'DELETE', url: `${BASE}/${created.clientId}` })).statusCode, 204);
    const again = await admin({ method: 'DELETE', url: `${BASE}/${created.clientId}` });
    t.equal(again.statusCode, 404);
    t.same(again.json(), { error: 'NOT_FOUND', message: `No application with client id ${created.clientId}` });
    const never = await admin({ method: 'DELETE', url: `${BASE}/never-existed` });
    t.equal(never.statusCode, 404);
  });

  t.test('a deleted client id can be registered again', async (t) => {
    const clientId = uniqueId('reuse');
    await createApp({ clientId });
    await admin({ method: 'DELETE', url: `${BASE}/${clientId}` });
    const again = await admin({
      method: 'POST',
      url: BASE,
      payload: { clientId, clientName: 'Again', redirectUris: ['https://a.example.com/cb'] },
    });
    t.equal(again.statusCode, 201);
  });
});

t.test('audit trail', async (t) => {
  t.test('create, update, enable/disable and delete are recorded with actor admin-api', async (t) => {
    const clientId = uniqueId('audited');
    await createApp({ clientId, clientName: 'Audited' });
    await admin({
      method: 'PATCH',
      url: `${BASE}/${clientId}`,
      payload: { clientName: 'Audited 2', clientDescription: 'd' },
    });
    await admin({ method: 'POST', url: `${BASE}/${clientId}/disable` });
    await admin({ method: 'DELETE', url: `${BASE}/${clientId}` });

    const events = await listAuditEvents(database.db, { clientId });
    t.same(
      events.map((e) => ({
        type: e.type,
        actor: e.actor,
        client_id: e.client_id,
        user_id: e.user_id,
        ip: e.ip,
        detail: e.detail,
      })),
      [
        {
          type: 'application.created',
          actor: 'admin-api',
          client_id: clientId,
          user_id: null,
          ip: '127.0.0.1',
          detail: { clientName: 'Audited', tokenEndpointAuthMethod: 'none' },
        },
        {
          type: 'application.updated',
          actor: 'admin-api',
          client_id: clientId,
          user_id: null,
          ip: '127.0.0.1',
          detail: { fields: ['clientName', 'clientDescription'] },
        },
        {
          type: 'application.updated',
          actor: 'admin-api',
          client_id: clientId,
          user_id: null,
          ip: '127.0.0.1',
          detail: { fields: ['enabled'] },
        },
        {
          type: 'application.deleted',
          actor: 'admin-api',
          client_id: clientId,
          user_id: null,
          ip: '127.0.0.1',
          detail: {},
        },
      ],
    );
    for (const e of events) t.ok(e.created_at instanceof Date || typeof e.created_at === 'string');
  });

  t.test('refused requests leave no audit event', async (t) => {
    const clientId = uniqueId('refused');
    await admin({
      method: 'POST',
      url: BASE,
      payload: { clientId, clientName: 'x', redirectUris: ['http://evil.example.com/cb'] },
    });
    await app.inject({
      method: 'POST',
      url: BASE,
      payload: { clientId, clientName: 'x', redirectUris: ['https://a.example.com/cb'] },
    });
    t.same(await listAuditEvents(database.db, { clientId }), []);
  });
});

t.test('transactions: a failure halfway leaves nothing behind', async (t) => {
  // A CHECK constraint on the audit table makes the audit insert (the second statement of each change) fail.
  async function withBrokenAudit(condition: string, fn: () => Promise<void>) {
    const name = `test_block_${process.pid}_${++counter}`;
    await sql
      .raw(`alter table audit_events add constraint ${name} check (${condition}) not valid`)
      .execute(database.db);
    try {
      await fn();
    } finally {
      await sql.raw(`alter table audit_events drop constraint ${name}`).execute(database.db);
    }
  }

  t.test('a create whose audit event fails stores no application', async (t) => {
    const clientId = uniqueId('tx-create');
    const apps = await countRows('applications');
    await withBrokenAudit(`client_id is distinct from '${clientId}'`, async () => {
      const res = await admin({
        method: 'POST',
        url: BASE,
        payload: { clientId, clientName: 'Tx', redirectUris: ['https://tx.example.com/cb'] },
      });
      t.equal(res.statusCode, 500);
      t.same(res.json(), { error: 'INTERNAL_ERROR', message: 'An unexpected error occurred' });
    });
    t.equal(await countRows('applications'), apps);
    t.equal((await admin({ method: 'GET', url: `${BASE}/${clientId}` })).statusCode, 404);
  });

  t.test('an update whose audit event fails changes nothing', async (t) => {
    const created = await createApp({ clientId: uniqueId('tx-update'), clientName: 'Original' });
    await withBrokenAudit(
      `type <> 'application.updated' or client_id is distinct from '${created.clientId}'`,
      async () => {
        const res = await admin({
          method: 'PATCH',
          url: `${BASE}/${created.clientId}`,
          payload: { clientName: 'Changed' },
        });
        t.equal(res.statusCode, 500);
        const disable = await admin({ method: 'POST', url: `${BASE}/${created.clientId}/disable` });
        t.equal(disable.statusCode, 500);
      },
    );
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.clientId}` })).json(), created);
  });

  t.test('a delete whose audit event fails keeps the application', async (t) => {
    const created = await createApp({ clientId: uniqueId('tx-delete') });
    await withBrokenAudit(
      `type <> 'application.deleted' or client_id is distinct from '${created.clientId}'`,
      async () => {
        const res = await admin({ method: 'DELETE', url: `${BASE}/${created.clientId}` });
        t.equal(res.statusCode, 500);
      },
    );
    t.same((await admin({ method: 'GET', url: `${BASE}/${created.clientId}` })).json(), created);
    t.same(
      (await listAuditEvents(database.db, { clientId: created.clientId })).map((e) => e.type),
      ['application.created'],
    );
  });
});

t.test('static applications', async (t) => {
  const file = 'static.json';
  const statics = parseStaticApplications(
    [
      {
        clientId: 'static-portal',
        clientName: 'Static Portal',
        redirectUris: ['https://portal.example.com/cb'],
      },
      {
        clientId: 'mix-b',
        clientName: 'Mixed B',
        clientDescription: 'From the file',
        redirectUris: ['https://b.example.com/cb'],
        allowedWebOrigins: ['https://b.example.com'],
        allowedScopes: ['openid', 'permissions'],
        postVerificationRedirectPath: '/hello',
        enabled: false,
      },
      { clientId: 'mix-d', clientName: 'Mixed D', redirectUris: ['https://d.example.com/cb'] },
    ],
    file,
  );
  // A database of its own, so the shared one's list is not mixed with these.
  const { app: withStatic, database: staticDb } = await buildTestApp(t, {
    staticApplications: staticApplicationsFrom(statics, file),
  });
  const call = (options: Inject) => withStatic.inject({ ...options, headers: { ...adminHeaders, ...options.headers } });
  const portal = {
    clientId: 'static-portal',
    clientName: 'Static Portal',
    clientDescription: null,
    clientLogoUrl: null,
    redirectUris: ['https://portal.example.com/cb'],
    allowedWebOrigins: [],
    postLogoutRedirectUris: [],
    postVerificationRedirectPath: null,
    allowedScopes: DEFAULT_SCOPES,
    enabled: true,
    ...PUBLIC_CLIENT,
    registration: 'operator',
    source: 'static',
    createdAt: null,
    updatedAt: null,
  };
  const readOnly = (clientId: string) => ({
    error: 'STATIC_APPLICATION',
    message: `Application ${clientId} is declared in ${file} and is read-only here; change it in that file.`,
  });

  t.test('GET returns a static application with source static', async (t) => {
    const res = await call({ method: 'GET', url: `${BASE}/static-portal` });
    t.equal(res.statusCode, 200);
    t.same(res.json(), portal);
    const b = await call({ method: 'GET', url: `${BASE}/mix-b` });
    t.same(b.json(), {
      clientId: 'mix-b',
      clientName: 'Mixed B',
      clientDescription: 'From the file',
      clientLogoUrl: null,
      redirectUris: ['https://b.example.com/cb'],
      allowedWebOrigins: ['https://b.example.com'],
      postLogoutRedirectUris: [],
      postVerificationRedirectPath: '/hello',
      allowedScopes: ['openid', 'permissions'],
      enabled: false,
      ...PUBLIC_CLIENT,
      registration: 'operator',
      source: 'static',
      createdAt: null,
      updatedAt: null,
    });
  });

  t.test('the list shows static applications, and q finds them by name', async (t) => {
    const res = await call({ method: 'GET', url: BASE });
    t.equal(res.statusCode, 200);
    t.same(
      res
        .json()
        .items.filter((a: { source: string }) => a.source === 'static')
        .map((a: { clientId: string }) => a.clientId),
      ['mix-b', 'mix-d', 'static-portal'],
    );
    const byName = await call({ method: 'GET', url: `${BASE}?q=PORTAL` });
    t.same(byName.json(), { items: [portal] });
  });

  t.test('paging merges static and database applications in client id order', async (t) => {
    for (const id of ['mix-a', 'mix-c', 'mix-e']) {
      const res = await call({
        method: 'POST',
        url: BASE,
        payload: { clientId: id, clientName: `DB ${id}`, redirectUris: ['https://db.example.com/cb'] },
      });
      t.equal(res.statusCode, 201);
    }
    for (const limit of [1, 2, 4]) {
      const seen = await walk(t, { q: 'mix-' }, limit, withStatic);
      t.same(
        seen.map((a) => [a.clientId, a.source]),
        [
          ['mix-a', 'database'],
          ['mix-b', 'static'],
          ['mix-c', 'database'],
          ['mix-d', 'static'],
          ['mix-e', 'database'],
        ],
        `limit ${limit}`,
      );
    }
  });

  t.test('PATCH, disable, enable and DELETE of a static application are 409 STATIC_APPLICATION', async (t) => {
    for (const route of [
      { method: 'PATCH', url: `${BASE}/static-portal`, payload: { clientName: 'Changed' } },
      { method: 'POST', url: `${BASE}/static-portal/disable` },
      { method: 'POST', url: `${BASE}/static-portal/enable` },
      { method: 'DELETE', url: `${BASE}/static-portal` },
    ] as Inject[]) {
      const res = await call(route);
      t.equal(res.statusCode, 409, `${route.method} ${route.url}`);
      t.same(res.json(), readOnly('static-portal'));
      t.equal(res.headers['cache-control'], 'no-store');
    }
    t.same((await call({ method: 'GET', url: `${BASE}/static-portal` })).json(), portal, 'unchanged');
    t.same(await listAuditEvents(staticDb.db, { clientId: 'static-portal' }), []);
  });

  t.test('creating a database application with a static client id is 409 CLIENT_ID_TAKEN', async (t) => {
    const before = await staticDb.db.selectFrom('applications').select('client_id').execute();
    const res = await call({
      method: 'POST',
      url: BASE,
      payload: { clientId: 'static-portal', clientName: 'Shadow', redirectUris: ['https://shadow.example.com/cb'] },
    });
    t.equal(res.statusCode, 409);
    t.same(res.json(), {
      error: 'CLIENT_ID_TAKEN',
      message: 'Client id static-portal is used by a static application',
    });
    t.same(await staticDb.db.selectFrom('applications').select('client_id').execute(), before);
  });

  t.test('static applications do not exist for an app without them', async (t) => {
    const res = await admin({ method: 'GET', url: `${BASE}/static-portal` });
    t.equal(res.statusCode, 404);
  });
});

t.test(
  'a long or badly escaped client id or kid in the path gets the documented 400/404, never a router error (414/400)',
  async (t) => {
    const call = (method: Inject['method'], url: string) =>
      app.inject({ method, url, headers: adminHeaders, ...(method === 'PATCH' && { payload: { clientName: 'x' } }) });
    for (const [method, path] of [
      ['GET', ''],
      ['PATCH', ''],
      ['DELETE', ''],
    ] as const) {
      const long = await call(method, `${BASE}/${'a'.repeat(600)}${path}`);
      t.equal(long.statusCode, 400, `${method}: 600 characters`);
      t.equal(long.json().error, 'VALIDATION_ERROR', `${method}: 600 characters`);
      t.match(long.json().details, [{ field: 'params.clientId' }]);
      const bad = await call(method, `${BASE}/%ZZ${path}`);
      t.equal(bad.statusCode, 404, `${method}: a malformed escape is an id that does not exist`);
      t.equal(bad.json().error, 'NOT_FOUND');
    }
    const kid = await app.inject({
      method: 'POST',
      url: `/api/admin/keys/${'k'.repeat(600)}/retire`,
      headers: adminHeaders,
      payload: {},
    });
    t.equal(kid.statusCode, 400, 'kid: 600 characters');
    t.equal(kid.json().error, 'VALIDATION_ERROR');
    for (const res of [kid]) t.notMatch(res.body, /FST_|statusCode/);
  },
);

t.test(
  'requireMfa (issue 34): false by default, set on create, changed by PATCH, refused when not a boolean',
  async (t) => {
    const plain = await createApp({ clientId: uniqueId('mfa-plain') });
    t.equal(plain.requireMfa, false, 'default false');
    const strict = await createApp({ clientId: uniqueId('mfa-strict'), requireMfa: true });
    t.equal(strict.requireMfa, true, 'set on create');
    const got = await admin({ method: 'GET', url: `${BASE}/${strict.clientId}` });
    t.equal(got.json().requireMfa, true, 'read back');
    const patched = await admin({ method: 'PATCH', url: `${BASE}/${strict.clientId}`, payload: { requireMfa: false } });
    t.equal(patched.statusCode, 200);
    t.equal(patched.json().requireMfa, false, 'changed by PATCH');
    const bad = await admin({ method: 'PATCH', url: `${BASE}/${strict.clientId}`, payload: { requireMfa: 'yes' } });
    t.equal(bad.statusCode, 400, 'not a boolean');
    const row = await database.db
      .selectFrom('applications')
      .select('require_mfa')
      .where('client_id', '=', strict.clientId)
      .executeTakeFirstOrThrow();
    t.equal(row.require_mfa, false, 'stored');
  },
);
