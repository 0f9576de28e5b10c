// Rules for the URLs an application registers. Registered values are kept exactly as written:
// redirect_uri matching is an exact string comparison (RFC 6749 §3.1.2.3, RFC 9700 §4.1.3).

const LOOPBACK_HOSTS = new Set(['localhost', '[::1]']);

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOSTS.has(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname) || hostname.endsWith('.localhost');
}

function parse(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

function schemeProblem(url: URL): string | undefined {
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') {
    return isLoopbackHost(url.hostname)
      ? undefined
      : 'http is allowed only for loopback hosts (localhost, 127.0.0.1, [::1]); use https';
  }
  return `scheme ${url.protocol} is not allowed; use https (or http on a loopback host)`;
}

/** undefined when the value is an acceptable redirect URI, else why not. */
export function redirectUriProblem(value: string): string | undefined {
  if (value.length > 2048) return 'must be at most 2048 characters';
  if (/\s/.test(value)) return 'must not contain white space';
  const url = parse(value);
  if (!url) return 'must be an absolute URL';
  if (value.includes('#')) return 'must not contain a fragment (RFC 6749 §3.1.2)';
  if (url.username || url.password) return 'must not contain credentials';
  return schemeProblem(url);
}

/** undefined when the value is a bare web origin (scheme://host[:port]), else why not. */
export function webOriginProblem(value: string): string | undefined {
  const url = parse(value);
  if (!url || url.origin === 'null') return 'must be an origin such as https://app.example.com';
  if (url.origin !== value) {
    return `must be a bare origin with no path, trailing slash, default port or upper case${
      url.origin !== 'null' ? ` (did you mean ${url.origin}?)` : ''
    }`;
  }
  return schemeProblem(url);
}

/** undefined when the value is an https URL (http on loopback), e.g. a logo or picture. */
export function webUrlProblem(value: string): string | undefined {
  if (value.length > 2048) return 'must be at most 2048 characters';
  const url = parse(value);
  if (!url) return 'must be an absolute URL';
  return schemeProblem(url);
}

/** A path on the application's own origin: starts with one slash, never a scheme or host. */
export function redirectPathProblem(value: string): string | undefined {
  if (value.length > 1024) return 'must be at most 1024 characters';
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\')) {
    return 'must be a path starting with a single "/" (for example /welcome)';
  }
  if (/[\s#]/.test(value)) return 'must not contain white space or a fragment';
  return undefined;
}

export function originOf(uri: string): string | undefined {
  const url = parse(uri);
  return url && url.origin !== 'null' ? url.origin : undefined;
}
