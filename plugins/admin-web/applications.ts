// Admin web: applications (list, create, details, integration snippet, edit, enable/disable, delete).
import type { FastifyReply } from 'fastify';
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import {
  DEFAULT_GRANT_TYPES,
  type Application,
  type ApplicationCreate,
  type GrantType,
  type TokenEndpointAuthMethod,
} from '../../src/domain/application.js';
import type { ApplicationWithSecret } from '../../src/services/applications.js';
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
const SecretParams = Type.Object({
  clientId: Type.String({ minLength: 1, maxLength: 256 }),
  secretId: Type.String({ minLength: 1, maxLength: 64 }),
});
const CONFIDENTIAL_METHODS: TokenEndpointAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
];
const OVERLAP_CHOICES = ['0', '3600', '86400', '604800'];

/** The application's settings as the form gives them; `jwks` is the textarea's JSON, checked by emptyFieldErrors. */
type FormInput = Omit<ApplicationCreate, 'clientId' | 'enabled'> & { jwksText: string | null };

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

  /**
   * The form's fields as the service takes them. A browser or mobile app is a public PKCE client whatever the
   * server-side fields say (they are shown without a script, so they may hold values); `current`: the application
   * being edited, whose grant types other than client_credentials are kept.
   */
  function applicationInput(body: FormBody, current?: Application): FormInput {
    const scopes = many(body.allowedScopes).filter((s) =>
      (SCOPE_NAMES as readonly string[]).includes(s),
    ) as ApplicationCreate['allowedScopes'];
    const confidential = first(body.clientType) === 'confidential';
    const requested = first(body.authMethod) as TokenEndpointAuthMethod;
    const method: TokenEndpointAuthMethod = !confidential
      ? 'none'
      : CONFIDENTIAL_METHODS.includes(requested)
        ? requested
        : 'client_secret_basic';
    const base = (current?.grantTypes ?? DEFAULT_GRANT_TYPES).filter((g) => g !== 'client_credentials');
    const grantTypes: GrantType[] = [
      ...(base.length ? base : DEFAULT_GRANT_TYPES),
      ...(confidential && first(body.clientCredentials) === 'on' ? (['client_credentials'] as const) : []),
    ];
    const jwt = method === 'private_key_jwt';
    return {
      tokenEndpointAuthMethod: method,
      pkce: confidential && first(body.pkce) === 'optional' ? 'optional' : 'required',
      grantTypes,
      jwksUri: jwt ? optional(body.jwksUri) : null,
      jwks: null,
      jwksText: jwt ? optional(body.jwks) : null,
      clientName: (first(body.clientName) ?? '').trim(),
      clientDescription: optional(body.clientDescription),
      clientLogoUrl: optional(body.clientLogoUrl),
      redirectUris: lines(body.redirectUris),
      allowedWebOrigins: lines(body.allowedWebOrigins),
      postLogoutRedirectUris: lines(body.postLogoutRedirectUris),
      postVerificationRedirectPath: optional(body.postVerificationRedirectPath),
      allowedScopes: scopes!.length ? scopes : undefined,
      requireMfa: first(body.requireMfa) === 'on',
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
      clientType: first(body.clientType) === 'confidential' ? 'confidential' : 'public',
      authMethod: first(body.authMethod) ?? '',
      pkce: first(body.pkce) ?? '',
      clientCredentials: first(body.clientCredentials) === 'on',
      requireMfa: first(body.requireMfa) === 'on',
      jwks: first(body.jwks) ?? '',
      jwksUri: first(body.jwksUri) ?? '',
    };
  }
  /** The service's input: the JWK Set parsed (a form error when it is not JSON). */
  function serviceInput({ jwksText, ...input }: FormInput): Omit<ApplicationCreate, 'clientId' | 'enabled'> {
    if (jwksText === null) return input;
    return { ...input, jwks: JSON.parse(jwksText) as ApplicationCreate['jwks'] };
  }
  function emptyFieldErrors(input: ReturnType<typeof applicationInput>): views.Errors {
    const errors: views.Errors = {};
    if (!input.clientName) errors.clientName = 'Enter a name';
    if (input.redirectUris.length === 0) errors.redirectUris = 'Enter at least one redirect URI';
    if (!input.allowedScopes) errors.allowedScopes = 'Choose at least openid';
    if (input.jwksText !== null) {
      try {
        const parsed: unknown = JSON.parse(input.jwksText);
        if (!parsed || typeof parsed !== 'object' || !Array.isArray((parsed as { keys?: unknown }).keys)) {
          errors.jwks = 'Enter a JWK Set: { "keys": [ ... ] }';
        }
      } catch {
        errors.jwks = 'Enter a JWK Set in JSON: { "keys": [ ... ] }';
      }
    }
    return errors;
  }

  /**
   * The page that shows a new client secret, once: the answer to the POST that made it (never a redirect, a URL
   * or a cookie; no-store, as every admin page).
   */
  function secretPage(
    reply: FastifyReply,
    frame: views.Frame,
    app: Application,
    clientSecret: string,
    o: { justCreated: boolean; secretId?: string },
  ) {
    return page(reply, views.applicationCreated(frame, { app, issuer: config.issuer, clientSecret, ...o }));
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
      const created: ApplicationWithSecret = await applications.create(
        serviceInput(input) as ApplicationCreate,
        admin.actor,
      );
      if (created.clientSecret !== undefined) {
        const { clientSecret, ...app } = created;
        return secretPage(reply, admin.frame, app, clientSecret, { justCreated: true });
      }
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
      const hasSecrets =
        found.source === 'database' &&
        (found.tokenEndpointAuthMethod === 'client_secret_basic' ||
          found.tokenEndpointAuthMethod === 'client_secret_post');
      return page(
        reply,
        views.applicationView(admin.frame, {
          app: found,
          staticSource: app.staticApplications.source,
          secrets: hasSecrets ? await applications.listSecrets(found.clientId) : undefined,
        }),
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
    const input = applicationInput(request.body, found);
    const missing = emptyFieldErrors(input);
    if (Object.keys(missing).length)
      return page(
        reply,
        views.applicationForm(admin.frame, { app: found, values: formValues(request.body), errors: missing }),
        400,
      );
    try {
      const updated = await applications.update(request.params.clientId, serviceInput(input), admin.actor);
      if (updated.clientSecret !== undefined) {
        // Made a server-side application with a secret: its first secret, shown once here.
        const { clientSecret, ...saved } = updated;
        return secretPage(reply, admin.frame, saved, clientSecret, { justCreated: false });
      }
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

  // Client secrets: rotation answers with the new secret (once); revocation ends one at once. Both reveal or end a
  // credential: a password entered within ADMIN_FRESHNESS, as for deletion and key rotation.
  app.post(
    '/applications/:clientId/secrets',
    { schema: { params: ClientIdParams, body: Form } },
    async (request, reply) => {
      const base = `/applications/${encodeURIComponent(request.params.clientId)}`;
      const admin = await requireAdminPost(request, reply, { returnPath: base, fresh: true });
      if (!admin) return reply;
      const choice = first(request.body.overlapSeconds) ?? '86400';
      if (!OVERLAP_CHOICES.includes(choice)) {
        throw new AppError(400, 'VALIDATION_ERROR', 'Choose when the current secret ends.');
      }
      const rotated = await applications.rotateSecret(
        request.params.clientId,
        { overlapSeconds: Number(choice) },
        admin.actor,
      );
      const found = await applications.get(request.params.clientId);
      return secretPage(reply, admin.frame, found, rotated.clientSecret, {
        justCreated: false,
        secretId: rotated.secret.id,
      });
    },
  );
  app.post(
    '/applications/:clientId/secrets/:secretId/revoke',
    { schema: { params: SecretParams, body: Form } },
    async (request, reply) => {
      const base = `/applications/${encodeURIComponent(request.params.clientId)}`;
      const admin = await requireAdminPost(request, reply, { returnPath: base, fresh: true });
      if (!admin) return reply;
      await applications.revokeSecret(request.params.clientId, request.params.secretId, admin.actor);
      return see(reply, `${adminPath}${base}?done=secret-revoked`);
    },
  );

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
