// Passkeys on the sign-in methods page (issue 34): the list (name, added, last used, synced or bound to one
// device), rename and remove (plain forms: CSRF, Post/Redirect/Get), and adding one, which needs the browser's
// WebAuthn API (the script of plugins/pages/passkey-script.ts) and a recent authentication (requireFresh):
//   POST {loginPath}/account/passkeys/options      { csrf } -> registration options (JSON; 401
//                                                  REAUTHENTICATION_REQUIRED when the session is not fresh)
//   POST {loginPath}/account/passkeys/verify       { csrf, response, name? } -> { redirectTo } (JSON)
//   POST {loginPath}/account/passkeys/add          (form) without JavaScript or not fresh: sign in again, come back
//   POST {loginPath}/account/passkeys/:id/rename   (form) { csrf, name }
//   POST {loginPath}/account/passkeys/:id/remove   (form) { csrf }; needs a recent authentication
// Adding and removing are factor changes: the user's other sessions end and the user is mailed
// (services.passkeys -> services.factors.recordChange).
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import { passkeyAmr } from '../../src/domain/mfa.js';
import { AppError } from '../../src/errors.js';
import { createCsrf } from '../infra/browser-session.js';
import {
  Continue,
  errors as jsonErrors,
  PASSKEY_BODY_LIMIT,
  PasskeyOptions as PasskeyOptionsSchema,
  PasskeyResponse,
  passkeyJsonScope,
} from '../login/passkey-pages.js';
import { html } from '../pages/kit.js';
import { passkeyScripts } from '../pages/passkey-script.js';
import { type AccountContext, Form, first, text } from './context.js';
import { type FactorPages, type FactorSectionInput, registerFactorSection } from './factor-pages.js';
import { when } from './layout.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

function passkeySection(o: FactorSectionInput) {
  const passkeys = o.factors.filter((f) => f.kind === 'passkey');
  const error = (name: string) => o.errors?.[name];
  const item = (p: (typeof passkeys)[number]) => {
    const id = `passkey-${p.id}`;
    const renameError = error(`${id}-rename`);
    return html`<li>
<p><strong>${p.name}</strong> · ${p.backedUp ? 'Synced passkey' : 'On one device only'}</p>
<p class="muted">Added ${when(p.createdAt)} · Last used ${when(p.lastUsedAt)}</p>
${error(id) ? html`<p class="alert" role="alert">${error(id)}</p>` : ''}
<form method="post" action="${o.base}/passkeys/${p.id}/rename">
<input type="hidden" name="csrf" value="${o.csrf}">
<div class="field${renameError ? ' invalid' : ''}"><label for="${id}-name">Name of this passkey</label>
<input id="${id}-name" name="name" type="text" autocomplete="off" maxlength="64" required value="${p.name}"\
${renameError ? html` aria-invalid="true" aria-describedby="${id}-name-error"` : ''}>
${renameError ? html`<p class="error" id="${id}-name-error">${renameError}</p>` : ''}</div>
<button type="submit" class="secondary">Rename<span class="visually-hidden"> ${p.name}</span></button>
</form>
<form method="post" action="${o.base}/passkeys/${p.id}/remove">
<input type="hidden" name="csrf" value="${o.csrf}">
<button type="submit" class="secondary">Remove<span class="visually-hidden"> ${p.name}</span></button>
</form>
</li>`;
  };
  return html`<section aria-labelledby="passkeys-heading">
<h2 id="passkeys-heading">Passkeys</h2>
<p>A passkey signs you in with your fingerprint, face or screen lock instead of a password, and serves as a \
second factor after your password.</p>
${passkeys.length ? html`<ul class="passkeys">${passkeys.map(item)}</ul>` : html`<p>You have no passkey yet.</p>`}
<form method="post" action="${o.base}/passkeys/add" id="passkey-add">
<input type="hidden" name="csrf" value="${o.csrf}">
${o.returnTo ? html`<input type="hidden" name="return_to" value="${o.returnTo}">` : ''}
<div class="field"><label for="passkey-name">Name of the new passkey (optional)</label>
<input id="passkey-name" name="name" type="text" autocomplete="off" maxlength="64"></div>
<p class="alert" role="alert" id="passkey-error"${error('passkey-add') ? '' : html` hidden`}>\
${error('passkey-add') ?? ''}</p>
<button type="submit">Add a passkey</button>
${o.fresh ? '' : html`<p class="muted">You will be asked to sign in again first.</p>`}
</form>
${passkeyScripts(o.loginPath, { mode: 'register', endpoint: `${o.base}/passkeys`, csrf: o.csrf, returnTo: o.returnTo })}
</section>`;
}

export function registerPasskeyPages(context: AccountContext, factorPages: FactorPages) {
  const { app, config, base, signedInPost, done, meta } = context;
  // The pages' double-submit token (the same cookie), checked on the JSON calls too.
  const csrf = createCsrf(config);
  const path = factorPages.path;
  registerFactorSection('passkey', passkeySection);

  const off = () => config.mfa.mode === 'off';
  const passkeysOff = () => new AppError(404, 'PASSKEYS_OFF', 'Passkeys are switched off on this server');
  const afterChange = (returnTo: string | undefined, code: string) =>
    `${base}${path}?m=${code}${returnTo ? `&return_to=${encodeURIComponent(returnTo)}` : ''}`;

  // The JSON half of adding a passkey (the browser's ceremony between the two calls).
  passkeyJsonScope(app, (api) => {
    const session = async (request: FastifyRequest, token: string) => {
      csrf.check(request, token);
      if (off()) throw passkeysOff();
      const ctx = await app.currentSession(request);
      if (!ctx) throw new AppError(401, 'NOT_SIGNED_IN', 'Sign in to add a passkey');
      if (!app.services.factors.isFresh(ctx.session)) {
        throw new AppError(401, 'REAUTHENTICATION_REQUIRED', 'Sign in again to add a passkey');
      }
      return ctx;
    };
    api.post(
      '/passkeys/options',
      {
        schema: {
          body: Type.Object({ csrf: Type.String({ maxLength: 128 }) }, { additionalProperties: false }),
          response: { 200: PasskeyOptionsSchema, ...jsonErrors },
        },
      },
      async (request, reply) => {
        const ctx = await session(request, request.body.csrf);
        return app.services.passkeys.registrationOptions(ctx.user, app.bindBrowser(request, reply));
      },
    );
    api.post(
      '/passkeys/verify',
      {
        bodyLimit: PASSKEY_BODY_LIMIT,
        schema: {
          body: Type.Object(
            {
              csrf: Type.String({ maxLength: 128 }),
              response: PasskeyResponse,
              name: Type.Optional(Type.String({ maxLength: 200 })),
              return_to: Type.Optional(Type.String({ maxLength: 2048 })),
            },
            { additionalProperties: false },
          ),
          response: { 200: Continue, ...jsonErrors },
        },
      },
      async (request) => {
        const ctx = await session(request, request.body.csrf);
        const added = await app.services.passkeys.register(
          ctx.user.id,
          app.browserBinding(request),
          request.body.response as never,
          { name: request.body.name, keepSessionId: ctx.session.id, ip: request.ip },
        );
        // The registration proved the new key just as a sign-in with it would: this session now has two
        // factors (an enrolment that a sign-in or the admin web asked for goes on without asking again).
        await app.services.sessions.stepUp(ctx.session.id, ctx.user.id, passkeyAmr(added, added.userVerified), {
          ip: request.ip,
        });
        const returnTo = factorPages.safeReturnTo(request.body.return_to);
        return { status: true as const, redirectTo: afterChange(returnTo, 'passkey-added') };
      },
    );
  });

  // Without JavaScript (or not signed in recently): sign in again and come back; adding needs the script.
  app.post('/passkeys/add', { schema: { body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, path);
    if (!ctx) return reply;
    const returnTo = factorPages.safeReturnTo(first(request.body.return_to));
    if (!factorPages.requireFresh(reply, ctx, returnTo)) return reply;
    return factorPages.render(request, reply, ctx, {
      returnTo,
      status: 400,
      errors: { 'passkey-add': 'Adding a passkey needs JavaScript in this browser.' },
    });
  });

  app.post('/passkeys/:id/rename', { schema: { params: IdParams, body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, path);
    if (!ctx) return reply;
    const id = request.params.id;
    try {
      await app.services.passkeys.rename(ctx.user.id, id, text(request.body, 'name'), meta(request));
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode >= 500) throw error;
      const form = error.code === 'VALIDATION_ERROR' ? `passkey-${id}-rename` : `passkey-${id}`;
      return factorPages.render(request, reply, ctx, { status: error.statusCode, errors: { [form]: error.message } });
    }
    return done(reply, path, 'passkey-renamed');
  });

  app.post('/passkeys/:id/remove', { schema: { params: IdParams, body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, path);
    if (!ctx) return reply;
    if (!factorPages.requireFresh(reply, ctx)) return reply;
    try {
      await app.services.passkeys.remove(ctx.user.id, request.params.id, {
        keepSessionId: ctx.session.id,
        ip: request.ip,
      });
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode >= 500) throw error;
      const errors = { [`passkey-${request.params.id}`]: error.message };
      return factorPages.render(request, reply, ctx, { status: error.statusCode, errors });
    }
    return done(reply, path, 'passkey-removed');
  });
}
