// Scope parsing (RFC 6749 §3.3) against the scope table and an application's allowed scopes.
import t, { type Test } from 'tap';
import { OAuthError } from '../../src/oauth/errors.js';
import { formatScope, missingScopes, parseRequestedScope, splitScope } from '../../src/oauth/scope.js';
import { DEFAULT_ALLOWED_SCOPES, SCOPE_NAMES } from '../../src/oauth/scopes.js';

const ALL = [...SCOPE_NAMES];

function invalidScope(t: Test, fn: () => unknown, description: RegExp, message: string) {
  try {
    fn();
    t.fail(`${message}: no error`);
  } catch (error) {
    t.ok(error instanceof OAuthError, `${message}: an OAuthError`);
    t.equal((error as OAuthError).error, 'invalid_scope', `${message}: invalid_scope`);
    t.equal((error as OAuthError).statusCode, 400, `${message}: 400`);
    t.match((error as OAuthError).description, description, `${message}: description`);
  }
}

t.test('the scope table has the five scope names of the spec, openid first', async (t) => {
  t.same(ALL, ['openid', 'profile', 'email', 'offline_access', 'permissions']);
  t.same([...DEFAULT_ALLOWED_SCOPES], ['openid', 'profile', 'email', 'offline_access']);
});

t.test('absent or empty scope means openid (the provider default)', async (t) => {
  t.same(parseRequestedScope(undefined, ALL), ['openid']);
  t.same(parseRequestedScope('', ALL), ['openid']);
  t.same(parseRequestedScope('   ', ALL), ['openid'], 'only spaces');
  t.same(parseRequestedScope(undefined, ['openid']), ['openid']);
});

t.test('unknown scopes are invalid_scope', async (t) => {
  invalidScope(t, () => parseRequestedScope('openid foo', ALL), /unknown scope: foo/, 'foo');
  invalidScope(
    t,
    () => parseRequestedScope('openid OpenID', ALL),
    /unknown scope: OpenID/,
    'scope names are case-sensitive',
  );
  invalidScope(t, () => parseRequestedScope('OPENID', ALL), /unknown scope/, 'OPENID');
  invalidScope(
    t,
    () => parseRequestedScope('openid address phone', ALL),
    /unknown scope: address phone/,
    'standard OIDC scopes this provider does not have',
  );
});

t.test('scopes the application may not request are invalid_scope', async (t) => {
  invalidScope(
    t,
    () => parseRequestedScope('openid permissions', DEFAULT_ALLOWED_SCOPES),
    /not allowed for this client: permissions/,
    'permissions',
  );
  invalidScope(t, () => parseRequestedScope('openid email', ['openid']), /not allowed for this client: email/, 'email');
  invalidScope(
    t,
    () => parseRequestedScope(undefined, ['profile']),
    /not allowed for this client: openid/,
    'the default openid when the client may not ask for it',
  );
});

t.test('a request without openid is invalid_scope', async (t) => {
  invalidScope(t, () => parseRequestedScope('profile', ALL), /openid scope is required/, 'profile alone');
  invalidScope(
    t,
    () => parseRequestedScope('email offline_access', ALL),
    /openid scope is required/,
    'email offline_access',
  );
});

t.test('duplicates are dropped and the result is in the canonical order of the scope table', async (t) => {
  t.same(parseRequestedScope('email openid email profile openid', ALL), ['openid', 'profile', 'email']);
  t.same(parseRequestedScope('permissions offline_access email profile openid', ALL), ALL);
  t.same(parseRequestedScope('profile  openid', ALL), ['openid', 'profile'], 'two spaces');
  t.same(parseRequestedScope(' openid ', ALL), ['openid'], 'leading and trailing spaces');
  t.equal(formatScope(parseRequestedScope('email openid', ALL)), 'openid email');
});

t.test('characters outside RFC 6749 §3.3 scope-token are invalid_scope', async (t) => {
  // scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by %x20.
  for (const bad of [
    'openid\tprofile',
    'openid\nprofile',
    'openid "profile"',
    'openid\\profile',
    'openid prøfile',
    'openid\u0000',
    'openid\u00a0profile',
  ]) {
    invalidScope(
      t,
      () => parseRequestedScope(bad, ALL),
      /characters that RFC 6749 section 3.3 does not allow/,
      JSON.stringify(bad),
    );
  }
  // Legal but unknown characters are an unknown scope, not a syntax error.
  invalidScope(t, () => parseRequestedScope('openid a!#[]~', ALL), /unknown scope/, 'legal punctuation');
});

t.test('missingScopes lists required scopes that were not granted, in the required order', async (t) => {
  t.same(missingScopes(['openid', 'email'], ['openid']), ['email']);
  t.same(missingScopes(['openid'], ['openid', 'profile']), []);
  t.same(missingScopes(['permissions', 'email'], []), ['permissions', 'email']);
  t.same(missingScopes([], ['openid']), []);
});

t.test('splitScope: space-delimited, order kept, duplicates and empty tokens dropped', async (t) => {
  t.same(splitScope('openid profile'), ['openid', 'profile']);
  t.same(splitScope('profile openid profile'), ['profile', 'openid']);
  t.same(splitScope('  openid   email '), ['openid', 'email']);
  t.same(splitScope(''), []);
  t.same(splitScope('Openid openid'), ['Openid', 'openid'], 'case-sensitive');
});
