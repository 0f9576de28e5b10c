// The sign-in methods page (issue 34): the user's second factors (passkeys, the authenticator app, recovery
// codes), each kind in a section of its own that its module registers (registerFactorSection), and the gate every
// change passes: a recent authentication (MFA_FRESHNESS; otherwise the sign-in page asks again and comes back).
// Every change ends the user's other sessions and mails the user (services.factors.recordChange, called by the
// kinds' services inside their transactions).
// With `return_to` (a sign-in that must enrol a factor first: MFA=required, an application's requireMfa or an
// administrator under ADMIN_MFA=required), the page offers to continue there once a second factor exists.
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { type Factor, type FactorSummary, hasSecondFactor } from '../../src/domain/mfa.js';
import type { SessionContext } from '../../src/domain/session.js';
import type { UpstreamProvider } from '../../src/domain/upstream.js';
import type { LinkedIdentity } from '../../src/services/upstreams/identities.js';
import { html, type Html } from '../pages/kit.js';
import type { AccountContext } from './context.js';
import { accountLayout } from './layout.js';
import { statusMessage } from './views.js';

/** What each section of the page gets. */
export interface FactorSectionInput {
  loginPath: string;
  base: string;
  csrf: string;
  ctx: SessionContext;
  factors: Factor[];
  summary: FactorSummary;
  /** The session authenticated within MFA_FRESHNESS: changes are allowed without asking again. */
  fresh: boolean;
  /** Where a sign-in that had to enrol goes on (a safe path or URL), if any. */
  returnTo: string | undefined;
  /** Form errors of a refused change, by form name. */
  errors?: Record<string, string> | undefined;
  /** The user's linked upstream identities (issue 35). */
  identities: LinkedIdentity[];
  /** The enabled upstream providers (issue 35): "Link {name}" for those the user has not linked. */
  providers: Array<Pick<UpstreamProvider, 'id' | 'name' | 'logoUrl'>>;
}

interface Section {
  kind: string;
  render: (o: FactorSectionInput) => Html | string;
  /** Shown even when second factors are switched off (MFA=off): a first factor (linked identities). */
  always: boolean;
}
const sections: Section[] = [];
/**
 * A kind's section of the page, in registration order (passkeys, authenticator app, recovery codes, linked
 * identities). `always`: shown when MFA=off too (the second factors' sections are not).
 */
export function registerFactorSection(
  kind: string,
  render: (o: FactorSectionInput) => Html | string,
  options: { always?: boolean } = {},
) {
  if (!sections.some((s) => s.kind === kind)) sections.push({ kind, render, always: options.always ?? false });
}

export const FactorPageQuery = Type.Object({
  m: Type.Optional(Type.String({ maxLength: 64 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
});

/**
 * Where the page may send the browser on after an enrolment: the authorization request's continue address
 * (under the issuer), the admin web, or a page under the login path; nothing else (no open redirect).
 */
export function enrolReturnTo(
  config: { issuer: string; adminUrl: string },
  loginPath: string,
  value: string | undefined,
): string | undefined {
  if (!value || /[\s\\]/.test(value)) return undefined;
  try {
    const url = new URL(value, 'http://login.invalid');
    if (value.startsWith('/')) {
      const under = url.pathname === loginPath || url.pathname.startsWith(`${loginPath}/`);
      return !value.startsWith('//') && url.origin === 'http://login.invalid' && under
        ? `${url.pathname}${url.search}`
        : undefined;
    }
    for (const prefix of [`${config.issuer}/`, `${config.adminUrl}/`, config.adminUrl]) {
      const allowed = new URL(prefix);
      if (url.origin === allowed.origin && url.pathname.startsWith(allowed.pathname)) return url.href;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

export function createFactorPages(context: AccountContext) {
  const { app, config, loginPath, base, csrfToken, page } = context;
  const safeReturnTo = (value: string | undefined) => enrolReturnTo(config, loginPath, value);
  const path = '/sign-in-methods';

  /**
   * A change of factors needs a recent authentication: true when the session has one; otherwise the browser is
   * sent (303) to sign in again, coming back to this page, and false.
   */
  function requireFresh(reply: FastifyReply, ctx: SessionContext, returnTo?: string): boolean {
    if (app.services.factors.isFresh(ctx.session)) return true;
    const back = `${base}${path}${returnTo ? `?return_to=${encodeURIComponent(returnTo)}` : ''}`;
    reply
      .code(303)
      .header('location', `${loginPath}/sign-in?return_to=${encodeURIComponent(back)}`)
      .send();
    return false;
  }

  async function render(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: SessionContext,
    o: { m?: string | undefined; returnTo?: string | undefined; status?: number; errors?: Record<string, string> },
  ) {
    const csrf = csrfToken(request, reply);
    const input: FactorSectionInput = {
      loginPath,
      base,
      csrf,
      ctx,
      factors: await app.services.factors.list(ctx.user.id),
      summary: await app.services.factors.summary(ctx.user.id),
      fresh: app.services.factors.isFresh(ctx.session),
      returnTo: safeReturnTo(o.returnTo),
      errors: o.errors,
      identities: await app.services.upstreams.identities.listForUser(ctx.user.id),
      providers: await app.services.upstreams.providers.enabled(),
    };
    const mode = config.mfa.mode;
    const body = html`${
      input.returnTo
        ? hasSecondFactor(input.summary)
          ? html`<p class="notice" role="status">You have a second factor now. \
<a href="${input.returnTo}">Continue</a></p>`
          : html`<p class="notice" role="status">Set up a second factor to continue signing in.</p>`
        : ''
    }
${
  mode === 'off'
    ? html`<p>Second factors are switched off on this server.</p>`
    : html`<p>A second factor protects your account when someone learns your password: after your password, \
sign-in asks for it. A passkey can also sign you in on its own.</p>
${sections.filter((s) => !s.always).map((s) => s.render(input))}`
}
${sections.filter((s) => s.always).map((s) => s.render(input))}`;
    return page(
      reply,
      accountLayout({
        loginPath,
        tab: 'sign-in-methods',
        title: 'Sign-in methods',
        email: ctx.user.email,
        csrf,
        status: statusMessage(o.m),
        body,
      }),
      o.status ?? 200,
    );
  }

  app.get(path, { schema: { querystring: FactorPageQuery } }, async (request, reply) => {
    const q = request.query.return_to ? `?return_to=${encodeURIComponent(request.query.return_to)}` : '';
    const ctx = await context.signedIn(request, reply, `${path}${q}`);
    if (!ctx) return reply;
    return render(request, reply, ctx, { m: request.query.m, returnTo: request.query.return_to });
  });

  return { path, requireFresh, render, safeReturnTo };
}

export type FactorPages = ReturnType<typeof createFactorPages>;
