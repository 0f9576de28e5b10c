// Admin web: sign-in providers (upstream identity providers, issue 35: list, add with the GitHub preset or as an
// OpenID Connect / OAuth 2.0 provider, details with the callback URL and public key to register upstream, edit,
// rotate the key, delete) and a user's linked identities (unlink). Deleting, rotating and unlinking end a way to
// sign in: a password entered within ADMIN_FRESHNESS, a confirmation page and a CSRF-checked POST, as for the
// other dangerous actions. Everything goes through services.upstreams, as the admin API and the CLI do.
import Type from 'typebox';
import type { UpstreamProviderCreate, UpstreamProviderUpdate } from '../../src/domain/upstream-config.js';
import { AppError } from '../../src/errors.js';
import { type AdminContext, fieldErrors, first, Form, type FormBody, lines } from './context.js';
import * as views from './views.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
const NewQuery = Type.Object({
  preset: Type.Optional(Type.String({ maxLength: 32 })),
  kind: Type.Optional(Type.String({ maxLength: 32 })),
});
const IdentityParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  identityId: Type.String({ minLength: 1, maxLength: 64 }),
});

const text = (v: string | string[] | undefined) => (first(v) ?? '').trim();
const on = (v: string | string[] | undefined) => first(v) === 'on';

/** "subject=oid" lines: the mapping (a line without "=" keeps its text as a key, for the service to name). */
function mappingOf(value: string | string[] | undefined): Record<string, string> {
  return Object.fromEntries(
    lines(value).map((line) => {
      const eq = line.indexOf('=');
      return eq < 0 ? [line, ''] : [line.slice(0, eq).trim(), line.slice(eq + 1).trim()];
    }),
  );
}

/** The form's settings as the service takes them; `editing`: an empty URL clears it, an empty secret keeps it. */
function settingsOf(body: FormBody, editing: boolean): UpstreamProviderUpdate {
  const url = (name: string) => text(body[name]) || (editing ? null : undefined);
  const secret = text(body.clientSecret);
  const input: Record<string, unknown> = {
    kind: text(body.kind) === 'oauth2' ? 'oauth2' : 'oidc',
    name: text(body.name),
    logoUrl: url('logoUrl'),
    issuer: url('issuer'),
    authorizationEndpoint: url('authorizationEndpoint'),
    tokenEndpoint: url('tokenEndpoint'),
    userinfoEndpoint: url('userinfoEndpoint'),
    emailsEndpoint: url('emailsEndpoint'),
    clientId: text(body.clientId),
    clientAuth: text(body.clientAuth) || 'client_secret_basic',
    scopes: text(body.scopes).split(/\s+/).filter(Boolean),
    mapping: mappingOf(body.mapping),
    allowSignUp: on(body.allowSignUp),
    allowedDomains: lines(body.allowedDomains),
    trustEmailVerified: on(body.trustEmailVerified),
    ssoDomains: lines(body.ssoDomains),
    storeTokens: on(body.storeTokens),
    enabled: on(body.enabled),
    ...(secret && { clientSecret: secret }),
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as UpstreamProviderUpdate;
}

function formValues(body: FormBody): views.UpstreamForm {
  const t = (name: string) => first(body[name]) ?? '';
  return {
    preset: t('preset') || undefined,
    id: t('id'),
    kind: t('kind') === 'oauth2' ? 'oauth2' : 'oidc',
    name: t('name'),
    logoUrl: t('logoUrl'),
    issuer: t('issuer'),
    authorizationEndpoint: t('authorizationEndpoint'),
    tokenEndpoint: t('tokenEndpoint'),
    userinfoEndpoint: t('userinfoEndpoint'),
    emailsEndpoint: t('emailsEndpoint'),
    clientId: t('clientId'),
    clientAuth: t('clientAuth'),
    scopes: t('scopes'),
    mapping: t('mapping'),
    allowSignUp: on(body.allowSignUp),
    allowedDomains: t('allowedDomains'),
    trustEmailVerified: on(body.trustEmailVerified),
    ssoDomains: t('ssoDomains'),
    storeTokens: on(body.storeTokens),
    enabled: on(body.enabled),
  };
}

/** Problems the form shows by its fields ("mapping.x", "allowedDomains.2", the SSO domain of another provider). */
function problemsOf(error: unknown) {
  if (error instanceof AppError && (error.statusCode === 400 || error.code === 'SSO_DOMAIN_TAKEN')) {
    return fieldErrors(error.details ?? [{ field: 'name', message: error.message }]);
  }
  return undefined;
}

export function registerUpstreamRoutes({
  app,
  config,
  adminPath,
  page,
  see,
  requireAdmin,
  requireAdminPost,
}: AdminContext) {
  const { users } = app.services;
  const { providers, identities } = app.services.upstreams;
  const pathOf = (id: string) => `/upstreams/${encodeURIComponent(id)}`;

  app.get('/upstreams', async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const items = (await providers.list()).map((p) => providers.details(p));
    return page(reply, views.upstreamList(admin.frame, { items }));
  });

  app.get('/upstreams/new', { schema: { querystring: NewQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const values = views.newUpstreamForm(request.query.preset, request.query.kind);
    return page(reply, views.upstreamForm(admin.frame, { values, callbackBase: config.loginUrl }));
  });

  app.post('/upstreams', { schema: { body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: '/upstreams/new' });
    if (!admin) return reply;
    const body = request.body;
    const input = {
      ...settingsOf(body, false),
      id: text(body.id),
      ...(text(body.preset) === 'github' && { preset: 'github' as const }),
    } as UpstreamProviderCreate;
    try {
      const created = await providers.create(input, admin.actor);
      return see(reply, `${adminPath}${pathOf(created.id)}?done=created`);
    } catch (error) {
      const errors = problemsOf(error);
      if (!errors) throw error;
      const values = formValues(body);
      const formError = 'Please correct the fields marked below.';
      return page(
        reply,
        views.upstreamForm(admin.frame, { values, errors, formError, callbackBase: config.loginUrl }),
        400,
      );
    }
  });

  app.get('/upstreams/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const provider = providers.details(await providers.require(request.params.id));
    const { identitiesRemoved: linked } = await providers.removalImpact(provider.id);
    return page(reply, views.upstreamView(admin.frame, { provider, linked }));
  });

  app.get('/upstreams/:id/edit', { schema: { params: IdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const provider = providers.details(await providers.require(request.params.id));
    const values = views.formFromUpstream(provider);
    return page(reply, views.upstreamForm(admin.frame, { provider, values, callbackBase: config.loginUrl }));
  });

  app.post('/upstreams/:id', { schema: { params: IdParams, body: Form } }, async (request, reply) => {
    const base = pathOf(request.params.id);
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/edit` });
    if (!admin) return reply;
    const provider = providers.details(await providers.require(request.params.id));
    try {
      await providers.update(provider.id, settingsOf(request.body, true), admin.actor);
      return see(reply, `${adminPath}${base}?done=saved`);
    } catch (error) {
      const errors = problemsOf(error);
      if (!errors) throw error;
      const values = formValues(request.body);
      const formError = 'Please correct the fields marked below.';
      return page(
        reply,
        views.upstreamForm(admin.frame, { provider, values, errors, formError, callbackBase: config.loginUrl }),
        400,
      );
    }
  });

  app.get('/upstreams/:id/rotate-key', { schema: { params: IdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const provider = await providers.require(request.params.id);
    const base = `${adminPath}${pathOf(provider.id)}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Make a new key for ${provider.name}?`,
        message:
          'The current key stops signing at once: sign-ins with this provider fail until the new public key is ' +
          'registered there. Register it right after (it is shown on the next page).',
        action: `${base}/rotate-key`,
        button: 'Make a new key',
        current: 'upstreams',
        back: base,
      }),
    );
  });
  app.post('/upstreams/:id/rotate-key', { schema: { params: IdParams, body: Form } }, async (request, reply) => {
    const base = pathOf(request.params.id);
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/rotate-key`, fresh: true });
    if (!admin) return reply;
    await providers.rotateKey(request.params.id, admin.actor);
    return see(reply, `${adminPath}${base}?done=key-rotated`);
  });

  app.get('/upstreams/:id/delete', { schema: { params: IdParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const provider = await providers.require(request.params.id);
    const impact = await providers.removalImpact(provider.id);
    const stranded = impact.usersLeftWithoutSignIn.length;
    const base = `${adminPath}${pathOf(provider.id)}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Delete ${provider.name}?`,
        message:
          `Its button goes, and the ${impact.identitiesRemoved} identit(ies) linked through it are unlinked. ` +
          (stranded
            ? `${stranded} user(s) have no other way to sign in (no password, passkey or other provider): they ` +
              'will be able to get in only through "Forgot password". '
            : '') +
          'This cannot be undone; disabling it can.',
        action: `${base}/delete${stranded ? '?force=1' : ''}`,
        button: stranded ? `Delete, and strand ${stranded} user(s)` : 'Delete provider',
        current: 'upstreams',
        back: base,
      }),
    );
  });
  app.post(
    '/upstreams/:id/delete',
    {
      schema: {
        params: IdParams,
        body: Form,
        querystring: Type.Object({ force: Type.Optional(Type.String({ maxLength: 8 })) }),
      },
    },
    async (request, reply) => {
      const base = pathOf(request.params.id);
      const admin = await requireAdminPost(request, reply, { returnPath: `${base}/delete`, fresh: true });
      if (!admin) return reply;
      await providers.remove(request.params.id, admin.actor, { force: request.query.force === '1' });
      return see(reply, `${adminPath}/upstreams?done=deleted`);
    },
  );

  // A user's linked identities: unlinking keeps the last way to sign in (409 LAST_SIGN_IN_METHOD, the error page).
  app.get(
    '/users/:id/identities/:identityId/unlink',
    { schema: { params: IdentityParams } },
    async (request, reply) => {
      const admin = await requireAdmin(request, reply, { fresh: true });
      if (!admin) return reply;
      const user = await users.get(request.params.id);
      const identity = (await identities.listForUser(user.id)).find((i) => i.id === request.params.identityId);
      if (!identity) throw new AppError(404, 'UPSTREAM_IDENTITY_NOT_FOUND', 'This user has no such linked identity.');
      const base = `${adminPath}/users/${user.id}`;
      return page(
        reply,
        views.confirmPage(admin.frame, {
          title: `Unlink the ${identity.providerName} identity of ${user.email}?`,
          message:
            `${identity.subject}${identity.email ? ` (${identity.email})` : ''} no longer signs in to this account. ` +
            'The user can link it again from their account. The last way to sign in cannot be unlinked.',
          action: `${base}/identities/${encodeURIComponent(identity.id)}/unlink`,
          button: 'Unlink',
          current: 'users',
          back: base,
        }),
      );
    },
  );
  app.post(
    '/users/:id/identities/:identityId/unlink',
    { schema: { params: IdentityParams, body: Form } },
    async (request, reply) => {
      const { id, identityId } = request.params;
      const returnPath = `/users/${encodeURIComponent(id)}/identities/${encodeURIComponent(identityId)}/unlink`;
      const admin = await requireAdminPost(request, reply, { returnPath, fresh: true });
      if (!admin) return reply;
      const user = await users.get(request.params.id);
      await identities.unlink(user.id, request.params.identityId, { ip: admin.actor.ip, actor: admin.actor.actor });
      return see(reply, `${adminPath}/users/${user.id}?done=unlinked`);
    },
  );
}
