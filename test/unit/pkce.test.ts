// RFC 7636 PKCE, S256 only: the Appendix B vector, verifier and challenge syntax, constant-time verification.
import t from 'tap';
import { createHash } from 'node:crypto';
import { isValidCodeChallenge, isValidCodeVerifier, s256Challenge, verifyPkce } from '../../src/oauth/pkce.js';

// RFC 7636 Appendix B.
const RFC_VERIFIER = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk';
const RFC_CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

t.test('RFC 7636 Appendix B: BASE64URL(SHA256(ASCII(verifier)))', async (t) => {
  t.equal(RFC_VERIFIER.length, 43);
  t.equal(s256Challenge(RFC_VERIFIER), RFC_CHALLENGE);
  // The same value computed without the module, so the vector also checks the encoding (no padding).
  t.equal(createHash('sha256').update(RFC_VERIFIER).digest('base64url'), RFC_CHALLENGE);
  t.notMatch(s256Challenge(RFC_VERIFIER), /=/, 'no base64 padding');
  t.ok(isValidCodeVerifier(RFC_VERIFIER));
  t.ok(isValidCodeChallenge(RFC_CHALLENGE));
  t.equal(verifyPkce(RFC_VERIFIER, RFC_CHALLENGE), true);
});

t.test('code_verifier is 43 to 128 unreserved characters (RFC 7636 §4.1)', async (t) => {
  const unreserved = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~';
  t.equal(isValidCodeVerifier('a'.repeat(42)), false, '42 characters is too short');
  t.equal(isValidCodeVerifier('a'.repeat(43)), true, '43 characters is the minimum');
  t.equal(isValidCodeVerifier('a'.repeat(128)), true, '128 characters is the maximum');
  t.equal(isValidCodeVerifier('a'.repeat(129)), false, '129 characters is too long');
  t.equal(isValidCodeVerifier(''), false, 'empty');
  t.equal(isValidCodeVerifier(unreserved), true, 'every unreserved character is allowed');
  t.equal(isValidCodeVerifier('-._~'.repeat(11)), true, 'only punctuation from the unreserved set');
  for (const bad of ['+', '/', '=', ' ', '%', '!', '*', '"', '\n', '\t', 'é', 'ß', '\u0000', '\u{1F600}']) {
    const verifier = `${'a'.repeat(42)}${bad}`;
    t.equal(isValidCodeVerifier(verifier), false, `rejects ${JSON.stringify(bad)}`);
    t.equal(isValidCodeVerifier(`${bad}${'a'.repeat(50)}`), false, `rejects a leading ${JSON.stringify(bad)}`);
  }
  t.equal(isValidCodeVerifier(`${'a'.repeat(43)}\n`), false, 'no trailing newline (anchored pattern)');
});

t.test('code_challenge is 43 base64url characters', async (t) => {
  t.equal(isValidCodeChallenge(RFC_CHALLENGE), true);
  t.equal(isValidCodeChallenge(RFC_CHALLENGE.slice(0, 42)), false, '42 characters');
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE}A`), false, '44 characters');
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE.slice(0, 42)}=`), false, 'padding');
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE}=`), false, 'padded S256 value');
  t.equal(
    isValidCodeChallenge(createHash('sha256').update(RFC_VERIFIER).digest('base64')),
    false,
    'standard base64 (+, / and =)',
  );
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE.slice(0, 42)}.`), false, '"." is unreserved but not base64url');
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE.slice(0, 42)}~`), false, '"~" is not base64url');
  t.equal(isValidCodeChallenge(RFC_VERIFIER), true, 'a 43-character verifier is syntactically a challenge too');
  t.equal(isValidCodeChallenge(''), false);
  t.equal(isValidCodeChallenge(`${RFC_CHALLENGE}\n`), false, 'no trailing newline');
});

t.test('verifyPkce: true only for the verifier the challenge was made from', async (t) => {
  for (const length of [43, 64, 128]) {
    const verifier = Array.from({ length }, (_, i) => 'Aa0-._~'[i % 7]).join('');
    t.equal(verifyPkce(verifier, s256Challenge(verifier)), true, `${length}-character verifier`);
  }
  const other = `${RFC_VERIFIER.slice(0, -1)}l`;
  t.equal(verifyPkce(other, RFC_CHALLENGE), false, 'a verifier one character off');
  t.equal(verifyPkce(RFC_VERIFIER, s256Challenge(other)), false, 'another challenge');
  t.equal(
    verifyPkce(RFC_CHALLENGE, RFC_CHALLENGE),
    false,
    'the challenge itself is not its verifier (plain is not allowed)',
  );
  t.equal(verifyPkce(RFC_VERIFIER, RFC_VERIFIER), false, 'plain: challenge equal to the verifier');
});

t.test('verifyPkce: malformed inputs are false, never an exception', async (t) => {
  const short = 'a'.repeat(42);
  t.equal(verifyPkce(short, s256Challenge(short)), false, 'a too-short verifier, even with its own S256 challenge');
  const long = 'a'.repeat(129);
  t.equal(verifyPkce(long, s256Challenge(long)), false, 'a too-long verifier, even with its own S256 challenge');
  const illegal = `${'a'.repeat(42)}+`;
  t.equal(verifyPkce(illegal, s256Challenge(illegal)), false, 'a verifier with an illegal character');
  t.equal(
    verifyPkce(RFC_VERIFIER, `${RFC_CHALLENGE}=`),
    false,
    'a padded challenge (different length: no timingSafeEqual throw)',
  );
  t.equal(verifyPkce(RFC_VERIFIER, RFC_CHALLENGE.slice(0, 42)), false, 'a short challenge');
  t.equal(verifyPkce(RFC_VERIFIER, ''), false, 'an empty challenge');
  t.equal(verifyPkce('', RFC_CHALLENGE), false, 'an empty verifier');
  t.equal(verifyPkce(RFC_VERIFIER, 'é'.repeat(43)), false, 'a non-ASCII challenge');
});
