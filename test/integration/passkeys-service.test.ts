// services.passkeys (issue 34) with real WebAuthn responses from a software authenticator (test/helpers/webauthn.ts):
// a registration is stored with its public key, counter, flags and a default name, and recorded as a factor
// change (other sessions end, the user is mailed); a sign-in with the passkey alone needs user verification
// and gives amr with mfa; and every attempt by someone else is refused: a reused challenge, a challenge of
// another browser, purpose or user, another origin or RP ID, a counter that goes backwards (audited), another
// user's passkey as second factor, a handle that is not the owner's, a removed passkey.
import t from 'tap';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { userHandle } from '../../src/services/factors/passkeys.js';
import { buildTestApp } from '../helpers/app.js';
import { startSmtp } from '../helpers/smtp.js';
import { softwareAuthenticator } from '../helpers/webauthn.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
const { app, database, config } = await buildTestApp(t, { env: { SMTP_URL: smtp.url } });
const { passkeys, users, sessions } = app.services;
const origin = config.mfa.origins[0]!;
const rpId = config.mfa.rpId;
const meta = { ip: '203.0.113.9', userAgent: 'test' };

const ada = await users.create(
  { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' },
  { actor: 'test' },
);
const bob = await users.create(
  { email: 'bob@example.com', password: 'correct horse battery', name: 'Bob' },
  { actor: 'test' },
);
const browser = 'a'.repeat(43);
const otherBrowser = 'b'.repeat(43);

async function enrol(user: typeof ada, authenticator: ReturnType<typeof softwareAuthenticator>, name?: string) {
  const current = await sessions.signedIn(user.id, meta);
  const options = await passkeys.registrationOptions(user, browser);
  const response = authenticator.register(options);
  const passkey = await passkeys.register(user.id, browser, response, {
    name,
    keepSessionId: current.session.id,
    ip: meta.ip,
  });
  return { passkey, response, current };
}

const code = async (p: Promise<unknown>) => {
  try {
    await p;
    return 'accepted';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
};

t.test('registration: options, storage, default name, factor change', async (t) => {
  const other = await sessions.signedIn(ada.id, meta);
  const key = softwareAuthenticator({ origin, rpId });
  const options = await passkeys.registrationOptions(ada, browser);
  t.equal(options.rp.id, rpId, 'RP ID from LOGIN_URL');
  t.equal(options.attestation, 'none');
  t.equal(options.authenticatorSelection?.residentKey, 'required', 'discoverable');
  t.equal(options.authenticatorSelection?.userVerification, 'preferred');
  t.equal(options.user.id, userHandle(ada.id), 'user handle is opaque');
  t.not(options.user.id, Buffer.from(ada.email).toString('base64url'));
  t.same(options.excludeCredentials, [], 'nothing to exclude yet');

  const current = await sessions.signedIn(ada.id, meta);
  const mail = smtp.waitFor('ada@example.com');
  const response = key.register(options);
  const passkey = await passkeys.register(ada.id, browser, response, {
    keepSessionId: current.session.id,
    ip: meta.ip,
  });
  t.equal(passkey.name, 'Passkey 1', 'default name');
  t.equal(passkey.backedUp, false);
  t.equal(passkey.deviceType, 'singleDevice');
  const row = await database.db.selectFrom('webauthn_credentials').selectAll().executeTakeFirstOrThrow();
  t.equal(row.credential_id, response.id);
  t.equal(Number(row.counter), 0);
  t.same(row.transports, ['internal']);
  t.match(row.public_key, /^[A-Za-z0-9_-]+$/, 'public key in base64url');
  t.equal(await sessions.resolve(other.token), undefined, 'the other session ended');
  t.ok(await sessions.resolve(current.token), 'the session that added it stays');
  const events = await listAuditEvents(database.db, { type: 'mfa.passkey_added' });
  t.equal(events.length, 1, 'audited');
  t.match((await mail).text, /Passkey 1/, 'the user is mailed');

  t.equal(
    await code(passkeys.register(ada.id, browser, response, { keepSessionId: current.session.id, ip: null })),
    'PASSKEY_CHALLENGE_INVALID',
    'a registration challenge is used once',
  );
  const again = await passkeys.registrationOptions(ada, browser);
  t.same(
    again.excludeCredentials?.map((c) => c.id),
    [response.id],
    'excludeCredentials lists the passkeys the user has',
  );
});

t.test('registration refusals: other browser, other user, origin, RP ID', async (t) => {
  const key = softwareAuthenticator({ origin, rpId });
  const current = await sessions.signedIn(bob.id, meta);
  const o = { keepSessionId: current.session.id, ip: null };
  let options = await passkeys.registrationOptions(bob, browser);
  t.equal(
    await code(passkeys.register(bob.id, otherBrowser, key.register(options), o)),
    'PASSKEY_CHALLENGE_INVALID',
    'a challenge from another browser is refused',
  );
  options = await passkeys.registrationOptions(ada, browser);
  t.equal(
    await code(passkeys.register(bob.id, browser, key.register(options), o)),
    'PASSKEY_CHALLENGE_INVALID',
    "another user's registration challenge is refused",
  );
  options = await passkeys.registrationOptions(bob, browser);
  t.equal(
    await code(passkeys.register(bob.id, browser, key.register(options, { origin: 'https://evil.example' }), o)),
    'PASSKEY_REFUSED',
    'another origin is refused',
  );
  options = await passkeys.registrationOptions(bob, browser);
  t.equal(
    await code(passkeys.register(bob.id, browser, key.register(options, { rpId: 'evil.example' }), o)),
    'PASSKEY_REFUSED',
    'another RP ID is refused',
  );
  const signIn = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.register(bob.id, browser, key.register({ ...options, challenge: signIn.challenge }), o)),
    'PASSKEY_CHALLENGE_INVALID',
    'a challenge made for another purpose is refused',
  );
  t.equal((await passkeys.list(bob.id)).length, 0, 'nothing was stored');
});

t.test('sign-in with a passkey alone', async (t) => {
  const key = softwareAuthenticator({ origin, rpId, synced: true });
  const { response: registered } = await enrol(bob, key, 'Phone');
  const [stored] = await passkeys.list(bob.id);
  t.equal(stored?.name, 'Phone', 'the name given');
  t.equal(stored?.backedUp, true, 'synced');

  let options = await passkeys.signInOptions(browser);
  t.equal(options.userVerification, 'required');
  t.same(options.allowCredentials ?? [], [], 'discoverable: no credential list');
  const result = await passkeys.signIn(browser, key.authenticate(options), meta);
  t.equal(result.userId, bob.id);
  t.same(result.amr, ['swk', 'user', 'mfa'], 'a synced passkey with user verification');
  const used = (await passkeys.list(bob.id))[0]!;
  t.ok(used.lastUsedAt, 'last used recorded');

  const reused = key.authenticate(options);
  t.equal(await code(passkeys.signIn(browser, reused, meta)), 'PASSKEY_CHALLENGE_INVALID', 'challenge reused');

  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(otherBrowser, key.authenticate(options), meta)),
    'PASSKEY_CHALLENGE_INVALID',
    'a challenge from another browser is refused',
  );
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options, { uv: false }), meta)),
    'PASSKEY_REFUSED',
    'without user verification, a passkey alone is refused',
  );
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options, { origin: 'http://evil.example' }), meta)),
    'PASSKEY_REFUSED',
    'wrong origin',
  );
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options, { rpId: 'evil.example' }), meta)),
    'PASSKEY_REFUSED',
    'wrong RP ID',
  );
  options = await passkeys.signInOptions(browser);
  const wrongHandle = key.authenticate(options);
  wrongHandle.response.userHandle = userHandle(ada.id);
  t.equal(await code(passkeys.signIn(browser, wrongHandle, meta)), 'PASSKEY_REFUSED', "another user's handle");
  t.ok(registered.id);
  const failures = await listAuditEvents(database.db, { type: 'user.sign_in_failed', userId: bob.id });
  t.equal(
    failures.filter((e) => (e.detail as { method?: string }).method === 'passkey').length,
    4,
    'each refused passkey (no verification, origin, RP ID, handle) is a failed sign-in in the audit trail',
  );
});

t.test('the counter must increase; a regression is refused and audited', async (t) => {
  const user = await users.create({ email: 'cy@example.com', password: 'correct horse battery' }, { actor: 'test' });
  const key = softwareAuthenticator({ origin, rpId });
  await enrol(user, key);
  let options = await passkeys.signInOptions(browser);
  await passkeys.signIn(browser, key.authenticate(options, { counter: 5 }), meta);
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options, { counter: 5 }), meta)),
    'PASSKEY_REFUSED',
    'the same counter again is refused',
  );
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options, { counter: 3 }), meta)),
    'PASSKEY_REFUSED',
    'a lower counter is refused',
  );
  const events = await listAuditEvents(database.db, { type: 'mfa.passkey_counter_regression' });
  t.equal(events.length, 2, 'each regression is audited');
  t.equal(events[0]?.user_id, user.id);
  options = await passkeys.signInOptions(browser);
  t.equal(await code(passkeys.signIn(browser, key.authenticate(options, { counter: 6 }), meta)), 'accepted');
  t.equal(
    Number(
      (
        await database.db
          .selectFrom('webauthn_credentials')
          .select('counter')
          .where('user_id', '=', user.id)
          .executeTakeFirstOrThrow()
      ).counter,
    ),
    6,
  );
});

t.test('second factor: only the user own passkeys, only the challenge made for that user', async (t) => {
  const dee = await users.create({ email: 'dee@example.com', password: 'correct horse battery' }, { actor: 'test' });
  const eve = await users.create({ email: 'eve@example.com', password: 'correct horse battery' }, { actor: 'test' });
  const deeKey = softwareAuthenticator({ origin, rpId, uv: false });
  const eveKey = softwareAuthenticator({ origin, rpId });
  const { passkey } = await enrol(dee, deeKey);
  await enrol(eve, eveKey);

  let options = await passkeys.secondFactorOptions(dee.id, browser);
  t.equal(options.userVerification, 'preferred');
  t.equal(options.allowCredentials?.length, 1, "only Dee's passkeys are allowed");
  const ok = await passkeys.verifySecondFactor(dee.id, browser, deeKey.authenticate(options), meta);
  t.same(ok.amr, ['hwk'], 'a device-bound passkey without user verification: hwk');
  t.equal(ok.passkeyId, passkey.id);

  options = await passkeys.secondFactorOptions(dee.id, browser);
  const eveAssertion = eveKey.authenticate({ ...options, allowCredentials: undefined });
  t.equal(
    await code(passkeys.verifySecondFactor(dee.id, browser, eveAssertion, meta)),
    'PASSKEY_REFUSED',
    "another user's passkey is refused as second factor",
  );
  options = await passkeys.secondFactorOptions(eve.id, browser);
  t.equal(
    await code(
      passkeys.verifySecondFactor(
        dee.id,
        browser,
        deeKey.authenticate({ ...options, allowCredentials: undefined }),
        meta,
      ),
    ),
    'PASSKEY_CHALLENGE_INVALID',
    "a challenge made for another user's second factor is refused",
  );
  options = await passkeys.secondFactorOptions(dee.id, browser);
  t.equal(
    await code(passkeys.verifySecondFactor(dee.id, otherBrowser, deeKey.authenticate(options), meta)),
    'PASSKEY_CHALLENGE_INVALID',
    'from another browser',
  );
  options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.verifySecondFactor(dee.id, browser, deeKey.authenticate(options), meta)),
    'PASSKEY_CHALLENGE_INVALID',
    'a sign-in challenge is not a second-factor challenge',
  );
});

t.test('rename and remove; a removed passkey is refused', async (t) => {
  const fay = await users.create({ email: 'fay@example.com', password: 'correct horse battery' }, { actor: 'test' });
  const key = softwareAuthenticator({ origin, rpId });
  const { passkey, current } = await enrol(fay, key);
  const renamed = await passkeys.rename(fay.id, passkey.id, '  Work\u0007 laptop  ', { ip: null });
  t.equal(renamed.name, 'Work laptop', 'trimmed, control characters out');
  t.equal(await code(passkeys.rename(fay.id, passkey.id, '   ', { ip: null })), 'VALIDATION_ERROR');
  t.equal(await code(passkeys.rename(ada.id, passkey.id, 'Mine', { ip: null })), 'PASSKEY_NOT_FOUND', 'not yours');
  t.equal(
    await code(passkeys.remove(ada.id, passkey.id, { keepSessionId: current.session.id, ip: null })),
    'PASSKEY_NOT_FOUND',
    'another user cannot remove it',
  );
  await passkeys.remove(fay.id, passkey.id, { keepSessionId: current.session.id, ip: null });
  t.same(await passkeys.list(fay.id), []);
  const removed = await listAuditEvents(database.db, { type: 'mfa.passkey_removed' });
  t.equal(removed.length, 1);
  const options = await passkeys.signInOptions(browser);
  t.equal(
    await code(passkeys.signIn(browser, key.authenticate(options), meta)),
    'PASSKEY_REFUSED',
    'a removed passkey signs nobody in',
  );
});
