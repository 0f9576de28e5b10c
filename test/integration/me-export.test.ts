// GET /api/me/export (issue 17): everything stored about the user as one JSON document, as an
// attachment; no secret and no hash (password, tokens, session cookie) in it; audited.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { obtainTokens } from '../helpers/flow.js';
import { meTestApp } from '../helpers/me.js';

const { app, database, newUser, signIn, me } = await meTestApp(t);
const db = database.db;
const redirectUri = 'https://rp.example/cb';
const client = await app.services.applications.create(
  { clientName: 'Export RP', redirectUris: [redirectUri] },
  { actor: 'test' },
);
const alice = await newUser({ name: 'Alice Export' });
const bob = await newUser();
const jar = await signIn(alice.email);
const { tokens } = await obtainTokens(
  app,
  {
    clientId: client.clientId,
    redirectUri,
    email: alice.email,
    password: alice.password,
    scope: 'openid offline_access',
  },
  jar,
);
await obtainTokens(app, { clientId: client.clientId, redirectUri, email: bob.email, password: bob.password });
t.equal((await me('PATCH', '', { jar, body: { givenName: 'Alice' } })).statusCode, 200);

t.test('the export is one JSON attachment with every kind of row about the user', async (t) => {
  const res = await me('GET', '/export', { jar });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['cache-control'], 'no-store');
  t.match(res.headers['content-type'], /^application\/json/);
  t.match(res.headers['content-disposition'], /^attachment; filename="[^"]+\.json"$/);
  const doc = res.json();
  t.match(doc.profile, {
    id: alice.id,
    email: alice.email,
    name: 'Alice Export',
    givenName: 'Alice',
    hasPassword: true,
  });
  t.same(
    doc.applications.map((a: { clientId: string }) => a.clientId),
    [client.clientId],
  );
  t.equal(doc.sessions.length, 1, 'the one session (the flow reused it)');
  t.ok(doc.grants.length >= 1);
  t.ok(doc.accessTokens.length >= 1);
  t.ok(doc.refreshTokens.length >= 1);
  t.ok(doc.auditEvents.some((e: { type: string }) => e.type === 'user.updated'));
  t.ok(doc.auditEvents.some((e: { type: string }) => e.type === 'user.signed_in'));
  t.match(doc.grants[0], { clientId: client.clientId, scope: 'openid offline_access' });
  t.ok(Date.parse(doc.exportedAt));
});

t.test('no secret or hash, and nothing about another user', async (t) => {
  const body = (await me('GET', '/export', { jar })).body;
  const user = await db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', alice.id)
    .executeTakeFirstOrThrow();
  const hashes = [
    ...(await db.selectFrom('sessions').select('token_hash as h').where('user_id', '=', alice.id).execute()),
    ...(await db.selectFrom('access_tokens').select('token_hash as h').where('user_id', '=', alice.id).execute()),
    ...(await db.selectFrom('refresh_tokens').select('token_hash as h').where('user_id', '=', alice.id).execute()),
  ].map((r) => r.h);
  t.ok(hashes.length >= 3);
  for (const secret of [
    user.password_hash!,
    alice.password,
    tokens.access_token,
    tokens.refresh_token!,
    ...Object.values(jar),
    ...hashes,
  ]) {
    t.notOk(body.includes(secret), `not in the export: ${secret.slice(0, 12)}...`);
  }
  t.notMatch(body, /token_?hash|password_?hash|argon2|sealed/i);
  t.notOk(body.includes(bob.email) || body.includes(bob.id), 'nothing of bob');
});

t.test('an export is audited as user.data_exported', async (t) => {
  const events = await listAuditEvents(db, { type: 'user.data_exported', userId: alice.id });
  t.ok(events.length >= 2);
  t.equal(events[0]!.actor, 'self');
});
