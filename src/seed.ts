// The seed file (idp seed FILE, SEED_FILE at start): applications with fixed client ids and users, for CI
// and development. Read and checked here, all of it, before the database is touched: every problem is
// reported with the file, the entry and the field (`seed.json: applications[1] (clientId "ci-app"):
// redirectUris[0]: ...`). Passwords never appear in the file: an entry names an environment variable
// (passwordEnv) that holds it; nor do client secrets (clientSecretEnv). src/services/seed.ts applies a checked file.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import Type from 'typebox';
import {
  applicationProblems,
  clientAuthProblems,
  clientAuthSettings,
  clientSecretProblem,
  SECRET_METHODS,
  StaticApplicationSchema,
  type ApplicationCreate,
} from './domain/application.js';
import { UserCreateSchema, userProblems, type UserCreate } from './domain/user.js';
import {
  secretInputProblems,
  settingsOfCreate,
  upstreamProblems,
  UpstreamProviderCreateSchema,
  type UpstreamProviderCreate,
} from './domain/upstream-config.js';
import {
  type ResourceServerCreate,
  ResourceServerCreateSchema,
  resourceServerProblems,
} from './domain/resource-server.js';
import { AppError, type FieldProblem } from './errors.js';
import { isCommonPassword } from './passwords.js';
import { schemaProblems } from './validate.js';

export interface SeedProblem {
  /** `applications[1] (clientId "ci-app")`, or empty for the file as a whole. */
  entry: string;
  /** The field inside the entry (`redirectUris[0]`); empty when the entry as a whole is wrong. */
  field: string;
  message: string;
}

/** A bad seed file: every problem, one line each. An AppError, so the CLI reports it with exit code 1. */
export class SeedError extends AppError {
  constructor(
    readonly file: string,
    readonly problems: SeedProblem[],
  ) {
    const line = (p: SeedProblem) => `${[file, p.entry, p.field].filter(Boolean).join(': ')}: ${p.message}`;
    const text =
      problems.length === 1
        ? line(problems[0]!)
        : `${problems.length} problems in the seed file:\n${problems.map((p) => `  ${line(p)}`).join('\n')}`;
    super(400, 'SEED_INVALID', text);
    this.name = 'SeedError';
  }
}

export interface SeedApplication {
  /** How messages name the entry: `applications[0] (clientId "ci-app")`. */
  entry: string;
  input: ApplicationCreate & { clientId: string };
  /** "replace": true: the seed may take over an application of that id that it did not create. */
  replace: boolean;
  /** client_secret_basic/post: the secret, read from the variable clientSecretEnv names (never from the file). */
  clientSecret?: string;
}

export interface SeedUser {
  entry: string;
  /** The fields the file gives; password read from passwordEnv; emailVerified true unless given. */
  input: UserCreate;
  /** The fields the file gives (without the password): what an existing user is compared on. */
  given: Array<keyof UserCreate>;
  /** "replace": true: the seed may take over an account with that address that it did not create. */
  replace: boolean;
}

/** An upstream identity provider (issue 35): the admin API's create body, the secret from clientSecretEnv. */
export interface SeedUpstream {
  entry: string;
  /** The fields the file gives (the secret read from the environment, never from the file). */
  input: UpstreamProviderCreate & { id: string };
  /** The fields the file gives or its preset fills: what an existing provider is compared on. */
  given: string[];
}

/** A resource server (issue 36): the admin API's create body. */
export interface SeedResourceServer {
  entry: string;
  input: ResourceServerCreate;
  /** The fields the file gives (but the identifier): what an existing one is compared on. */
  given: Array<Exclude<keyof ResourceServerCreate, 'identifier'>>;
}

export interface SeedPlan {
  /** As messages name it: relative to the working directory when under it. */
  file: string;
  applications: SeedApplication[];
  users: SeedUser[];
  /** Absent in plans made before issue 35 (tests build plans by hand): none. */
  upstreams?: SeedUpstream[];
  /** Absent in plans made before issue 36: none. */
  resourceServers?: SeedResourceServer[];
}

const Replace = Type.Optional(
  Type.Boolean({ description: 'take over an existing row that the seed did not create (see the README)' }),
);

const SeedUserSchema = Type.Object(
  {
    ...Type.Omit(UserCreateSchema, ['password']).properties,
    passwordEnv: Type.Optional(
      Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', description: 'an environment variable name' }),
    ),
    replace: Replace,
  },
  { additionalProperties: false },
);

const EnvName = (description: string) => Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', description });

/**
 * An application entry: a static application's fields (clientId required), "replace", and for a client_secret_basic
 * or client_secret_post application the environment variable that holds its secret.
 */
const SeedApplicationSchema = Type.Object(
  {
    ...StaticApplicationSchema.properties,
    clientSecretEnv: Type.Optional(EnvName('the environment variable that holds the client secret')),
    replace: Replace,
  },
  { additionalProperties: false },
);

/**
 * An upstream provider entry: the admin API's create body (a preset, or the fields of an OpenID Connect or OAuth 2.0
 * provider) with the secret from the environment variable clientSecretEnv names.
 */
const SeedUpstreamSchema = Type.Object(
  {
    ...Type.Omit(UpstreamProviderCreateSchema, ['clientSecret']).properties,
    clientSecretEnv: Type.Optional(EnvName('the environment variable that holds the client secret')),
  },
  { additionalProperties: false },
);

const FILE_FIELDS = ['applications', 'users', 'upstreams', 'resourceServers'];
type ListKey = 'applications' | 'users' | 'upstreams' | 'resourceServers';
const ENTRY_KEYS: Record<ListKey, string> = {
  applications: 'clientId',
  users: 'email',
  upstreams: 'id',
  resourceServers: 'identifier',
};

/** `redirectUris.0` (the schema checker's path) as a reader writes it: `redirectUris[0]`. */
const fieldPath = (field: string) => field.replace(/\.(\d+)(?=\.|$)/g, '[$1]');

function toSeedProblems(entry: string, problems: FieldProblem[]): SeedProblem[] {
  return problems.map((p) =>
    p.field === '(body)'
      ? { entry, field: '', message: p.message }
      : { entry, field: fieldPath(p.field), message: p.message },
  );
}

/** Where a JSON syntax error is: V8 says "at position N"; a person wants the line and column. */
function jsonSyntaxMessage(text: string, error: Error): string {
  const position = /at position (\d+)/.exec(error.message)?.[1];
  const detail = error.message.replace(/ in JSON at position \d+.*$/, '').replace(/\s*\(line \d+ column \d+\)$/, '');
  if (position === undefined) return `is not valid JSON: ${error.message}`;
  const before = text.slice(0, Number(position));
  const line = before.split('\n').length;
  const column = Number(position) - before.lastIndexOf('\n');
  return `is not valid JSON: ${detail} at line ${line}, column ${column}`;
}

/** The entry without the fields its schema does not know (each reported already). */
function knownFields(value: unknown, properties: object): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => Object.hasOwn(properties, key)));
}

function entryName(kind: ListKey, i: number, value: unknown): string {
  const key = ENTRY_KEYS[kind];
  const id = (value as Record<string, unknown> | null)?.[key];
  return typeof id === 'string' ? `${kind}[${i}] (${key} ${JSON.stringify(id)})` : `${kind}[${i}]`;
}

/** The secret clientSecretEnv names: required for a secret method, refused for the others. */
function clientSecretOf(
  entry: string,
  method: string,
  variable: string | undefined,
  env: Record<string, string | undefined>,
  problems: SeedProblem[],
): string | undefined {
  const hasSecret = (SECRET_METHODS as readonly string[]).includes(method);
  const field = 'clientSecretEnv';
  if (!hasSecret) {
    if (variable !== undefined) {
      problems.push({ entry, field, message: `a ${method} application has no client secret; remove clientSecretEnv` });
    }
    return undefined;
  }
  if (variable === undefined) {
    problems.push({
      entry,
      field,
      message:
        `a ${method} application needs its secret from the environment: name the variable in ` +
        '"clientSecretEnv" (generate the secret with: openssl rand -base64 32)',
    });
    return undefined;
  }
  const secret = env[variable];
  if (!secret) {
    problems.push({ entry, field, message: `environment variable ${variable} is not set` });
    return undefined;
  }
  const problem = clientSecretProblem(secret);
  if (problem) {
    problems.push({ entry, field, message: `the value of ${variable} ${problem}; it has ${secret.length} characters` });
    return undefined;
  }
  return secret;
}

function checkApplications(
  list: unknown[],
  env: Record<string, string | undefined>,
  problems: SeedProblem[],
): SeedApplication[] {
  const seen = new Map<string, string>();
  return list.map((value, i) => {
    const entry = entryName('applications', i, value);
    const raw = (value ?? {}) as Record<string, unknown>;
    if (typeof value === 'object' && value !== null && 'clientSecret' in raw) {
      problems.push({
        entry,
        field: 'clientSecret',
        message:
          'a literal client secret is not accepted in a seed file: put it in an environment variable and ' +
          'name that variable in "clientSecretEnv"',
      });
    }
    const { clientSecret: _literal, ...rest } = raw;
    problems.push(...toSeedProblems(entry, schemaProblems(SeedApplicationSchema, rest)));
    // An unknown field does not hide a bad value elsewhere: the rules run on the known fields when their
    // shape is right.
    const known = knownFields(rest, SeedApplicationSchema.properties);
    let clientSecret: string | undefined;
    if (schemaProblems(SeedApplicationSchema, known).length === 0) {
      const {
        clientSecretEnv,
        replace: _replace,
        ...fields
      } = known as ApplicationCreate & {
        clientSecretEnv?: string;
        replace?: boolean;
      };
      const settings = clientAuthSettings(fields);
      problems.push(...toSeedProblems(entry, applicationProblems(fields)));
      problems.push(...toSeedProblems(entry, clientAuthProblems(settings)));
      clientSecret = clientSecretOf(entry, settings.tokenEndpointAuthMethod, clientSecretEnv, env, problems);
    }
    const {
      replace,
      clientSecretEnv: _env,
      ...input
    } = rest as SeedApplication['input'] & { replace?: boolean; clientSecretEnv?: string };
    if (typeof input?.clientId === 'string') {
      const first = seen.get(input.clientId);
      if (first) problems.push({ entry, field: 'clientId', message: `the same client id as ${first}` });
      else seen.set(input.clientId, `applications[${i}]`);
    }
    return { entry, input, replace: replace === true, ...(clientSecret !== undefined && { clientSecret }) };
  });
}

function checkUsers(list: unknown[], env: Record<string, string | undefined>, problems: SeedProblem[]): SeedUser[] {
  const seen = new Map<string, string>();
  return list.map((value, i) => {
    const entry = entryName('users', i, value);
    const raw = (value ?? {}) as Record<string, unknown> & { passwordEnv?: string };
    if (typeof value === 'object' && value !== null && 'password' in raw) {
      problems.push({
        entry,
        field: 'password',
        message:
          'a literal password is not accepted in a seed file: put it in an environment variable and ' +
          'name that variable in "passwordEnv"',
      });
    }
    const { password: _literal, ...rest } = raw;
    problems.push(...toSeedProblems(entry, schemaProblems(SeedUserSchema, rest)));
    const known = knownFields(rest, SeedUserSchema.properties);
    const shape = schemaProblems(SeedUserSchema, known);
    const { passwordEnv, replace, ...fields } = known as typeof rest & { passwordEnv?: string; replace?: boolean };
    const given = Object.keys(fields) as Array<keyof UserCreate>;
    const input = { ...fields, emailVerified: fields.emailVerified ?? true } as UserCreate;
    if (shape.length === 0) {
      problems.push(...toSeedProblems(entry, userProblems(input)));
      if (passwordEnv !== undefined) {
        const password = env[passwordEnv];
        if (!password) {
          problems.push({ entry, field: 'passwordEnv', message: `environment variable ${passwordEnv} is not set` });
        } else if (password.length < 8 || password.length > 128) {
          problems.push({
            entry,
            field: 'passwordEnv',
            message: `the value of ${passwordEnv} must be 8 to 128 characters long (it has ${password.length})`,
          });
        } else if (isCommonPassword(password)) {
          problems.push({
            entry,
            field: 'passwordEnv',
            message: `the value of ${passwordEnv} is one of the most common passwords; choose another`,
          });
        } else {
          input.password = password;
        }
      }
      const email = input.email.toLowerCase();
      const first = seen.get(email);
      if (first) problems.push({ entry, field: 'email', message: `the same e-mail address as ${first}` });
      else seen.set(email, `users[${i}]`);
    }
    return { entry, input, given, replace: replace === true };
  });
}

function checkUpstreams(
  list: unknown[],
  env: Record<string, string | undefined>,
  problems: SeedProblem[],
): SeedUpstream[] {
  const seen = new Map<string, string>();
  return list.map((value, i) => {
    const entry = entryName('upstreams', i, value);
    const raw = (value ?? {}) as Record<string, unknown>;
    if (typeof value === 'object' && value !== null && 'clientSecret' in raw) {
      problems.push({
        entry,
        field: 'clientSecret',
        message:
          'a literal client secret is not accepted in a seed file: put it in an environment variable and ' +
          'name that variable in "clientSecretEnv"',
      });
    }
    const { clientSecret: _literal, ...rest } = raw;
    problems.push(...toSeedProblems(entry, schemaProblems(SeedUpstreamSchema, rest)));
    const known = knownFields(rest, SeedUpstreamSchema.properties);
    const { clientSecretEnv, ...fields } = known as UpstreamProviderCreate & { clientSecretEnv?: string };
    const input = { ...fields } as UpstreamProviderCreate & { id: string };
    if (schemaProblems(SeedUpstreamSchema, known).length === 0) {
      if (clientSecretEnv !== undefined) {
        const secret = env[clientSecretEnv];
        if (!secret)
          problems.push({
            entry,
            field: 'clientSecretEnv',
            message: `environment variable ${clientSecretEnv} is not set`,
          });
        else input.clientSecret = secret;
      }
      const { settings, problems: missing } = settingsOfCreate(input);
      input.id = settings.id;
      const rules = [...missing, ...upstreamProblems(settings), ...secretInputProblems(settings.clientAuth, input)];
      // The secret comes from clientSecretEnv: name that field, not clientSecret.
      for (const p of rules) {
        const field = p.field === 'clientSecret' ? 'clientSecretEnv' : p.field;
        const message =
          p.field === 'clientSecret' && clientSecretEnv === undefined
            ? `${p.message}: name the environment variable that holds it in "clientSecretEnv"`
            : p.message;
        problems.push(...toSeedProblems(entry, [{ field, message }]));
      }
      const first = seen.get(settings.id);
      if (first) problems.push({ entry, field: 'id', message: `the same provider id as ${first}` });
      else seen.set(settings.id, `upstreams[${i}]`);
    }
    const presetKeys = input.preset
      ? [
          'kind',
          'name',
          'authorizationEndpoint',
          'tokenEndpoint',
          'userinfoEndpoint',
          'emailsEndpoint',
          'clientAuth',
        ].concat(['scopes', 'mapping', 'trustEmailVerified'])
      : [];
    const given = [...new Set([...Object.keys(fields).filter((k) => k !== 'id' && k !== 'preset'), ...presetKeys])];
    return { entry, input, given };
  });
}

/**
 * Resource servers (issue 36): the admin API's create body and its rules (the built-in /api/external and scope names
 * held by servers already in the database are checked when applied), identifiers and scope names once in the file.
 */
function checkResourceServers(list: unknown[], problems: SeedProblem[]): SeedResourceServer[] {
  const identifiers = new Map<string, string>();
  const scopes = new Map<string, string>();
  return list.map((value, i) => {
    const entry = entryName('resourceServers', i, value);
    const here = `resourceServers[${i}]`;
    problems.push(...toSeedProblems(entry, schemaProblems(ResourceServerCreateSchema, value)));
    const known = knownFields(value, ResourceServerCreateSchema.properties);
    const input = (known ?? {}) as ResourceServerCreate;
    if (typeof input.identifier === 'string') {
      const first = identifiers.get(input.identifier);
      if (first) problems.push({ entry, field: 'identifier', message: `the same identifier as ${first}` });
      else identifiers.set(input.identifier, here);
    }
    if (schemaProblems(ResourceServerCreateSchema, known).length === 0) {
      const rules = resourceServerProblems(
        {
          identifier: input.identifier,
          scopes: input.scopes ?? [],
          allowedClients: input.allowedClients ?? [],
          introspectionClients: input.introspectionClients ?? [],
        },
        '',
      );
      problems.push(...toSeedProblems(entry, rules));
      (input.scopes ?? []).forEach((scope, j) => {
        const owner = scopes.get(scope.name);
        if (owner && owner !== here)
          problems.push({ entry, field: `scopes[${j}].name`, message: `"${scope.name}" is a scope of ${owner} too` });
        else scopes.set(scope.name, here);
      });
    }
    const given = Object.keys(input).filter((k) => k !== 'identifier') as SeedResourceServer['given'];
    return { entry, input, given };
  });
}

/** Checks a parsed seed file; throws a SeedError listing every problem. */
export function parseSeed(json: unknown, file: string, env: Record<string, string | undefined>): SeedPlan {
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    throw new SeedError(file, [
      {
        entry: '',
        field: '',
        message:
          'must be a JSON object { "applications": [...], "users": [...], "upstreams": [...], ' +
          '"resourceServers": [...] }',
      },
    ]);
  }
  const problems: SeedProblem[] = [];
  const top = json as Record<string, unknown>;
  for (const key of Object.keys(top)) {
    if (!FILE_FIELDS.includes(key)) {
      problems.push({ entry: '', field: key, message: `is not a known field (${FILE_FIELDS.join(', ')})` });
    }
  }
  const listOf = (key: ListKey): unknown[] => {
    const value = top[key];
    if (value === undefined) return [];
    if (Array.isArray(value)) return value;
    problems.push({ entry: '', field: key, message: 'must be an array' });
    return [];
  };
  const applications = checkApplications(listOf('applications'), env, problems);
  const users = checkUsers(listOf('users'), env, problems);
  const upstreams = checkUpstreams(listOf('upstreams'), env, problems);
  const resourceServers = checkResourceServers(listOf('resourceServers'), problems);
  if (problems.length) throw new SeedError(file, problems);
  return { file, applications, users, upstreams, resourceServers };
}

/** How a path appears in messages: relative to the working directory when it lies under it. */
export function displayPath(file: string, cwd = process.cwd()): string {
  const rel = relative(cwd, file);
  return rel && !rel.startsWith('..') && !rel.startsWith('/') ? rel : file;
}

/** Reads and checks a seed file (`env` holds the variables that passwordEnv names). */
export function loadSeedFile(path: string, env: Record<string, string | undefined>): SeedPlan {
  const file = displayPath(path);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new SeedError(file, [{ entry: '', field: '', message: `cannot be read: ${code}` }]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SeedError(file, [{ entry: '', field: '', message: jsonSyntaxMessage(text, error as Error) }]);
  }
  return parseSeed(json, file, env);
}
