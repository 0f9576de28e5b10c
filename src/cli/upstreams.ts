// `idp upstreams ...`: the upstream identity providers people sign in with (issue 35), over the same service as the
// admin API. A client secret never goes on the command line (shell history, the process list): it is read from
// standard input (--client-secret-stdin) or from an environment variable the operator names (--client-secret-env).
import {
  UPSTREAM_PRESET_NAMES,
  type UpstreamProviderCreate,
  type UpstreamProviderDetails,
  type UpstreamProviderUpdate,
} from '../domain/upstream-config.js';
import { MAPPING_FIELDS, UPSTREAM_CLIENT_AUTH, UPSTREAM_KINDS } from '../domain/upstream.js';
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
import { resolveSecretKey } from '../secret-key.js';
import { actor, loadCliConfig, withServices } from './context.js';
import { UsageError } from './errors.js';
import { printList, type Io } from './io.js';

export const UPSTREAMS_HELP = `Usage: idp upstreams <list|add|show|update|remove|rotate-key> [options]

  list                               the providers, with their callback URLs
  add      --preset github --client-id ID --client-secret-stdin [options]
  add      --id ID --issuer URL --client-id ID --client-secret-stdin [options]   (an OpenID Connect provider)
  show     <id>                      the settings, the callback URL to register upstream, the public key
  update   <id> [options]            a list option replaces the whole list
  remove   <id> --yes [--force]      its linked identities go with it; --force: even when some user would be left
                                     with no way to sign in but a password reset
  rotate-key <id>                    private_key_jwt: a new key (register the new public key upstream)

Options for add and update:
  --id ID                         add only: a slug (a-z, 0-9, -; up to 32); default: the preset's name
  --preset github                 add only: GitHub's endpoints, scopes and mapping (kind oauth2)
  --kind oidc|oauth2              oidc (default without a preset): discovery from --issuer and ID tokens
  --name NAME                     the button says "Continue with NAME"
  --logo-url URL                  https ("" clears it on update)
  --issuer URL                    oidc: the issuer, e.g. https://accounts.google.com
  --authorization-endpoint URL    oauth2 (or to override discovery)
  --token-endpoint URL            oauth2
  --userinfo-endpoint URL         oauth2: the user endpoint
  --emails-endpoint URL           oauth2: a GitHub-style list of the user's addresses
  --client-id ID                  the client id the upstream gave
  --client-secret-stdin           read the client secret from standard input (preferred)
  --client-secret-env VAR         read it from the environment variable VAR
  --client-auth METHOD            client_secret_basic (default), client_secret_post or private_key_jwt (a key
                                  is made here; register its public key upstream)
  --scope SCOPE                   repeat for several (oidc default: openid email profile)
  --map FIELD=CLAIM               which upstream claim fills FIELD (${MAPPING_FIELDS.join(', ')}); repeat;
                                  --no-map clears the mapping on update (the standard claims)
  --allow-sign-up / --no-sign-up  a first sign-in with an unknown address creates an account (default off)
  --allowed-domain DOMAIN         only addresses at these domains; repeat (--no-allowed-domains: any)
  --trust-email-verified / --no-trust-email-verified   believe the upstream's email_verified (default off)
  --sso-domain DOMAIN             addresses at DOMAIN sign in with this provider, their password sign-in is off;
                                  repeat (--no-sso-domains clears)
  --store-tokens / --no-store-tokens   keep the upstream's tokens, sealed (default off)
  --enabled / --disabled

The callback URL to register at the upstream is {LOGIN_URL}/upstream/{id}/callback (printed by add and show).`;

const SETTING_OPTIONS = {
  id: { type: 'string' },
  preset: { type: 'string' },
  kind: { type: 'string' },
  name: { type: 'string' },
  'logo-url': { type: 'string' },
  issuer: { type: 'string' },
  'authorization-endpoint': { type: 'string' },
  'token-endpoint': { type: 'string' },
  'userinfo-endpoint': { type: 'string' },
  'emails-endpoint': { type: 'string' },
  'client-id': { type: 'string' },
  'client-secret-stdin': { type: 'boolean' },
  'client-secret-env': { type: 'string' },
  'client-auth': { type: 'string' },
  scope: { type: 'string', multiple: true },
  map: { type: 'string', multiple: true },
  'no-map': { type: 'boolean' },
  'allow-sign-up': { type: 'boolean' },
  'no-sign-up': { type: 'boolean' },
  'allowed-domain': { type: 'string', multiple: true },
  'no-allowed-domains': { type: 'boolean' },
  'trust-email-verified': { type: 'boolean' },
  'no-trust-email-verified': { type: 'boolean' },
  'sso-domain': { type: 'string', multiple: true },
  'no-sso-domains': { type: 'boolean' },
  'store-tokens': { type: 'boolean' },
  'no-store-tokens': { type: 'boolean' },
  enabled: { type: 'boolean' },
  disabled: { type: 'boolean' },
} as const;

const SUBCOMMANDS = ['list', 'add', 'show', 'update', 'remove', 'rotate-key'];

function choice<T extends string>(flag: string, value: unknown, choices: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!choices.includes(value as T)) {
    throw new UsageError(`--${flag} must be one of ${choices.join(', ')} (got "${String(value)}")`);
  }
  return value as T;
}

/** A list flag, or its --no-… (an empty list); both at once contradict. */
function listOf(values: Values, flag: string, none: string): string[] | undefined {
  if (values[flag] && values[none]) throw new UsageError(`--${flag} and --${none} contradict each other`);
  return values[none] ? [] : (values[flag] as string[] | undefined);
}

function mappingOf(values: Values): Record<string, string> | undefined {
  if (values.map && values['no-map']) throw new UsageError('--map and --no-map contradict each other');
  if (values['no-map']) return {};
  const pairs = values.map as string[] | undefined;
  if (!pairs) return undefined;
  const mapping: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq < 1 || eq === pair.length - 1)
      throw new UsageError(`--map takes FIELD=CLAIM, e.g. subject=oid (got "${pair}")`);
    mapping[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return mapping;
}

/** The secret from stdin or from the variable --client-secret-env names; never from the command line. */
function secretOf(values: Values, io: Io): string | undefined {
  const variable = values['client-secret-env'] as string | undefined;
  if (variable !== undefined && values['client-secret-stdin']) {
    throw new UsageError('give --client-secret-stdin or --client-secret-env, not both');
  }
  if (values['client-secret-stdin']) {
    const secret = io.stdin().replace(/\r?\n$/, '');
    if (!secret) throw new UsageError('--client-secret-stdin: standard input was empty');
    return secret;
  }
  if (variable === undefined) return undefined;
  const secret = io.env[variable];
  if (!secret) throw new UsageError(`--client-secret-env: environment variable ${variable} is not set`);
  return secret;
}

function settingsOf(values: Values, io: Io): Record<string, unknown> {
  return compact({
    kind: choice('kind', values.kind, UPSTREAM_KINDS),
    name: values.name as string | undefined,
    logoUrl: clearable(values['logo-url']),
    issuer: clearable(values.issuer),
    authorizationEndpoint: clearable(values['authorization-endpoint']),
    tokenEndpoint: clearable(values['token-endpoint']),
    userinfoEndpoint: clearable(values['userinfo-endpoint']),
    emailsEndpoint: clearable(values['emails-endpoint']),
    clientId: values['client-id'] as string | undefined,
    clientAuth: choice('client-auth', values['client-auth'], UPSTREAM_CLIENT_AUTH),
    scopes: values.scope as string[] | undefined,
    mapping: mappingOf(values),
    allowSignUp: flagPair(values, 'allow-sign-up', 'no-sign-up'),
    allowedDomains: listOf(values, 'allowed-domain', 'no-allowed-domains'),
    trustEmailVerified: flagPair(values, 'trust-email-verified', 'no-trust-email-verified'),
    ssoDomains: listOf(values, 'sso-domain', 'no-sso-domains'),
    storeTokens: flagPair(values, 'store-tokens', 'no-store-tokens'),
    enabled: flagPair(values, 'enabled', 'disabled'),
    clientSecret: secretOf(values, io),
  }) as Record<string, unknown>;
}

export function describeUpstream(p: UpstreamProviderDetails): string {
  const lines: Array<[string, string]> = [
    ['ID', p.id],
    ['Name', p.name],
    ['Kind', p.kind === 'oidc' ? 'oidc (OpenID Connect)' : 'oauth2 (no ID token)'],
    ['Enabled', p.enabled ? 'yes' : 'no'],
    ['Callback URL', p.callbackUrl],
  ];
  if (p.issuer) lines.push(['Issuer', p.issuer]);
  for (const [label, value] of [
    ['Authorization endpoint', p.authorizationEndpoint],
    ['Token endpoint', p.tokenEndpoint],
    ['User endpoint', p.userinfoEndpoint],
    ['Emails endpoint', p.emailsEndpoint],
  ] as const) {
    if (value) lines.push([label, value]);
  }
  lines.push(
    ['Client ID', p.clientId],
    ['Client auth', p.clientAuth],
    ['Client secret', p.hasClientSecret ? 'stored (sealed)' : '-'],
    ['Scopes', p.scopes.join(' ') || '-'],
    [
      'Mapping',
      Object.entries(p.mapping)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ') || '(standard claims)',
    ],
    ['Allow sign-up', p.allowSignUp ? 'yes' : 'no'],
    ['Allowed domains', p.allowedDomains.join(' ') || '(any)'],
    ['Trust email_verified', p.trustEmailVerified ? 'yes' : 'no'],
    ['SSO domains', p.ssoDomains.join(' ') || '-'],
    ['Store tokens', p.storeTokens ? 'yes' : 'no'],
    ['Logo URL', p.logoUrl ?? '-'],
  );
  if (p.publicJwk) lines.push(['Public key (JWK)', JSON.stringify(p.publicJwk)]);
  lines.push(['Created', p.createdAt], ['Updated', p.updatedAt]);
  return lines.map(([k, v]) => `${`${k}:`.padEnd(24)}${v}`).join('\n');
}

export async function upstreamsCommand(sub: string | undefined, rest: string[], io: Io): Promise<void> {
  const options: Options =
    sub === 'add' || sub === 'update' ? SETTING_OPTIONS : sub === 'remove' ? { force: { type: 'boolean' } } : {};
  const { values, positionals } = parse(rest, options);
  if (values.help || !sub) return io.out(UPSTREAMS_HELP);
  checkSubcommand('upstreams', sub, SUBCOMMANDS);
  const json = Boolean(values.json);
  let input: Record<string, unknown> = {};
  if (sub === 'list' || sub === 'add') noArguments(positionals);
  else one(positionals, 'provider id');
  if (sub === 'add') {
    const preset = choice('preset', values.preset, UPSTREAM_PRESET_NAMES);
    if (!values['client-id']) throw new UsageError('--client-id is required');
    if (!preset && !values.id) throw new UsageError('--id is required (or --preset github)');
    input = { ...compact({ id: values.id as string | undefined, preset }), ...settingsOf(values, io) };
  }
  if (sub === 'update') {
    if (values.id !== undefined || values.preset !== undefined) {
      throw new UsageError('--id and --preset are for add: a provider keeps its id');
    }
    input = settingsOf(values, io);
    if (Object.keys(input).length === 0)
      throw new UsageError('nothing to update: give at least one option (see --help)');
  }
  const id = positionals[0]!;
  if (sub === 'remove' && !values.yes) {
    throw new UsageError(
      `removing ${id} unlinks every identity linked through it and cannot be undone: add --yes to confirm ` +
        '(or disable it instead: idp upstreams update ' +
        `${id} --disabled)`,
    );
  }
  // Secrets and keys are sealed with SECRET_KEY (in development, the key generated into DATA_DIR).
  const config = resolveSecretKey(loadCliConfig(io), { warn: () => {} });
  await withServices(config, `idp upstreams ${sub}`, io, async ({ upstreams }) => {
    const { providers } = upstreams;
    const print = (p: Parameters<typeof providers.details>[0]) => {
      const details = providers.details(p);
      io.out(json ? JSON.stringify(details, null, 2) : describeUpstream(details));
    };
    switch (sub) {
      case 'list':
        return printList(
          io,
          json,
          { items: (await providers.list()).map((p) => providers.details(p)) },
          {
            empty: 'No upstream providers.',
            header: ['ID', 'NAME', 'KIND', 'ENABLED', 'CALLBACK URL'],
            row: (p) => [p.id, p.name, p.kind, p.enabled ? 'yes' : 'no', p.callbackUrl],
          },
        );
      case 'add': {
        const created = await providers.create(input as UpstreamProviderCreate, actor());
        if (!json) io.err(`Added upstream provider ${created.id}: register its callback URL at the upstream`);
        return print(created);
      }
      case 'show':
        return print(await providers.require(id));
      case 'update':
        return print(await providers.update(id, input as UpstreamProviderUpdate, actor()));
      case 'rotate-key': {
        const rotated = await providers.rotateKey(id, actor());
        if (!json) io.err(`New key for ${id}: register its public key at the upstream (the old one no longer signs)`);
        return print(rotated);
      }
      case 'remove': {
        const removed = await providers.remove(id, actor(), { force: Boolean(values.force) });
        return io.out(
          json
            ? JSON.stringify({ removed: id, ...removed })
            : `Removed upstream provider ${id} and ${removed.identitiesRemoved} linked identit(ies)` +
                (removed.usersLeftWithoutSignIn.length
                  ? `; ${removed.usersLeftWithoutSignIn.length} user(s) can now sign in only after a password reset`
                  : ''),
        );
      }
    }
  });
}
