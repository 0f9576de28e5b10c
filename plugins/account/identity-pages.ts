// Linked identities on the sign-in methods page (issue 35): the user's upstream identities (provider, the upstream
// account's address, linked and last used), unlinking one, and linking another provider.
//   POST {loginPath}/account/identities/:id/unlink   (form) { csrf }; needs a recent authentication (requireFresh);
//                                                    refused (409) when it is the last way to sign in
//   "Link {Provider}": a form that POSTs { csrf, purpose: link, return_to } to {loginPath}/upstream/:provider/start
//                      (the round trip's route, plugins/login/upstream-pages.ts), with this page's CSRF token (the
//                      login pages' double-submit cookie: one token serves both).
// Linking and unlinking are changes of the ways to sign in: the user's other sessions end and the user is mailed
// (services.upstreams.identities, after the commit).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { hidden, html } from '../pages/kit.js';
import { type AccountContext, Form } from './context.js';
import { type FactorPages, type FactorSectionInput, registerFactorSection } from './factor-pages.js';
import { when } from './layout.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** The refusals of an unlink, as the page says them. */
const UNLINK_REFUSALS: Record<string, string> = {
  LAST_SIGN_IN_METHOD:
    'This is the only way to sign in to your account, so it cannot be unlinked. Add a passkey or set a password ' +
    '(Forgot your password? on the sign-in page) first.',
  UPSTREAM_IDENTITY_NOT_FOUND: 'This identity is not linked to your account (any more).',
};

function identitySection(o: FactorSectionInput) {
  const error = (name: string) => o.errors?.[name];
  const linked = new Set(o.identities.map((i) => i.providerId));
  const item = (i: FactorSectionInput['identities'][number]) => {
    const label = i.email ? `${i.providerName} (${i.email})` : i.providerName;
    return html`<li id="identity-${i.id}">
<p><strong>${i.providerName}</strong>${i.email ? html` · ${i.email}` : ''}</p>
<p class="muted">Linked ${when(i.createdAt)} · Last used ${when(i.lastUsedAt)}</p>
${error(`identity-${i.id}`) ? html`<p class="alert" role="alert">${error(`identity-${i.id}`)}</p>` : ''}
<form method="post" action="${o.base}/identities/${i.id}/unlink">
${hidden('csrf', o.csrf)}
<button type="submit" class="secondary">Unlink<span class="visually-hidden"> ${label}</span></button>
</form>
</li>`;
  };
  const linkable = o.providers.filter((p) => !linked.has(p.id));
  const back = `${o.base}/sign-in-methods?m=identity-linked`;
  const linkForm = (p: FactorSectionInput['providers'][number]) => html`<form method="post" \
action="${o.loginPath}/upstream/${p.id}/start" class="link-identity">
${hidden('csrf', o.csrf)}${hidden('purpose', 'link')}${hidden('return_to', back)}
<button type="submit" class="secondary">Link ${p.name}</button>
</form>`;
  const sectionError = error('identities');
  if (!o.identities.length && !linkable.length && !sectionError) return '';
  return html`<section aria-labelledby="identities-heading">
<h2 id="identities-heading">Linked identities</h2>
${sectionError ? html`<p class="alert" role="alert">${sectionError}</p>` : ''}
<p>An account of another provider linked here signs you in to this account, without your password.</p>
${
  o.identities.length
    ? html`<ul class="identities">${o.identities.map(item)}</ul>
${o.fresh ? '' : html`<p class="muted">You will be asked to sign in again before unlinking.</p>`}`
    : html`<p>No identity of another provider is linked to your account.</p>`
}
${linkable.length ? html`<div class="link-identities">${linkable.map(linkForm)}</div>` : ''}
</section>`;
}

export function registerIdentityPages(context: AccountContext, factorPages: FactorPages) {
  const { app, signedInPost, done } = context;
  const path = factorPages.path;
  registerFactorSection('upstream', identitySection, { always: true });

  app.post('/identities/:id/unlink', { schema: { params: IdParams, body: Form } }, async (request, reply) => {
    const ctx = await signedInPost(request, request.body, reply, path);
    if (!ctx) return reply;
    if (!factorPages.requireFresh(reply, ctx)) return reply;
    const id = request.params.id;
    try {
      await app.services.upstreams.identities.unlink(ctx.user.id, id, {
        ip: request.ip,
        keepSessionId: ctx.session.id,
      });
    } catch (error) {
      if (!(error instanceof AppError) || error.statusCode >= 500) throw error;
      // A refusal of a listed identity goes next to it; "not found" (nothing listed to put it next to) on top.
      const form = error.code === 'UPSTREAM_IDENTITY_NOT_FOUND' ? 'identities' : `identity-${id}`;
      const errors = { [form]: UNLINK_REFUSALS[error.code] ?? error.message };
      return factorPages.render(request, reply, ctx, { status: error.statusCode, errors });
    }
    return done(reply, path, 'identity-unlinked');
  });
}
