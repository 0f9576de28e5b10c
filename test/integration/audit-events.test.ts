// Every event type decisions.md lists ("Events") is recorded by the feature it belongs to, each in the
// same transaction as its change; read back through the admin audit API.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { adminHeaders, buildTestApp } from '../helpers/app.js';
import {
  confirmSignUpLink,
  cookiesOf,
  obtainCode,
  obtainTokens,
  outboxLinks,
  signInWithInject,
  tokenRequest,
} from '../helpers/flow.js';

// Copied from decisions.md, "Events" (the design folder is not part of the repository).
const listed = [
  'user.signed_up',
  'user.signed_in',
  'user.sign_in_failed',
  'session.revoked',
  'authorization.granted',
  'consent.granted',
  'token.issued',
  'refresh_token.rotated',
  'refresh_token.reuse_detected',
  'code.reuse_detected',
  'token.revoked',
  'password_reset.requested',
  'password_reset.completed',
  'application.created',
  'application.updated',
  'signing_key.rotated',
];

t.test('every event type of decisions.md is recorded by its feature', async (t) => {
  const { app, config } = await buildTestApp(t);
  const json = { 'content-type': 'application/json' };

  // application.created / application.updated (admin API)
  const created = await app.inject({
    method: 'POST',
    url: '/api/admin/applications',
    headers: adminHeaders,
    payload: { clientName: 'Audited', redirectUris: ['https://audited.example/cb'] },
  });
  const clientId = created.json().clientId as string;
  await app.inject({
    method: 'PATCH',
    url: `/api/admin/applications/${clientId}`,
    headers: adminHeaders,
    payload: { clientName: 'Audited app' },
  });

  // user.signed_up, user.sign_in_failed, user.signed_in, session.revoked (sign-out)
  const email = 'audited@example.com';
  const password = 'audited passphrase';
  const signUp = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-up',
    headers: json,
    payload: { email, password },
  });
  t.equal(signUp.statusCode, 201);
  // Issue 31: the account exists once the mailed link is confirmed (outbox.jsonl: no SMTP_URL here), in the
  // browser that signed up (its sign-up cookie).
  const confirmed = await confirmSignUpLink(app, await outboxLinks(config.dataDir)(email), cookiesOf(signUp));
  t.equal(confirmed.res.statusCode, 200);
  await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: json,
    payload: { email, password: 'wrong password' },
  });
  const signIn = await app.inject({
    method: 'POST',
    url: '/api/auth/sign-in',
    headers: json,
    payload: { email, password },
  });
  const session = (signIn.cookies as Array<{ name: string; value: string }>).find((c) => c.name === 'idp.session')!;
  await app.inject({ method: 'POST', url: '/api/auth/sign-out', cookies: { 'idp.session': session.value } });
  await app.services.users.update(email, { emailVerified: true }, { actor: 'test' });

  // authorization.granted, consent.granted, token.issued, refresh_token.rotated, refresh_token.reuse_detected
  const flow = { clientId, redirectUri: 'https://audited.example/cb', email, password, scope: 'openid offline_access' };
  const { tokens } = await obtainTokens(app, flow);
  const rotated = await tokenRequest(app, {
    grant_type: 'refresh_token',
    refresh_token: tokens.refresh_token!,
    client_id: clientId,
  });
  t.equal(rotated.statusCode, 200);
  await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token!, client_id: clientId });

  // code.reuse_detected
  const { code, verifier } = await obtainCode(app, flow, (await signInWithInject(app, email, password)).jar);
  const exchange = {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: clientId,
    redirect_uri: flow.redirectUri,
  };
  t.equal((await tokenRequest(app, exchange)).statusCode, 200);
  t.equal((await tokenRequest(app, exchange)).statusCode, 400);

  // token.revoked (RFC 7009)
  const fresh = await obtainTokens(app, flow);
  const revoke = await app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/revoke',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ token: fresh.tokens.access_token, client_id: clientId }).toString(),
  });
  t.equal(revoke.statusCode, 200);

  // password_reset.requested / password_reset.completed
  await app.inject({
    method: 'POST',
    url: '/api/auth/request-password-reset',
    headers: json,
    payload: { email, redirectTo: '/login/reset-password' },
  });
  await app.services.recovery.drain();
  await app.services.mailer.drain();
  // No SMTP_URL in tests: the mail is in the development outbox.
  const outbox = readFileSync(`${config.dataDir}/outbox.jsonl`, 'utf8');
  const token = /\/reset-password\/([A-Za-z0-9_-]{43})/.exec(outbox)?.[1];
  t.ok(token, 'the reset link was mailed');
  const reset = await app.inject({
    method: 'POST',
    url: '/api/auth/reset-password',
    headers: json,
    payload: { token, newPassword: 'another passphrase' },
  });
  t.equal(reset.statusCode, 200);

  // signing_key.rotated (force: the next key was just published)
  const rotate = await app.inject({
    method: 'POST',
    url: '/api/admin/keys/rotate',
    headers: adminHeaders,
    payload: { force: true },
  });
  t.equal(rotate.statusCode, 200);

  const types = new Set<string>();
  let cursor: string | undefined;
  do {
    const page = await app.inject({
      method: 'GET',
      url: `/api/admin/audit-events?limit=200${cursor ? `&cursor=${cursor}` : ''}`,
      headers: adminHeaders,
    });
    for (const e of page.json().items as Array<{ type: string }>) types.add(e.type);
    cursor = page.json().nextCursor;
  } while (cursor);
  const missing = listed.filter((e) => !types.has(e));
  t.same(missing, [], `recorded: ${[...types].sort().join(', ')}`);
});
