// Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document), issue 36. The documents are served
// by an https server in this test with a self-signed certificate (made by openssl here); the provider trusts it
// through CLIENT_METADATA_CA_FILE, the narrowly scoped setting for these fetches (NODE_EXTRA_CA_CERTS would need a
// separate process). NODE_ENV=test allows the loopback address the server listens on; every other private range is
// refused whatever the environment, and loopback is refused in production (checked on the fetch itself).
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { FastifyInstance } from 'fastify';
import { adminHeaders, buildTestApp, type TestApp } from '../helpers/app.js';
import { cookiesOf, obtainCode, signInWithInject, tokenRequest } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { addressProblem, cacheSeconds, fetchMetadataDocument } from '../../src/services/metadata-fetch.js';

// Several apps, each with its own database: slower than one app on a loaded machine.
t.setTimeout(400_000);

const actor = { actor: 'test' };
const PASSWORD = 'metadata-password-1';
const REDIRECT = 'http://127.0.0.1:7777/callback';
const NEW_REDIRECT = 'http://127.0.0.1:7777/new-callback';

const dir = mkdtempSync(join(tmpdir(), 'idp-cimd-'));
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    join(dir, 'key.pem'),
    '-out',
    join(dir, 'cert.pem'),
    '-days',
    '2',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ],
  { stdio: 'ignore' },
);
const CA_FILE = join(dir, 'cert.pem');

// The documents' server: what each path answers, and how often it was asked.
let changingUris = [REDIRECT];
const hits = new Map<string, number>();
let base = '';
const server: Server = createServer(
  { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(CA_FILE) },
  (req, res) => {
    const path = req.url ?? '';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const json = (body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const doc = (extra: object = {}) => ({
      client_id: `${base}${path}`,
      client_name: 'Doc Agent',
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: 'none',
      ...extra,
    });
    if (path.startsWith('/good')) return json(doc(), { 'cache-control': 'max-age=600' });
    if (path === '/big.json') return json(doc({ padding: 'x'.repeat(6000) }));
    if (path === '/big-chunked.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"padding":"');
      for (let i = 0; i < 10; i++) res.write('x'.repeat(1000));
      return res.end('"}');
    }
    if (path === '/slow.json') {
      const timer = setTimeout(() => json(doc()), 6000);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    if (path === '/redirect.json') {
      res.writeHead(302, { location: `${base}/good-target.json` });
      return res.end();
    }
    if (path === '/mismatch.json') return json(doc({ client_id: `${base}/someone-else.json` }));
    if (path === '/secret.json') return json(doc({ token_endpoint_auth_method: 'client_secret_basic' }));
    if (path === '/bad-redirect.json') return json(doc({ redirect_uris: ['http://evil.example.com/cb'] }));
    if (path === '/not-json.json') {
      res.writeHead(200, { 'content-type': 'text/html' });
      return res.end('<html></html>');
    }
    if (path.startsWith('/changing'))
      return json(doc({ redirect_uris: changingUris }), { 'cache-control': 'max-age=600' });
    res.writeHead(404);
    res.end();
  },
);
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
base = `https://localhost:${(server.address() as AddressInfo).port}`;
t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** The document's freshness ends now: the next authorize fetches it again. */
const expire = (db: TestApp['database']['db'], clientId: string) =>
  sql`update applications set metadata_expires_at = now() - interval '1 second' where client_id = ${clientId}`.execute(
    db,
  );

const ON = { CLIENT_ID_METADATA_DOCUMENTS: 'on', CLIENT_METADATA_CA_FILE: CA_FILE };

function authorizeUrl(clientId: string, redirectUri = REDIRECT, extra: Record<string, string> = {}) {
  return `/api/auth/oauth2/authorize?${new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: 'code',
    scope: 'openid',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
    ...extra,
  })}`;
}
/** The authorize answer as JSON (errors rendered, never redirected, until client and redirect_uri are verified). */
const authorize = (app: FastifyInstance, clientId: string, redirectUri = REDIRECT) =>
  app.inject({ url: authorizeUrl(clientId, redirectUri), headers: { accept: 'application/json' } });
const refusal = async (app: FastifyInstance, clientId: string, redirectUri = REDIRECT) => {
  const res = await authorize(app, clientId, redirectUri);
  return { status: res.statusCode, ...(res.statusCode === 400 ? res.json() : { location: res.headers.location }) };
};

t.test('feature off (the default): an https client_id is refused, nothing fetched, nothing advertised', async (t) => {
  const { app } = await buildTestApp(t, { env: { CLIENT_METADATA_CA_FILE: CA_FILE } });
  const before = hits.get('/good-off.json') ?? 0;
  t.match(await refusal(app, `${base}/good-off.json`), {
    status: 400,
    error: 'invalid_client',
    error_description: 'client ID metadata documents are not accepted here',
  });
  t.equal(hits.get('/good-off.json') ?? 0, before, 'not fetched');
  const discovery = (await app.inject({ url: '/api/auth/.well-known/openid-configuration' })).json();
  t.notOk('client_id_metadata_document_supported' in discovery);
  const meta = await app.inject({ url: `/api/public/applications/${encodeURIComponent(`${base}/good-off.json`)}` });
  t.same(meta.json(), { error: 'INVALID_CLIENT_ID' }, 'the public metadata endpoint does not take URLs');
});

t.test('a good document: fetched once, cached, used as registered; consent names its host', async (t) => {
  const { app, database } = await buildTestApp(t, { env: ON });
  await app.services.users.create({ email: 'doc@example.com', password: PASSWORD, emailVerified: true }, actor);
  const discovery = (await app.inject({ url: '/api/auth/.well-known/openid-configuration' })).json();
  t.equal(discovery.client_id_metadata_document_supported, true, 'advertised');
  const clientId = `${base}/good.json`;

  const first = await authorize(app, clientId);
  t.match(first.headers.location, /\/login\/sign-in\?request=/, 'the sign-in page');
  t.equal(hits.get('/good.json'), 1, 'fetched once');
  await authorize(app, clientId);
  t.equal(hits.get('/good.json'), 1, 'and cached (max-age=600)');
  const row = await database.db
    .selectFrom('applications')
    .selectAll()
    .where('client_id', '=', clientId)
    .executeTakeFirstOrThrow();
  t.match(row, { registration: 'metadata_document', name: 'Doc Agent', token_endpoint_auth_method: 'none' });
  t.same(row.redirect_uris, [REDIRECT]);
  const fresh = new Date(row.metadata_expires_at!).getTime() - new Date(row.metadata_fetched_at!).getTime();
  t.equal(fresh, 600_000, 'fresh for its max-age');
  t.match(await refusal(app, clientId, 'http://127.0.0.1:7777/other'), {
    status: 400,
    error_description: 'redirect_uri is not registered for this client',
  });

  // The whole flow, with the consent page naming the document's host.
  const { code, verifier, jar } = await obtainCode(app, {
    clientId,
    redirectUri: REDIRECT,
    email: 'doc@example.com',
    password: PASSWORD,
    scope: 'openid email',
  });
  const tokens = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  t.equal(tokens.statusCode, 200, tokens.body);
  const again = await app.inject({ url: authorizeUrl(clientId, REDIRECT, { scope: 'openid email' }), cookies: jar });
  t.match(again.headers.location, /\/login\/consent\?request=/, 'consent is asked again: no remembered consent');
  const page = await app.inject({ url: again.headers.location as string, cookies: { ...jar, ...cookiesOf(again) } });
  t.match(page.body, /id="self-registered"/);
  t.match(page.body, new RegExp(`vouched for only by <strong>localhost:${new URL(base).port}</strong>`));

  // The public metadata endpoint names it; the account page lists it and revokes it in one click.
  const meta = await app.inject({ url: `/api/public/applications/${encodeURIComponent(clientId)}` });
  t.match(meta.json(), { clientId, clientName: 'Doc Agent' });
  const signed = await signInWithInject(app, 'doc@example.com', PASSWORD);
  const list = await app.inject({ url: '/login/account/applications', cookies: signed.jar });
  t.match(list.body, /Doc Agent/);
  const csrf = /name="csrf" value="([^"]+)"/.exec(list.body)![1]!;
  const revoke = await app.inject({
    method: 'POST',
    url: '/login/account/applications/revoke',
    cookies: { ...signed.jar, ...cookiesOf(list) },
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf, client_id: clientId }).toString(),
  });
  t.equal(revoke.statusCode, 303, revoke.body.slice(0, 300));
  const refreshed = tokens.json().access_token as string;
  const me = await app.inject({ url: '/api/external/me', headers: { authorization: `Bearer ${refreshed}` } });
  t.equal(me.statusCode, 401, 'the revoked access token no longer works');

  // The operator sees it in the admin API, marked; and deletes it.
  const admin = await app.inject({
    url: `/api/admin/applications/${encodeURIComponent(clientId)}`,
    headers: adminHeaders,
  });
  t.equal(admin.json().registration, 'metadata_document');
  const del = await app.inject({
    method: 'DELETE',
    url: `/api/admin/applications/${encodeURIComponent(clientId)}`,
    headers: adminHeaders,
  });
  t.equal(del.statusCode, 204);
  await authorize(app, clientId);
  t.equal(hits.get('/good.json'), 2, 'a deleted one is fetched again at its next authorize');

  // What users gave the deleted client does not come back with the new row of the same URL.
  const second = await obtainCode(app, {
    clientId,
    redirectUri: REDIRECT,
    email: 'doc@example.com',
    password: PASSWORD,
    scope: 'openid email',
  });
  const tokens2 = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: second.code,
    code_verifier: second.verifier,
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  t.equal(tokens2.statusCode, 200);
  const bearer = { authorization: `Bearer ${tokens2.json().access_token}` };
  t.equal((await app.inject({ url: '/api/external/me', headers: bearer })).statusCode, 200);
  await app.inject({
    method: 'DELETE',
    url: `/api/admin/applications/${encodeURIComponent(clientId)}`,
    headers: adminHeaders,
  });
  await authorize(app, clientId);
  t.equal(hits.get('/good.json'), 3, 'the new row');
  const after = await app.inject({ url: '/api/external/me', headers: bearer });
  t.equal(after.statusCode, 401, "the deleted client's token stays dead under the new row");
  const live = await database.db
    .selectFrom('grants')
    .select('id')
    .where('client_id', '=', clientId)
    .where('revoked_at', 'is', null)
    .execute();
  t.same(live, [], 'no live grant');
});

t.test('documents that are refused', async (t) => {
  const { app, database } = await buildTestApp(t, { env: ON });
  const fetchFailed = 'the client ID metadata document could not be fetched';
  const invalid = 'the client ID metadata document is not valid for this client_id';
  const cases: Array<[string, string, string]> = [
    ['too large (Content-Length)', `${base}/big.json`, fetchFailed],
    ['too large (chunked)', `${base}/big-chunked.json`, fetchFailed],
    ['a redirect (not followed)', `${base}/redirect.json`, fetchFailed],
    ['not found', `${base}/missing.json`, fetchFailed],
    ['not JSON', `${base}/not-json.json`, fetchFailed],
    ['a private address', 'https://10.1.2.3/client.json', fetchFailed],
    ['a link-local address (cloud metadata)', 'https://169.254.169.254/latest/client.json', fetchFailed],
    ['an IPv4-mapped private address', 'https://[::ffff:c0a8:101]/client.json', fetchFailed],
    ['an IPv4-mapped address, not in normal form', 'https://[::ffff:192.168.1.1]/client.json', invalid],
    ['a unique-local IPv6 address', 'https://[fd00::1]/client.json', fetchFailed],
    ['a client_id that is not the URL', `${base}/mismatch.json`, invalid],
    ['a client secret method', `${base}/secret.json`, invalid],
    ['an http redirect URI on a public host', `${base}/bad-redirect.json`, invalid],
    ['no path', `${base}/`, invalid],
    ['a fragment', `${base}/good.json#x`, invalid],
    ['credentials', `https://user:pw@localhost:${new URL(base).port}/good.json`, invalid],
    ['dot segments', `${base}/a/%2e%2e/good.json`, invalid],
    ['too long', `${base}/${'a'.repeat(256 - base.length - 6)}.json`, invalid],
  ];
  for (const [what, clientId, description] of cases) {
    t.match(
      await refusal(app, clientId),
      { status: 400, error: 'invalid_client', error_description: description },
      what,
    );
  }
  const rows = await database.db.selectFrom('applications').select('client_id').execute();
  t.same(rows, [], 'no application was stored for any of them');
  t.equal(hits.get('/good-target.json') ?? 0, 0, 'the redirect target was never asked');

  const started = Date.now();
  t.match(await refusal(app, `${base}/slow.json`), { status: 400, error_description: fetchFailed }, 'too slow');
  const took = Date.now() - started;
  t.ok(took >= 4500 && took < 5900, `gave up after about 5 s (${took} ms)`);
});

t.test('the fetch itself: loopback is refused in production; sizes, time and Cache-Control', async (t) => {
  const extraCa = readFileSync(CA_FILE, 'utf8');
  await t.rejects(
    fetchMetadataDocument(`${base}/good.json`, { allowLoopback: false, extraCa }),
    /localhost resolves to a refused address: 127\.0\.0\.1 is a loopback address/,
    'a name that resolves to loopback',
  );
  await t.rejects(
    fetchMetadataDocument(`https://127.0.0.1:${new URL(base).port}/good.json`, { allowLoopback: false, extraCa }),
    /loopback/,
    'a loopback literal',
  );
  await t.rejects(
    fetchMetadataDocument(`${base}/good.json`, { allowLoopback: true }),
    /self.signed|certificate/i,
    'without the extra CA the self-signed certificate is not trusted',
  );
  const ok = await fetchMetadataDocument(`${base}/good.json`, { allowLoopback: true, extraCa });
  t.equal(ok.maxAge, 600);
  await t.rejects(
    fetchMetadataDocument(`${base}/slow.json`, { allowLoopback: true, extraCa, timeoutMs: 200 }),
    /within 200 ms/,
  );
  for (const [address, problem] of [
    ['127.0.0.1', /loopback/],
    ['::1', /loopback/],
    ['10.0.0.1', /private/],
    ['172.16.5.4', /private/],
    ['192.168.0.1', /private/],
    ['100.64.0.1', /private/],
    ['169.254.169.254', /private/],
    ['0.0.0.0', /private/],
    ['fe80::1', /private/],
    ['fc00::1', /private/],
    ['::ffff:127.0.0.1', /loopback/],
    ['::ffff:7f00:1', /loopback/],
    ['::7f00:1', /embeds/],
    ['64:ff9b::a00:1', /private/],
    ['224.0.0.1', /private/],
  ] as const) {
    t.match(addressProblem(address, { allowLoopback: false }), problem, address);
  }
  t.equal(addressProblem('93.184.216.34', { allowLoopback: false }), undefined, 'a public address');
  t.equal(addressProblem('2606:4700::1111', { allowLoopback: false }), undefined, 'a public IPv6 address');
  t.equal(addressProblem('127.0.0.1', { allowLoopback: true }), undefined, 'loopback in development and test');
  t.equal(cacheSeconds('public, max-age=120'), 120);
  t.equal(cacheSeconds('no-store'), 0);
  t.equal(cacheSeconds('no-cache, max-age=100'), 0);
  t.equal(cacheSeconds(undefined), undefined);
});

t.test('a document that changes its redirect URIs: the new list applies once the cached one expires', async (t) => {
  const { app, database } = await buildTestApp(t, { env: ON });
  const clientId = `${base}/changing.json`;
  changingUris = [REDIRECT];
  t.match((await authorize(app, clientId)).headers.location, /sign-in/, 'the first list');
  changingUris = [NEW_REDIRECT];
  t.match((await authorize(app, clientId)).headers.location, /sign-in/, 'the cached list still applies');
  t.match(await refusal(app, clientId, NEW_REDIRECT), {
    status: 400,
    error_description: 'redirect_uri is not registered for this client',
  });
  t.equal(hits.get('/changing.json'), 1);

  // Its freshness ends: the next authorize fetches it again, and only the new list counts.
  await expire(database.db, clientId);
  t.match(await refusal(app, clientId, REDIRECT), {
    status: 400,
    error_description: 'redirect_uri is not registered for this client',
  });
  t.equal(hits.get('/changing.json'), 2, 'fetched again');
  t.match((await authorize(app, clientId, NEW_REDIRECT)).headers.location, /sign-in/, 'the new one works');
  const events = await database.db
    .selectFrom('audit_events')
    .select(['type', 'actor'])
    .where('client_id', '=', clientId)
    .orderBy('id')
    .execute();
  t.same(
    events.map((e) => e.type),
    ['application.created', 'application.updated'],
    'the change of redirect URIs is audited',
  );
});

t.test('disabled by the operator: refused, and stays refused when the document is fetched again', async (t) => {
  const { app, database } = await buildTestApp(t, { env: ON });
  const clientId = `${base}/good-disabled.json`;
  await authorize(app, clientId);
  t.equal(hits.get('/good-disabled.json'), 1);
  const disabled = await app.inject({
    method: 'PATCH',
    url: `/api/admin/applications/${encodeURIComponent(clientId)}`,
    headers: adminHeaders,
    payload: { enabled: false },
  });
  t.equal(disabled.statusCode, 200, disabled.body);
  t.match(await refusal(app, clientId), { status: 400, error_description: 'this application is disabled' });
  await expire(database.db, clientId);
  t.match(await refusal(app, clientId), { status: 400, error_description: 'this application is disabled' });
  t.equal(hits.get('/good-disabled.json'), 1, 'a disabled one is not even fetched');
  const tokens = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: 'x'.repeat(50),
    code_verifier: 'v'.repeat(43),
    client_id: clientId,
    redirect_uri: REDIRECT,
  });
  t.equal(tokens.statusCode >= 400, true, 'the token endpoint does not serve it');
});

t.test(
  'metadata documents turned off after use: the stored clients are refused at the token endpoint too',
  async (t) => {
    const first = await buildTestApp(t, { env: ON });
    const clientId = `${base}/good-later-off.json`;
    await authorize(first.app, clientId);
    const { app } = await buildTestApp(t, { env: { CLIENT_METADATA_CA_FILE: CA_FILE }, database: first.database });
    t.match(await refusal(app, clientId), {
      status: 400,
      error_description: 'client ID metadata documents are not accepted here',
    });
    const tokens = await tokenRequest(app, {
      grant_type: 'refresh_token',
      refresh_token: 'x'.repeat(43),
      client_id: clientId,
    });
    t.equal(tokens.statusCode, 401);
    t.equal(tokens.json().error_description, 'client ID metadata documents are not accepted here');
  },
);
