// Hosted login pages: sign-in and sign-up (with or without a pending authorization request).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import { first, Form, type LoginContext, RequestQuery } from './page-context.js';
import * as views from './views.js';
import { passkeySignInOptions } from './passkey-pages.js';
import { startSecondFactor } from './second-factor.js';
import { upstreamButtonsOf } from './upstream-pages.js';
import { verificationContext } from '../../src/services/authorization.js';
import { SsoRequiredError, upstreamStartUrl } from '../../src/domain/sso.js';

const SignInQuery = Type.Object({
  request: Type.Optional(Type.String({ maxLength: 128 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  prompt: Type.Optional(Type.String({ maxLength: 32 })),
});

export function registerSignInPages({
  app,
  config,
  loginPath,
  csrfToken,
  checkCsrf,
  page,
  pending,
  safeReturnTo,
  continueUrl,
  meta,
  mailHint,
}: LoginContext) {
  /** Where a sign-in of this address starts at its organisation's provider (issue 35). */
  const ssoStart = (providerId: string, email: string, requestId?: string, returnTo?: string) =>
    upstreamStartUrl(loginPath, providerId, { requestId, returnTo, loginHint: email.trim() || undefined });

  /** A sign-in that proves an account to link an upstream identity to it returns to the round trip's pages. */
  const provingForLink = (returnTo: string | undefined) => Boolean(returnTo?.startsWith(`${loginPath}/upstream/`));

  /** The sign-in page's SSO hints: the password is optional when SSO domains exist; the note for this address. */
  async function ssoHints(email: string | undefined, o: { requestId?: string | undefined; returnTo?: string }) {
    const providers = await app.services.upstreams.providers.enabled();
    if (!providers.some((p) => p.ssoDomains.length)) return {};
    const sso = email ? await app.services.upstreams.providers.ssoFor(email) : undefined;
    return {
      ssoDomains: true,
      ...(sso &&
        !provingForLink(o.returnTo) && {
          sso: { name: sso.name, startUrl: ssoStart(sso.id, email ?? '', o.requestId, o.returnTo) },
        }),
    };
  }

  // Sign in
  app.get('/sign-in', { schema: { querystring: SignInQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    const returnTo = safeReturnTo(request.query.return_to);
    const ctx = returnTo ? await app.currentSession(request) : undefined;
    const email = found?.request.params.login_hint ?? ctx?.user.email;
    return page(
      reply,
      views.signInPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        email,
        app: found?.app,
        returnTo,
        reauthenticate: Boolean(ctx),
        passkeys: await passkeySignInOptions({ app, config }, request, reply),
        upstreams: await upstreamButtonsOf(app),
        ...(await ssoHints(email, { requestId: request.query.request, returnTo })),
      }),
    );
  });
  app.post('/sign-in', { schema: { body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    const requestId = first(form.request) || undefined;
    const found = await pending(request, requestId);
    const email = first(form.email) ?? '';
    const returnTo = safeReturnTo(first(form.return_to));
    // Home-realm discovery (issue 35): an address at an SSO domain goes to its organisation's provider, whatever
    // the password field holds (none is checked). Not while the browser proves an account to link an upstream
    // identity to it (return_to: the round trip's pending link): before the link, the password is that proof.
    // The service refuses the password of a linked account in any case (accounts.signIn: SSO_REQUIRED).
    const sso = await app.services.upstreams.providers.ssoFor(email.trim());
    if (sso && !provingForLink(returnTo)) {
      return reply
        .code(303)
        .header('location', ssoStart(sso.id, email, requestId, returnTo))
        .send();
    }
    let signedIn: { userId: string; sessionId: string };
    try {
      const result = await app.signInLimits.attempt(request, reply, email, () =>
        app.services.accounts.signIn({ email, password: first(form.password) ?? '' }, meta(request)),
      );
      if ('secondFactor' in result) {
        // No session yet: the second-factor page continues this sign-in (plugins/login/second-factor.ts).
        const input = { userId: result.user.id, amr: ['pwd'], requestId, returnTo: first(form.return_to) };
        const location = await startSecondFactor(app, reply, input, meta(request), loginPath);
        return reply.code(303).header('location', location).send();
      }
      app.setSessionCookie(reply, result.sessionToken);
      signedIn = { userId: result.user.id, sessionId: result.sessionId };
    } catch (error) {
      if (error instanceof SsoRequiredError) {
        return reply
          .code(303)
          .header('location', ssoStart(error.provider.id, email, requestId, returnTo))
          .send();
      }
      if (error instanceof AppError && error.code === 'INVALID_CREDENTIALS') {
        return page(
          reply,
          views.signInPage({
            loginPath,
            csrf: csrfToken(request, reply),
            requestId,
            email,
            error: error.message,
            app: found?.app,
            returnTo,
            passkeys: await passkeySignInOptions({ app, config }, request, reply),
            upstreams: await upstreamButtonsOf(app),
            ...(await ssoHints(undefined, {})),
          }),
          401,
        );
      }
      throw error;
    }
    if (!requestId)
      return reply
        .code(303)
        .header('location', returnTo ?? `${loginPath}/`)
        .send();
    await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), signedIn);
    return reply.code(303).header('location', continueUrl(requestId)).send();
  });

  // Sign up
  app.get('/sign-up', { schema: { querystring: RequestQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    return page(
      reply,
      views.signUpPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        values: { email: found?.request.params.login_hint ?? '' },
        app: found?.app,
        upstreams: await upstreamButtonsOf(app),
      }),
    );
  });
  app.post('/sign-up', { schema: { body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    await app.rateLimit(reply, 'SIGN_UP_IP', ipKey(request.ip));
    await app.rateLimit(reply, 'SIGN_UP_EMAIL', emailKey(first(form.email) ?? ''));
    const requestId = first(form.request) || undefined;
    const found = await pending(request, requestId);
    const values = { email: first(form.email) ?? '', name: first(form.name) ?? '' };
    // The pending sign-up is bound to this browser (the cookie is set whatever the address: same answer).
    const browserSecret = app.bindSignUpBrowser(request, reply);
    let email: string;
    try {
      ({ email } = await app.services.accounts.signUp(
        { email: values.email, password: first(form.password) ?? '', name: values.name },
        meta(request),
        verificationContext(found),
        browserSecret,
      ));
    } catch (error) {
      // An address at an SSO domain (issue 35): its organisation's provider, not a password (the same page
      // whether or not the address has an account: the service decides by the domain alone).
      if (error instanceof SsoRequiredError) {
        return page(
          reply,
          views.ssoPage({
            loginPath,
            title: 'Create an account',
            provider: error.provider.name,
            startUrl: ssoStart(error.provider.id, values.email, requestId, undefined),
            message: 'You need no password here: continue with it to sign in (or to create your account).',
            app: found?.app,
          }),
        );
      }
      if (error instanceof AppError && error.code === 'VALIDATION_ERROR') {
        const errors = Object.fromEntries((error.details ?? []).map((d) => [d.field, d.message]));
        return page(
          reply,
          views.signUpPage({
            loginPath,
            csrf: csrfToken(request, reply),
            requestId,
            values,
            errors,
            app: found?.app,
            upstreams: await upstreamButtonsOf(app),
          }),
          error.statusCode,
        );
      }
      throw error;
    }
    // The same page whatever the address: no account and no session exist until the link is confirmed.
    return page(reply, views.signUpSentPage({ loginPath, email, requestId, app: found?.app, mailHint }));
  });

  // The sign-up link: a GET (or HEAD: mail scanners) shows the address and a button; only the POST acts.
  // In a browser other than the one that signed up, the page also asks for the password chosen at sign-up.
  const invalidLink = () =>
    views.messagePage({
      loginPath,
      title: 'This link does not work',
      message: 'The link is invalid, expired or was used already. Sign up again to get a new one.',
      role: 'alert',
      link: { href: `${loginPath}/sign-up`, text: 'Sign up' },
    });
  app.get(
    '/sign-up/confirm',
    { schema: { querystring: Type.Object({ token: Type.String({ maxLength: 256 }) }) } },
    async (request, reply) => {
      // The token is in this page's address: no Referer may carry it further.
      reply.header('referrer-policy', 'no-referrer');
      const found = await app.services.accounts.pendingSignUp(request.query.token, app.signUpBrowser(request));
      if (!found) return page(reply, invalidLink(), 400);
      return page(
        reply,
        views.signUpConfirmPage({
          loginPath,
          csrf: csrfToken(request, reply),
          token: request.query.token,
          email: found.email,
          askPassword: !found.sameBrowser,
        }),
      );
    },
  );
  app.post('/sign-up/confirm', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const token = first(request.body.token) ?? '';
    const result = await app.services.accounts.confirmSignUp(token, meta(request), {
      browserSecret: app.signUpBrowser(request),
      password: first(request.body.password) || undefined,
    });
    if (result.outcome === 'invalid') return page(reply, invalidLink(), 400);
    if (result.outcome === 'wrong_password' && result.dead) {
      return page(
        reply,
        views.messagePage({
          loginPath,
          title: 'This link does not work any more',
          message: 'The password was wrong too many times; nothing was created. Sign up again to get a new link.',
          role: 'alert',
          link: { href: `${loginPath}/sign-up`, text: 'Sign up' },
        }),
        400,
      );
    }
    if (result.outcome === 'password_required' || result.outcome === 'wrong_password') {
      return page(
        reply,
        views.signUpConfirmPage({
          loginPath,
          csrf: csrfToken(request, reply),
          token,
          email: result.email,
          askPassword: true,
          error:
            result.outcome === 'wrong_password'
              ? 'This is not the password chosen at sign-up; nothing was created'
              : 'Enter the password you chose when you signed up',
        }),
        400,
      );
    }
    if (result.outcome === 'exists') {
      return page(
        reply,
        views.messagePage({
          loginPath,
          title: 'An account with this address exists',
          message: 'An account with this e-mail address exists already; nothing was created. Sign in instead.',
          role: 'alert',
          link: { href: `${loginPath}/sign-in`, text: 'Sign in' },
        }),
        409,
      );
    }
    // Whoever confirmed is the person who chose the password (the browser that signed up, or someone who
    // just gave it): this browser is signed in. The authorization request continues only in the browser
    // that started it (bound to it).
    const session = await app.services.sessions.signedIn(result.user.id, meta(request));
    app.setSessionCookie(reply, session.token);
    const requestId = result.requestId;
    if (requestId && (await app.services.authorization.pendingRequest(requestId, app.browserBinding(request)))) {
      await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), {
        userId: result.user.id,
        sessionId: session.session.id,
      });
      return reply.code(303).header('location', continueUrl(requestId)).send();
    }
    return page(
      reply,
      views.messagePage({
        loginPath,
        title: 'Your account is ready',
        message: `Your account for ${result.user.email} is created and its address verified; you are signed in.`,
        role: 'status',
        link: { href: `${loginPath}/`, text: 'Go to your account' },
      }),
    );
  });
}
