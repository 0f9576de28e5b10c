// Scope parsing (RFC 6749 §3.3) against the one scope table and an application's allowed scopes.
import { OAuthError } from './errors.js';
import { isScopeName, SCOPES, type ScopeName } from './scopes.js';

/** Space-delimited, case-sensitive; order kept, duplicates dropped. */
export function splitScope(scope: string): string[] {
  return [...new Set(scope.split(' ').filter(Boolean))];
}

/**
 * The scopes of an authorization request. Absent means `openid` (the spec's default). Unknown scopes,
 * scopes the application may not request, and a request without `openid` are invalid_scope.
 */
export function parseRequestedScope(scope: string | undefined, allowed: readonly string[]): ScopeName[] {
  // Absent means openid, checked against the allowed scopes like any asked value.
  const names = scopeNames(scope, allowed) ?? scopeNames('openid', allowed)!;
  if (!names.includes('openid')) throw new OAuthError('invalid_scope', 'the openid scope is required');
  return canonicalScopes(names);
}

/**
 * The scope values of a request (RFC 6749 §3.3), undefined when absent or blank: characters outside the RFC's,
 * values not in the scope table and values the application may not request are invalid_scope.
 */
export function scopeNames(scope: string | undefined, allowed: readonly string[]): ScopeName[] | undefined {
  if (scope !== undefined && /[^\x21\x23-\x5b\x5d-\x7e ]/.test(scope)) {
    const detail = `scope ${JSON.stringify(scope)}`;
    throw new OAuthError('invalid_scope', 'scope contains characters that RFC 6749 section 3.3 does not allow', {
      detail,
    });
  }
  if (scope === undefined || scope.trim() === '') return undefined;
  const names = splitScope(scope);
  const unknown = names.filter((n) => !isScopeName(n));
  if (unknown.length)
    throw new OAuthError('invalid_scope', 'scope contains a value that is not known here', {
      detail: `unknown: ${unknown.join(' ')}`,
    });
  const notAllowed = names.filter((n) => !allowed.includes(n));
  if (notAllowed.length) {
    throw new OAuthError('invalid_scope', 'scope contains a value this client may not request', {
      detail: `not allowed: ${notAllowed.join(' ')}`,
    });
  }
  return names as ScopeName[];
}

/** Canonical order of the scope table, so stored and returned scope strings are stable. */
export function canonicalScopes(names: readonly string[]): ScopeName[] {
  return SCOPES.map((s) => s.name).filter((n) => names.includes(n));
}

export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ');
}

/** Scopes in `requested` that `granted` does not cover. */
export function missingScopes(required: readonly string[], granted: readonly string[]): string[] {
  return required.filter((s) => !granted.includes(s));
}
