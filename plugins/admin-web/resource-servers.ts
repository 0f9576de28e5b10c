// Admin web: APIs (resource servers, issue 36): list, add, details, edit (scopes as rows; "More scope rows" redraws
// the form with empty rows, without saving), enable/disable, delete after a confirmation with a fresh password.
// The identifier is one percent-encoded path segment, as in the admin API. The built-in /api/external is shown,
// read-only. Everything goes through services.resourceServers, as the admin API, the CLI and SEED_FILE do.
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { type Application, isSelfRegistered } from '../../src/domain/application.js';
import type { ResourceServer, ResourceServerUpdate } from '../../src/domain/resource-server.js';
import { AppError, type FieldProblem } from '../../src/errors.js';
import { type Admin, type AdminContext, fieldErrors, first, Form, type FormBody, many } from './context.js';
import * as views from './views.js';

const IdentifierParams = Type.Object({ identifier: Type.String({ minLength: 1, maxLength: 255 }) });
const MAX_PICKER_PAGES = 5;

const text = (v: string | string[] | undefined) => (first(v) ?? '').trim();
const on = (v: string | string[] | undefined) => first(v) === 'on';

interface Parsed {
  values: views.ApiForm;
  input: ResourceServerUpdate;
  /** Problems the form finds before the service (the lifetime is not a number). */
  errors: views.Errors;
}

/** The form's fields: the values to show again, and the service's input (empty scope rows left out). */
function parse(body: FormBody): Parsed {
  const names = many(body.scopeName);
  const labels = many(body.scopeLabel);
  const consents = many(body.scopeConsent);
  const rows = names.map((name, i) => ({
    name: name.trim(),
    label: (labels[i] ?? '').trim(),
    consent: (consents[i] ?? '').trim(),
  }));
  const filled = rows.filter((r) => r.name || r.label || r.consent);
  const ttlText = text(body.accessTokenTtl);
  const errors: views.Errors = {};
  let accessTokenTtl: number | null = null;
  if (ttlText) {
    if (/^\d{1,9}$/.test(ttlText)) accessTokenTtl = Number(ttlText);
    else errors.accessTokenTtl = 'Enter whole seconds, or leave it empty';
  }
  const values: views.ApiForm = {
    identifier: text(body.identifier),
    name: text(body.name),
    description: first(body.description) ?? '',
    scopes: filled,
    accessTokenFormat: text(body.accessTokenFormat),
    accessTokenTtl: ttlText,
    allowedClients: many(body.allowedClients),
    allowSelfRegistered: on(body.allowSelfRegistered),
    introspectionClients: many(body.introspectionClients),
    enabled: on(body.enabled),
  };
  const input: ResourceServerUpdate = {
    name: values.name!,
    description: values.description!.trim() || null,
    scopes: filled.map((r) => ({ name: r.name, label: r.label, consentDescription: r.consent || r.label })),
    accessTokenFormat: values.accessTokenFormat === 'jwt' ? 'jwt' : 'opaque',
    accessTokenTtl,
    allowedClients: values.allowedClients,
    allowSelfRegistered: values.allowSelfRegistered!,
    introspectionClients: values.introspectionClients,
    enabled: values.enabled!,
  };
  return { values, input, errors };
}

/**
 * The service's problems: a scope's by its row (`scopes.2.label`: the form shows the filled rows again, in order, so
 * scope 2 is row 2), the others by field.
 */
function problemsOf(problems: FieldProblem[]) {
  const scopeErrors: Record<number, string> = {};
  const rest: FieldProblem[] = [];
  for (const p of problems) {
    const m = /^scopes\.(\d+)(?:\.(\w+))?$/.exec(p.field);
    if (!m) {
      rest.push(p);
      continue;
    }
    const part = m[2] === 'consentDescription' ? 'consent text' : m[2];
    scopeErrors[Number(m[1])] ??= `${part ? `${part}: ` : ''}${p.message}`;
  }
  return { errors: fieldErrors(rest), scopeErrors };
}

export function registerResourceServerRoutes({
  app,
  config,
  adminPath,
  page,
  see,
  requireAdmin,
  requireAdminPost,
}: AdminContext) {
  const { resourceServers, applications } = app.services;
  const pathOf = (identifier: string) => `/apis/${encodeURIComponent(identifier)}`;
  const defaultTtl = config.ttl.accessToken;

  /**
   * The applications an operator registered (self-registered ones are governed by allowSelfRegistered), from the
   * first MAX_PICKER_PAGES pages of 200: a setting that names one beyond them is still shown (as not listed).
   */
  async function pickable(): Promise<Application[]> {
    const apps: Application[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await applications.list({ limit: 200, cursor });
      apps.push(...page.items.filter((a) => !isSelfRegistered(a)));
      cursor = page.nextCursor ?? undefined;
    } while (cursor && ++pages < MAX_PICKER_PAGES);
    return apps;
  }

  async function registered(identifier: string): Promise<ResourceServer> {
    const server = await resourceServers.find(identifier);
    if (!server) throw new AppError(404, 'NOT_FOUND', 'There is no API with this identifier.');
    if (server.builtIn) {
      throw new AppError(400, 'BUILT_IN_RESOURCE', 'The built-in API (/api/external) is read-only.');
    }
    return server;
  }

  async function showForm(
    reply: FastifyReply,
    admin: Admin,
    o: {
      server?: ResourceServer;
      values: views.ApiForm;
      errors?: views.Errors;
      scopeErrors?: Record<number, string>;
      formError?: string;
    },
    status = 200,
  ) {
    return page(reply, views.apiForm(admin.frame, { ...o, apps: await pickable(), defaultTtl }), status);
  }

  /** Create or save: "More scope rows" redraws; otherwise the service, and its problems on the form. */
  async function submit(
    reply: FastifyReply,
    admin: Admin,
    body: FormBody,
    server: ResourceServer | undefined,
    write: (input: ResourceServerUpdate, identifier: string) => Promise<ResourceServer>,
  ) {
    const { values, input, errors } = parse(body);
    if (text(body.action) === 'more-scopes') return showForm(reply, admin, { server, values });
    const formError = 'Please correct the fields marked below.';
    if (Object.keys(errors).length) return showForm(reply, admin, { server, values, errors, formError }, 400);
    try {
      const saved = await write(input, server?.identifier ?? values.identifier!);
      return see(reply, `${adminPath}${pathOf(saved.identifier)}?done=${server ? 'saved' : 'created'}`);
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode !== 400 || error.code === 'BUILT_IN_RESOURCE') throw error;
      const shown = problemsOf(error.details ?? [{ field: 'name', message: error.message }]);
      return showForm(reply, admin, { server, values, ...shown, formError }, 400);
    }
  }

  app.get('/apis', async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    return page(reply, views.apiList(admin.frame, { items: await resourceServers.list() }));
  });

  app.get('/apis/new', async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const values: views.ApiForm = { scopes: [], allowedClients: [], introspectionClients: [], enabled: true };
    return showForm(reply, admin, { values });
  });

  app.post('/apis', { schema: { body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: '/apis/new' });
    if (!admin) return reply;
    return submit(reply, admin, request.body, undefined, (input, identifier) =>
      resourceServers.create({ identifier, ...input, name: input.name ?? '' }, admin.actor),
    );
  });

  app.get('/apis/:identifier', { schema: { params: IdentifierParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const server = await resourceServers.find(request.params.identifier);
    if (!server) throw new AppError(404, 'NOT_FOUND', 'There is no API with this identifier.');
    return page(reply, views.apiView(admin.frame, { server, defaultTtl }));
  });

  app.get('/apis/:identifier/edit', { schema: { params: IdentifierParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const server = await registered(request.params.identifier);
    return showForm(reply, admin, { server, values: views.formFromApi(server) });
  });

  app.post('/apis/:identifier', { schema: { params: IdentifierParams, body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: `${pathOf(request.params.identifier)}/edit` });
    if (!admin) return reply;
    const server = await registered(request.params.identifier);
    return submit(reply, admin, request.body, server, (input, identifier) =>
      resourceServers.update(identifier, input, admin.actor),
    );
  });

  for (const action of ['enable', 'disable'] as const) {
    app.post(
      `/apis/:identifier/${action}`,
      { schema: { params: IdentifierParams, body: Form } },
      async (request, reply) => {
        const base = pathOf(request.params.identifier);
        const admin = await requireAdminPost(request, reply, { returnPath: base });
        if (!admin) return reply;
        await resourceServers.update(request.params.identifier, { enabled: action === 'enable' }, admin.actor);
        return see(reply, `${adminPath}${base}?done=${action}d`);
      },
    );
  }

  app.get('/apis/:identifier/delete', { schema: { params: IdentifierParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const server = await registered(request.params.identifier);
    const base = `${adminPath}${pathOf(server.identifier)}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Delete ${server.name}?`,
        message:
          `Applications can no longer ask for tokens for ${server.identifier} (invalid_target); tokens already ` +
          'issued for it run out as they would. This cannot be undone; disabling it can.',
        action: `${base}/delete`,
        button: 'Delete API',
        current: 'apis',
        back: base,
      }),
    );
  });
  app.post('/apis/:identifier/delete', { schema: { params: IdentifierParams, body: Form } }, async (request, reply) => {
    const base = pathOf(request.params.identifier);
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/delete`, fresh: true });
    if (!admin) return reply;
    await resourceServers.remove(request.params.identifier, admin.actor);
    return see(reply, `${adminPath}/apis?done=deleted`);
  });
}
