// The pure rules of private_key_jwt assertions (src/oauth/client-assertion.ts): audiences, claims past jose's
// checks, and where a jwks_uri may be fetched from.
import t from 'tap';
import {
  ASSERTION_MAX_LIFETIME_SECONDS,
  assertionAudiences,
  assertionClaimsProblem,
  CLIENT_ASSERTION_ALGORITHMS,
  jwksUriFetchProblem,
} from '../../src/oauth/client-assertion.js';

const ISSUER = 'https://id.example.com/api/auth';

t.test('audiences: the issuer, the token endpoint and the endpoint receiving the assertion', async (t) => {
  t.same(assertionAudiences(ISSUER, 'token'), [ISSUER, `${ISSUER}/oauth2/token`]);
  t.same(assertionAudiences(ISSUER, 'revocation'), [ISSUER, `${ISSUER}/oauth2/token`, `${ISSUER}/oauth2/revoke`]);
  t.same(assertionAudiences(ISSUER, 'introspection'), [
    ISSUER,
    `${ISSUER}/oauth2/token`,
    `${ISSUER}/oauth2/introspect`,
  ]);
});

t.test('algorithms: asymmetric only', async (t) => {
  for (const alg of CLIENT_ASSERTION_ALGORITHMS) t.match(alg, /^(RS|PS|ES)(256|384|512)$|^EdDSA$|^Ed25519$/);
  for (const alg of ['none', 'HS256', 'HS384', 'HS512']) {
    t.notOk((CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(alg), `${alg} is not accepted`);
  }
});

t.test('claims: exp near, iat not ahead, a bounded jti', async (t) => {
  const now = 1_800_000_000;
  const ok = { exp: now + 60, iat: now, jti: 'a' };
  t.equal(assertionClaimsProblem(ok, now), undefined);
  t.equal(assertionClaimsProblem({ ...ok, iat: undefined }, now), undefined, 'iat is optional');
  t.equal(assertionClaimsProblem({ ...ok, exp: now + ASSERTION_MAX_LIFETIME_SECONDS + 15 }, now), undefined);
  t.match(assertionClaimsProblem({ ...ok, exp: now + ASSERTION_MAX_LIFETIME_SECONDS + 16 }, now), /at most 300 s/);
  t.match(assertionClaimsProblem({ ...ok, exp: undefined }, now), /no exp/);
  t.match(assertionClaimsProblem({ ...ok, iat: now + 16 }, now), /iat is in the future/);
  t.equal(assertionClaimsProblem({ ...ok, iat: now + 15 }, now), undefined, 'within the clock tolerance');
  t.match(assertionClaimsProblem({ ...ok, iat: 'yesterday' }, now), /iat/);
  t.match(assertionClaimsProblem({ ...ok, jti: undefined }, now), /no jti/);
  t.match(assertionClaimsProblem({ ...ok, jti: '' }, now), /no jti/);
  t.match(assertionClaimsProblem({ ...ok, jti: 7 }, now), /no jti/);
  t.equal(assertionClaimsProblem({ ...ok, jti: 'j'.repeat(256) }, now), undefined);
  t.match(assertionClaimsProblem({ ...ok, jti: 'j'.repeat(257) }, now), /longer than 256/);
});

t.test('jwks_uri fetches: https; http on loopback only while the provider runs on http', async (t) => {
  t.equal(jwksUriFetchProblem('https://rp.example.com/jwks', false), undefined);
  t.equal(jwksUriFetchProblem('https://rp.example.com/jwks', true), undefined);
  t.equal(jwksUriFetchProblem('http://127.0.0.1:8080/jwks', true), undefined);
  t.equal(jwksUriFetchProblem('http://localhost/jwks', true), undefined);
  t.match(jwksUriFetchProblem('http://127.0.0.1:8080/jwks', false), /not https/);
  t.match(jwksUriFetchProblem('http://rp.example.com/jwks', true), /not https/);
  t.match(jwksUriFetchProblem('file:///etc/passwd', true), /not https/);
  t.match(jwksUriFetchProblem('https://user:pw@rp.example.com/jwks', false), /credentials/);
  t.match(jwksUriFetchProblem('not a url', false), /not a URL/);
});
