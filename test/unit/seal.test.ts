// seal/unseal (src/oauth/seal.ts) and the sealed authorization code (src/oauth/sealed-code.ts): what was sealed
// opens only with the same key, purpose and associated data, and any change to the sealed text is refused,
// including a truncated authentication tag (GCM would accept a prefix of the right tag unless told its length).
import t from 'tap';
import { seal, unseal } from '../../src/oauth/seal.js';
import { type CodeContents, openCode, sealCode } from '../../src/oauth/sealed-code.js';

const secretKey = 'unit-test-secret-key-unit-test-secret-key';
const options = { secretKey, purpose: 'unit', aad: 'row-1' };

t.test('seal and unseal', async (t) => {
  const sealed = seal('plain text', options);
  t.equal(unseal(sealed, options), 'plain text', 'opens with the same key, purpose and aad');
  t.equal(unseal(sealed, { ...options, secretKey: `${secretKey}x` }), undefined, 'another key');
  t.equal(unseal(sealed, { ...options, purpose: 'other' }), undefined, 'another purpose');
  t.equal(unseal(sealed, { ...options, aad: 'row-2' }), undefined, 'another aad');
  const [version, iv, ciphertext, tag] = sealed.split('.') as [string, string, string, string];
  const tagBytes = Buffer.from(tag, 'base64url');
  for (const length of [15, 12, 8, 4]) {
    const short = [version, iv, ciphertext, tagBytes.subarray(0, length).toString('base64url')].join('.');
    t.equal(unseal(short, options), undefined, `a tag truncated to ${length} bytes is refused`);
  }
  t.not(seal('plain text', options), sealed, 'a fresh IV each time');
});

t.test('sealed codes', async (t) => {
  const contents: CodeContents = {
    grantId: 'g-1',
    clientId: 'client',
    userId: 'user',
    sessionId: 'session',
    authTime: new Date(1_700_000_000_000),
    issuedAt: '2026-11-24 21:00:00.123456+00',
    expiresAt: new Date(1_700_000_060_000),
    redirectUriHash: 'hash',
    codeChallenge: 'c'.repeat(43),
    nonce: 'n\u0000 \u{1F600}',
    scope: 'openid',
    amr: ['pwd', 'otp', 'mfa'],
  };
  const code = sealCode(contents, secretKey);
  t.same(openCode(code, secretKey), { ...contents, resources: [] }, 'round trip, microseconds and odd nonces kept');
  const withResources = { ...contents, resources: ['https://api.example.com', 'urn:example:b'] };
  t.same(openCode(sealCode(withResources, secretKey), secretKey), withResources, 'the resources (RFC 8707) kept');
  t.same(
    openCode(sealCode({ ...withResources, amr: null }, secretKey), secretKey),
    { ...withResources, amr: null },
    'resources without amr',
  );
  t.same(openCode(sealCode({ ...contents, nonce: null }, secretKey), secretKey)?.nonce, null, 'no nonce');
  t.same(openCode(sealCode({ ...contents, amr: null }, secretKey), secretKey)?.amr, null, 'no amr');
  // A code sealed before amr was carried (eleven members) still opens, with amr null (no acr/amr claims).
  const { amr: _amr, ...older } = contents;
  const packed11 = JSON.stringify([
    older.grantId,
    older.clientId,
    older.userId,
    older.sessionId,
    older.authTime.getTime(),
    older.issuedAt,
    older.expiresAt.getTime(),
    older.redirectUriHash,
    older.codeChallenge,
    older.nonce,
    older.scope,
  ]);
  const sealedOld = seal(packed11, { secretKey, purpose: 'authorization code', aad: 'authorization code' });
  t.same(
    openCode(sealedOld, secretKey),
    { ...older, amr: null, resources: [] },
    'a code sealed before amr: opens, amr null',
  );
  const badAmr = JSON.stringify([...JSON.parse(packed11), ['pwd', 1]]);
  t.equal(
    openCode(seal(badAmr, { secretKey, purpose: 'authorization code', aad: 'authorization code' }), secretKey),
    undefined,
    'an amr that is not a list of strings',
  );
  t.equal(openCode(code, `${secretKey}x`), undefined, 'another SECRET_KEY');
  t.equal(
    openCode(
      seal('["not","a","code"]', { secretKey, purpose: 'authorization code', aad: 'authorization code' }),
      secretKey,
    ),
    undefined,
    'a sealed value that is not a code',
  );
  t.equal(openCode(seal(JSON.stringify(['g']), { ...options }), secretKey), undefined, 'sealed for another purpose');
  t.equal(openCode('v1.a.b.c', secretKey), undefined, 'garbage');
  t.match(code, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/, 'URL-safe');
});
