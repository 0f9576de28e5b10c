// The admin API's side of confidential clients (issue 33, item 7): the secret in the create and update answers
// only when one was made, the secrets routes (list, rotate with an overlap, revoke), their errors, and where the
// secret must never appear again: GET answers, lists, the audit trail, the log.
import t from 'tap';
import type { InjectOptions as Inject } from 'fastify';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { parseStaticApplications, staticApplicationsFrom } from '../../src/static-applications.js';

const statics = parseStaticApplications(
  [
    {
      clientId: 'static-jwt',
      clientName: 'Static JWT',
      redirectUris: ['https://static.example.com/cb'],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: 'https://static.example.com/jwks.json',
    },
  ],
  'statics.json',
);
const { app, database, logs } = await buildTestApp(t, {
  staticApplications: staticApplicationsFrom(statics, 'statics.json'),
});

const BASE = '/api/admin/applications';
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;
let counter = 0;
const uniqueId = (label: string) => `${label}-${process.pid}-${++counter}`;
const admin = (options: Inject) => app.inject({ ...options, headers: { ...adminHeaders, ...options.headers } });
const REDIRECT = 'https://rp.example.com/callback';

async function createApp(body: Record<string, unknown>) {
  const res = await admin({
    method: 'POST',
    url: BASE,
    payload: { clientId: uniqueId('app'), clientName: 'Secret app', redirectUris: [REDIRECT], ...body },
  });
  if (res.statusCode !== 201) throw new Error(`create failed: ${res.statusCode} ${res.body}`);
  return res;
}

/** Every place an admin could read the application back, as one string. */
async function everythingReadable(clientId: string): Promise<string> {
  const parts = await Promise.all([
    admin({ method: 'GET', url: `${BASE}/${clientId}` }),
    admin({ method: 'GET', url: `${BASE}?limit=200` }),
    admin({ method: 'GET', url: `${BASE}/${clientId}/secrets` }),
    admin({ method: 'GET', url: `/api/admin/audit-events?clientId=${clientId}&limit=200` }),
  ]);
  const audit = await listAuditEvents(database.db, { clientId });
  return [...parts.map((r) => r.body), JSON.stringify(audit), logs.text()].join('\n');
}

t.test('create: the secret is in the 201 answer once, no-store; never in what is read afterwards', async (t) => {
  const res = await createApp({ tokenEndpointAuthMethod: 'client_secret_basic', pkce: 'optional' });
  t.equal(res.headers['cache-control'], 'no-store');
  const body = res.json();
  t.match(body.clientSecret, SECRET, '256 bits, base64url');
  t.equal(body.clientType, 'confidential');
  t.equal(body.tokenEndpointAuthMethod, 'client_secret_basic');
  t.equal(body.pkce, 'optional');
  t.ok(await app.services.applications.verifySecret(body.clientId, body.clientSecret), 'the answered secret works');

  const get = await admin({ method: 'GET', url: `${BASE}/${body.clientId}` });
  t.equal(get.statusCode, 200);
  t.notOk('clientSecret' in get.json(), 'GET has no clientSecret field');
  t.notMatch(await everythingReadable(body.clientId), body.clientSecret, 'nowhere to be read again');
});

t.test('a public application (the default) is answered without clientSecret', async (t) => {
  const res = await createApp({});
  const body = res.json();
  t.equal(body.clientType, 'public');
  t.notOk('clientSecret' in body);
  const secrets = await admin({ method: 'GET', url: `${BASE}/${body.clientId}/secrets` });
  t.equal(secrets.statusCode, 200);
  t.same(secrets.json(), { items: [] });
});

t.test('update: clientSecret only when the change made one', async (t) => {
  const { clientId } = (await createApp({})).json();
  const rename = await admin({ method: 'PATCH', url: `${BASE}/${clientId}`, payload: { clientName: 'Renamed' } });
  t.equal(rename.statusCode, 200);
  t.notOk('clientSecret' in rename.json());

  const toPost = await admin({
    method: 'PATCH',
    url: `${BASE}/${clientId}`,
    payload: { tokenEndpointAuthMethod: 'client_secret_post' },
  });
  t.equal(toPost.statusCode, 200);
  t.equal(toPost.headers['cache-control'], 'no-store');
  const secret = toPost.json().clientSecret;
  t.match(secret, SECRET, 'a public client made confidential gets its first secret in the answer');

  const again = await admin({ method: 'PATCH', url: `${BASE}/${clientId}`, payload: { pkce: 'optional' } });
  t.equal(again.statusCode, 200);
  t.notOk('clientSecret' in again.json(), 'a later change of a secret client makes no new secret');
  t.ok(await app.services.applications.verifySecret(clientId, secret));
  t.notMatch(await everythingReadable(clientId), secret);
});

t.test('update: the domain rules answer 400 VALIDATION_ERROR with the field', async (t) => {
  const { clientId } = (await createApp({})).json();
  const res = await admin({ method: 'PATCH', url: `${BASE}/${clientId}`, payload: { pkce: 'optional' } });
  t.equal(res.statusCode, 400);
  t.same(res.json(), {
    error: 'VALIDATION_ERROR',
    message: res.json().message,
    details: [{ field: 'pkce', message: 'a public client (tokenEndpointAuthMethod none) always requires PKCE' }],
  });
  const jwt = await admin({
    method: 'POST',
    url: BASE,
    payload: { clientName: 'JWT', redirectUris: [REDIRECT], tokenEndpointAuthMethod: 'private_key_jwt' },
  });
  t.equal(jwt.statusCode, 400);
  t.same(jwt.json().details, [{ field: 'jwks', message: 'private_key_jwt needs exactly one of jwks and jwksUri' }]);
});

t.test('secrets: list, rotate with an overlap, revoke', async (t) => {
  const created = (await createApp({ tokenEndpointAuthMethod: 'client_secret_basic' })).json();
  const url = `${BASE}/${created.clientId}/secrets`;

  const list = await admin({ method: 'GET', url });
  t.equal(list.statusCode, 200);
  t.equal(list.headers['cache-control'], 'no-store');
  const [first, ...none] = list.json().items;
  t.same(none, []);
  t.match(first, { id: /^cs_/, createdAt: ISO, expiresAt: null });
  t.same(Object.keys(first).sort(), ['createdAt', 'expiresAt', 'id'], 'ids and dates only');

  const rotated = await admin({ method: 'POST', url, payload: { overlapSeconds: 3600 } });
  t.equal(rotated.statusCode, 201);
  t.equal(rotated.headers['cache-control'], 'no-store');
  const body = rotated.json();
  t.same(Object.keys(body).sort(), ['clientSecret', 'secret']);
  t.match(body.clientSecret, SECRET);
  t.not(body.clientSecret, created.clientSecret);
  t.match(body.secret, { id: /^cs_/, createdAt: ISO, expiresAt: null });
  t.ok(await app.services.applications.verifySecret(created.clientId, created.clientSecret), 'old: in its overlap');
  t.ok(await app.services.applications.verifySecret(created.clientId, body.clientSecret), 'new: works');

  const after = (await admin({ method: 'GET', url })).json().items;
  t.equal(after.length, 2);
  const old = after.find((s: { id: string }) => s.id === first.id);
  const ends = Date.parse(old.expiresAt) - Date.now();
  t.ok(ends > 3500_000 && ends <= 3600_000, 'the old secret ends in an hour');

  const revoked = await admin({ method: 'DELETE', url: `${url}/${first.id}` });
  t.equal(revoked.statusCode, 204);
  t.equal(revoked.body, '');
  t.notOk(await app.services.applications.verifySecret(created.clientId, created.clientSecret), 'revoked: at once');
  t.same(
    (await admin({ method: 'GET', url })).json().items.map((s: { id: string }) => s.id),
    [body.secret.id],
  );

  // Without a body: the default overlap (24 h).
  const defaulted = await admin({ method: 'POST', url });
  t.equal(defaulted.statusCode, 201);
  const items = (await admin({ method: 'GET', url })).json().items;
  const previous = items.find((s: { id: string }) => s.id === body.secret.id);
  t.ok(Math.abs(Date.parse(previous.expiresAt) - Date.now() - 86400_000) < 60_000, 'ends in 24 hours');

  const events = await listAuditEvents(database.db, { clientId: created.clientId });
  const types = events.map((e) => e.type);
  t.equal(types.filter((x) => x === 'application.secret_created').length, 1);
  t.equal(types.filter((x) => x === 'application.secret_rotated').length, 2);
  t.equal(types.filter((x) => x === 'application.secret_revoked').length, 1);
  const text = await everythingReadable(created.clientId);
  for (const s of [created.clientSecret, body.clientSecret, defaulted.json().clientSecret]) t.notMatch(text, s);
});

t.test('secrets: errors as the other admin routes answer them', async (t) => {
  const secretApp = (await createApp({ tokenEndpointAuthMethod: 'client_secret_post' })).json();
  const publicApp = (await createApp({})).json();

  const unknownApp = await admin({ method: 'GET', url: `${BASE}/nobody-${process.pid}/secrets` });
  t.equal(unknownApp.statusCode, 404);
  t.same(unknownApp.json(), { error: 'NOT_FOUND', message: `No application with client id nobody-${process.pid}` });
  t.equal(unknownApp.headers['cache-control'], 'no-store');

  const rotateUnknown = await admin({ method: 'POST', url: `${BASE}/nobody-${process.pid}/secrets` });
  t.equal(rotateUnknown.statusCode, 404);
  t.equal(rotateUnknown.json().error, 'NOT_FOUND');

  const noSecret = await admin({ method: 'POST', url: `${BASE}/${publicApp.clientId}/secrets` });
  t.equal(noSecret.statusCode, 409);
  t.same(noSecret.json(), {
    error: 'NO_CLIENT_SECRET',
    message: `Application ${publicApp.clientId} authenticates with none: it has no client secret`,
  });

  const staticApp = await admin({ method: 'POST', url: `${BASE}/static-jwt/secrets` });
  t.equal(staticApp.statusCode, 409);
  t.equal(staticApp.json().error, 'STATIC_APPLICATION');

  for (const payload of [{ overlapSeconds: -1 }, { overlapSeconds: 30 * 86400 + 1 }, { overlap: 5 }]) {
    const bad = await admin({ method: 'POST', url: `${BASE}/${secretApp.clientId}/secrets`, payload });
    t.equal(bad.statusCode, 400, JSON.stringify(payload));
    t.equal(bad.json().error, 'VALIDATION_ERROR');
    t.notOk('clientSecret' in bad.json());
  }
  t.equal((await app.services.applications.listSecrets(secretApp.clientId)).length, 1, 'nothing rotated');

  const unknownSecret = await admin({ method: 'DELETE', url: `${BASE}/${secretApp.clientId}/secrets/cs_nope` });
  t.equal(unknownSecret.statusCode, 404);
  t.same(unknownSecret.json(), {
    error: 'NOT_FOUND',
    message: `Application ${secretApp.clientId} has no secret cs_nope`,
  });

  // Another application's secret id is not this application's.
  const [other] = await app.services.applications.listSecrets(secretApp.clientId);
  const secondApp = (await createApp({ tokenEndpointAuthMethod: 'client_secret_post' })).json();
  const cross = await admin({ method: 'DELETE', url: `${BASE}/${secondApp.clientId}/secrets/${other!.id}` });
  t.equal(cross.statusCode, 404);
  t.equal((await app.services.applications.listSecrets(secretApp.clientId)).length, 1);

  const anonymous = await app.inject({ method: 'POST', url: `${BASE}/${secretApp.clientId}/secrets` });
  t.equal(anonymous.statusCode, 401);
  t.equal(anonymous.json().error, 'UNAUTHORIZED');
});

t.test('the OpenAPI document describes the secret routes and the answer with the secret', async (t) => {
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  const secrets = doc.paths['/api/admin/applications/{clientId}/secrets'];
  t.ok(secrets?.get?.responses?.['200'], 'GET .../secrets');
  t.ok(secrets?.post?.responses?.['201'], 'POST .../secrets');
  t.ok(doc.paths['/api/admin/applications/{clientId}/secrets/{secretId}']?.delete?.responses?.['204']);
  const created = doc.paths['/api/admin/applications'].post.responses['201'].content['application/json'].schema;
  t.ok(created.properties.clientSecret, 'the create answer may carry clientSecret');
  t.notOk((created.required ?? []).includes('clientSecret'), 'optional: only when one was made');
});
