// Passkeys on the hosted login pages (issue 34): the scripts, the passkey section of the second-factor page, and
// the JSON ceremony endpoints of a sign-in with a passkey alone and of a passkey as second factor:
//   POST {loginPath}/passkeys/sign-in/options        challenge for this browser (no user yet)
//   POST {loginPath}/passkeys/sign-in/verify         { csrf, response, request?, return_to? } -> { redirectTo }
//   POST {loginPath}/passkeys/second-factor/options  challenge for this browser and the waiting user
//   POST {loginPath}/passkeys/second-factor/verify   { csrf, response, request?, return_to? } -> { redirectTo }
// First party only: application/json (which no cross-site form can send), a trusted Origin when one is sent, and
// the hosted pages' double-submit CSRF token in the body. Errors are the first-party JSON shape (ErrorSchema).
// The challenge is bound to this browser by the browser-binding cookie (app.bindBrowser, the one that binds
// pending authorization requests); a second factor's also to the user the pending sign-in (or session) names.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { ErrorSchema } from '../../schemas/common.js';
import { AppError } from '../../src/errors.js';
import { ipKey } from '../../src/rate-limit.js';
import { firstPartyJsonErrors } from '../infra/error-handlers.js';
import { RateLimitError } from '../infra/rate-limit.js';
import { html } from '../pages/kit.js';
import { PASSKEY_SCRIPT, passkeyScripts, webauthnBundle } from '../pages/passkey-script.js';
import type { App, LoginContext } from './page-context.js';
import { registerSecondFactorSection, type SecondFactorFlow, wrongSecondFactor } from './second-factor.js';

/** A WebAuthn response as the browser's PublicKeyCredential.toJSON() makes it (bounded). */
const B64 = (max: number) => Type.String({ maxLength: max, pattern: '^[A-Za-z0-9_-]*$' });
export const PasskeyResponse = Type.Object({
  id: B64(1366),
  rawId: B64(1366),
  type: Type.Literal('public-key'),
  response: Type.Object({
    clientDataJSON: B64(8192),
    authenticatorData: Type.Optional(B64(8192)),
    signature: Type.Optional(B64(1024)),
    userHandle: Type.Optional(Type.Union([B64(128), Type.Null()])),
    attestationObject: Type.Optional(B64(12288)),
    transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 10 })),
    publicKeyAlgorithm: Type.Optional(Type.Number()),
    publicKey: Type.Optional(B64(2048)),
  }),
  authenticatorAttachment: Type.Optional(Type.Union([Type.String({ maxLength: 32 }), Type.Null()])),
  clientExtensionResults: Type.Record(Type.String({ maxLength: 64 }), Type.Unknown()),
});
const Ceremony = Type.Object(
  {
    csrf: Type.String({ maxLength: 128 }),
    request: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);
const Verify = Type.Object(
  {
    csrf: Type.String({ maxLength: 128 }),
    response: PasskeyResponse,
    request: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    return_to: Type.Optional(Type.String({ maxLength: 2048 })),
    name: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
/** The options the browser passes to navigator.credentials (PublicKeyCredential*OptionsJSON). */
export const PasskeyOptions = Type.Object({}, { additionalProperties: true });
export const Continue = Type.Object({ status: Type.Literal(true), redirectTo: Type.String() });
export const errors = { 400: ErrorSchema, 401: ErrorSchema, 403: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema };
export const PASSKEY_BODY_LIMIT = 32 * 1024;

/**
 * A child of the pages plugin for JSON endpoints: the first-party checks and JSON errors (the pages' handler
 * answers HTML), no-store. `origins` are the trusted ones (the CSRF check refuses the others too).
 */
export function passkeyJsonScope(app: App, routes: (api: App) => void) {
  app.register(async (api) => {
    const jsonErrors = firstPartyJsonErrors({ bodyLimit: PASSKEY_BODY_LIMIT });
    api.setErrorHandler((error, request, reply) => {
      if (error instanceof RateLimitError && !reply.hasHeader('retry-after'))
        reply.header('retry-after', String(error.retryAfterSeconds));
      return jsonErrors(error as FastifyError, request, reply);
    });
    api.addHook('onRequest', async (request) => {
      if (!String(request.headers['content-type'] ?? '').startsWith('application/json'))
        throw new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', 'Send application/json');
    });
    api.addHook('onSend', async (_request, reply) => {
      reply.header('cache-control', 'no-store');
    });
    routes(api);
  });
}

/**
 * The options of the sign-in page's conditional (autofill) request, made with the page and bound to this
 * browser; undefined when passkeys are off.
 */
export async function passkeySignInOptions(
  { app, config }: Pick<LoginContext, 'app' | 'config'>,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  if (config.mfa.mode === 'off') return undefined;
  return app.services.passkeys.signInOptions(app.bindBrowser(request, reply));
}

const passkeysOff = () => new AppError(404, 'PASSKEYS_OFF', 'Passkeys are switched off on this server');

export function registerPasskeyPages(context: LoginContext, flow: SecondFactorFlow) {
  const { app, config, loginPath, checkCsrf, safeReturnTo, continueUrl, meta } = context;
  const bundle = webauthnBundle();
  const script = (reply: FastifyReply, body: string) =>
    reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .send(body);
  app.get('/assets/webauthn.js', async (_request, reply) => script(reply, bundle));
  app.get('/assets/passkeys.js', async (_request, reply) => script(reply, PASSKEY_SCRIPT));

  registerSecondFactorSection('passkey', (o) =>
    o.factors.passkeys > 0 && config.mfa.mode !== 'off'
      ? html`<section aria-labelledby="passkey-heading">
<h2 id="passkey-heading">Passkey</h2>
<p>Use one of your passkeys: your device asks for your fingerprint, face or screen lock.</p>
<p class="alert" role="alert" id="passkey-error" hidden></p>
<p><button type="button" id="passkey-button" hidden>Use a passkey</button></p>
<noscript><p class="muted">Using a passkey needs JavaScript.</p></noscript>
${passkeyScripts(loginPath, {
  mode: 'second-factor',
  endpoint: `${loginPath}/passkeys/second-factor`,
  csrf: o.csrf,
  requestId: o.requestId,
  returnTo: o.returnTo,
})}
</section>`
      : '',
  );

  const csrfOf = (request: FastifyRequest, body: { csrf: string }) => {
    checkCsrf(request, { csrf: body.csrf });
    if (config.mfa.mode === 'off') throw passkeysOff();
  };

  passkeyJsonScope(app, (api) => {
    api.post(
      '/passkeys/sign-in/options',
      { schema: { body: Ceremony, response: { 200: PasskeyOptions, ...errors } } },
      async (request, reply) => {
        csrfOf(request, request.body);
        return app.services.passkeys.signInOptions(app.bindBrowser(request, reply));
      },
    );

    api.post(
      '/passkeys/sign-in/verify',
      { bodyLimit: PASSKEY_BODY_LIMIT, schema: { body: Verify, response: { 200: Continue, ...errors } } },
      async (request, reply) => {
        csrfOf(request, request.body);
        await app.rateLimit(reply, 'SIGN_IN_IP', ipKey(request.ip));
        const { request: requestId, return_to } = request.body;
        const binding = app.browserBinding(request);
        if (requestId && !(await app.services.authorization.pendingRequest(requestId, binding))) {
          throw new AppError(
            404,
            'REQUEST_NOT_FOUND',
            'This sign-in request has expired or was already used (or was started in another browser)',
          );
        }
        const found = await app.services.passkeys.signIn(binding, request.body.response as never, meta(request));
        // A passkey with user verification is two factors (src/domain/mfa.ts): the session is made at once.
        const { token, session } = await app.services.sessions.signedIn(found.userId, meta(request), found.amr);
        app.setSessionCookie(reply, token);
        if (requestId) {
          await app.services.authorization.recordSignIn(requestId, binding, {
            userId: found.userId,
            sessionId: session.id,
          });
          return { status: true as const, redirectTo: continueUrl(requestId) };
        }
        return { status: true as const, redirectTo: safeReturnTo(return_to) ?? `${loginPath}/` };
      },
    );

    const noSignIn = () =>
      new AppError(401, 'NO_PENDING_SIGN_IN', 'There is no sign-in waiting for a second factor here; sign in again');

    api.post(
      '/passkeys/second-factor/options',
      { schema: { body: Ceremony, response: { 200: PasskeyOptions, ...errors } } },
      async (request, reply) => {
        csrfOf(request, request.body);
        const subject = await flow.subjectOf(request);
        if (!subject) throw noSignIn();
        const summary = await app.services.factors.summary(subject.userId);
        if (summary.passkeys === 0) throw new AppError(404, 'NO_PASSKEY', 'This account has no passkey');
        return app.services.passkeys.secondFactorOptions(subject.userId, app.bindBrowser(request, reply));
      },
    );

    api.post(
      '/passkeys/second-factor/verify',
      { bodyLimit: PASSKEY_BODY_LIMIT, schema: { body: Verify, response: { 200: Continue, ...errors } } },
      async (request, reply) => {
        csrfOf(request, request.body);
        const subject = await flow.subjectOf(request);
        if (!subject) throw noSignIn();
        const binding = app.browserBinding(request);
        const attempt = await flow.secondFactorAttempt(request, reply, subject, async () => {
          try {
            return await app.services.passkeys.verifySecondFactor(
              subject.userId,
              binding,
              request.body.response as never,
              meta(request),
            );
          } catch (error) {
            if (error instanceof AppError && error.statusCode < 500 && error.statusCode !== 429)
              throw wrongSecondFactor(error.message);
            throw error;
          }
        });
        if (!attempt.ok) {
          if (attempt.ended) {
            throw new AppError(401, 'SECOND_FACTOR_ENDED', 'Too many wrong attempts: sign in again');
          }
          throw attempt.error;
        }
        const location = await flow.completeSecondFactor(request, reply, subject, attempt.value.amr, {
          requestId: request.body.request,
          returnTo: request.body.return_to,
        });
        if (!location) throw noSignIn();
        return { status: true as const, redirectTo: location };
      },
    );
  });
}
