// `idp resources ...`: the operator's APIs (resource servers, issue 36), over the same service as the admin API.
// The identifier is a positional argument (an absolute URI, fixed once made); a scope is one repeatable flag,
// `--scope 'NAME=LABEL:CONSENT TEXT'`, or the admin API's JSON array with --scopes-json.
import {
  ACCESS_TOKEN_FORMATS,
  ACCESS_TOKEN_TTL_MAX,
  ACCESS_TOKEN_TTL_MIN,
  type ResourceScope,
  type ResourceServer,
  type ResourceServerCreate,
  type ResourceServerUpdate,
} from '../domain/resource-server.js';
import { notFound } from '../errors.js';
import {
  checkSubcommand,
  clearable,
  compact,
  flagPair,
  noArguments,
  one,
  type Options,
  parse,
  type Values,
} from './args.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { UsageError } from './errors.js';
import { type Io, printList } from './io.js';

export const RESOURCES_HELP = `Usage: idp resources <list|add|show|update|remove> [options]

  list                           the APIs (resource servers): the built-in /api/external first
  add      <identifier> --name NAME [options]
  show     <identifier>          every setting
  update   <identifier> [options]   a list option replaces the whole list
  remove   <identifier> --yes    new requests for it get invalid_target; tokens already issued run out

The identifier is the API's absolute URI (https://api.example.com/orders, or urn:...; no query or fragment):
the "resource" a client asks for and the "aud" of its access tokens. It cannot change. The built-in
/api/external is listed and read-only.

Options for add and update:
  --name NAME                    shown on the consent page
  --description TEXT             ("" clears it on update)
  --scope 'NAME=LABEL:CONSENT'   one of the API's own scopes: its name (letters, digits and :._/-), the label
                                 the consent page shows and the sentence under it (without ":CONSENT" the
                                 label is both); repeat. e.g. --scope 'orders:read=Read orders:See your orders'
  --scopes-json JSON             the scopes as the admin API takes them (for a label with ":"):
                                 '[{"name":"orders:read","label":"Read orders","consentDescription":"..."}]'
  --no-scopes                    update: no scopes of its own
  --format opaque|jwt            access-token format: opaque (checked by introspection, the default) or jwt
                                 (RFC 9068, checked with the published keys)
  --ttl SECONDS                  access-token lifetime, ${ACCESS_TOKEN_TTL_MIN}-${ACCESS_TOKEN_TTL_MAX} \
(default, or "" on update: ACCESS_TOKEN_TTL)
  --allow-client CLIENT_ID       an application that may ask for tokens for it; repeat
                                 (--no-allowed-clients: none)
  --allow-self-registered / --no-self-registered
                                 self-registered clients (dynamic registration, metadata documents) may ask too
                                 (default off)
  --introspection-client CLIENT_ID
                                 a confidential application (the API's own credentials) that may introspect
                                 the tokens for it; repeat (--no-introspection-clients: none)
  --enabled / --disabled`;

const SETTING_OPTIONS = {
  name: { type: 'string' },
  description: { type: 'string' },
  scope: { type: 'string', multiple: true },
  'scopes-json': { type: 'string' },
  'no-scopes': { type: 'boolean' },
  format: { type: 'string' },
  ttl: { type: 'string' },
  'allow-client': { type: 'string', multiple: true },
  'no-allowed-clients': { type: 'boolean' },
  'allow-self-registered': { type: 'boolean' },
  'no-self-registered': { type: 'boolean' },
  'introspection-client': { type: 'string', multiple: true },
  'no-introspection-clients': { type: 'boolean' },
  enabled: { type: 'boolean' },
  disabled: { type: 'boolean' },
} as const;

const SUBCOMMANDS = ['list', 'add', 'show', 'update', 'remove'];

/** `orders:read=Read orders:See your orders`: the name up to the first "=", the label up to the next ":". */
export function scopeOf(text: string): ResourceScope {
  const eq = text.indexOf('=');
  if (eq < 1) throw new UsageError(`--scope takes NAME=LABEL:CONSENT, e.g. orders:read=Read orders (got "${text}")`);
  const rest = text.slice(eq + 1);
  const colon = rest.indexOf(':');
  const label = (colon < 0 ? rest : rest.slice(0, colon)).trim();
  const consentDescription = colon < 0 ? label : rest.slice(colon + 1).trim();
  if (!label) throw new UsageError(`--scope ${text.slice(0, eq)}: give a label after "="`);
  return { name: text.slice(0, eq).trim(), label, consentDescription: consentDescription || label };
}

function scopesOf(values: Values): ResourceScope[] | undefined {
  const given = ['scope', 'scopes-json', 'no-scopes'].filter((k) => values[k] !== undefined);
  if (given.length > 1) throw new UsageError(`--${given[0]} and --${given[1]} contradict each other`);
  if (values['no-scopes']) return [];
  if (values['scopes-json'] !== undefined) {
    try {
      const parsed: unknown = JSON.parse(values['scopes-json'] as string);
      if (!Array.isArray(parsed)) throw new Error('not an array');
      return parsed as ResourceScope[];
    } catch (error) {
      throw new UsageError(`--scopes-json takes a JSON array of {name, label, consentDescription}: ${error}`);
    }
  }
  return (values.scope as string[] | undefined)?.map(scopeOf);
}

function listOf(values: Values, flag: string, none: string): string[] | undefined {
  if (values[flag] && values[none]) throw new UsageError(`--${flag} and --${none} contradict each other`);
  return values[none] ? [] : (values[flag] as string[] | undefined);
}

function ttlOf(value: unknown): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === '') return null;
  const n = Number(value);
  if (!/^\d+$/.test(String(value)) || !Number.isSafeInteger(n))
    throw new UsageError(`--ttl takes whole seconds, ${ACCESS_TOKEN_TTL_MIN}-${ACCESS_TOKEN_TTL_MAX} (got "${value}")`);
  return n;
}

function settingsOf(values: Values): ResourceServerUpdate {
  const format = values.format as string | undefined;
  if (format !== undefined && !(ACCESS_TOKEN_FORMATS as readonly string[]).includes(format))
    throw new UsageError(`--format must be one of ${ACCESS_TOKEN_FORMATS.join(', ')} (got "${format}")`);
  return compact({
    name: values.name as string | undefined,
    description: clearable(values.description),
    scopes: scopesOf(values),
    accessTokenFormat: format as ResourceServer['accessTokenFormat'] | undefined,
    accessTokenTtl: ttlOf(values.ttl),
    allowedClients: listOf(values, 'allow-client', 'no-allowed-clients'),
    allowSelfRegistered: flagPair(values, 'allow-self-registered', 'no-self-registered'),
    introspectionClients: listOf(values, 'introspection-client', 'no-introspection-clients'),
    enabled: flagPair(values, 'enabled', 'disabled'),
  });
}

export function describeResource(s: ResourceServer): string {
  const lines: Array<[string, string]> = [
    ['Identifier', s.identifier],
    ['Name', s.name],
    ['Built in', s.builtIn ? 'yes (read-only)' : 'no'],
    ['Enabled', s.enabled ? 'yes' : 'no'],
    ['Description', s.description ?? '-'],
    ['Token format', s.accessTokenFormat],
    ['Token lifetime', s.accessTokenTtl === null ? '(ACCESS_TOKEN_TTL)' : `${s.accessTokenTtl} s`],
    ['Allowed clients', s.builtIn ? '(every application)' : s.allowedClients.join(' ') || '-'],
    ['Self-registered', s.allowSelfRegistered ? 'allowed' : 'not allowed'],
    ['Introspection', s.introspectionClients.join(' ') || '-'],
    ['Scopes', s.scopes.length ? '' : '-'],
  ];
  const text = lines.map(([k, v]) => `${`${k}:`.padEnd(18)}${v}`.trimEnd());
  for (const scope of s.scopes) text.push(`  ${scope.name}  ${scope.label}: ${scope.consentDescription}`);
  if (s.createdAt) text.push(`${'Created:'.padEnd(18)}${s.createdAt}`, `${'Updated:'.padEnd(18)}${s.updatedAt}`);
  return text.join('\n');
}

export async function resourcesCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const options: Options = sub === 'add' || sub === 'update' ? SETTING_OPTIONS : {};
  const { values, positionals } = parse(rest, options);
  if (values.help || !sub) return io.out(RESOURCES_HELP);
  checkSubcommand('resources', sub, SUBCOMMANDS);
  const json = Boolean(values.json);
  if (sub === 'list') noArguments(positionals);
  else one(positionals, "identifier (the API's URI)");
  const identifier = positionals[0]!;
  let input: ResourceServerUpdate = {};
  if (sub === 'add') {
    if (values.name === undefined) throw new UsageError('--name is required');
    if (values['no-scopes']) throw new UsageError('--no-scopes is for update');
    input = settingsOf(values);
  }
  if (sub === 'update') {
    input = settingsOf(values);
    if (Object.keys(input).length === 0)
      throw new UsageError('nothing to update: give at least one option (see --help)');
  }
  if (sub === 'remove' && !values.yes) {
    throw new UsageError(
      `removing ${identifier} cannot be undone: add --yes to confirm (or disable it instead: idp resources update ` +
        `${identifier} --disabled)`,
    );
  }
  await withServices(loadCliConfig(io), `idp resources ${sub}`, io, async ({ resourceServers }) => {
    const print = (s: ResourceServer) => io.out(json ? JSON.stringify(s, null, 2) : describeResource(s));
    switch (sub) {
      case 'list':
        return printList(
          io,
          json,
          { items: await resourceServers.list() },
          {
            empty: 'No resource servers.',
            header: ['IDENTIFIER', 'NAME', 'FORMAT', 'ENABLED', 'SCOPES'],
            row: (s) => [
              s.identifier,
              s.name,
              s.accessTokenFormat,
              s.enabled ? 'yes' : 'no',
              s.builtIn ? '(built-in)' : s.scopes.map((x) => x.name).join(' '),
            ],
          },
        );
      case 'add': {
        const created = await resourceServers.create({ identifier, ...input } as ResourceServerCreate, actor());
        if (!json) io.err(`Added resource server ${created.identifier}`);
        return print(created);
      }
      case 'show': {
        const found = await resourceServers.find(identifier);
        if (!found) throw notFound('NOT_FOUND', `no resource server "${identifier}" (see idp resources list)`);
        return print(found);
      }
      case 'update':
        return print(await resourceServers.update(identifier, input, actor()));
      case 'remove':
        await resourceServers.remove(identifier, actor());
        return io.out(json ? JSON.stringify({ removed: identifier }) : `Removed resource server ${identifier}`);
    }
  });
}
