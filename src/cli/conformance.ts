// `idp conformance-config`: what an operator gives the OpenID Foundation conformance suite for a certification plan
// against this deployment (docs/conformance.md). The plan configuration is the JSON the suite's plan form takes:
// the fields its test modules read (AbstractOIDCCServerTest's @VariantConfigurationFields: server.discoveryUrl,
// client.client_id, client.client_secret; AbstractOIDCCMultipleClient: client2.*; OIDCCServerTestClientSecretPost:
// client_secret_post.*; OIDCCLoginHint: server.login_hint). `--seed` prints instead the seed file (SEED_FILE, idp
// seed) that registers the clients the plan needs with the suite's redirect URIs for that alias. Client secrets
// are never printed: the configuration names them as ${VARIABLE} (for envsubst), unless --with-secrets reads them
// from those variables. Reads the configuration only; no database.
import { loadConfig } from '../config.js';
import { parse } from './args.js';
import { UsageError } from './errors.js';
import type { Io } from './io.js';

export const CONFORMANCE_HELP = `Usage: idp conformance-config --plan PLAN [options]

Prints the configuration JSON of an OpenID Foundation conformance suite plan for this deployment
(its discovery URL from BASE_URL), or with --seed the seed file that registers the clients the plan
needs. See docs/conformance.md.
  --plan PLAN                 oidcc-basic-certification-test-plan, oidcc-formpost-basic-certification-test-plan,
                              oidcc-config-certification-test-plan or oidcc-rp-initiated-logout-certification-test-plan
  --alias ALIAS               the suite's alias for the run (default idp); its redirect URIs are
                              SUITE_URL/test/a/ALIAS/callback and .../post_logout_redirect
  --suite-url URL             the suite (default https://www.certification.openid.net)
  --login-hint EMAIL          server.login_hint (default: the seeded user, conformance@<BASE_URL host>)
  --with-secrets              put the client secrets in, read from OIDCC_CLIENT_SECRET, OIDCC_CLIENT2_SECRET
                              and OIDCC_CLIENT_POST_SECRET (default: \${VARIABLE} placeholders, for envsubst)
  --seed                      print the seed file instead`;

/** The plans this deployment is certified against, and the static clients each one's modules read. */
export const CONFORMANCE_PLANS = {
  'oidcc-basic-certification-test-plan': ['client', 'client2', 'client_secret_post'],
  'oidcc-formpost-basic-certification-test-plan': ['client', 'client2', 'client_secret_post'],
  'oidcc-config-certification-test-plan': ['client'],
  'oidcc-rp-initiated-logout-certification-test-plan': ['client'],
} as const satisfies Record<string, readonly ConfigClient[]>;
export type ConformancePlan = keyof typeof CONFORMANCE_PLANS;
type ConfigClient = 'client' | 'client2' | 'client_secret_post';

/** The clients as the seed registers them: fixed ids, the secret's variable, the plan's authentication method. */
export const CONFORMANCE_CLIENTS: Record<
  ConfigClient,
  { clientId: string; secretEnv: string; method: 'client_secret_basic' | 'client_secret_post' }
> = {
  client: { clientId: 'oidcc-client', secretEnv: 'OIDCC_CLIENT_SECRET', method: 'client_secret_basic' },
  client2: { clientId: 'oidcc-client2', secretEnv: 'OIDCC_CLIENT2_SECRET', method: 'client_secret_basic' },
  client_secret_post: {
    clientId: 'oidcc-client-post',
    secretEnv: 'OIDCC_CLIENT_POST_SECRET',
    method: 'client_secret_post',
  },
};
export const CONFORMANCE_USER_PASSWORD_ENV = 'OIDCC_USER_PASSWORD';
const DEFAULT_SUITE_URL = 'https://www.certification.openid.net';

export interface ConformanceOptions {
  plan: ConformancePlan;
  issuer: string;
  alias: string;
  suiteUrl: string;
  loginHint: string;
  /** The secrets to print; absent: ${VARIABLE} placeholders. */
  secrets?: Record<string, string | undefined>;
}

/** The plan configuration JSON (the suite's "JSON" tab of a new plan). */
export function planConfiguration(o: ConformanceOptions): Record<string, unknown> {
  const config: Record<string, unknown> = {
    alias: o.alias,
    description: `${o.issuer}: ${o.plan}`,
    server: {
      discoveryUrl: `${o.issuer}/.well-known/openid-configuration`,
      ...(o.plan !== 'oidcc-config-certification-test-plan' && { login_hint: o.loginHint }),
    },
  };
  for (const key of CONFORMANCE_PLANS[o.plan]) {
    const client = CONFORMANCE_CLIENTS[key];
    config[key] = {
      client_id: client.clientId,
      client_secret: o.secrets ? o.secrets[client.secretEnv] : `\${${client.secretEnv}}`,
    };
  }
  return config;
}

/** The seed file registering the plan's clients for the suite's URIs under the alias, and the user to sign in as. */
export function conformanceSeed(o: ConformanceOptions): Record<string, unknown> {
  const base = `${o.suiteUrl.replace(/\/+$/, '')}/test/a/${o.alias}`;
  return {
    applications: CONFORMANCE_PLANS[o.plan].map((key) => {
      const client = CONFORMANCE_CLIENTS[key];
      return {
        clientId: client.clientId,
        clientName: `OpenID conformance suite (${key})`,
        redirectUris: [`${base}/callback`],
        postLogoutRedirectUris: [`${base}/post_logout_redirect`],
        allowedScopes: ['openid', 'profile', 'email', 'offline_access'],
        tokenEndpointAuthMethod: client.method,
        // The Basic plan sends PKCE in one module only (oidcc-ensure-request-with-valid-pkce-succeeds).
        pkce: 'optional',
        clientSecretEnv: client.secretEnv,
      };
    }),
    users: [{ email: o.loginHint, name: 'Conformance Test User', passwordEnv: CONFORMANCE_USER_PASSWORD_ENV }],
  };
}

export function conformanceCommand(rest: string[], io: Io): void {
  const { values, positionals } = parse(rest, {
    plan: { type: 'string' },
    alias: { type: 'string' },
    'suite-url': { type: 'string' },
    'login-hint': { type: 'string' },
    'with-secrets': { type: 'boolean' },
    seed: { type: 'boolean' },
  });
  if (values.help) {
    io.out(CONFORMANCE_HELP);
    return;
  }
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const plan = values.plan as string | undefined;
  if (!plan) throw new UsageError(`--plan is required: ${Object.keys(CONFORMANCE_PLANS).join(', ')}`);
  if (!Object.hasOwn(CONFORMANCE_PLANS, plan)) {
    throw new UsageError(`unknown plan "${plan}": ${Object.keys(CONFORMANCE_PLANS).join(', ')}`);
  }
  const alias = (values.alias as string | undefined) ?? 'idp';
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(alias)) throw new UsageError('--alias: 1-64 of A-Z a-z 0-9 . _ -');
  const suiteUrl = (values['suite-url'] as string | undefined) ?? DEFAULT_SUITE_URL;
  if (!URL.canParse(suiteUrl) || new URL(suiteUrl).protocol !== 'https:') {
    throw new UsageError('--suite-url must be an https URL');
  }
  const config = loadConfig(io.env);
  const options: ConformanceOptions = {
    plan: plan as ConformancePlan,
    issuer: config.issuer,
    alias,
    suiteUrl,
    loginHint: (values['login-hint'] as string | undefined) ?? `conformance@${new URL(config.issuer).hostname}`,
  };
  if (values.seed) {
    io.out(JSON.stringify(conformanceSeed(options), null, 2));
    return;
  }
  if (values['with-secrets']) {
    const names = CONFORMANCE_PLANS[options.plan].map((key) => CONFORMANCE_CLIENTS[key].secretEnv);
    const unset = names.filter((name) => !io.env[name]);
    if (unset.length) throw new UsageError(`--with-secrets: ${unset.join(', ')} not set`);
    options.secrets = Object.fromEntries(names.map((name) => [name, io.env[name]]));
  }
  if (!options.issuer.startsWith('https://')) {
    io.err(`warning: the issuer ${options.issuer} is not https; the suite requires https for every endpoint`);
  }
  io.out(JSON.stringify(planConfiguration(options), null, 2));
}
