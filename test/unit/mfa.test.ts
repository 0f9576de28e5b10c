// The amr/acr rules of second factors (src/domain/mfa.ts): what a session's methods are worth.
import t from 'tap';
import {
  ACR_MFA,
  ACR_PASSWORD,
  acrOf,
  combineAmr,
  hasSecondFactor,
  meetsAcr,
  passkeyAmr,
} from '../../src/domain/mfa.js';

t.test('a password and a possession factor make mfa; one factor does not', async (t) => {
  t.same(combineAmr(['pwd'], ['otp']), ['pwd', 'otp', 'mfa']);
  t.same(combineAmr(['pwd'], ['hwk']), ['pwd', 'hwk', 'mfa']);
  t.same(combineAmr(['pwd'], ['swk']), ['pwd', 'swk', 'mfa']);
  t.same(combineAmr(['pwd'], []), ['pwd']);
  t.same(combineAmr([], ['otp']), ['otp'], 'a code alone is one factor');
  t.same(combineAmr(['pwd'], ['pwd']), ['pwd'], 'the same method twice is still one');
  t.same(combineAmr(['pwd', 'otp', 'mfa'], ['otp']), ['pwd', 'otp', 'mfa'], 'a step-up of an mfa session adds nothing');
});

t.test('a passkey with user verification is mfa on its own; without it, one factor', async (t) => {
  t.same(passkeyAmr({ backedUp: false, deviceType: 'singleDevice' }, true), ['hwk', 'user', 'mfa']);
  t.same(passkeyAmr({ backedUp: true, deviceType: 'multiDevice' }, true), ['swk', 'user', 'mfa']);
  t.same(passkeyAmr({ backedUp: false, deviceType: 'multiDevice' }, false), ['swk']);
  t.equal(acrOf(combineAmr([], passkeyAmr({ backedUp: false, deviceType: 'singleDevice' }, false))), ACR_PASSWORD);
  t.equal(acrOf(passkeyAmr({ backedUp: false, deviceType: 'singleDevice' }, true)), ACR_MFA);
});

t.test('levels: mfa meets both, pwd only its own, unknown values never', async (t) => {
  t.ok(meetsAcr(['pwd', 'otp', 'mfa'], ACR_MFA));
  t.ok(meetsAcr(['pwd', 'otp', 'mfa'], ACR_PASSWORD));
  t.ok(meetsAcr(['pwd'], ACR_PASSWORD));
  t.notOk(meetsAcr(['pwd'], ACR_MFA));
  t.notOk(meetsAcr(['pwd', 'otp', 'mfa'], 'urn:other:gold'));
});

t.test('recovery codes alone are no second factor (a fallback for one)', async (t) => {
  t.notOk(hasSecondFactor({ passkeys: 0, totp: false, recoveryCodes: 10 }));
  t.ok(hasSecondFactor({ passkeys: 1, totp: false, recoveryCodes: 0 }));
  t.ok(hasSecondFactor({ passkeys: 0, totp: true, recoveryCodes: 0 }));
});
