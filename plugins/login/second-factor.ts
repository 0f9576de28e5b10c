// The second step of a sign-in (issue 34): the page that asks for a second factor, and what every factor's
// handler calls around its own check. Two situations reach it:
//   - a pending sign-in (the password was right, a second factor is due): this browser's `idp.mfa` cookie names
//     it (services.factors: who may move it on, and for how long); completing it makes the session;
//   - a step-up: a signed-in session that lacks the level a request asks for (nextStep: 'second-factor');
//     completing it adds the methods to that session in place (services.sessions.stepUp).
// Either way the factor must be the user's own (the handler checks it for `subject.userId`), every attempt
// passes the account's sign-in limits (secondFactorAttempt), and a wrong one is counted against the pending
// sign-in (MAX_SECOND_FACTOR_ATTEMPTS end it).
// The factor kinds register their own handlers beside this file (TOTP and recovery codes, passkeys) and call
// subjectOf, secondFactorAttempt and completeSecondFactor.
import type { FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import type { FactorSummary } from '../../src/domain/mfa.js';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { ipKey } from '../../src/rate-limit.js';
import type { PendingSignIn } from '../../src/services/factors/index.js';
import { alert as formError, hidden, html, type Html } from '../pages/kit.js';
import { layout } from '../pages/hosted.js';
import { sendDecision } from '../infra/decisions.js';
import { type App, first, Form, type LoginContext } from './page-context.js';

/** Who is giving a second factor: a pending sign-in of this browser, or a signed-in session stepping up. */
export type SecondFactorSubject =
  | { kind: 'pending'; pending: PendingSignIn; userId: string; email: string }
  | { kind: 'step-up'; ctx: SessionContext; userId: string; email: string };

/** The error a wrong second factor throws inside secondFactorAttempt (it counts as a failed sign-in). */
export const wrongSecondFactor = (message = 'That code is not correct') =>
  new AppError(401, 'INVALID_SECOND_FACTOR', message);

/** The second-factor page's address, for a request (and where a sign-in without one returns). */
export function secondFactorUrl(base: string, requestId: string | undefined, returnTo: string | undefined): string {
  const query = new URLSearchParams();
  if (requestId) query.set('request', requestId);
  if (returnTo) query.set('return_to', returnTo);
  const q = query.toString();
  return `${base}/second-factor${q ? `?${q}` : ''}`;
}

/**
 * After a first factor (a password): either the session (nothing more is due: `signedIn` holds it) or a pending
 * sign-in, its cookie set, and the address of the second-factor page. Used by the sign-in page and the JSON API.
 */
export async function startSecondFactor(
  app: App,
  reply: FastifyReply,
  input: { userId: string; amr: string[]; requestId: string | undefined; returnTo: string | undefined },
  meta: { ip: string | null; userAgent: string | null },
  base: string,
): Promise<string> {
  const token = await app.services.factors.beginPending(input.userId, input.amr, input.requestId, meta);
  app.setPendingSignInCookie(reply, token);
  return secondFactorUrl(base, input.requestId, input.returnTo);
}

const SecondFactorQuery = Type.Object({
  request: Type.Optional(Type.String({ maxLength: 128 })),
  return_to: Type.Optional(Type.String({ maxLength: 2048 })),
  error: Type.Optional(Type.String({ maxLength: 64 })),
});

/** What the page shows for each method the user holds; the kinds' modules add their forms by name. */
export interface SecondFactorPageOptions {
  loginPath: string;
  csrf: string;
  requestId: string | undefined;
  returnTo: string | undefined;
  factors: FactorSummary;
  stepUp: boolean;
  error?: string | undefined;
}

/**
 * The sections of the page, one per factor kind, in the order shown. A kind's module adds its section
 * (registerSecondFactorSection) when its plugin code loads; each gets the page's options.
 */
const sections: Array<{ kind: string; render: (o: SecondFactorPageOptions) => Html | string }> = [];
export function registerSecondFactorSection(kind: string, render: (o: SecondFactorPageOptions) => Html | string) {
  if (!sections.some((s) => s.kind === kind)) sections.push({ kind, render });
}

export function secondFactorPage(o: SecondFactorPageOptions): string {
  return layout({
    title: 'Second step of sign-in',
    loginPath: o.loginPath,
    body: html`<h1>${o.stepUp ? 'Confirm it is you' : 'Second step of sign-in'}</h1>
<p>${
      o.stepUp
        ? 'This application asks for a second factor. Use one of your sign-in methods below.'
        : 'Your password was right. Now use one of your second factors.'
    }</p>
${formError(o.error)}
${sections.map((s) => s.render(o))}
<form method="post" action="${o.loginPath}/second-factor/cancel">
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
<button type="submit" class="secondary">Cancel</button>
</form>`,
  });
}

export function createSecondFactorFlow(context: LoginContext) {
  const { app, loginPath, safeReturnTo, continueUrl, meta } = context;

  /** The pending sign-in of this browser, else (for a step-up) its session; undefined: nothing to continue. */
  async function subjectOf(request: FastifyRequest): Promise<SecondFactorSubject | undefined> {
    const pending = await app.services.factors.pending(app.pendingSignInToken(request));
    if (pending) {
      const user = await app.services.users.get(pending.userId).catch(() => undefined);
      if (user) return { kind: 'pending', pending, userId: user.id, email: user.email };
    }
    const ctx = await app.currentSession(request);
    return ctx && { kind: 'step-up', ctx, userId: ctx.user.id, email: ctx.user.email };
  }

  /**
   * Runs a factor's check for `subject` under the account's sign-in limits (a wrong factor, thrown as
   * wrongSecondFactor(), is a failed sign-in; SIGN_IN_IP counts every attempt). A wrong factor is also
   * counted on the pending sign-in; `ended` is true when that was its last attempt.
   */
  async function secondFactorAttempt<T>(
    request: FastifyRequest,
    reply: FastifyReply,
    subject: SecondFactorSubject,
    run: () => Promise<T>,
  ): Promise<{ ok: true; value: T } | { ok: false; error: AppError; ended: boolean }> {
    await app.rateLimit(reply, 'SIGN_IN_IP', ipKey(request.ip));
    try {
      return { ok: true, value: await app.signInLimits.confirmPassword(subject.email, run) };
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'INVALID_SECOND_FACTOR') throw error;
      const ended =
        subject.kind === 'pending' ? await app.services.factors.failPending(subject.pending, meta(request)) : false;
      if (ended) app.clearPendingSignInCookie(reply);
      return { ok: false, error, ended };
    }
  }

  /**
   * The factor was right: the session (a pending sign-in) or the step-up, then where the browser goes on: the
   * authorization request, the page it came from (return_to), or the account. Undefined when the pending
   * sign-in or the session ended meanwhile (the caller sends the browser back to sign in).
   */
  async function completeSecondFactor(
    request: FastifyRequest,
    reply: FastifyReply,
    subject: SecondFactorSubject,
    added: string[],
    where: { requestId?: string | undefined; returnTo?: string | undefined },
  ): Promise<string | undefined> {
    const returnTo = safeReturnTo(where.returnTo);
    if (subject.kind === 'pending') {
      const done = await app.services.factors.completePending(subject.pending, added, meta(request));
      app.clearPendingSignInCookie(reply);
      if (!done) return undefined;
      app.setSessionCookie(reply, done.sessionToken);
      const requestId = done.requestId ?? undefined;
      if (requestId && (await app.services.authorization.pendingRequest(requestId, app.browserBinding(request)))) {
        await app.services.authorization.recordSignIn(requestId, app.browserBinding(request), {
          userId: done.userId,
          sessionId: done.session.id,
        });
        return continueUrl(requestId);
      }
      return returnTo ?? `${loginPath}/`;
    }
    const stepped = await app.services.sessions.stepUp(subject.ctx.session.id, subject.userId, added, meta(request));
    if (!stepped) return undefined;
    if (where.requestId) return continueUrl(where.requestId);
    return returnTo ?? `${loginPath}/`;
  }

  return { subjectOf, secondFactorAttempt, completeSecondFactor };
}

export type SecondFactorFlow = ReturnType<typeof createSecondFactorFlow>;

/** The page, and its cancel. The factor kinds' own POST handlers are registered by their modules. */
export function registerSecondFactorPages(context: LoginContext, flow: SecondFactorFlow) {
  const { app, config, loginPath, csrfToken, checkCsrf, page, safeReturnTo } = context;

  app.get('/second-factor', { schema: { querystring: SecondFactorQuery } }, async (request, reply) => {
    const subject = await flow.subjectOf(request);
    const { request: requestId, return_to } = request.query;
    if (!subject) {
      const q = requestId ? `?request=${encodeURIComponent(requestId)}` : '';
      return reply.code(303).header('location', `${loginPath}/sign-in${q}`).send();
    }
    const factors = await app.services.factors.summary(subject.userId);
    return page(
      reply,
      secondFactorPage({
        loginPath,
        csrf: csrfToken(request, reply),
        requestId: subject.kind === 'pending' ? (subject.pending.requestId ?? undefined) : requestId,
        returnTo: safeReturnTo(return_to),
        factors,
        stepUp: subject.kind === 'step-up',
      }),
    );
  });

  // Cancel: a pending sign-in ends (no session); a step-up on a request of this browser answers the application
  // that its level was not met (unmet_authentication_requirements; the request ends), if the request is still at
  // the step-up for this session (AuthorizationService.cancelStepUp; otherwise the step that is due).
  app.post('/second-factor/cancel', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    const subject = await flow.subjectOf(request);
    if (subject?.kind === 'pending') {
      await app.services.factors.cancelPending(subject.pending);
      app.clearPendingSignInCookie(reply);
    }
    const requestId = first(request.body.request);
    if (subject?.kind === 'step-up' && requestId) {
      const browser = app.browserBinding(request);
      return sendDecision(
        reply,
        await app.services.authorization.cancelStepUp(requestId, browser, subject.ctx),
        config.loginUrl,
      );
    }
    return reply.code(303).header('location', `${loginPath}/sign-in`).send();
  });
}
