// First-party JSON endpoints behind the hosted pages, for another UI built on them, and the spec's
// recovery endpoints (request-password-reset, reset-password). They use the same
// session cookie; they accept only application/json (which a cross-site form cannot send) and, when
// an Origin header is present, only the login or API origin.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { Config } from '../../src/config.js';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { SCOPES } from '../../src/oauth/scopes.js';
import { continueUrl as continueAt, decisionLocation, deliverUrl, logDecision } from '../infra/decisions.js';
import { ErrorSchema } from '../../schemas/common.js';
import { emailKey, ipKey } from '../../src/rate-limit.js';
import { Redirect as Redirected } from '../../schemas/oauth.js';
import { verificationContext } from '../../src/services/authorization.js';
import { startSecondFactor } from './second-factor.js';
import { SsoRequiredError, upstreamStartUrl } from '../../src/domain/sso.js';

/** The answer to every accepted sign-up, whether or not the address has an account. */
const signUpMessage = (email: string) =>
  `Check your inbox: we sent a link to ${email}. Open it and confirm to create your account; ` +
  'if the address has an account already, the mail tells you how to get back in.';

const RequestId = Type.String({ minLength: 1, maxLength: 128 });
const Redirect = Type.Object({ status: Type.Literal(true), redirectTo: Type.Optional(Type.String()) });
/** A sign-in: signed in (redirectTo: where to go on), or a second factor due (redirectTo: the page that asks it). */
const SignedIn = Type.Object({
  status: Type.Literal(true),
  secondFactor: Type.Optional(Type.Literal(true, { description: 'a second factor is due: go to redirectTo' })),
  redirectTo: Type.Optional(Type.String()),
});
const errors = {
  400: ErrorSchema,
  401: ErrorSchema,
  403: ErrorSchema,
  404: ErrorSchema,
  409: ErrorSchema,
  429: ErrorSchema,
};
/**
 * Sign-in and sign-up: 409 SSO_REQUIRED (issue 35) for an address at an SSO domain also names the provider and
 * where its sign-in starts (GET, LOGIN_URL/upstream/{provider}/start?login_hint=...&request=...).
 */
const SsoConflict = Type.Object({
  error: Type.String(),
  message: Type.String(),
  details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  provider: Type.Optional(Type.String({ description: 'SSO_REQUIRED: the upstream provider of the address' })),
  redirectTo: Type.Optional(Type.String({ description: 'SSO_REQUIRED: where the sign-in with it starts' })),
});
const signInErrors = { ...errors, 409: SsoConflict };

const loginApi: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const trusted = new Set([originOf(config.loginUrl), originOf(config.baseUrl)].filter(Boolean) as string[]);
  const meta = (request: FastifyRequest) => ({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null });
  const continueUrl = (id: string) => continueAt(config.issuer, id);
  const signOutRoute = `${app.prefix}/sign-out`;
  const ssoStart = (providerId: string, email: string, requestId: string | undefined) =>
    upstreamStartUrl(config.loginUrl, providerId, { requestId, loginHint: email.trim() || undefined });

  app.addHook('onRequest', async (request) => {
    if (request.method !== 'POST') return;
    const origin = request.headers.origin;
    if (origin !== undefined && !trusted.has(origin))
      throw new AppError(403, 'FORBIDDEN_ORIGIN', 'This endpoint is first-party only');
    // Sign-out alone takes any body (it reads none). Decided by the matched route's pattern, never by
    // request.url, whose query string is the caller's: `/sign-in?x=/sign-out` is still sign-in.
    if (
      !String(request.headers['content-type'] ?? '').startsWith('application/json') &&
      request.routeOptions.url !== signOutRoute
    ) {
      throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send application/json');
    }
  });
  app.addHook('onSend', async (_request, reply) => {
    reply.header('cache-control', 'no-store');
  });

  app.get(
    '/authorization-requests/:id',
    {
      schema: {
        params: Type.Object({ id: RequestId }),
        response: {
          200: Type.Object({
            clientId: Type.String(),
            clientName: Type.String(),
            clientLogoUrl: Type.Optional(Type.String()),
            loginHint: Type.Optional(Type.String()),
            prompt: Type.Array(Type.String()),
            scopes: Type.Array(
              Type.Object({ name: Type.String(), label: Type.String(), consentDescription: Type.String() }),
            ),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      const found = await app.services.authorization.pendingRequest(request.params.id, app.browserBinding(request));
      if (!found) throw new AppError(404, 'REQUEST_NOT_FOUND', 'This sign-in request has expired or was already used');
      const { app: client, request: row } = found;
      return {
        clientId: client.clientId,
        clientName: client.clientName,
        ...(client.clientLogoUrl && { clientLogoUrl: client.clientLogoUrl }),
        ...(row.params.login_hint && { loginHint: row.params.login_hint }),
        prompt: row.params.prompt,
        scopes: SCOPES.filter((s) => row.params.scope.includes(s.name)).map(({ name, label, consentDescription }) => ({
          name,
          label,
          consentDescription,
        })),
      };
    },
  );

  app.post(
    '/sign-in',
    {
      schema: {
        body: Type.Object(
          {
            email: Type.String({ maxLength: 254 }),
            password: Type.String({ maxLength: 1024 }),
            request: Type.Optional(RequestId),
          },
          { additionalProperties: false },
        ),
        response: { 200: SignedIn, ...signInErrors },
      },
    },
    async (request, reply) => {
      if (
        request.body.request &&
        !(await app.services.authorization.pendingRequest(request.body.request, app.browserBinding(request)))
      ) {
        throw new AppError(
          404,
          'REQUEST_NOT_FOUND',
          'This sign-in request has expired or was already used (or was started in another browser)',
        );
      }
      // Home-realm discovery (issue 35): an address at an SSO domain signs in with its organisation's provider;
      // no password is checked (the same answer for every address at the domain, with an account or not).
      const sso = await app.services.upstreams.providers.ssoFor(request.body.email.trim());
      if (sso) throw new SsoRequiredError(sso, ssoStart(sso.id, request.body.email, request.body.request));
      const result = await app.signInLimits.attempt(request, reply, request.body.email, () =>
        app.services.accounts.signIn(request.body, meta(request)),
      );
      if ('secondFactor' in result) {
        // A second factor is due (issue 34): no session yet; the hosted second-factor page continues.
        const input = { userId: result.user.id, amr: ['pwd'], requestId: request.body.request, returnTo: undefined };
        const redirectTo = await startSecondFactor(app, reply, input, meta(request), config.loginUrl);
        return { status: true as const, secondFactor: true as const, redirectTo };
      }
      const { user, sessionToken, sessionId } = result;
      app.setSessionCookie(reply, sessionToken);
      if (request.body.request)
        await app.services.authorization.recordSignIn(request.body.request, app.browserBinding(request), {
          userId: user.id,
          sessionId,
        });
      return { status: true as const, ...(request.body.request && { redirectTo: continueUrl(request.body.request) }) };
    },
  );

  app.post(
    '/sign-up',
    {
      schema: {
        body: Type.Object(
          {
            email: Type.String({ maxLength: 254 }),
            password: Type.String({ maxLength: 1024 }),
            name: Type.Optional(Type.String({ maxLength: 200 })),
            request: Type.Optional(RequestId),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ status: Type.Literal(true), message: Type.String() }), ...signInErrors },
      },
    },
    async (request, reply) => {
      await app.rateLimit(reply, 'SIGN_UP_IP', ipKey(request.ip));
      await app.rateLimit(reply, 'SIGN_UP_EMAIL', emailKey(request.body.email));
      const requestId = request.body.request;
      const found = requestId
        ? await app.services.authorization.pendingRequest(requestId, app.browserBinding(request))
        : undefined;
      if (requestId && !found)
        throw new AppError(404, 'REQUEST_NOT_FOUND', 'This sign-in request has expired or was already used');
      // The pending sign-up is bound to this browser (the cookie is set whatever the address: same answer).
      const browserSecret = app.bindSignUpBrowser(request, reply);
      const { email } = await app.services.accounts
        .signUp(request.body, meta(request), verificationContext(found), browserSecret)
        .catch((error: unknown) => {
          // An address at an SSO domain (issue 35): no password account; where its provider's sign-in starts.
          if (error instanceof SsoRequiredError)
            error.redirectTo = ssoStart(error.provider.id, request.body.email, requestId);
          throw error;
        });
      // The same answer whatever the address (issue 31, item 3): no account and no session until the
      // mailed link is confirmed on the hosted page.
      return reply.code(201).send({ status: true as const, message: signUpMessage(email) });
    },
  );

  app.post('/sign-out', { schema: { response: { 204: Type.Null(), ...errors } } }, async (request, reply) => {
    await app.signOut(request, reply);
    return reply.code(204).send(null);
  });

  // Recovery (spec: POST /api/auth/request-password-reset, GET /api/auth/reset-password/{token},
  // POST /api/auth/reset-password).
  app.post(
    '/request-password-reset',
    {
      schema: {
        body: Type.Object(
          { email: Type.String({ maxLength: 254 }), redirectTo: Type.String({ minLength: 1, maxLength: 2048 }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ status: Type.Literal(true), message: Type.String() }), ...errors },
      },
    },
    async (request, reply) => {
      await app.rateLimit(reply, 'RESET_REQUEST_IP', ipKey(request.ip));
      await app.rateLimit(reply, 'RESET_REQUEST_EMAIL', emailKey(request.body.email));
      await app.rateLimit(reply, 'RESET_REQUEST_EMAIL_DAY', emailKey(request.body.email));
      return app.services.recovery.requestReset(request.body, meta(request));
    },
  );

  app.get(
    '/reset-password/:token',
    // No length limits here: a mangled link is an invalid token (a redirect), never a JSON 400 in the browser.
    {
      schema: {
        params: Type.Object({ token: Type.String() }),
        querystring: Type.Object({ redirectTo: Type.Optional(Type.String()) }),
        response: { 302: Redirected('to redirectTo?token=..., or with error=INVALID_TOKEN') },
      },
    },
    async (request, reply) => {
      const location = await app.services.recovery.linkTarget(request.params.token, request.query.redirectTo);
      // The token is in the Location: no Referer may carry it further.
      return reply.code(302).header('referrer-policy', 'no-referrer').header('location', location).send();
    },
  );

  app.post(
    '/reset-password',
    {
      schema: {
        body: Type.Object(
          { token: Type.String({ maxLength: 256 }), newPassword: Type.String({ maxLength: 4096 }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ status: Type.Literal(true) }), ...errors },
      },
    },
    async (request, reply) => {
      await app.rateLimit(reply, 'RESET_PASSWORD_IP', ipKey(request.ip));
      await app.services.recovery.resetPassword(request.body, meta(request));
      return { status: true as const };
    },
  );

  app.post(
    '/verify-email',
    {
      schema: {
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 256 }) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            status: Type.Literal(true),
            redirectTo: Type.Optional(Type.String()),
            emailChanged: Type.Optional(
              Type.Literal(true, {
                description: 'the link confirmed an e-mail change (the address is now the new one)',
              }),
            ),
          }),
          ...errors,
        },
      },
    },
    async (request) => {
      // An e-mail change link confirms only for the session of the account that asked (issue 31).
      const signedIn = await app.currentSession(request);
      const result = await app.services.accounts.verifyEmail(request.body.token, signedIn?.user.id);
      if (!result)
        throw new AppError(400, 'INVALID_TOKEN', 'The verification link is invalid, expired or was used already');
      const pendingRequest = result.requestId
        ? await app.services.authorization.pendingRequest(result.requestId, app.browserBinding(request))
        : undefined;
      return {
        status: true as const,
        ...(pendingRequest && { redirectTo: continueUrl(result.requestId!) }),
        ...(result.emailChanged && { emailChanged: true as const }),
      };
    },
  );

  app.post(
    '/consent',
    {
      schema: {
        body: Type.Object(
          { request: RequestId, decision: Type.Union([Type.Literal('allow'), Type.Literal('deny')]) },
          { additionalProperties: false },
        ),
        response: { 200: Redirect, ...errors },
      },
    },
    async (request) => {
      const ctx = await app.currentSession(request);
      if (!ctx) throw new AppError(401, 'UNAUTHENTICATED', 'Sign in first');
      const decision = await app.services.authorization.consent(
        request.body.request,
        app.browserBinding(request),
        ctx,
        request.body.decision === 'allow',
      );
      logDecision(request.log, decision);
      if (decision.kind === 'form_post') {
        // response_mode=form_post: the browser gets the page that POSTs the answer at this URL (this browser only).
        const sealed = app.services.authorization.sealDelivery(decision, app.browserBinding(request)!);
        return { status: true as const, redirectTo: deliverUrl(config.issuer, sealed) };
      }
      return { status: true as const, redirectTo: decisionLocation(decision, config.loginUrl) };
    },
  );
};

export default loginApi;
