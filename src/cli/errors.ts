// How a failure ends the process. Exit codes: 0 success, 1 the operation failed (bad configuration, not
// found, conflict, invalid value, database busy), 2 usage error.
import { ConfigError } from '../config.js';
import { AppError } from '../errors.js';
import { StaticApplicationsError } from '../static-applications.js';
import { DataDirBusyError } from '../../db/data-dir-lock.js';
import { MigrationError } from '../../db/migrate.js';
import type { Io } from './io.js';

/** A mistake in the command line: reported before anything is opened, exit code 2. */
export class UsageError extends Error {}

// Network failures, and PostgreSQL's connection classes 08 (connection), 28 (authorization:
// wrong password, no pg_hba entry, unknown role), 3D000 (no such database), 57P03 (not accepting).
const UNREACHABLE_CODES = [
  ...['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH'],
  ...['3D000', '57P03'],
];

function unreachable(code: string | undefined, message: string): boolean {
  return (
    UNREACHABLE_CODES.includes(code ?? '') ||
    /^(08|28)/.test(code ?? '') ||
    /timeout exceeded when trying to connect|Connection terminated/i.test(message)
  );
}

// The service names fields as the admin API does (redirectUris.0); the CLI speaks of its flags.
const FLAGS: Record<string, string> = {
  clientId: '--client-id',
  clientName: '--name',
  clientDescription: '--description',
  clientLogoUrl: '--logo-url',
  redirectUris: '--redirect-uri',
  allowedWebOrigins: '--origin',
  postLogoutRedirectUris: '--post-logout-redirect-uri',
  postVerificationRedirectPath: '--post-verification-path',
  allowedScopes: '--scope',
  tokenEndpointAuthMethod: '--auth-method',
  pkce: '--pkce',
  requireMfa: '--require-mfa',
  grantTypes: '--grant',
  jwksUri: '--jwks-uri',
  jwks: '--jwks-file',
  overlapSeconds: '--overlap',
  email: '--email',
  password: 'the password',
  name: '--name',
  givenName: '--given-name',
  familyName: '--family-name',
  picture: '--picture',
  permissions: '--permission',
  // Upstream providers (idp upstreams).
  id: '--id',
  kind: '--kind',
  logoUrl: '--logo-url',
  issuer: '--issuer',
  authorizationEndpoint: '--authorization-endpoint',
  tokenEndpoint: '--token-endpoint',
  userinfoEndpoint: '--userinfo-endpoint',
  emailsEndpoint: '--emails-endpoint',
  clientSecret: 'the client secret',
  clientAuth: '--client-auth',
  scopes: '--scope',
  mapping: '--map',
  allowedDomains: '--allowed-domain',
  ssoDomains: '--sso-domain',
  rotateKey: 'rotate-key',
  // Resource servers (idp resources); scopes is --scope, as above.
  identifier: 'the identifier',
  accessTokenFormat: '--format',
  accessTokenTtl: '--ttl',
  allowedClients: '--allow-client',
  allowSelfRegistered: '--allow-self-registered',
  introspectionClients: '--introspection-client',
};

/**
 * `redirectUris.0` → `--redirect-uri #1`, `scopes.0.name` → `--scope #1 (name)`; a field the CLI has no flag for
 * keeps its name.
 */
export function flagOf(field: string): string {
  const [name, index, ...rest] = field.split('.');
  const flag = FLAGS[name ?? ''];
  if (flag && rest.length && /^\d+$/.test(index ?? '')) return `${flag} #${Number(index) + 1} (${rest.join('.')})`;
  if (!flag || rest.length) return field;
  return index === undefined ? flag : /^\d+$/.test(index) ? `${flag} #${Number(index) + 1}` : field;
}

/** Schema messages a person should not have to read: a regular expression becomes a sentence. */
function inWords(field: string, message: string): string {
  if (!message.startsWith('must match pattern')) return message;
  if (field === 'email') return 'must be an e-mail address such as alice@example.com';
  if (field.startsWith('permissions.')) return 'must be one word without spaces, such as reports:read';
  return 'contains characters that are not allowed here';
}

/** Explains the failure on stderr and returns the exit code. */
export function reportError(error: unknown, io: Io): number {
  if (error instanceof UsageError) {
    io.err(`idp: ${error.message}`);
    return 2;
  }
  if (error instanceof AppError) {
    const lines = (error.details ?? []).map((d) => `${flagOf(d.field)}: ${inWords(d.field, d.message)}`);
    // One problem is the whole message; several are listed under a count.
    if (lines.length === 1) io.err(`idp: ${lines[0]}`);
    else if (lines.length > 1)
      io.err([`idp: ${lines.length} values are invalid`, ...lines.map((l) => `  - ${l}`)].join('\n'));
    else io.err(`idp: ${error.message}`);
    return 1;
  }
  if (
    error instanceof ConfigError ||
    error instanceof DataDirBusyError ||
    error instanceof StaticApplicationsError ||
    error instanceof MigrationError
  ) {
    io.err(`idp: ${error.message}`);
    return 1;
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') {
    io.err(`idp: ${(error as Error).message}: another process listens there; set PORT or HOST`);
    return 1;
  }
  if (unreachable(code, (error as Error).message ?? '')) {
    io.err(`idp: cannot reach the database: ${(error as Error).message}`);
    return 1;
  }
  if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EACCES') {
    io.err(`idp: cannot use the data directory: ${(error as Error).message} (DATA_DIR must be a writable directory)`);
    return 1;
  }
  io.err(`idp: unexpected error: ${(error as Error).stack ?? String(error)}`);
  return 1;
}
