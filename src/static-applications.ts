// Applications declared in STATIC_APPLICATIONS_FILE: read and validated once at start, read-only afterwards.
import { readFileSync } from 'node:fs';
import {
  applicationProblems,
  clientAuthProblems,
  clientAuthSettings,
  clientTypeOf,
  StaticApplicationSchema,
  type Application,
  type ApplicationCreate,
} from './domain/application.js';
import { DEFAULT_ALLOWED_SCOPES } from './oauth/scopes.js';
import type { StaticApplications } from './services/applications.js';
import { schemaProblems } from './validate.js';
import type { FieldProblem } from './errors.js';

export class StaticApplicationsError extends Error {
  constructor(
    readonly file: string,
    readonly problems: FieldProblem[],
  ) {
    super(
      `Invalid static applications file ${file}:\n${problems.map((p) => `  - ${p.field}: ${p.message}`).join('\n')}`,
    );
    this.name = 'StaticApplicationsError';
  }
}

export function parseStaticApplications(json: unknown, file: string): Application[] {
  const list = Array.isArray(json)
    ? json
    : json && typeof json === 'object' && Array.isArray((json as { applications?: unknown }).applications)
      ? (json as { applications: unknown[] }).applications
      : undefined;
  const prefix = Array.isArray(json) ? '' : 'applications';
  if (!list) {
    throw new StaticApplicationsError(file, [
      { field: '(file)', message: 'must be a JSON array of applications, or an object { "applications": [...] }' },
    ]);
  }
  const problems: FieldProblem[] = [];
  const seen = new Set<string>();
  list.forEach((entry, i) => {
    const at = prefix ? `${prefix}[${i}]` : `[${i}]`;
    const shape = schemaProblems(StaticApplicationSchema, entry, at);
    problems.push(...shape);
    if (shape.length === 0) {
      problems.push(...applicationProblems(entry as ApplicationCreate, at));
      problems.push(...clientAuthProblems(clientAuthSettings(entry as ApplicationCreate), at, { static: true }));
    }
    const id = (entry as { clientId?: unknown })?.clientId;
    if (typeof id === 'string') {
      if (seen.has(id)) problems.push({ field: `${at}.clientId`, message: `duplicate client id ${id}` });
      seen.add(id);
    }
  });
  if (problems.length) throw new StaticApplicationsError(file, problems);
  return list.map((entry) => {
    const a = entry as Application & { clientId: string };
    return {
      clientId: a.clientId,
      clientName: a.clientName,
      clientDescription: a.clientDescription ?? null,
      clientLogoUrl: a.clientLogoUrl ?? null,
      redirectUris: a.redirectUris,
      allowedWebOrigins: a.allowedWebOrigins ?? [],
      postLogoutRedirectUris: a.postLogoutRedirectUris ?? [],
      postVerificationRedirectPath: a.postVerificationRedirectPath ?? null,
      allowedScopes: a.allowedScopes ?? [...DEFAULT_ALLOWED_SCOPES],
      enabled: a.enabled ?? true,
      requireMfa: a.requireMfa ?? false,
      ...settings(entry as ApplicationCreate),
      registration: 'operator',
      source: 'static',
      createdAt: null,
      updatedAt: null,
    };
  });
}

export function loadStaticApplications(file: string | undefined): StaticApplications {
  if (!file) return staticApplicationsFrom([], undefined);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new StaticApplicationsError(file, [
      { field: '(file)', message: `cannot be read: ${(error as NodeJS.ErrnoException).code ?? String(error)}` },
    ]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new StaticApplicationsError(file, [
      { field: '(file)', message: `is not valid JSON: ${(error as Error).message}` },
    ]);
  }
  return staticApplicationsFrom(parseStaticApplications(json, file), file);
}

export function staticApplicationsFrom(apps: Application[], source: string | undefined): StaticApplications {
  const byId = new Map(apps.map((a) => [a.clientId, Object.freeze(a)]));
  const sorted = [...byId.values()].sort((a, b) => (a.clientId < b.clientId ? -1 : 1));
  return { get: (id) => byId.get(id), all: () => sorted, source };
}

function settings(a: ApplicationCreate) {
  const s = clientAuthSettings(a);
  return { ...s, clientType: clientTypeOf(s.tokenEndpointAuthMethod) };
}
