import { readFileSync } from 'node:fs';
import { loadStaticApplications } from '../static-applications.js';
import {
  GRANT_TYPES,
  PKCE_POLICIES,
  TOKEN_ENDPOINT_AUTH_METHODS,
  type Application,
  type GrantType,
  type TokenEndpointAuthMethod,
} from '../domain/application.js';
import {
  MAX_SECRET_OVERLAP_SECONDS,
  type ApplicationWithSecret,
  type ClientSecretInfo,
} from '../services/applications.js';
import {
  checkSubcommand,
  clearable,
  compact,
  flagPair,
  LIST_OPTIONS,
  noArguments,
  one,
  parse,
  type Values,
} from './args.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { validationError } from '../errors.js';
import { isScopeName, SCOPE_NAMES } from '../oauth/scopes.js';
import { UsageError } from './errors.js';
import { printList, type Io } from './io.js';
import { checkRecordRequest, checkRecordSubcommand, runRecordSubcommand, type RecordKind } from './records.js';

export const APPS_HELP = `Usage: idp apps <create|list|show|update|enable|disable|delete|secret> [options]

  create   --name NAME --redirect-uri URI [--redirect-uri URI ...] [options]
  list     [--search TEXT] [--limit N] [--cursor C]
  show     <clientId>
  update   <clientId> [options]           (a list option replaces the whole list)
  enable   <clientId>
  disable  <clientId>
  delete   <clientId> --yes
  secret   list <clientId>                 the live client secrets (ids and dates)
  secret   rotate <clientId> [--overlap D] a new secret, printed once; the current one stays valid for D
                                           (0, 30m, 1h, 24h (default), 7d, or seconds; at most 30d)
  secret   revoke <clientId> <secretId>    ends that secret at once

Options for create and update:
  --client-id ID                  create only; generated (URL-safe, 192 bits) when absent
  --name NAME                     display name
  --description TEXT              ("" clears it on update)
  --logo-url URL                  https URL ("" clears it on update)
  --redirect-uri URI              exact redirect URI; repeat for several
  --origin ORIGIN                 allowed web origin for browser CORS; repeat for several
  --post-logout-redirect-uri URI  where RP-initiated logout may return; repeat for several
  --post-verification-path PATH   path on the app's origin after e-mail verification
  --scope SCOPE                   allowed scope; repeat (default: openid profile email offline_access)
  --disabled / --enabled          create disabled, or enable/disable on update
  --require-mfa / --no-require-mfa  only sessions with a second factor get codes (default off)

Application type (default: a browser or mobile app, a public client with PKCE and no secret):
  --type public|confidential      confidential: a server-side application that authenticates at the token
                                  endpoint (--auth-method, default client_secret_basic)
  --auth-method METHOD            client_secret_basic, client_secret_post, private_key_jwt, or none (public)
  --pkce required|optional        confidential clients only may make PKCE optional (default required)
  --grant GRANT                   the grant types, repeat for several (default: authorization_code
                                  refresh_token); client_credentials for confidential clients only
  --jwks-uri URL                  private_key_jwt: where the client publishes its public keys (https)
  --jwks-file FILE                private_key_jwt: a JSON file with its public keys ({ "keys": [...] })

A client_secret_basic or client_secret_post application gets a secret made by the server (256 bits):
create (or an update that switches to such a method) prints it once, labelled "Client secret:" (in --json:
"clientSecret"). Store it at once: it is kept only as a hash and cannot be shown again.`;

const APP_OPTIONS = {
  'client-id': { type: 'string' },
  name: { type: 'string' },
  description: { type: 'string' },
  'logo-url': { type: 'string' },
  'redirect-uri': { type: 'string', multiple: true },
  origin: { type: 'string', multiple: true },
  'post-logout-redirect-uri': { type: 'string', multiple: true },
  'post-verification-path': { type: 'string' },
  scope: { type: 'string', multiple: true },
  disabled: { type: 'boolean' },
  enabled: { type: 'boolean' },
  'require-mfa': { type: 'boolean' },
  'no-require-mfa': { type: 'boolean' },
  type: { type: 'string' },
  'auth-method': { type: 'string' },
  pkce: { type: 'string' },
  grant: { type: 'string', multiple: true },
  'jwks-uri': { type: 'string' },
  'jwks-file': { type: 'string' },
} as const;

const SECRET_OPTIONS = { overlap: { type: 'string' } } as const;

function choice<T extends string>(flag: string, value: unknown, choices: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!choices.includes(value as T)) {
    throw new UsageError(`--${flag} must be one of ${choices.join(', ')} (got "${String(value)}")`);
  }
  return value as T;
}

/** --type and --auth-method together: the method the application authenticates with, when either is given. */
function authMethodOf(values: Values): TokenEndpointAuthMethod | undefined {
  const type = choice('type', values.type, ['public', 'confidential'] as const);
  const method = choice('auth-method', values['auth-method'], TOKEN_ENDPOINT_AUTH_METHODS);
  if (type === 'public' && method !== undefined && method !== 'none') {
    throw new UsageError(`--type public has no --auth-method ${method}: a public client authenticates with none`);
  }
  if (type === 'confidential' && method === 'none') {
    throw new UsageError('--type confidential needs an --auth-method other than none');
  }
  return method ?? (type === 'public' ? 'none' : type === 'confidential' ? 'client_secret_basic' : undefined);
}

/** --jwks-file: a JWK Set, read and parsed before the database is opened. */
function readJwks(path: string | undefined): { keys: object[] } | undefined {
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UsageError(`--jwks-file ${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? error}`);
  }
  try {
    return JSON.parse(text) as { keys: object[] };
  } catch {
    throw new UsageError(`--jwks-file ${path} is not JSON (a JWK Set: { "keys": [...] })`);
  }
}

/** "0", "now", "90" (seconds), "30s", "45m", "24h", "7d": seconds. */
export function parseOverlap(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (value === 'now') return 0;
  const match = /^(\d{1,7})([smhd]?)$/.exec(value);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match?.[2] ?? ''];
  const seconds = match && unit ? Number(match[1]) * unit : Number.NaN;
  if (!Number.isInteger(seconds) || seconds > MAX_SECRET_OVERLAP_SECONDS) {
    throw new UsageError(`--overlap must be a duration such as 0, 30m, 1h, 24h or 7d, at most 30d (got "${value}")`);
  }
  return seconds;
}

const SHOWN_ONCE =
  "This client secret is shown once: store it now (a secret manager, the application's configuration). " +
  'It is kept only as a hash and cannot be shown again; idp apps secret rotate makes a new one.';

/** The application, and the secret when one was made: on stdout, labelled; the warning on stderr. */
function printWithSecret(io: Io, json: boolean, item: ApplicationWithSecret): void {
  const { clientSecret, ...app } = item;
  if (json) io.out(JSON.stringify(item, null, 2));
  else io.out(describeApp(app));
  if (clientSecret === undefined) return;
  if (!json) io.out(`\nClient secret: ${clientSecret}`);
  io.err(SHOWN_ONCE);
}

function describeSecret(s: ClientSecretInfo): string[] {
  return [s.id, s.createdAt, s.expiresAt ?? '-'];
}

async function secretCommand(rest: string[], io: Io): Promise<void> {
  const [action, ...args] = rest;
  if (action === undefined || action === '--help' || action === '-h') return io.out(APPS_HELP);
  const { values, positionals } = parse(args, action === 'rotate' ? SECRET_OPTIONS : {});
  if (values.help) return io.out(APPS_HELP);
  checkSubcommand('apps secret', action, ['list', 'rotate', 'revoke']);
  const json = Boolean(values.json);
  let secretId: string | undefined;
  if (action === 'revoke') {
    if (positionals.length !== 2) throw new UsageError('expected a client id and a secret id');
    secretId = positionals[1];
  } else one(positionals, 'client id');
  const clientId = positionals[0]!;
  const overlapSeconds = parseOverlap(values.overlap as string | undefined);
  const config = loadCliConfig(io);
  const staticApplications = loadStaticApplications(config.staticApplicationsFile);
  await withServices(
    config,
    `idp apps secret ${action}`,
    io,
    async ({ applications }) => {
      if (action === 'list') {
        const items = await applications.listSecrets(clientId);
        return printList(
          io,
          json,
          { items },
          {
            empty: `Application ${clientId} has no client secret.`,
            header: ['SECRET ID', 'CREATED', 'ENDS'],
            row: describeSecret,
          },
        );
      }
      if (action === 'rotate') {
        const rotated = await applications.rotateSecret(clientId, { overlapSeconds }, actor());
        if (json) io.out(JSON.stringify(rotated, null, 2));
        else {
          const previous = (await applications.listSecrets(clientId)).find((s) => s.id !== rotated.secret.id);
          io.out(`Secret ID:     ${rotated.secret.id}`);
          io.out(`Client secret: ${rotated.clientSecret}`);
          io.out(
            previous?.expiresAt
              ? `The previous secret (${previous.id}) stays valid until ${previous.expiresAt}.`
              : 'No previous secret stays valid.',
          );
        }
        return io.err(SHOWN_ONCE);
      }
      await applications.revokeSecret(clientId, secretId!, actor());
      io.out(json ? JSON.stringify({ revoked: secretId }) : `Revoked secret ${secretId} of application ${clientId}`);
    },
    staticApplications,
  );
}

function describeApp(a: Application): string {
  const lines: Array<[string, string]> = [
    ['Client ID', a.clientId],
    ['Name', a.clientName],
    ['Enabled', a.enabled ? 'yes' : 'no'],
    ['Source', a.source],
    ['Redirect URIs', a.redirectUris.join('\n') || '-'],
    ['Web origins', a.allowedWebOrigins.join('\n') || '-'],
    ['Post-logout URIs', a.postLogoutRedirectUris.join('\n') || '-'],
    ['Allowed scopes', a.allowedScopes.join(' ')],
    ['Description', a.clientDescription ?? '-'],
    ['Logo URL', a.clientLogoUrl ?? '-'],
    ['Post-verification path', a.postVerificationRedirectPath ?? '-'],
    ['Type', a.clientType === 'public' ? 'public (browser or mobile app, PKCE)' : 'confidential (server-side)'],
    ['Token endpoint auth', a.tokenEndpointAuthMethod],
    ['PKCE', a.pkce],
    ['Requires MFA', a.requireMfa ? 'yes' : 'no'],
    ['Grant types', a.grantTypes.join(' ')],
  ];
  if (a.jwksUri) lines.push(['JWKS URI', a.jwksUri]);
  if (a.jwks) lines.push(['JWKS', `${a.jwks.keys.length} key(s)`]);
  if (a.createdAt) lines.push(['Created', a.createdAt], ['Updated', a.updatedAt ?? '-']);
  return lines.map(([k, v]) => `${`${k}:`.padEnd(25)}${v.split('\n').join(`\n${' '.repeat(25)}`)}`).join('\n');
}

const APPS: RecordKind<Application> = {
  command: 'apps',
  noun: 'application',
  what: 'client id',
  alternative: 'disable it instead',
  id: (a) => a.clientId,
  describe: describeApp,
  list: {
    empty: 'No applications.',
    header: ['CLIENT ID', 'NAME', 'ENABLED', 'SOURCE', 'REDIRECT URIS'],
    row: (a) => [a.clientId, a.clientName, a.enabled ? 'yes' : 'no', a.source, String(a.redirectUris.length)],
    command: 'idp apps list',
  },
};

export async function appsCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  if (sub === 'secret') return secretCommand(rest, io);
  const options = sub === 'list' ? LIST_OPTIONS : sub === 'create' || sub === 'update' ? APP_OPTIONS : {};
  const { values, positionals } = parse(rest, options);
  if (values.help || !sub) return io.out(APPS_HELP);
  checkRecordSubcommand(APPS, sub);
  const config = loadCliConfig(io);
  const staticApplications = loadStaticApplications(config.staticApplicationsFile);

  if (sub === 'create') {
    noArguments(positionals);
    if (!values.name) throw new UsageError('--name is required');
    if (!values['redirect-uri']) throw new UsageError('at least one --redirect-uri is required');
  }
  const input = compact({
    clientName: values.name as string | undefined,
    clientDescription: clearable(values.description),
    clientLogoUrl: clearable(values['logo-url']),
    redirectUris: values['redirect-uri'] as string[] | undefined,
    allowedWebOrigins: values.origin as string[] | undefined,
    postLogoutRedirectUris: values['post-logout-redirect-uri'] as string[] | undefined,
    postVerificationRedirectPath: clearable(values['post-verification-path']),
    allowedScopes: values.scope as string[] | undefined,
    enabled: sub === 'create' || sub === 'update' ? flagPair(values, 'enabled', 'disabled') : undefined,
    requireMfa: flagPair(values, 'require-mfa', 'no-require-mfa'),
    tokenEndpointAuthMethod: authMethodOf(values),
    pkce: choice('pkce', values.pkce, PKCE_POLICIES),
    grantTypes: (values.grant as string[] | undefined)?.map((g) => choice('grant', g, GRANT_TYPES) as GrantType),
    jwksUri: clearable(values['jwks-uri']),
    jwks: readJwks(values['jwks-file'] as string | undefined),
  }) as Record<string, unknown>;
  // Checked here, with the value and the choices, rather than as the service's allowedScopes.N.
  for (const scope of (values.scope as string[] | undefined) ?? []) {
    if (!isScopeName(scope))
      throw validationError([
        { field: '--scope', message: `unknown scope "${scope}"; allowed: ${SCOPE_NAMES.join(', ')}` },
      ]);
  }
  const request = { sub, values, positionals, input };
  checkRecordRequest(APPS, request);
  // --client-id counts for create only: update ignores it.
  if (sub === 'create' && values['client-id']) request.input = { ...input, clientId: values['client-id'] };

  await withServices(
    config,
    `idp apps ${sub}`,
    io,
    async ({ applications }) => {
      // Create and update may make a client secret: printed once, with the warning.
      if (sub === 'create' || sub === 'update') {
        const json = Boolean(values.json);
        const item =
          sub === 'create'
            ? await applications.create(request.input as never, actor())
            : await applications.update(one(positionals, APPS.what), request.input as never, actor());
        if (sub === 'create' && !json) io.err(`Created application ${item.clientId}`);
        return printWithSecret(io, json, item);
      }
      return runRecordSubcommand(io, APPS, request, applications, applications.setEnabled);
    },
    staticApplications,
  );
}
