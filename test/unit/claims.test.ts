// Scope-gated claims, redirect_uri rules, at_hash, and signing keys (RFC 7638 kids, encryption at rest).
import t from 'tap';
import { createHash } from 'node:crypto';
import * as jose from 'jose';
import { claimsFor, type ClaimSource } from '../../src/oauth/claims.js';
import { signIdToken } from '../../src/oauth/id-token.js';
import {
  decryptPrivateJwk,
  encryptPrivateJwk,
  generateSigningKey,
  KeyDecryptionError,
  publicMembers,
  SUPPORTED_SIGNING_ALGS,
  type SigningAlg,
} from '../../src/oauth/keys.js';
import { redirectUriProblem } from '../../src/oauth/redirect-uri.js';
import { atHash, generateToken, hashToken } from '../../src/oauth/tokens.js';

const SECRET = 'test-secret-key-0123456789abcdefghijklmnop';
const OTHER_SECRET = 'another-secret-key-0123456789abcdefghijkl';

const fullUser: ClaimSource = {
  id: '5f0c4a52-3f7e-4a8e-9d55-0d6b2b0b1c11',
  email: 'ada@example.com',
  email_verified: true,
  name: 'Ada Lovelace',
  given_name: 'Ada',
  family_name: 'Lovelace',
  picture: 'https://cdn.example.com/ada.png',
  permissions: ['reports:read', 'reports:write'],
};

const bareUser: ClaimSource = {
  id: '0e2f9a7c-1111-4222-8333-944455556666',
  email: 'bare@example.com',
  email_verified: false,
  name: null,
  given_name: '',
  family_name: null,
  picture: '',
  permissions: [],
};

t.test('claimsFor: openid gives sub only', async (t) => {
  t.same(claimsFor(fullUser, ['openid']), { sub: fullUser.id });
  t.same(claimsFor(fullUser, []), { sub: fullUser.id }, 'sub is always there');
  t.same(claimsFor(fullUser, ['openid', 'offline_access']), { sub: fullUser.id }, 'offline_access yields no claims');
  t.same(claimsFor(fullUser, ['openid', 'address', 'phone']), { sub: fullUser.id }, 'unknown scopes yield nothing');
});

t.test('claimsFor: profile, email and permissions each give exactly their claims', async (t) => {
  t.strictSame(claimsFor(fullUser, ['openid', 'profile']), {
    sub: fullUser.id,
    name: 'Ada Lovelace',
    given_name: 'Ada',
    family_name: 'Lovelace',
    picture: 'https://cdn.example.com/ada.png',
  });
  t.strictSame(claimsFor(fullUser, ['openid', 'email']), {
    sub: fullUser.id,
    email: 'ada@example.com',
    email_verified: true,
  });
  t.strictSame(claimsFor(fullUser, ['openid', 'permissions']), {
    sub: fullUser.id,
    permissions: ['reports:read', 'reports:write'],
  });
  t.strictSame(claimsFor(fullUser, ['openid', 'profile', 'email', 'offline_access', 'permissions']), {
    sub: fullUser.id,
    name: 'Ada Lovelace',
    given_name: 'Ada',
    family_name: 'Lovelace',
    picture: 'https://cdn.example.com/ada.png',
    email: 'ada@example.com',
    email_verified: true,
    permissions: ['reports:read', 'reports:write'],
  });
});

t.test('claimsFor: absent values are omitted, never null or ""', async (t) => {
  const claims = claimsFor(bareUser, ['openid', 'profile', 'email', 'permissions']);
  for (const [name, value] of Object.entries(claims)) {
    t.not(value, null, `${name} is not null`);
    t.not(value, '', `${name} is not ""`);
    t.not(value, undefined, `${name} is not undefined`);
  }
  for (const name of ['name', 'given_name', 'family_name', 'picture']) t.notOk(name in claims, `${name} omitted`);
  t.equal(claims.email_verified, false, 'false is a value: email_verified stays');
  t.equal(claims.email, 'bare@example.com');
  // An empty permission list is a value (the user has none), not an absent one.
  t.same(claims.permissions, [], 'permissions is an (empty) array, never null');
  t.same(Object.keys(claimsFor(bareUser, ['openid', 'profile'])), ['sub'], 'a profile without values gives sub only');
});

t.test('redirect-uri.ts validates registrations only; matching is exact (tested through authorize)', async (t) => {
  // Registration rules accept these near-misses as separate registrations; the authorize endpoint
  // compares with app.redirectUris.includes (test/integration/authorize.test.ts proves each is refused).
  for (const uri of [
    'https://rp.example.com/callback',
    'https://rp.example.com/callback/',
    'https://RP.example.com/callback',
    'https://rp.example.com/callback?x=1',
  ]) {
    t.equal(redirectUriProblem(uri), undefined, uri);
  }
});

t.test('at_hash: left half of SHA-256 of the ASCII access token, base64url (OIDC Core §3.1.3.6)', async (t) => {
  // Example values of OIDC Core Appendix A.3 (ID Token with at_hash for this access token).
  t.equal(atHash('jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y'), '77QmUPtjPfzWtF2AnpK9RQ');
  for (let i = 0; i < 5; i++) {
    const token = generateToken();
    const independent = createHash('sha256')
      .update(Buffer.from(token, 'ascii'))
      .digest()
      .subarray(0, 16)
      .toString('base64url');
    t.equal(atHash(token), independent);
    t.equal(atHash(token).length, 22, '128 bits, base64url, no padding');
  }
});

t.test('opaque tokens: 256 bits, base64url; only a SHA-256 is stored', async (t) => {
  const token = generateToken();
  t.match(token, /^[A-Za-z0-9_-]{43}$/);
  t.not(generateToken(), token);
  t.equal(hashToken(token), createHash('sha256').update(token).digest('base64url'));
  t.not(hashToken(token), token);
});

t.test('signIdToken: at_hash for RS256 and ES256 keys is the SHA-256 left half', async (t) => {
  for (const alg of ['RS256', 'ES256'] as const) {
    const generated = await generateSigningKey(alg);
    const key = (await jose.importJWK(generated.privateJwk, alg)) as jose.CryptoKey;
    const accessToken = generateToken();
    const jwt = await signIdToken(
      {
        issuer: 'https://id.example.com/api/auth',
        subject: 'user-1',
        clientId: 'client-1',
        authTime: new Date(),
        nonce: 'n-1',
        accessToken,
        sessionId: 's-1',
        lifetimeSeconds: 600,
      },
      { kid: generated.kid, alg, key },
    );
    const { payload, protectedHeader } = await jose.jwtVerify(jwt, await jose.importJWK(generated.publicJwk, alg), {
      issuer: 'https://id.example.com/api/auth',
      audience: 'client-1',
    });
    t.equal(protectedHeader.kid, generated.kid, `${alg}: kid in the header`);
    t.equal(protectedHeader.alg, alg);
    t.equal(
      payload.at_hash,
      createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url'),
      `${alg}: at_hash`,
    );
    t.equal(payload.nonce, 'n-1');
    t.equal(payload.sid, 's-1');
    t.equal(payload.azp, 'client-1');
    t.equal((payload.exp ?? 0) - (payload.iat ?? 0), 600);
  }
});

t.test('signIdToken: at_hash for an EdDSA (Ed25519) key is the left half of SHA-512', async (t) => {
  const generated = await generateSigningKey('EdDSA');
  const key = (await jose.importJWK(generated.privateJwk, 'EdDSA')) as jose.CryptoKey;
  const accessToken = generateToken();
  const jwt = await signIdToken(
    {
      issuer: 'https://id.example.com/api/auth',
      subject: 'user-1',
      clientId: 'client-1',
      authTime: new Date(),
      accessToken,
      lifetimeSeconds: 600,
    },
    { kid: generated.kid, alg: 'EdDSA', key },
  );
  const payload = jose.decodeJwt(jwt);
  t.equal(payload.at_hash, createHash('sha512').update(accessToken).digest().subarray(0, 32).toString('base64url'));
});

t.test('generateSigningKey: kid is the RFC 7638 SHA-256 thumbprint of the public JWK', async (t) => {
  t.same([...SUPPORTED_SIGNING_ALGS], ['RS256', 'ES256', 'EdDSA']);
  const expected: Record<SigningAlg, { kty: string; crv?: string; privateMembers: string[] }> = {
    RS256: { kty: 'RSA', privateMembers: ['d', 'p', 'q', 'dp', 'dq', 'qi'] },
    ES256: { kty: 'EC', crv: 'P-256', privateMembers: ['d'] },
    EdDSA: { kty: 'OKP', crv: 'Ed25519', privateMembers: ['d'] },
  };
  for (const alg of SUPPORTED_SIGNING_ALGS) {
    const key = await generateSigningKey(alg);
    const { kid: _kid, alg: _alg, use: _use, ...bare } = key.publicJwk;
    t.equal(key.kid, await jose.calculateJwkThumbprint(bare, 'sha256'), `${alg}: kid is the thumbprint`);
    t.equal(
      key.kid,
      await jose.calculateJwkThumbprint(key.publicJwk, 'sha256'),
      `${alg}: extra members do not change it`,
    );
    t.match(key.kid, /^[A-Za-z0-9_-]{43}$/);
    t.equal(key.alg, alg);
    t.equal(key.publicJwk.kid, key.kid);
    t.equal(key.publicJwk.alg, alg);
    t.equal(key.publicJwk.use, 'sig');
    t.equal(key.publicJwk.kty, expected[alg].kty);
    if (expected[alg].crv) t.equal(key.publicJwk.crv, expected[alg].crv);
    if (alg === 'RS256')
      t.ok(Buffer.from(key.publicJwk.n!, 'base64url').length >= 256, 'RSA modulus of at least 2048 bits');
    for (const m of expected[alg].privateMembers) {
      t.notOk(m in key.publicJwk, `${alg}: no ${m} in the public JWK`);
      t.type((key.privateJwk as Record<string, unknown>)[m], 'string', `${alg}: ${m} in the private JWK`);
    }
    t.equal(key.privateJwk.kid, key.kid);
  }
  t.not((await generateSigningKey('ES256')).kid, (await generateSigningKey('ES256')).kid, 'a new key each time');
});

t.test('encrypt/decrypt of private JWKs: round trip, and only with the same SECRET_KEY and kid', async (t) => {
  for (const alg of SUPPORTED_SIGNING_ALGS) {
    const key = await generateSigningKey(alg);
    const sealed = encryptPrivateJwk(key.privateJwk, key.kid, SECRET);
    t.match(sealed, /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/, `${alg}: v1.<iv>.<ciphertext>.<tag>`);
    t.notMatch(
      sealed,
      new RegExp(key.privateJwk.d!.slice(0, 16).replace(/[-]/g, '\\-')),
      `${alg}: the private part is not in clear`,
    );
    t.not(encryptPrivateJwk(key.privateJwk, key.kid, SECRET), sealed, `${alg}: a fresh IV each time`);
    const opened = decryptPrivateJwk(sealed, key.kid, SECRET);
    t.strictSame(opened, key.privateJwk, `${alg}: round trip`);

    // The decrypted key signs what the public key verifies.
    const jws = await new jose.CompactSign(new TextEncoder().encode('hello'))
      .setProtectedHeader({ alg })
      .sign(await jose.importJWK(opened, alg));
    const verified = await jose.compactVerify(jws, await jose.importJWK(key.publicJwk, alg));
    t.equal(new TextDecoder().decode(verified.payload), 'hello');

    t.throws(
      () => decryptPrivateJwk(sealed, key.kid, OTHER_SECRET),
      KeyDecryptionError,
      `${alg}: another SECRET_KEY fails`,
    );
    t.throws(
      () => decryptPrivateJwk(sealed, `${key.kid.slice(0, -1)}x`, SECRET),
      KeyDecryptionError,
      `${alg}: the kid is authenticated (AAD)`,
    );
  }
});

t.test('decryptPrivateJwk: tampered or malformed values are KeyDecryptionError', async (t) => {
  const key = await generateSigningKey('ES256');
  const sealed = encryptPrivateJwk(key.privateJwk, key.kid, SECRET);
  const [v, iv, ct, tag] = sealed.split('.') as [string, string, string, string];
  const flip = (s: string) => {
    const b = Buffer.from(s, 'base64url');
    b[0] = b[0]! ^ 1;
    return b.toString('base64url');
  };
  const cases: Record<string, string> = {
    'tampered ciphertext': [v, iv, flip(ct), tag].join('.'),
    'tampered tag': [v, iv, ct, flip(tag)].join('.'),
    'tampered iv': [v, flip(iv), ct, tag].join('.'),
    'unknown version': ['v2', iv, ct, tag].join('.'),
    'missing tag': [v, iv, ct].join('.'),
    empty: '',
    'plain JSON': JSON.stringify(key.privateJwk),
  };
  for (const [name, value] of Object.entries(cases)) {
    t.throws(() => decryptPrivateJwk(value, key.kid, SECRET), KeyDecryptionError, name);
  }
  try {
    decryptPrivateJwk(sealed, key.kid, OTHER_SECRET);
  } catch (error) {
    t.equal((error as Error).name, 'KeyDecryptionError');
    t.match((error as Error).message, key.kid, 'names the kid');
    t.match((error as Error).message, /SECRET_KEY/);
    t.notMatch((error as Error).message, OTHER_SECRET, 'never the secret');
  }
});

t.test('publicMembers strips every private member', async (t) => {
  const rsa = await generateSigningKey('RS256');
  const fromRsa = publicMembers({ ...rsa.privateJwk, use: 'sig', key_ops: ['sign'], ext: true, oth: [] } as jose.JWK);
  t.same(Object.keys(fromRsa).sort(), ['alg', 'e', 'kid', 'kty', 'n', 'use']);
  for (const m of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'key_ops', 'ext']) t.notOk(m in fromRsa, `RSA: no ${m}`);
  t.equal(fromRsa.n, rsa.publicJwk.n);

  const ec = await generateSigningKey('ES256');
  t.same(Object.keys(publicMembers(ec.privateJwk)).sort(), ['alg', 'crv', 'kid', 'kty', 'x', 'y'], 'EC: no d');
  const okp = await generateSigningKey('EdDSA');
  t.same(Object.keys(publicMembers(okp.privateJwk)).sort(), ['alg', 'crv', 'kid', 'kty', 'x'], 'OKP: no d');
  t.same(publicMembers({ kty: 'oct', k: 'c2VjcmV0' }), { kty: 'oct' }, 'a symmetric key loses k');
  t.strictSame(publicMembers(rsa.publicJwk), rsa.publicJwk, 'a public JWK is unchanged');
});
