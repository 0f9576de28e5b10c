// Sign-in with another provider (issue 35): the round trip's routes under {login path}/upstream.
//  - POST /upstream/:provider/start (CSRF; purpose sign_in, or link for a signed-in user's "link another") and
//    GET /upstream/:provider/start (sign-in only: home-realm discovery's redirect). Both keep the pending
//    authorization request (checked as the sign-in page checks it) and return_to.
//  - GET /upstream/:provider/callback: services.upstreams.flow decides; a session (amr fed), the second factor,
//    a link, a pending link or a refusal. Every failure of the upstream lands on an error page with a way back.
//  - GET and POST /upstream/link: a pending link waits for the existing account's owner to sign in to it in this
//    browser, then to confirm (CSRF) here.
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import {
  type UpstreamFailure,
  UpstreamFlowError,
  type UpstreamOutcome,
  type UpstreamRefusal,
} from '../../src/services/upstreams/flow.js';
import { hidden, html } from '../pages/kit.js';
import { layout, messagePage } from '../pages/hosted.js';
import { type App, first, Form, type LoginContext } from './page-context.js';
import { startSecondFactor } from './second-factor.js';
import { notYouForm, type UpstreamButton } from './views.js';

const ProviderParams = Type.Object({ provider: Type.String({ minLength: 1, maxLength: 64 }) });
const StartQuery = Type.Object({
  request: Type.Optional(Type.String({ maxLength: 128 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  login_hint: Type.Optional(Type.String({ maxLength: 254 })),
});
// The upstream's answer (RFC 6749 §4.1.2, §4.1.2.1; RFC 9207's iss): bounded strings; openid-client reads it.
const CallbackQuery = Type.Object(
  {
    state: Type.Optional(Type.String({ maxLength: 512 })),
    code: Type.Optional(Type.String({ maxLength: 2048 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 1024 })),
    error_uri: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: Type.String({ maxLength: 2048 }) },
);

/** The enabled providers' buttons for the sign-in and sign-up pages. */
export async function upstreamButtonsOf(app: App): Promise<UpstreamButton[]> {
  return (await app.services.upstreams.providers.enabled()).map((p) => ({
    id: p.id,
    name: p.name,
    logoUrl: p.logoUrl,
  }));
}

const FAILURES: Record<UpstreamFailure, { status: number; message: (name: string) => string }> = {
  unknown_provider: { status: 404, message: () => 'This sign-in provider is not available.' },
  unreachable: {
    status: 502,
    message: (name) => `${name} did not answer. Try again in a moment, or sign in another way.`,
  },
  upstream_error: {
    status: 400,
    message: (name) => `${name} did not sign you in: it answered with an error. Try again, or sign in another way.`,
  },
  bad_state: {
    status: 400,
    message: () =>
      'This answer is not one we are waiting for: the sign-in expired, was finished already, or was not ' +
      'started here. Start again.',
  },
  wrong_browser: {
    status: 400,
    message: () => 'This sign-in was started in another browser (or its cookie is gone). Start again in this one.',
  },
  invalid_response: {
    status: 502,
    message: (name) => `The answer of ${name} could not be verified, so it was not accepted. Try again.`,
  },
  user_endpoint: {
    status: 502,
    message: (name) => `${name} did not say who you are. Try again in a moment, or sign in another way.`,
  },
};

const REFUSALS: Record<UpstreamRefusal, { status: number; message: (name: string, email: string) => string }> = {
  no_email: {
    status: 403,
    message: (name) => `${name} did not give an e-mail address, so no account can be found or created for you.`,
  },
  email_unverified: {
    status: 403,
    message: (name, email) =>
      `${name} did not confirm that ${email} is verified, so it cannot sign you in here. Nothing was created.`,
  },
  domain_not_allowed: {
    status: 403,
    message: (name) => `Addresses at this domain cannot sign in with ${name}. Nothing was created.`,
  },
  sign_up_closed: {
    status: 403,
    message: (name, email) =>
      `There is no account for ${email}, and accounts are not created through ${name}. Nothing was created.`,
  },
  disabled: { status: 403, message: () => 'This account is disabled. Nothing was changed.' },
  linked_elsewhere: {
    status: 409,
    message: (name) => `This ${name} identity is linked to another account. Nothing was changed.`,
  },
  wrong_user: {
    status: 403,
    message: () => 'You are not signed in to the account that asked for this link any more. Nothing was linked.',
  },
};

export function registerUpstreamPages(context: LoginContext) {
  const { app, loginPath, csrfToken, checkCsrf, page, pending, safeReturnTo, continueUrl, meta } = context;
  const { flow, providers } = app.services.upstreams;
  const signInUrl = (requestId: string | null | undefined) =>
    `${loginPath}/sign-in${requestId ? `?request=${encodeURIComponent(requestId)}` : ''}`;
  const linkPage = `${loginPath}/upstream/link`;

  const nameOf = async (providerId: string) => (await providers.get(providerId))?.name ?? 'The provider';

  /** The error page of a failed round trip: what happened, and a way back to sign in (the same request). */
  async function failed(reply: FastifyReply, request: FastifyRequest, providerId: string, error: UpstreamFlowError) {
    request.log.warn({ provider: providerId, reason: error.reason, detail: error.detail }, 'upstream sign-in failed');
    const failure = FAILURES[error.reason];
    const name = await nameOf(providerId);
    const body = messagePage({
      loginPath,
      title: error.reason === 'unknown_provider' ? 'Sign-in not available' : `Signing in with ${name} did not work`,
      message: failure.message(name),
      role: 'alert',
      link: { href: signInUrl(error.requestId), text: 'Back to sign in' },
    });
    return page(reply, body, failure.status);
  }

  async function start(
    request: FastifyRequest,
    reply: FastifyReply,
    providerId: string,
    input: { purpose: 'sign_in' | 'link'; requestId?: string | undefined; returnTo?: string | undefined },
    loginHint?: string,
  ) {
    // The pending authorization request must be this browser's (as on the sign-in page); it stays stored
    // server-side (binding, prompt, max_age, acr_values) and is taken up again at the callback.
    await pending(request, input.requestId);
    const returnTo = safeReturnTo(input.returnTo);
    let userId: string | undefined;
    if (input.purpose === 'link') {
      const ctx = await app.currentSession(request);
      if (!ctx) return reply.code(303).header('location', `${loginPath}/sign-in`).send();
      // A link is a new way into the account: like adding a factor, it needs a recent authentication (MFA_FRESHNESS),
      // so a stolen session cookie alone cannot add its thief's identity. Otherwise: sign in again, then back to the
      // sign-in methods page, where the Link button is.
      if (!app.services.factors.isFresh(ctx.session)) {
        const back = `${loginPath}/account/sign-in-methods`;
        return reply
          .code(303)
          .header('location', `${loginPath}/sign-in?return_to=${encodeURIComponent(back)}`)
          .send();
      }
      userId = ctx.user.id;
    }
    try {
      const url = await flow.start({
        providerId,
        purpose: input.purpose,
        userId,
        requestId: input.requestId,
        returnTo,
        loginHint,
        browserSecret: app.bindUpstreamBrowser(request, reply),
      });
      return reply.code(303).header('location', url.href).send();
    } catch (error) {
      if (error instanceof UpstreamFlowError) {
        return failed(reply, request, providerId, new UpstreamFlowError(error.reason, error.detail, input.requestId));
      }
      throw error;
    }
  }

  app.post('/upstream/:provider/start', { schema: { params: ProviderParams, body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    return start(request, reply, request.params.provider, {
      purpose: first(form.purpose) === 'link' ? 'link' : 'sign_in',
      requestId: first(form.request) || undefined,
      returnTo: first(form.return_to),
    });
  });

  // A GET starts a sign-in only (home-realm discovery sends the browser here): nothing is linked or changed by
  // it, and its answer is bound to this browser.
  app.get(
    '/upstream/:provider/start',
    { schema: { params: ProviderParams, querystring: StartQuery } },
    async (request, reply) => {
      const { request: requestId, return_to, login_hint } = request.query;
      return start(
        request,
        reply,
        request.params.provider,
        { purpose: 'sign_in', requestId: requestId || undefined, returnTo: return_to },
        login_hint,
      );
    },
  );

  app.get(
    '/upstream/:provider/callback',
    { schema: { params: ProviderParams, querystring: CallbackQuery } },
    async (request, reply) => {
      const providerId = request.params.provider;
      const raw = request.raw.url ?? '';
      const query = raw.includes('?') ? raw.slice(raw.indexOf('?')) : '';
      // The answer's code must not travel further in a Referer.
      reply.header('referrer-policy', 'no-referrer');
      let outcome: UpstreamOutcome;
      try {
        const ctx = await app.currentSession(request);
        outcome = await flow.finish({
          providerId,
          callbackQuery: query,
          browserSecret: app.upstreamBrowser(request),
          sessionUserId: ctx?.user.id,
          sessionId: ctx?.session.id,
          meta: meta(request),
        });
      } catch (error) {
        if (error instanceof UpstreamFlowError) return failed(reply, request, providerId, error);
        throw error;
      }
      return answer(request, reply, outcome);
    },
  );

  async function answer(request: FastifyRequest, reply: FastifyReply, outcome: UpstreamOutcome) {
    const requestId = outcome.requestId ?? undefined;
    const returnTo = safeReturnTo(outcome.returnTo ?? undefined);
    switch (outcome.kind) {
      case 'signed_in': {
        app.setSessionCookie(reply, outcome.sessionToken);
        return reply
          .code(303)
          .header('location', await continueSignIn(request, outcome, returnTo))
          .send();
      }
      case 'second_factor': {
        const input = { userId: outcome.userId, amr: ['fed'], requestId, returnTo };
        const location = await startSecondFactor(app, reply, input, meta(request), loginPath);
        return reply.code(303).header('location', location).send();
      }
      case 'linked':
        return reply
          .code(303)
          .header('location', returnTo ?? `${loginPath}/account`)
          .send();
      case 'pending_link': {
        app.setPendingLinkCookie(reply, outcome.token);
        return reply.code(303).header('location', linkPage).send();
      }
      case 'refused': {
        const refusal = REFUSALS[outcome.reason];
        const body = messagePage({
          loginPath,
          title: `Signing in with ${outcome.providerName} did not work`,
          message: refusal.message(outcome.providerName, outcome.email ?? ''),
          role: 'alert',
          link: { href: signInUrl(requestId), text: 'Back to sign in' },
        });
        return page(reply, body, refusal.status);
      }
    }
  }

  /** After a sign-in: the authorization request of this browser, else where it returns, else the account. */
  async function continueSignIn(
    request: FastifyRequest,
    who: { userId: string; sessionId: string; requestId: string | null },
    returnTo: string | undefined,
  ): Promise<string> {
    const requestId = who.requestId ?? undefined;
    const browser = app.browserBinding(request);
    if (requestId && (await app.services.authorization.pendingRequest(requestId, browser))) {
      await app.services.authorization.recordSignIn(requestId, browser, who);
      return continueUrl(requestId);
    }
    return returnTo ?? `${loginPath}/`;
  }

  // The pending link: a page that asks the owner of the account to sign in to it (in this browser), then to
  // confirm. Only a session of that account made after the pending link counts as the proof.
  const expired = () =>
    messagePage({
      loginPath,
      title: 'This link request is over',
      message: 'The request to link an identity expired or was used already. Sign in again with your provider.',
      role: 'alert',
      link: { href: `${loginPath}/sign-in`, text: 'Sign in' },
    });

  app.get('/upstream/link', async (request, reply) => {
    const found = await flow.pendingLink(app.pendingLinkToken(request));
    if (!found) return page(reply, expired(), 400);
    const ctx = await app.currentSession(request);
    const proven = ctx?.user.id === found.userId && ctx.session.auth_time.getTime() >= found.createdAt.getTime();
    const csrf = csrfToken(request, reply);
    const signIn = `${loginPath}/sign-in?return_to=${encodeURIComponent(linkPage)}`;
    return page(
      reply,
      layout({
        title: proven ? `Link your ${found.providerName} identity` : 'Sign in to link your account',
        loginPath,
        body: proven
          ? html`<h1>Link your ${found.providerName} identity</h1>
<p>From now on you can sign in to <strong>${found.email}</strong> with ${found.providerName}.</p>
<form method="post" action="${linkPage}">
${hidden('csrf', csrf)}
<button type="submit">Link ${found.providerName}</button>
</form>`
          : html`<h1>An account for ${found.email} exists</h1>
<p>Sign in to it to link your ${found.providerName} identity: then you come back here to confirm. \
Nothing is linked until you do.</p>
${
  ctx
    ? html`<p>You are signed in to another account, or signed in before this request: sign in again.</p>
${notYouForm({ loginPath, csrf, email: ctx.user.email, returnTo: linkPage })}`
    : html`<p><a href="${signIn}" id="sign-in-to-link">Sign in to ${found.email}</a></p>`
}`,
      }),
    );
  });

  app.post('/upstream/link', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const ctx = await app.currentSession(request);
    if (!ctx) return reply.code(303).header('location', linkPage).send();
    const result = await flow.confirmLink(
      app.pendingLinkToken(request),
      { userId: ctx.user.id, authTime: ctx.session.auth_time },
      meta(request),
    );
    if (!result) return page(reply, expired(), 400);
    if (result.outcome === 'not_proven') return reply.code(303).header('location', linkPage).send();
    if (result.outcome === 'wrong_account') {
      const body = messagePage({
        loginPath,
        title: 'Nothing was linked',
        message: 'Only the account with this address can confirm the link, and you are signed in to another one.',
        role: 'alert',
        link: { href: linkPage, text: 'Back' },
      });
      return page(reply, body, 403);
    }
    app.clearPendingLinkCookie(reply);
    const location = await continueSignIn(
      request,
      { userId: ctx.user.id, sessionId: ctx.session.id, requestId: result.requestId },
      `${loginPath}/account`,
    );
    return reply.code(303).header('location', location).send();
  });
}
