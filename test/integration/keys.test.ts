// Signing-key rotation without downtime: next → current → retired, JWKS, verification across rotation.
import t from 'tap';
import * as jose from 'jose';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import { obtainTokens } from '../helpers/flow.js';
import { KeyStore } from '../../src/services/key-store.js';
import { listAuditEvents } from '../../db/repositories/audit.js';

const { app, database, config } = await buildTestApp(t);
const redirectUri = 'https://rp.example.com/cb';
const client = await app.services.applications.create(
  { clientName: 'Keys RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
await app.services.users.create(
  { email: 'kim@example.com', password: 'kim-password-1', emailVerified: true },
  { actor: 'test' },
);
const flow = {
  clientId: client.clientId,
  redirectUri,
  email: 'kim@example.com',
  password: 'kim-password-1',
  scope: 'openid',
};

const keysList = async () =>
  (await app.inject({ method: 'GET', url: '/api/admin/keys', headers: adminHeaders })).json().items as Array<{
    kid: string;
    state: string;
  }>;
const jwks = async () => (await app.inject({ method: 'GET', url: '/api/auth/jwks' })).json() as jose.JSONWebKeySet;
const rotate = (force?: boolean) =>
  app.inject({
    method: 'POST',
    url: '/api/admin/keys/rotate',
    headers: adminHeaders,
    payload: force === undefined ? {} : { force },
  });
const verify = async (idToken: string) =>
  jose.jwtVerify(idToken, jose.createLocalJWKSet(await jwks()), { issuer: config.issuer, audience: client.clientId });

t.test('a new database starts with a current key and a published next key', async (t) => {
  const keys = await keysList();
  t.same(
    keys.map((k) => k.state),
    ['current', 'next'],
  );
  const published = await jwks();
  t.same(
    published.keys.map((k) => k.kid).sort(),
    keys.map((k) => k.kid).sort(),
    'the next key is in the JWKS before it signs',
  );
  for (const k of published.keys)
    t.equal(k.kid, await jose.calculateJwkThumbprint(k as jose.JWK), 'kid is the RFC 7638 thumbprint');
});

t.test('a rotation right after the next key appeared is refused unless forced', async (t) => {
  const res = await rotate();
  t.equal(res.statusCode, 409);
  t.equal(res.json().error, 'NEXT_KEY_TOO_NEW');
  t.match(res.json().message, /may cache the JWKS for 300 s/);
  // The body is optional: a POST without one (curl -X POST) reaches the same answer, not a 400.
  const bare = await app.inject({ method: 'POST', url: '/api/admin/keys/rotate', headers: adminHeaders });
  t.equal(bare.statusCode, 409);
  t.equal(bare.json().error, 'NEXT_KEY_TOO_NEW');
});

t.test('rotation during traffic: tokens signed before still verify, new ones carry the new kid', async (t) => {
  const before = await keysList();
  const oldCurrent = before.find((k) => k.state === 'current')!.kid;
  const oldNext = before.find((k) => k.state === 'next')!.kid;
  const { tokens: early } = await obtainTokens(app, flow);
  t.equal(jose.decodeProtectedHeader(early.id_token).kid, oldCurrent);

  // Exchanges in flight while the rotation happens.
  const traffic = Promise.all(Array.from({ length: 4 }, () => obtainTokens(app, flow)));
  const rotated = await rotate(true);
  t.equal(rotated.statusCode, 200);
  const during = await traffic;
  const after = rotated.json().items as Array<{ kid: string; state: string }>;
  t.equal(after.find((k) => k.state === 'current')!.kid, oldNext, 'next became current');
  t.equal(after.find((k) => k.state === 'retired')!.kid, oldCurrent, 'current became retired');
  t.equal(after.filter((k) => k.state === 'next').length, 1, 'a new next is published');

  const { tokens: late } = await obtainTokens(app, flow);
  t.equal(jose.decodeProtectedHeader(late.id_token).kid, oldNext);
  for (const tokens of [early, late, ...during.map((d) => d.tokens)]) {
    const { payload } = await verify(tokens.id_token);
    t.equal(payload.aud, client.clientId);
  }
  const events = await listAuditEvents(database.db, { type: 'signing_key.rotated' });
  t.equal(events.length, 1);
  t.equal(events[0]!.actor, 'admin-api');
});

t.test('retiring: the current key cannot be retired; a retired one leaves the JWKS', async (t) => {
  const keys = await keysList();
  const current = keys.find((k) => k.state === 'current')!.kid;
  const retired = keys.find((k) => k.state === 'retired')!.kid;
  const refused = await app.inject({ method: 'POST', url: `/api/admin/keys/${current}/retire`, headers: adminHeaders });
  t.equal(refused.statusCode, 409);
  t.equal(refused.json().error, 'KEY_IS_CURRENT');
  const { tokens } = await obtainTokens(app, flow);
  const old = await app.inject({ method: 'POST', url: `/api/admin/keys/${retired}/retire`, headers: adminHeaders });
  t.equal(old.statusCode, 200);
  t.notOk((await jwks()).keys.some((k) => k.kid === retired));
  t.ok(await verify(tokens.id_token), 'tokens of the current key are unaffected');
  const missing = await app.inject({ method: 'POST', url: '/api/admin/keys/nope/retire', headers: adminHeaders });
  t.equal(missing.statusCode, 404);
});

t.test('another instance on the same database picks up a rotation within its refresh interval', async (t) => {
  const other = new KeyStore(database.db, config.secretKey!, { refreshSeconds: 6 });
  await other.init();
  const before = (await other.currentKey()).kid;
  t.equal((await rotate(true)).statusCode, 200);
  t.equal((await other.currentKey()).kid, before, 'still cached');
  await new Promise((r) => setTimeout(r, 6100));
  const now = (await keysList()).find((k) => k.state === 'current')!.kid;
  t.equal((await other.currentKey()).kid, now, 'refreshed');
});
