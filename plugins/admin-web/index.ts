// The admin web under ADMIN_URL's path: applications, users, signing keys, audit log, and the first-admin
// setup link. Server-rendered, no JavaScript, CSRF on every form, the hosted pages' security headers.
// Access: a hosted-login session of a user with the admin role (signed-out visitors go to sign-in and
// come back; others get 403). Dangerous actions (delete, rotate) need a password entered within
// ADMIN_FRESHNESS, else the admin signs in again first. Every change goes through the same services as
// the admin API and the CLI (audit events and CORS cache invalidation included).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { AppError, type FieldProblem } from '../../src/errors.js';
import { AUDIT_EVENT_TYPES } from '../../src/services/audit.js';
import type { SessionContext } from '../../src/domain/session.js';
import type { ApplicationCreate } from '../../src/domain/application.js';
import { SCOPE_NAMES } from '../../src/oauth/scopes.js';
import { createCsrf } from '../pages/csrf.js';
import { securityHeaders, sendPage, sendStylesheet } from '../pages/kit.js';
import { adminPageErrors } from '../infra/error-handlers.js';
import * as views from './views.js';

const Form = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.Union([Type.String({ maxLength: 20000 }), Type.Array(Type.String({ maxLength: 2048 }), { maxItems: 100 })]),
);
type FormBody = Record<string, string | string[]>;
const ClientIdParams = Type.Object({ clientId: Type.String({ minLength: 1, maxLength: 256 }) });
const UserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
const ListQuery = Type.Object({
  q: Type.Optional(Type.String({ maxLength: 200 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  done: Type.Optional(Type.String({ maxLength: 32 })),
});

const NOTICES: Record<string, string> = {
  created: 'Created.',
  saved: 'Saved.',
  enabled: 'Enabled.',
  disabled: 'Disabled.',
  deleted: 'Deleted.',
  verified: 'E-mail address marked as verified.',
  'sessions-revoked': 'Every session of this user was revoked.',
  'grants-revoked': 'Every grant of this user was revoked.',
  rotated: 'Keys rotated: the next key is now current.',
};

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);
const lines = (v: string | string[] | undefined) =>
  (first(v) ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
const many = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const optional = (v: string | string[] | undefined) => (first(v) ?? '').trim() || null;

/** Service problems ("redirectUris.2", "clientName") onto form fields ("redirectUris", line numbers kept). */
function fieldErrors(problems: FieldProblem[] | undefined): views.Errors {
  const errors: views.Errors = {};
  for (const p of problems ?? []) {
    const [name, index] = p.field.split(/[./]/);
    const message = index !== undefined && /^\d+$/.test(index) ? `Line ${Number(index) + 1}: ${p.message}` : p.message;
    if (name && !errors[name]) errors[name] = message;
  }
  return errors;
}

const adminWeb: FastifyPluginAsyncTypebox<{ config: Config; adminPath: string }> = async (
  app,
  { config, adminPath },
) => {
  const csrf = createCsrf(config);
  const { applications, users, access, audit, adminSetup, signingKeys } = app.services;
  const signIn = (returnTo: string) => `${config.loginUrl}/sign-in?return_to=${encodeURIComponent(returnTo)}`;
  const abs = (path: string) => `${config.adminUrl}${path}`;

  app.addHook('onRequest', async (_request, reply) => {
    securityHeaders(reply);
  });

  const page = sendPage;
  const see = (reply: FastifyReply, location: string) => reply.code(303).header('location', location).send();

  const back = { href: `${adminPath}/`, text: 'Back to the admin' };
  const errorPage = (title: string, message: string, link?: boolean) =>
    views.messagePage(adminPath, { title, message, ...(link && { link: back }) });
  app.setErrorHandler(adminPageErrors(errorPage));

  interface Admin {
    ctx: SessionContext;
    frame: views.Frame;
    actor: { actor: string; ip: string };
  }

  /**
   * The signed-in admin, or undefined after answering: sign-in redirect (back to `returnPath`), 403 for
   * a non-admin, or (fresh) a new sign-in when the password is older than ADMIN_FRESHNESS.
   */
  async function requireAdmin(
    request: FastifyRequest,
    reply: FastifyReply,
    options: { returnPath?: string; fresh?: boolean } = {},
  ): Promise<Admin | undefined> {
    const returnPath = options.returnPath ?? request.url.slice(adminPath.length);
    const ctx = await app.currentSession(request);
    if (!ctx) {
      see(reply, signIn(abs(returnPath)));
      return undefined;
    }
    if (ctx.user.role !== 'admin') {
      page(
        reply,
        views.messagePage(adminPath, {
          title: 'Not an administrator',
          message: `You are signed in as ${ctx.user.email}, which is not an administrator account.`,
          link: { href: signIn(abs(returnPath)), text: 'Sign in with another account' },
        }),
        403,
      );
      return undefined;
    }
    if (options.fresh && Date.now() - new Date(ctx.session.auth_time).getTime() > config.ttl.adminFreshness * 1000) {
      see(reply, `${signIn(abs(returnPath))}&prompt=login`);
      return undefined;
    }
    const done = (request.query as { done?: string } | undefined)?.done;
    return {
      ctx,
      frame: {
        adminPath,
        csrf: csrf.token(request, reply),
        email: ctx.user.email,
        loginUrl: config.loginUrl,
        notice: done ? NOTICES[done] : undefined,
      },
      actor: { actor: `admin:${ctx.user.email}`, ip: request.ip },
    };
  }

  /** Every POST: CSRF (double submit + Origin), then the admin check. */
  async function requireAdminPost(
    request: FastifyRequest,
    reply: FastifyReply,
    options: { returnPath: string; fresh?: boolean },
  ) {
    csrf.check(request, first((request.body as FormBody | undefined)?.csrf));
    return requireAdmin(request, reply, options);
  }

  app.get('/assets/admin.css', async (_request, reply) => sendStylesheet(reply, views.ADMIN_STYLESHEET));

  app.get('/', async (request, reply) => {
    const admin = await requireAdmin(request, reply, { returnPath: '/applications' });
    if (!admin) return reply;
    return see(reply, `${adminPath}/applications`);
  });

  app.post('/sign-out', { schema: { body: Form } }, async (request, reply) => {
    csrf.check(request, first(request.body.csrf));
    await app.signOut(request, reply);
    return see(reply, signIn(abs('/applications')));
  });

  // First admin
  app.get(
    '/setup',
    { schema: { querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }) } },
    async (request, reply) => {
      const token = request.query.token ?? '';
      if (!(await adminSetup.isUsable(token))) {
        const exists = await adminSetup.adminExists();
        return page(
          reply,
          views.messagePage(
            adminPath,
            exists
              ? {
                  title: 'Setup is done',
                  message: 'An administrator exists already. Sign in instead.',
                  link: { href: signIn(abs('/applications')), text: 'Sign in' },
                }
              : {
                  title: 'This link does not work',
                  message:
                    'The setup link is invalid, expired or was used already. Restart the server for a new one, ' +
                    'or run: idp users create --admin --email EMAIL --password-stdin',
                },
          ),
          400,
        );
      }
      return page(reply, views.setupPage(adminPath, { token, csrf: csrf.token(request, reply) }));
    },
  );
  app.post('/setup', { schema: { body: Form } }, async (request, reply) => {
    csrf.check(request, first(request.body.csrf));
    const token = first(request.body.token) ?? '';
    const values = { email: first(request.body.email) ?? '', name: first(request.body.name) ?? '' };
    const password = first(request.body.password) ?? '';
    const again = (errors: views.Errors, status = 400, formError?: string) =>
      page(
        reply,
        views.setupPage(adminPath, {
          token,
          csrf: csrf.token(request, reply),
          values,
          errors,
          ...(formError && { formError }),
        }),
        status,
      );
    if (password !== (first(request.body.confirmPassword) ?? ''))
      return again({ confirmPassword: 'The two passwords are not the same' });
    try {
      const { sessionToken } = await adminSetup.complete(
        token,
        { ...values, password },
        { ip: request.ip, userAgent: request.headers['user-agent'] ?? null },
      );
      app.setSessionCookie(reply, sessionToken);
      return see(reply, `${adminPath}/applications?done=created`);
    } catch (error) {
      if (error instanceof AppError && (error.code === 'VALIDATION_ERROR' || error.code === 'EMAIL_TAKEN'))
        return again(fieldErrors(error.details), error.statusCode);
      throw error;
    }
  });

  // Applications
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

  // Users
  app.get('/users', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const { items, nextCursor } = await users.list({
      q: request.query.q || undefined,
      cursor: request.query.cursor,
      limit: 50,
    });
    return page(reply, views.userList(admin.frame, { items, q: request.query.q, nextCursor }));
  });

  app.get('/users/:id', { schema: { params: UserParams, querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const [sessions, grants] = await Promise.all([access.listSessions(user.id), access.listGrants(user.id)]);
    return page(reply, views.userView(admin.frame, { user, sessions, grants }));
  });

  const userActions: Record<string, (id: string, admin: Admin) => Promise<unknown>> = {
    disable: (id, admin) => users.setDisabled(id, true, admin.actor),
    enable: (id, admin) => users.setDisabled(id, false, admin.actor),
    verify: (id, admin) => users.update(id, { emailVerified: true }, admin.actor),
    'revoke-sessions': (id, admin) => access.revokeSessions(id, admin.actor),
    'revoke-grants': (id, admin) => access.revokeGrants(id, admin.actor),
  };
  const doneOf: Record<string, string> = {
    disable: 'disabled',
    enable: 'enabled',
    verify: 'verified',
    'revoke-sessions': 'sessions-revoked',
    'revoke-grants': 'grants-revoked',
  };
  for (const [action, run] of Object.entries(userActions)) {
    app.post(`/users/:id/${action}`, { schema: { params: UserParams, body: Form } }, async (request, reply) => {
      const base = `/users/${encodeURIComponent(request.params.id)}`;
      const admin = await requireAdminPost(request, reply, { returnPath: base });
      if (!admin) return reply;
      const user = await users.get(request.params.id);
      if (action === 'disable' && user.id === admin.ctx.user.id)
        throw new AppError(409, 'SELF', 'You cannot disable your own account here (you would lock yourself out).');
      await run(user.id, admin);
      return see(reply, `${adminPath}${base}?done=${doneOf[action]}`);
    });
  }

  app.get('/users/:id/delete', { schema: { params: UserParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const base = `${adminPath}/users/${user.id}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Delete ${user.email}?`,
        message:
          'The account, its sessions, grants and tokens are deleted. This cannot be undone; disabling the account can.',
        action: `${base}/delete`,
        button: 'Delete user',
        current: 'users',
        back: base,
      }),
    );
  });
  app.post('/users/:id/delete', { schema: { params: UserParams, body: Form } }, async (request, reply) => {
    const base = `/users/${encodeURIComponent(request.params.id)}`;
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/delete`, fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    if (user.id === admin.ctx.user.id) throw new AppError(409, 'SELF', 'You cannot delete your own account here.');
    await users.remove(user.id, admin.actor);
    return see(reply, `${adminPath}/users?done=deleted`);
  });

  // Signing keys
  app.get('/keys', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    return page(reply, views.keysPage(admin.frame, { keys: await signingKeys.list() }));
  });
  app.get('/keys/rotate', async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: 'Rotate the signing keys?',
        message:
          'The published next key becomes the signing key and a new next key is published. ' +
          'Tokens signed before stay valid.',
        action: `${adminPath}/keys/rotate`,
        button: 'Rotate now',
        current: 'keys',
        back: `${adminPath}/keys`,
      }),
    );
  });
  app.post('/keys/rotate', { schema: { body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: '/keys/rotate', fresh: true });
    if (!admin) return reply;
    try {
      await signingKeys.rotate(admin.actor, { force: false });
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 409)
        return page(reply, views.keysPage(admin.frame, { keys: await signingKeys.list(), error: error.message }), 409);
      throw error;
    }
    app.services.keys.invalidate();
    return see(reply, `${adminPath}/keys?done=rotated`);
  });

  // Audit log
  const AuditFilters = Type.Object({
    type: Type.Optional(Type.String({ maxLength: 64 })),
    userId: Type.Optional(Type.String({ maxLength: 128 })),
    clientId: Type.Optional(Type.String({ maxLength: 128 })),
    from: Type.Optional(Type.String({ maxLength: 32 })),
    to: Type.Optional(Type.String({ maxLength: 32 })),
    cursor: Type.Optional(Type.String({ maxLength: 64 })),
  });
  app.get('/audit', { schema: { querystring: AuditFilters } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const q = request.query;
    const filters = {
      type: q.type || undefined,
      userId: q.userId || undefined,
      clientId: q.clientId || undefined,
      from: q.from || undefined,
      to: q.to || undefined,
    };
    // datetime-local values have no zone: the page says UTC.
    const utc = (v: string | undefined) => (v && !/[zZ]|[+-]\d\d:?\d\d$/.test(v) ? `${v}Z` : v);
    try {
      const result = await audit.list({
        ...filters,
        from: utc(filters.from),
        to: utc(filters.to),
        cursor: q.cursor || undefined,
        limit: 50,
      });
      return page(
        reply,
        views.auditPage(admin.frame, {
          items: result.items,
          filters,
          nextCursor: result.nextCursor,
          types: AUDIT_EVENT_TYPES,
        }),
      );
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 400) {
        return page(
          reply,
          views.auditPage(admin.frame, {
            items: [],
            filters,
            types: AUDIT_EVENT_TYPES,
            error: error.details?.map((d) => `${d.field} ${d.message}`).join('; ') ?? error.message,
          }),
          400,
        );
      }
      throw error;
    }
  });
};

export default adminWeb;
