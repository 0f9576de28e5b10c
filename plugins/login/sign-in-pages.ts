// Hosted login pages: sign-in and sign-up (with or without a pending authorization request).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import { first, Form, type LoginContext, RequestQuery } from './page-context.js';
import * as views from './views.js';
import { verificationContext } from '../../src/services/authorization.js';

const SignInQuery = Type.Object({
  request: Type.Optional(Type.String({ maxLength: 128 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  prompt: Type.Optional(Type.String({ maxLength: 32 })),
});

export function registerSignInPages({
  app,
  loginPath,
  csrfToken,
  checkCsrf,
  page,
  pending,
  safeReturnTo,
  continueUrl,
  meta,
}: LoginContext) {
  // Sign in
  app.get('/sign-in', { schema: { querystring: SignInQuery } }, async (request, reply) => {
    const found = await pending(request, request.query.request);
    const returnTo = safeReturnTo(request.query.return_to);
    const ctx = returnTo ? await app.currentSession(request) : undefined;
    return page(
      reply,
      views.signInPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: request.query.request,
        email: found?.request.params.login_hint ?? ctx?.user.email,
        app: found?.app,
        returnTo,
        reauthenticate: Boolean(ctx),
      }),
    );
  });
  app.post('/sign-in', { schema: { body: Form } }, async (request, reply) => {
    const form = request.body;
    checkCsrf(request, form);
    const requestId = first(form.request) || undefined;
    const found = await pending(request, requestId);
    const email = first(form.email) ?? '';
    let signedIn: { userId: string; sessionId: string };
    try {
      const { user, sessionToken, sessionId } = await app.signInLimits.attempt(request, reply, email, () =>
        app.services.accounts.signIn({ email, password: first(form.password) ?? '' }, meta(request)),
      );
      app.setSessionCookie(reply, sessionToken);
      signedIn = { userId: user.id, sessionId };
    } catch (error) {
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
            returnTo: safeReturnTo(first(form.return_to)),
          }),
          401,
        );
      }
      throw error;
    }
    if (!requestId)
      return reply
        .code(303)
        .header('location', safeReturnTo(first(form.return_to)) ?? `${loginPath}/`)
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
    let signedUp: { userId: string; sessionId: string };
    try {
      const { user, sessionToken, sessionId } = await app.services.accounts.signUp(
        { email: values.email, password: first(form.password) ?? '', name: values.name },
        meta(request),
        verificationContext(found),
      );
      app.setSessionCookie(reply, sessionToken);
      signedUp = { userId: user.id, sessionId };
    } catch (error) {
      if (error instanceof AppError && (error.code === 'VALIDATION_ERROR' || error.code === 'EMAIL_TAKEN')) {
        const errors = Object.fromEntries((error.details ?? []).map((d) => [d.field, d.message]));
        return page(
          reply,
          views.signUpPage({ loginPath, csrf: csrfToken(request, reply), requestId, values, errors, app: found?.app }),
          error.statusCode,
        );
      }
      throw error;
    }
    if (requestId) await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), signedUp);
    return reply
      .code(303)
      .header('location', requestId ? continueUrl(requestId) : `${loginPath}/verify-email`)
      .send();
  });
}
