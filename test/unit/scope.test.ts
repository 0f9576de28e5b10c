// Scope parsing (RFC 6749 §3.3) against the scope table and an application's allowed scopes.
import t, { type Test } from 'tap';
import { OAuthError } from '../../src/oauth/errors.js';
import { formatScope, missingScopes, parseRequestedScope, splitScope } from '../../src/oauth/scope.js';
import { DEFAULT_ALLOWED_SCOPES, SCOPE_NAMES } from '../../src/oauth/scopes.js';

const ALL = [...SCOPE_NAMES];

const UNKNOWN = 'scope contains a value that is not known here';
const NOT_ALLOWED = 'scope contains a value this client may not request';

/** invalid_scope with a fixed public description; the values refused only in the private detail. */
function invalidScope(
  t: Test,
  fn: () => unknown,
  description: RegExp | string,
  message: string,
  detail?: { is: string; values: string[] },
) {
  try {
    fn();
    t.fail(`${message}: no error`);
  } catch (error) {
    t.ok(error instanceof OAuthError, `${message}: an OAuthError`);
    t.equal((error as OAuthError).error, 'invalid_scope', `${message}: invalid_scope`);
    t.equal((error as OAuthError).statusCode, 400, `${message}: 400`);
    t.match((error as OAuthError).error_description, description, `${message}: description`);
    if (detail) {
      t.equal((error as OAuthError).detail, detail.is, `${message}: the values in the detail`);
      for (const value of detail.values) {
        t.notOk((error as OAuthError).error_description.includes(value), `${message}: ${value} not in the description`);
      }
    }
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
  invalidScope(t, () => parseRequestedScope('openid foo', ALL), UNKNOWN, 'foo', {
    is: 'unknown: foo',
    values: ['foo'],
  });
  invalidScope(t, () => parseRequestedScope('openid OpenID', ALL), UNKNOWN, 'scope names are case-sensitive', {
    is: 'unknown: OpenID',
    values: ['OpenID'],
  });
  invalidScope(t, () => parseRequestedScope('OPENID', ALL), UNKNOWN, 'OPENID');
  invalidScope(
    t,
    () => parseRequestedScope('openid address phone', ALL),
    UNKNOWN,
    'standard OIDC scopes this provider does not have',
    { is: 'unknown: address phone', values: ['address', 'phone'] },
  );
});

t.test('scopes the application may not request are invalid_scope', async (t) => {
  invalidScope(t, () => parseRequestedScope('openid permissions', DEFAULT_ALLOWED_SCOPES), NOT_ALLOWED, 'permissions', {
    is: 'not allowed: permissions',
    values: ['permissions'],
  });
  invalidScope(t, () => parseRequestedScope('openid email', ['openid']), NOT_ALLOWED, 'email', {
    is: 'not allowed: email',
    values: ['email'],
  });
  invalidScope(
    t,
    () => parseRequestedScope(undefined, ['profile']),
    NOT_ALLOWED,
    'the default openid when the client may not ask for it',
    { is: 'not allowed: openid', values: [] },
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
  invalidScope(t, () => parseRequestedScope('openid a!#[]~', ALL), UNKNOWN, 'legal punctuation', {
    is: 'unknown: a!#[]~',
    values: ['a!#[]~'],
  });
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
