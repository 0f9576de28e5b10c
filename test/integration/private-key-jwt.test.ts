// private_key_jwt client authentication (RFC 7523 §2.2 and §3, OpenID Connect Core §9, issue 33): an assertion
// signed by a key of the application's jwks or of its jwks_uri (served here by a local HTTP server), iss = sub =
// client_id, aud naming this provider, exp near, each jti once; anything else is invalid_client, never a 500.
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as jose from 'jose';
import { sql } from 'kysely';
import { buildTestApp } from '../helpers/app.js';
import { recordClientAssertionJti } from '../../db/repositories/client-assertion-jtis.js';

const { app, database, config, logs } = await buildTestApp(t);
const ISSUER = config.issuer;
const TOKEN_ENDPOINT = `${ISSUER}/oauth2/token`;
const redirectUri = 'https://server.example.com/cb';
const ctx = { actor: 'test' };

type KeyPair = { privateKey: jose.CryptoKey; publicJwk: jose.JWK; alg: string };
async function keyPair(alg: string, kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await jose.generateKeyPair(alg, { extractable: true });
  return { privateKey, publicJwk: { ...(await jose.exportJWK(publicKey)), kid }, alg };
}
const rsa = await keyPair('RS256', 'rsa-1');
const ec = await keyPair('ES256', 'ec-1');
const ed = await keyPair('EdDSA', 'ed-1');
const other = await keyPair('RS256', 'rsa-1'); // same kid, another key
const remoteA = await keyPair('PS256', 'remote-a');
const remoteB = await keyPair('ES384', 'remote-b');

// The client's own server, publishing its keys.
let served: Record<string, () => { status: number; body: string; headers?: Record<string, string> }> = {};
const requests: string[] = [];
const jwksServer: Server = createServer((req, res) => {
  requests.push(req.url ?? '');
  if (req.url === '/slow') return; // never answers: the fetch times out
  const answer = served[req.url ?? '']?.() ?? { status: 404, body: 'not found' };
  res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
  res.end(answer.body);
});
await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', resolve));
t.teardown(() => {
  jwksServer.closeAllConnections();
  return new Promise<void>((resolve) => jwksServer.close(() => resolve()));
});
const jwksBase = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}`;
const jwksOf = (...pairs: KeyPair[]) => JSON.stringify({ keys: pairs.map((p) => p.publicJwk) });
served = {
  '/a': () => ({ status: 200, body: jwksOf(remoteA) }),
  '/b': () => ({ status: 200, body: jwksOf(remoteB) }),
  '/redirect': () => ({ status: 302, body: '', headers: { location: `${jwksBase}/a` } }),
  '/big': () => ({ status: 200, body: JSON.stringify({ keys: [remoteA.publicJwk], pad: 'x'.repeat(70_000) }) }),
  '/html': () => ({ status: 200, body: '<html>keys</html>' }),
  '/500': () => ({ status: 500, body: '{}' }),
};

const inline = await app.services.applications.create(
  {
    clientName: 'JWT RP',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwks: { keys: [rsa.publicJwk, ec.publicJwk, ed.publicJwk] as Array<{ kty: string }> },
  },
  ctx,
);
const remote = await app.services.applications.create(
  {
    clientName: 'JWKS URI RP',
    redirectUris: [redirectUri],
    tokenEndpointAuthMethod: 'private_key_jwt',
    jwksUri: `${jwksBase}/a`,
  },
  ctx,
);
const secretClient = await app.services.applications.create(
  { clientName: 'Secret RP', redirectUris: [redirectUri], tokenEndpointAuthMethod: 'client_secret_basic' },
  ctx,
);

const now = () => Math.floor(Date.now() / 1000);

/** A client assertion; `claims` entries set to undefined are left out. */
async function assertion(
  key: KeyPair,
  clientId: string,
  claims: Record<string, unknown> = {},
  header: Record<string, unknown> = {},
): Promise<string> {
  const payload = Object.fromEntries(
    Object.entries({
      iss: clientId,
      sub: clientId,
      aud: TOKEN_ENDPOINT,
      jti: randomUUID(),
      iat: now(),
      exp: now() + 60,
      ...claims,
    }).filter(([, v]) => v !== undefined),
  );
  return new jose.SignJWT(payload)
    .setProtectedHeader({ alg: key.alg, kid: key.publicJwk.kid, ...header } as jose.JWTHeaderParameters)
    .sign(key.privateKey);
}

const post = (path: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: `/api/auth/oauth2/${path}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(form).toString(),
  });

const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** A refresh grant with a made-up token: invalid_grant proves the client authenticated. */
const refresh = (clientAssertion: string, form: Record<string, string> = {}) =>
  post('token', {
    grant_type: 'refresh_token',
    refresh_token: 'x'.repeat(43),
    client_assertion_type: JWT_BEARER,
    client_assertion: clientAssertion,
    ...form,
  });

function authenticated(t: Test, res: Awaited<ReturnType<typeof post>>, message = 'past client authentication') {
  t.equal(res.statusCode, 400, message);
  t.same(res.json(), {
    error: 'invalid_grant',
    error_description: 'the refresh token is invalid, expired or revoked',
  });
}

function refused(t: Test, res: Awaited<ReturnType<typeof post>>, description: string, detail?: RegExp) {
  t.equal(res.statusCode, 401);
  t.same(res.json(), { error: 'invalid_client', error_description: description });
  t.equal(res.headers['www-authenticate'], undefined, 'no Authorization header was tried');
  t.equal(res.headers['cache-control'], 'no-store');
  if (detail) {
    const line = logs.lines.map((l) => JSON.parse(l)).findLast((l) => l.oauthError === 'invalid_client');
    t.match(line?.detail, detail, 'the reason is in the log');
  }
}

const INVALID = 'the client assertion is invalid';

t.test('a valid assertion signed by a key of the inline jwks authenticates (RS256, ES256, EdDSA)', async (t) => {
  for (const key of [rsa, ec, ed]) {
    authenticated(t, await refresh(await assertion(key, inline.clientId)), key.alg);
  }
  authenticated(t, await refresh(await assertion(rsa, inline.clientId, {}, { kid: undefined })), 'kid is optional');
  authenticated(
    t,
    await refresh(await assertion(rsa, inline.clientId), { client_id: inline.clientId }),
    'client_id in the body may repeat the client',
  );
  authenticated(t, await refresh(await assertion(ec, inline.clientId, { aud: ISSUER })), 'aud: the issuer');
  authenticated(
    t,
    await refresh(await assertion(ec, inline.clientId, { aud: ['https://other.example', TOKEN_ENDPOINT] })),
    'aud: a list naming the token endpoint',
  );
  authenticated(t, await refresh(await assertion(ec, inline.clientId, { iat: undefined })), 'iat is optional');
});

t.test('a valid assertion signed by a key of the jwks_uri authenticates; the set is cached', async (t) => {
  const before = requests.length;
  authenticated(t, await refresh(await assertion(remoteA, remote.clientId)));
  authenticated(t, await refresh(await assertion(remoteA, remote.clientId)));
  t.equal(requests.slice(before).filter((r) => r === '/a').length, 1, 'fetched once');
});

t.test('a key the client does not have is refused', async (t) => {
  refused(t, await refresh(await assertion(other, inline.clientId)), INVALID, /signature verification failed/);
  refused(t, await refresh(await assertion(remoteB, inline.clientId)), INVALID, /no applicable key|ERR_JWKS_NO/i);
  refused(t, await refresh(await assertion(rsa, remote.clientId, {}, { kid: 'remote-a' })), INVALID);
});

t.test('alg none and HS256 are refused, even with a valid-looking payload', async (t) => {
  const claims = {
    iss: inline.clientId,
    sub: inline.clientId,
    aud: TOKEN_ENDPOINT,
    jti: randomUUID(),
    exp: now() + 60,
  };
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  refused(t, await refresh(`${b64({ alg: 'none' })}.${b64(claims)}.`), INVALID, /alg none is not accepted/);
  const hs = await new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256' })
    .sign(new TextEncoder().encode('a shared secret is not a private key'));
  refused(t, await refresh(hs), INVALID, /alg HS256 is not accepted/);
  refused(t, await refresh('not-a-jwt'), INVALID);
});

t.test('the audience must name this provider', async (t) => {
  refused(
    t,
    await refresh(await assertion(rsa, inline.clientId, { aud: 'https://other.example/token' })),
    INVALID,
    /aud/,
  );
  refused(t, await refresh(await assertion(rsa, inline.clientId, { aud: undefined })), INVALID, /aud/);
  // The revocation endpoint's URL is an audience only at the revocation endpoint.
  refused(t, await refresh(await assertion(rsa, inline.clientId, { aud: `${ISSUER}/oauth2/revoke` })), INVALID, /aud/);
  const revoke = await post('revoke', {
    token: 'y'.repeat(43),
    client_assertion_type: JWT_BEARER,
    client_assertion: await assertion(rsa, inline.clientId, { aud: `${ISSUER}/oauth2/revoke` }),
  });
  t.equal(revoke.statusCode, 200, 'the revocation endpoint accepts its own URL');
  const revokeWithToken = await post('revoke', {
    token: 'y'.repeat(43),
    client_assertion_type: JWT_BEARER,
    client_assertion: await assertion(rsa, inline.clientId),
  });
  t.equal(revokeWithToken.statusCode, 200, 'and the token endpoint URL');
  const revokeElsewhere = await post('revoke', {
    token: 'y'.repeat(43),
    client_assertion_type: JWT_BEARER,
    client_assertion: await assertion(rsa, inline.clientId, { aud: 'https://other.example/revoke' }),
  });
  refused(t, revokeElsewhere, INVALID, /aud/);
});

t.test('iss and sub must be the client_id', async (t) => {
  refused(
    t,
    await refresh(await assertion(rsa, inline.clientId, { iss: 'someone-else' })),
    INVALID,
    /unexpected "iss"/,
  );
  refused(t, await refresh(await assertion(rsa, inline.clientId, { iss: undefined })), INVALID, /iss/);
  // The sub names the client looked up: another client's id means another client's keys.
  refused(
    t,
    await refresh(await assertion(rsa, inline.clientId, { sub: remote.clientId })),
    INVALID,
    /no applicable key/,
  );
  const noSub = await refresh(await assertion(rsa, inline.clientId, { sub: undefined }));
  refused(t, noSub, INVALID, /no sub/);
});

t.test('exp is required, in the future, and at most 5 minutes ahead', async (t) => {
  refused(t, await refresh(await assertion(rsa, inline.clientId, { exp: now() - 60 })), INVALID, /"exp"/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { exp: undefined })), INVALID, /exp/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { exp: now() + 3600 })), INVALID, /at most 300 s/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { iat: now() + 600 })), INVALID, /iat/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { nbf: now() + 600 })), INVALID, /nbf/);
  authenticated(t, await refresh(await assertion(rsa, inline.clientId, { exp: now() + 290 })), '290 s is fine');
});

t.test('jti is required, and an assertion is accepted once', async (t) => {
  refused(t, await refresh(await assertion(rsa, inline.clientId, { jti: undefined })), INVALID, /jti/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { jti: '' })), INVALID, /jti/);
  refused(t, await refresh(await assertion(rsa, inline.clientId, { jti: 'j'.repeat(300) })), INVALID, /jti/);
  const once = await assertion(rsa, inline.clientId);
  authenticated(t, await refresh(once));
  refused(t, await refresh(once), 'the client assertion was already used', /replayed/);
  const jti = randomUUID();
  authenticated(t, await refresh(await assertion(ec, inline.clientId, { jti })));
  refused(
    t,
    await refresh(await assertion(ed, inline.clientId, { jti })),
    'the client assertion was already used',
    /replayed/,
  );
  // The same jti from another client is that client's own.
  authenticated(t, await refresh(await assertion(remoteA, remote.clientId, { jti })));
});

t.test('two requests with one assertion at once: exactly one authenticates', async (t) => {
  for (let round = 0; round < 3; round++) {
    const one = await assertion(rsa, inline.clientId);
    const answers = await Promise.all([refresh(one), refresh(one), refresh(one)]);
    const errors = answers.map((a) => a.json().error).sort();
    t.same(errors, ['invalid_client', 'invalid_client', 'invalid_grant'], `round ${round}`);
    for (const a of answers.filter((a) => a.statusCode === 401)) {
      t.equal(a.json().error_description, 'the client assertion was already used');
    }
  }
});

t.test('the jti table: live entries refuse, expired ones are taken over and cleaned up', async (t) => {
  const db = database.db;
  const clientId = inline.clientId;
  const soon = new Date(Date.now() + 60_000);
  t.equal(await recordClientAssertionJti(db, { clientId, jti: 'table-1', expiresAt: soon }), true);
  t.equal(await recordClientAssertionJti(db, { clientId, jti: 'table-1', expiresAt: soon }), false);
  await sql`update client_assertion_jtis set expires_at = now() - interval '1 second'
    where jti = 'table-1'`.execute(db);
  t.equal(
    await recordClientAssertionJti(db, { clientId, jti: 'table-1', expiresAt: soon }),
    true,
    'an expired entry not yet cleaned up no longer blocks',
  );
  await sql`update client_assertion_jtis set expires_at = now() - interval '1 second'
    where jti = 'table-1'`.execute(db);
  const deleted = await app.services.cleanup.runOnce();
  t.ok(deleted.client_assertion_jtis! >= 1, 'the clean-up job deletes expired entries');
  const left = await db.selectFrom('client_assertion_jtis').select('jti').where('jti', '=', 'table-1').execute();
  t.same(left, []);
  const live = await db.selectFrom('client_assertion_jtis').select('expires_at').where('client_id', '=', clientId);
  t.ok((await live.execute()).length > 0, 'live entries stay');
});

t.test('a client registered for secrets presenting an assertion is refused, and the reverse', async (t) => {
  refused(
    t,
    await refresh(await assertion(rsa, secretClient.clientId)),
    'this client authenticates with client_secret_basic',
  );
  const basic = `Basic ${Buffer.from(`${inline.clientId}:whatever`).toString('base64')}`;
  const res = await post(
    'token',
    { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) },
    { authorization: basic },
  );
  t.equal(res.statusCode, 401);
  t.same(res.json(), { error: 'invalid_client', error_description: 'this client authenticates with private_key_jwt' });
  t.equal(res.headers['www-authenticate'], 'Basic realm="token"');
  refused(
    t,
    await post('token', { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43), client_id: inline.clientId }),
    'this client authenticates with private_key_jwt',
  );
  const wrongType = await refresh(await assertion(rsa, inline.clientId), { client_assertion_type: 'jwt' });
  t.equal(wrongType.statusCode, 400);
  t.same(wrongType.json(), {
    error: 'invalid_request',
    error_description: 'client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
  });
});

t.test('a jwks_uri that fails is invalid_client (401), never a 500', async (t) => {
  const FETCH = 'the keys of this client could not be fetched from its jwks_uri';
  const at = async (path: string) => {
    const client = await app.services.applications.create(
      {
        clientName: `Broken ${path}`,
        redirectUris: [redirectUri],
        tokenEndpointAuthMethod: 'private_key_jwt',
        jwksUri: path.startsWith('http') ? path : `${jwksBase}${path}`,
      },
      ctx,
    );
    return refresh(await assertion(remoteA, client.clientId));
  };
  // A port nothing listens on.
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const closedPort = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  refused(t, await at(`http://127.0.0.1:${closedPort}/jwks`), FETCH, /ECONNREFUSED|fetch failed/);
  refused(t, await at('/missing'), FETCH, /answered 404/);
  refused(t, await at('/500'), FETCH, /answered 500/);
  refused(t, await at('/redirect'), FETCH, /answered 302/);
  refused(t, await at('/big'), FETCH, /over 65536 bytes/);
  refused(t, await at('/html'), FETCH, /not JSON/);
  const started = Date.now();
  refused(t, await at('/slow'), FETCH, /timed out/);
  t.ok(Date.now() - started < 10_000, 'within the timeout');
});

t.test('a changed jwks_uri or jwks is used at once, never the old key set', async (t) => {
  const client = await app.services.applications.create(
    {
      clientName: 'Moving keys',
      redirectUris: [redirectUri],
      tokenEndpointAuthMethod: 'private_key_jwt',
      jwksUri: `${jwksBase}/a`,
    },
    ctx,
  );
  authenticated(t, await refresh(await assertion(remoteA, client.clientId)));
  await app.services.applications.update(client.clientId, { jwksUri: `${jwksBase}/b` }, ctx);
  refused(t, await refresh(await assertion(remoteA, client.clientId)), INVALID);
  authenticated(t, await refresh(await assertion(remoteB, client.clientId)));
  await app.services.applications.update(
    client.clientId,
    { jwksUri: null, jwks: { keys: [ec.publicJwk] as Array<{ kty: string }> } },
    ctx,
  );
  refused(t, await refresh(await assertion(remoteB, client.clientId)), INVALID);
  authenticated(t, await refresh(await assertion(ec, client.clientId)));
  await app.services.applications.update(client.clientId, { jwks: { keys: [ed.publicJwk] as never } }, ctx);
  refused(t, await refresh(await assertion(ec, client.clientId)), INVALID);
  authenticated(t, await refresh(await assertion(ed, client.clientId)));
});

t.test('a provider on https fetches no http jwks_uri, not even on loopback', async (t) => {
  const secure = await buildTestApp(t, { database, env: { BASE_URL: 'https://id.example.com' } });
  const before = requests.length;
  const res = await secure.app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: 'x'.repeat(43),
      client_assertion_type: JWT_BEARER,
      client_assertion: await assertion(remoteA, remote.clientId, { aud: 'https://id.example.com/api/auth' }),
    }).toString(),
  });
  t.equal(res.statusCode, 401);
  t.same(res.json(), { error: 'invalid_client', error_description: INVALID });
  t.equal(res.headers['cache-control'], 'no-store');
  const line = secure.logs.lines.map((l) => JSON.parse(l)).findLast((l) => l.oauthError === 'invalid_client');
  t.match(line?.detail, /jwks_uri http:\/\/127\.0\.0\.1:\d+ is not https/);
  t.equal(requests.length, before, 'nothing was fetched');
});
