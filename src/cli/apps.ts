import { loadStaticApplications } from '../static-applications.js';
import type { Application } from '../domain/application.js';
import { clearable, compact, flagPair, LIST_OPTIONS, noArguments, parse } from './args.js';
import { loadCliConfig, withServices } from './context.js';
import { validationError } from '../errors.js';
import { isScopeName, SCOPE_NAMES } from '../oauth/scopes.js';
import { UsageError } from './errors.js';
import type { Io } from './io.js';
import { checkRecordRequest, checkRecordSubcommand, runRecordSubcommand, type RecordKind } from './records.js';

export const APPS_HELP = `Usage: idp apps <create|list|show|update|enable|disable|delete> [options]

  create   --name NAME --redirect-uri URI [--redirect-uri URI ...] [options]
  list     [--search TEXT] [--limit N] [--cursor C]
  show     <clientId>
  update   <clientId> [options]           (a list option replaces the whole list)
  enable   <clientId>
  disable  <clientId>
  delete   <clientId> --yes

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
  --disabled / --enabled          create disabled, or enable/disable on update`;

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
} as const;

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
  ];
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
    async ({ applications }) => runRecordSubcommand(io, APPS, request, applications, applications.setEnabled),
    staticApplications,
  );
}
