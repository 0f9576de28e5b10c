// Admin web: applications (list, create, details, integration snippet, edit, enable/disable, delete).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import type { ApplicationCreate } from '../../src/domain/application.js';
import { SCOPE_NAMES } from '../../src/oauth/scopes.js';
import {
  type AdminContext,
  fieldErrors,
  first,
  Form,
  type FormBody,
  lines,
  ListQuery,
  many,
  optional,
} from './context.js';
import * as views from './views.js';

const ClientIdParams = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 256 }) });

export function registerApplicationRoutes({
  app,
  config,
  adminPath,
  page,
  see,
  requireAdmin,
  requireAdminPost,
}: AdminContext) {
  const { applications } = app.services;

  app.get('/applications', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const { items, nextCursor } = await applications.list({
      q: request.query.q || undefined,
      cursor: request.query.cursor,
      limit: 50,
    });
    return page(
      reply,
      views.applicationList(admin.frame, {
        items,
        q: request.query.q,
        nextCursor,
        staticSource: app.staticApplications.source,
      }),
    );
  });

  app.get('/applications/new', async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    return page(reply, views.applicationForm(admin.frame, { values: {} }));
  });

  function applicationInput(body: FormBody): Omit<ApplicationCreate, 'clientId' | 'enabled'> {
    const scopes = many(body.allowedScopes).filter((s) =>
      (SCOPE_NAMES as readonly string[]).includes(s),
    ) as ApplicationCreate['allowedScopes'];
    return {
      clientName: (first(body.clientName) ?? '').trim(),
      clientDescription: optional(body.clientDescription),
      clientLogoUrl: optional(body.clientLogoUrl),
      redirectUris: lines(body.redirectUris),
      allowedWebOrigins: lines(body.allowedWebOrigins),
      postLogoutRedirectUris: lines(body.postLogoutRedirectUris),
      postVerificationRedirectPath: optional(body.postVerificationRedirectPath),
      allowedScopes: scopes!.length ? scopes : undefined,
    };
  }
  function formValues(body: FormBody): views.ApplicationForm {
    return {
      clientName: first(body.clientName) ?? '',
      clientDescription: first(body.clientDescription) ?? '',
      clientLogoUrl: first(body.clientLogoUrl) ?? '',
      redirectUris: first(body.redirectUris) ?? '',
      allowedWebOrigins: first(body.allowedWebOrigins) ?? '',
      postLogoutRedirectUris: first(body.postLogoutRedirectUris) ?? '',
      postVerificationRedirectPath: first(body.postVerificationRedirectPath) ?? '',
      allowedScopes: many(body.allowedScopes),
    };
  }
  function emptyFieldErrors(input: ReturnType<typeof applicationInput>): views.Errors {
    const errors: views.Errors = {};
    if (!input.clientName) errors.clientName = 'Enter a name';
    if (input.redirectUris.length === 0) errors.redirectUris = 'Enter at least one redirect URI';
    if (!input.allowedScopes) errors.allowedScopes = 'Choose at least openid';
    return errors;
  }

  app.post('/applications', { schema: { body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: '/applications/new' });
    if (!admin) return reply;
    const input = applicationInput(request.body);
    const missing = emptyFieldErrors(input);
    if (Object.keys(missing).length)
      return page(
        reply,
        views.applicationForm(admin.frame, { values: formValues(request.body), errors: missing }),
        400,
      );
    try {
      const created = await applications.create(input as ApplicationCreate, admin.actor);
      return see(reply, `${adminPath}/applications/${encodeURIComponent(created.clientId)}/created`);
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 400) {
        return page(
          reply,
          views.applicationForm(admin.frame, {
            values: formValues(request.body),
            errors: fieldErrors(error.details),
            formError: 'Please correct the fields marked below.',
          }),
          400,
        );
      }
      throw error;
    }
  });

  app.get(
    '/applications/:clientId',
    { schema: { params: ClientIdParams, querystring: ListQuery } },
    async (request, reply) => {
      const admin = await requireAdmin(request, reply);
      if (!admin) return reply;
      const found = await applications.get(request.params.clientId);
      return page(
        reply,
        views.applicationView(admin.frame, { app: found, staticSource: app.staticApplications.source }),
      );
    },
  );

  app.get('/applications/:clientId/created', { schema: { params: ClientIdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const found = await applications.get(request.params.clientId);
    const justCreated = Boolean(found.createdAt) && Date.now() - new Date(found.createdAt!).getTime() < 10 * 60 * 1000;
    return page(reply, views.applicationCreated(admin.frame, { app: found, issuer: config.issuer, justCreated }));
  });

  app.get('/applications/:clientId/edit', { schema: { params: ClientIdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const found = await applications.get(request.params.clientId);
    if (found.source === 'static')
      throw new AppError(
        409,
        'STATIC_APPLICATION',
        'Static applications are read-only here; change the static applications file.',
      );
    return page(reply, views.applicationForm(admin.frame, { app: found, values: views.formFromApplication(found) }));
  });

  app.post('/applications/:clientId', { schema: { params: ClientIdParams, body: Form } }, async (request, reply) => {
    const base = `/applications/${encodeURIComponent(request.params.clientId)}`;
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/edit` });
    if (!admin) return reply;
    const found = await applications.get(request.params.clientId);
    const input = applicationInput(request.body);
    const missing = emptyFieldErrors(input);
    if (Object.keys(missing).length)
      return page(
        reply,
        views.applicationForm(admin.frame, { app: found, values: formValues(request.body), errors: missing }),
        400,
      );
    try {
      await applications.update(request.params.clientId, input, admin.actor);
      return see(reply, `${adminPath}${base}?done=saved`);
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 400) {
        return page(
          reply,
          views.applicationForm(admin.frame, {
            app: found,
            values: formValues(request.body),
            errors: fieldErrors(error.details),
            formError: 'Please correct the fields marked below.',
          }),
          400,
        );
      }
      throw error;
    }
  });

  for (const action of ['enable', 'disable'] as const) {
    app.post(
      `/applications/:clientId/${action}`,
      { schema: { params: ClientIdParams, body: Form } },
      async (request, reply) => {
        const base = `/applications/${encodeURIComponent(request.params.clientId)}`;
        const admin = await requireAdminPost(request, reply, { returnPath: base });
        if (!admin) return reply;
        await applications.setEnabled(request.params.clientId, action === 'enable', admin.actor);
        return see(reply, `${adminPath}${base}?done=${action}d`);
      },
    );
  }

  app.get('/applications/:clientId/delete', { schema: { params: ClientIdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const found = await applications.get(request.params.clientId);
    const base = `${adminPath}/applications/${encodeURIComponent(found.clientId)}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Delete ${found.clientName}?`,
        message:
          'Every sign-in of this application stops working at once, and its tokens are deleted. ' +
          'This cannot be undone; disabling it can.',
        action: `${base}/delete`,
        button: 'Delete application',
        current: 'applications',
        back: base,
      }),
    );
  });
  app.post(
    '/applications/:clientId/delete',
    { schema: { params: ClientIdParams, body: Form } },
    async (request, reply) => {
      const base = `/applications/${encodeURIComponent(request.params.clientId)}`;
      const admin = await requireAdminPost(request, reply, { returnPath: `${base}/delete`, fresh: true });
      if (!admin) return reply;
      await applications.remove(request.params.clientId, admin.actor);
      return see(reply, `${adminPath}/applications?done=deleted`);
    },
  );
}
