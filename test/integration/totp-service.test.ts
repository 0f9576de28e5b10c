// TOTP and recovery codes (issue 34) at the service, with a fixed clock: enrolment (the secret sealed at rest),
// a code accepted once, the windows either side, recovery codes used once each, regeneration, and what every
// change does (other sessions end, the user is mailed, the audit trail).
import t from 'tap';
import { Secret, TOTP } from 'otpauth';
import { buildTestApp } from '../helpers/app.js';
import { startSmtp } from '../helpers/smtp.js';
import { listAuditEvents } from '../../db/repositories/audit.js';
import { normalizeRecoveryCode } from '../../src/services/factors/recovery-codes.js';

const smtp = await startSmtp();
t.teardown(() => smtp.close());
// A fixed clock, moved by the tests: 2026-11-27 12:00:00 UTC, the start of a time step.
const T0 = Date.UTC(2026, 10, 27, 12, 0, 0);
let now = T0;
const { app } = await buildTestApp(t, { env: { SMTP_URL: smtp.url }, clock: () => now });
const meta = { ip: '203.0.113.9', userAgent: 'test' };

async function user(email: string) {
  const created = await app.services.users.create(
    { email, password: 'a good long password', emailVerified: true },
    { actor: 'test' },
  );
  const { session } = await app.services.sessions.signedIn(created.id, meta, ['pwd']);
  return { id: created.id, email, sessionId: session.id };
}

/** The code an authenticator app shows at `at` for this enrolment's secret. */
const codeAt = (secret: string, at: number) =>
  new TOTP({ secret: Secret.fromBase32(secret.replace(/ /g, '')), digits: 6, period: 30, algorithm: 'SHA1' }).generate({
    timestamp: at,
  });
const STEP = 30_000;

/** The mails of this subject to this address, once `count` of them reached the SMTP server. */
async function mailsArrive(to: string, subject: string, count: number) {
  for (let i = 0; i < 200; i++) {
    await app.services.mailer.drain();
    const found = smtp.mails.filter((m) => m.to === to && m.subject === subject);
    if (found.length >= count) return found;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`fewer than ${count} mails "${subject}" for ${to}`);
}

t.test('enrolment: QR code, URI and secret; sealed at rest; confirmed by a first code', async (t) => {
  const pat = await user('pat@example.com');
  const other = await app.services.sessions.signedIn(pat.id, meta, ['pwd']);
  t.same(await app.services.totp.status(pat.id), { enabled: false, pending: false });

  const first = await app.services.totp.start(pat);
  t.match(first.uri, /^otpauth:\/\/totp\/localhost:pat%40example\.com\?/, 'label: the issuer and the e-mail');
  const uri = new URL(first.uri);
  t.equal(uri.searchParams.get('issuer'), 'localhost');
  t.equal(uri.searchParams.get('algorithm'), 'SHA1');
  t.equal(uri.searchParams.get('digits'), '6');
  t.equal(uri.searchParams.get('period'), '30');
  t.equal(uri.searchParams.get('secret'), first.secret.replace(/ /g, ''), 'the text is the secret of the URI');
  t.equal(Secret.fromBase32(first.secret.replace(/ /g, '')).bytes.length, 20, '160 bits');
  t.match(first.qrSvg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" [^>]*viewBox=/, 'an inline SVG');
  t.notMatch(first.qrSvg, /<script|href|<image|style=/i, 'nothing active or external in it');
  t.same(await app.services.totp.status(pat.id), { enabled: false, pending: true });

  // Starting again replaces the unconfirmed secret: a code of the first one no longer confirms.
  const second = await app.services.totp.start(pat);
  t.not(second.secret, first.secret);
  const row = await app.db
    .selectFrom('totp_factors')
    .selectAll()
    .where('user_id', '=', pat.id)
    .executeTakeFirstOrThrow();
  const plain = second.secret.replace(/ /g, '');
  t.notMatch(row.secret, plain, 'the secret is not stored in clear');
  t.notMatch(row.secret, Buffer.from(plain).toString('base64'), 'nor merely encoded');
  t.match(row.secret, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/, 'sealed (AES-256-GCM)');
  t.equal(row.confirmed_at, null);
  await t.rejects(
    app.services.totp.confirm(pat.id, codeAt(first.secret, now), { keepSessionId: pat.sessionId, ip: null }),
    {
      code: 'INVALID_TOTP_CODE',
    },
  );
  t.same((await app.services.totp.pendingEnrolment(pat))?.secret, second.secret, 'shown again after a wrong code');

  // Another user's row holding this sealed secret opens to nothing (the user id is its associated data).
  const eve = await user('eve@example.com');
  await app.services.totp.start(eve);
  await app.db.updateTable('totp_factors').set({ secret: row.secret }).where('user_id', '=', eve.id).execute();
  t.equal(await app.services.totp.pendingEnrolment(eve), undefined, 'a copied secret does not open');

  const confirmed = await app.services.totp.confirm(pat.id, codeAt(second.secret, now), {
    keepSessionId: pat.sessionId,
    ip: '203.0.113.9',
  });
  t.equal(confirmed.recoveryCodes?.length, 10, 'the first factor comes with ten recovery codes');
  t.same(await app.services.totp.status(pat.id), { enabled: true, pending: false });
  t.same(await app.services.factors.summary(pat.id), { passkeys: 0, totp: true, recoveryCodes: 10 });
  await t.rejects(app.services.totp.start(pat), { statusCode: 409, code: 'TOTP_ALREADY_ENABLED' });
  t.equal(await app.services.totp.verify(pat.id, codeAt(second.secret, now)), false, 'the confirming code is used');

  // The change ended the other session (not this one), was audited and mailed.
  t.ok((await app.services.sessions.resolve(other.token)) === undefined, 'the other session ended');
  const types = (await listAuditEvents(app.db, { userId: pat.id })).map((e) => e.type);
  t.ok(types.includes('mfa.totp_enabled'));
  t.ok(types.includes('mfa.recovery_codes_generated'));
  t.ok(types.includes('session.revoked'));
  const [mail] = await mailsArrive('pat@example.com', 'The sign-in methods of your account changed', 1);
  t.match(mail?.text, 'an authenticator app was set up');
});

t.test('a code is accepted once; the steps either side are accepted, two away are not', async (t) => {
  now = T0 + 1000 * STEP;
  const sam = await user('sam@example.com');
  const { secret } = await app.services.totp.start(sam);
  await app.services.totp.confirm(sam.id, codeAt(secret, now), { keepSessionId: sam.sessionId, ip: null });
  const verify = (at: number) => app.services.totp.verify(sam.id, codeAt(secret, at));

  now += STEP; // step S+1
  const code = codeAt(secret, now);
  t.equal(await app.services.totp.verify(sam.id, code), true, 'a right code');
  t.equal(await app.services.totp.verify(sam.id, code), false, 'the same code again');
  t.equal(await app.services.totp.verify(sam.id, ` ${code.slice(0, 3)} ${code.slice(3)} `), false, 'typed apart');

  now += 2 * STEP; // S+3
  t.equal(await verify(now - STEP), true, 'the previous step');
  t.equal(await verify(now - STEP), false, 'and only once');
  t.equal(await verify(now), true, 'the current step after it');
  t.equal(await verify(now + STEP), true, 'the next step');
  t.equal(await verify(now), false, 'an earlier step than one accepted is refused');

  now += 10 * STEP; // S+13: nothing accepted beyond S+4 yet
  t.equal(await verify(now - 2 * STEP), false, 'two steps before');
  t.equal(await verify(now + 2 * STEP), false, 'two steps after');
  t.equal(await verify(now), true, 'the current one still works after those refusals');

  now += STEP;
  for (const wrong of ['', '12345', '1234567', 'abcdef', '12345a']) {
    t.equal(await app.services.totp.verify(sam.id, wrong), false, `"${wrong}" is refused`);
  }
  const right = codeAt(secret, now);
  const wrong = String((Number(right) + 1) % 1_000_000).padStart(6, '0');
  t.equal(await app.services.totp.verify(sam.id, wrong), false, 'a wrong code');

  // The same code at the same moment, twice: one acceptance (the conditional UPDATE).
  const both = await Promise.all([verify(now), verify(now), verify(now)]);
  t.same(both.filter(Boolean).length, 1, 'accepted once under concurrency');

  const nobody = await user('nobody@example.com');
  t.equal(await app.services.totp.verify(nobody.id, right), false, 'a user without TOTP');
});

t.test('recovery codes: each used once, regeneration kills the old set, never without a factor', async (t) => {
  now = T0 + 5000 * STEP;
  const kim = await user('kim@example.com');
  await t.rejects(app.services.recoveryCodes.generate(kim.id, { keepSessionId: kim.sessionId, ip: null }), {
    statusCode: 409,
    code: 'NO_SECOND_FACTOR',
  });
  const { secret } = await app.services.totp.start(kim);
  const { recoveryCodes } = await app.services.totp.confirm(kim.id, codeAt(secret, now), {
    keepSessionId: kim.sessionId,
    ip: null,
  });
  const codes = recoveryCodes!;
  t.equal(new Set(codes).size, 10, 'ten different codes');
  for (const code of codes) t.match(code, /^[a-z2-7]{5}-[a-z2-7]{5}$/);
  const stored = await app.db.selectFrom('recovery_codes').selectAll().where('user_id', '=', kim.id).execute();
  t.equal(stored.length, 10);
  for (const row of stored) {
    t.notOk(
      codes.some((c) => row.code_hash.includes(normalizeRecoveryCode(c)!) || row.code_hash.includes(c)),
      'only hashes',
    );
  }

  const ip = { ip: '198.51.100.7' };
  t.same(await app.services.recoveryCodes.use(kim.id, codes[0]!, ip), { remaining: 9 });
  t.equal(await app.services.recoveryCodes.use(kim.id, codes[0]!, ip), undefined, 'a used code is refused');
  t.same(
    await app.services.recoveryCodes.use(kim.id, `  ${codes[1]!.toUpperCase().replace('-', ' ')} `, ip),
    { remaining: 8 },
    'case, dashes and spaces do not matter',
  );
  t.equal(await app.services.recoveryCodes.use(kim.id, 'aaaaa-aaaaa', ip), undefined, 'a made-up code');
  t.equal(await app.services.recoveryCodes.use(kim.id, 'x'.repeat(2000), ip), undefined, 'garbage');
  const sam = await app.db.selectFrom('users').select('id').where('email', '=', 'sam@example.com').executeTakeFirst();
  t.equal(await app.services.recoveryCodes.use(sam!.id, codes[2]!, ip), undefined, "another user's code");

  // Two uses of one code at the same moment: one succeeds.
  const both = await Promise.all([
    app.services.recoveryCodes.use(kim.id, codes[3]!, ip),
    app.services.recoveryCodes.use(kim.id, codes[3]!, ip),
  ]);
  t.equal(both.filter(Boolean).length, 1, 'used once under concurrency');

  const used = (await listAuditEvents(app.db, { userId: kim.id, type: 'mfa.recovery_code_used' })).map(
    (e) => e.detail.remaining,
  );
  t.same(used.sort(), [7, 8, 9], 'each use audited with the codes left');
  const notices = await mailsArrive('kim@example.com', 'A recovery code was used to sign in to your account', 3);
  t.equal(notices.length, 3, 'the user is told of each recovery-code sign-in');
  t.match(notices[0]!.text, /\d recovery codes are left/);

  const fresh = await app.services.recoveryCodes.generate(kim.id, { keepSessionId: kim.sessionId, ip: null });
  t.equal(fresh.length, 10);
  t.equal(await app.services.recoveryCodes.use(kim.id, codes[4]!, ip), undefined, 'an old unused code is dead');
  t.same(await app.services.recoveryCodes.use(kim.id, fresh[0]!, ip), { remaining: 9 }, 'a new one works');

  // Without a second factor, codes do not sign in (a fallback, not a factor).
  await app.services.totp.remove(kim.id, { keepSessionId: kim.sessionId, ip: null });
  t.equal(await app.services.recoveryCodes.use(kim.id, fresh[1]!, ip), undefined, 'no factor: no code use');
  const events = (await listAuditEvents(app.db, { userId: kim.id })).map((e) => e.type);
  t.ok(events.includes('mfa.totp_removed'));
  await t.rejects(app.services.totp.remove(kim.id, { keepSessionId: kim.sessionId, ip: null }), {
    code: 'TOTP_NOT_FOUND',
  });
});
