// The authenticator app (TOTP) and recovery codes as second factor (issue 34): their sections of the
// second-factor page and their handlers,
//   POST /second-factor/totp            a code of the user's authenticator app
//   POST /second-factor/recovery-code   one of the user's recovery codes (a fallback: only for a user who holds
//                                       a second factor; each code once)
// Both go through the flow of second-factor.ts: the subject is this browser's pending sign-in (its idp.mfa
// cookie) or its signed-in session stepping up, never a user named by the form; the check runs under the
// account's sign-in limits (a wrong code counts as a failed sign-in) and a wrong code counts on the pending
// sign-in. A right code makes the session (amr with otp and mfa) or steps it up, then the browser goes on.
// Answers: 303 on; 401 with the page again for a wrong code; the sign-in page (401, with a message) when that
// was the last attempt of the pending sign-in; 429 with Retry-After and the page when a limit refuses.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasSecondFactor } from '../../src/domain/mfa.js';
import { RateLimitError } from '../infra/rate-limit.js';
import { field, hidden, html } from '../pages/kit.js';
import { first, Form, type LoginContext } from './page-context.js';
import {
  registerSecondFactorSection,
  type SecondFactorFlow,
  type SecondFactorPageOptions,
  type SecondFactorSubject,
  secondFactorPage,
  wrongSecondFactor,
} from './second-factor.js';
import * as views from './views.js';

/** A code field of the page (each form its own id). */
function codeField(id: string, label: string, o: { autocomplete: string; numeric: boolean; autofocus: boolean }) {
  const control = html`<input id="${id}" name="code" type="text" autocomplete="${o.autocomplete}"\
${o.numeric ? html` inputmode="numeric"` : ''} spellcheck="false" autocapitalize="none" maxlength="64" required\
${o.autofocus ? html` autofocus` : ''}>`;
  return field({ id, label, control, separator: '\n' });
}

const formHidden = (o: SecondFactorPageOptions) =>
  html`${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}${hidden('return_to', o.returnTo)}`;

function totpSection(o: SecondFactorPageOptions) {
  if (!o.factors.totp) return '';
  return html`<section aria-labelledby="totp-heading">
<h2 id="totp-heading">Authenticator app</h2>
<form method="post" action="${o.loginPath}/second-factor/totp" novalidate>
${formHidden(o)}
${codeField('totp-code', 'The 6-digit code your authenticator app shows', {
  autocomplete: 'one-time-code',
  numeric: true,
  autofocus: true,
})}
<button type="submit">Continue</button>
</form>
</section>`;
}

function recoveryCodeSection(o: SecondFactorPageOptions) {
  if (!hasSecondFactor(o.factors) || o.factors.recoveryCodes === 0) return '';
  // Collapsed when another factor is offered (a fallback); a <details> needs no script.
  return html`<details>
<summary>Lost your second factor? Use a recovery code</summary>
<form method="post" action="${o.loginPath}/second-factor/recovery-code" novalidate>
${formHidden(o)}
${codeField('recovery-code', 'One of your recovery codes (like abcde-fghij)', {
  autocomplete: 'off',
  numeric: false,
  autofocus: false,
})}
<button type="submit">Continue</button>
</form>
</details>`;
}

export function registerTotpSecondFactor(context: LoginContext, flow: SecondFactorFlow) {
  const { app, loginPath, checkCsrf, csrfToken, page, pending, safeReturnTo, meta } = context;
  registerSecondFactorSection('totp', totpSection);
  registerSecondFactorSection('recovery_code', recoveryCodeSection);

  /** The second-factor page again, with an error (a wrong code, a limit). */
  async function pageAgain(
    request: FastifyRequest,
    reply: FastifyReply,
    subject: SecondFactorSubject,
    where: { requestId: string | undefined; returnTo: string | undefined },
    error: string,
    status: number,
  ) {
    const factors = await app.services.factors.summary(subject.userId);
    const requestId = subject.kind === 'pending' ? (subject.pending.requestId ?? undefined) : where.requestId;
    const body = secondFactorPage({
      loginPath,
      csrf: csrfToken(request, reply),
      requestId,
      returnTo: safeReturnTo(where.returnTo),
      factors,
      stepUp: subject.kind === 'step-up',
      error,
    });
    return page(reply, body, status);
  }

  /** Back to the sign-in page (the pending sign-in is over), with why. */
  async function signInAgain(
    request: FastifyRequest,
    reply: FastifyReply,
    where: { requestId: string | undefined; returnTo: string | undefined },
    error: string,
  ) {
    const found = await pending(request, where.requestId).catch(() => undefined);
    const body = views.signInPage({
      loginPath,
      csrf: csrfToken(request, reply),
      requestId: found ? where.requestId : undefined,
      app: found?.app,
      returnTo: safeReturnTo(where.returnTo),
      error,
    });
    return page(reply, body, 401);
  }

  async function handle(
    request: FastifyRequest,
    reply: FastifyReply,
    form: Record<string, string | string[]>,
    check: (userId: string, code: string) => Promise<boolean>,
  ) {
    checkCsrf(request, form);
    const where = { requestId: first(form.request) || undefined, returnTo: first(form.return_to) || undefined };
    const subject = await flow.subjectOf(request);
    if (!subject) {
      // Nothing of this browser waits for a second factor (another browser, expired, already done).
      const q = where.requestId ? `?request=${encodeURIComponent(where.requestId)}` : '';
      return reply.code(303).header('location', `${loginPath}/sign-in${q}`).send();
    }
    const code = first(form.code) ?? '';
    let result: Awaited<ReturnType<typeof flow.secondFactorAttempt>>;
    try {
      result = await flow.secondFactorAttempt(request, reply, subject, async () => {
        if (!(await check(subject.userId, code))) throw wrongSecondFactor();
      });
    } catch (error) {
      if (!(error instanceof RateLimitError)) throw error;
      if (!reply.hasHeader('retry-after')) reply.header('retry-after', String(error.retryAfterSeconds));
      return pageAgain(request, reply, subject, where, error.message, 429);
    }
    if (!result.ok) {
      if (result.ended) {
        return signInAgain(request, reply, where, 'Too many wrong codes. Sign in again with your password.');
      }
      return pageAgain(request, reply, subject, where, result.error.message, 401);
    }
    const location = await flow.completeSecondFactor(request, reply, subject, ['otp'], where);
    if (!location) {
      return signInAgain(request, reply, where, 'This sign-in has expired. Sign in again.');
    }
    return reply.code(303).header('location', location).send();
  }

  app.post('/second-factor/totp', { schema: { body: Form } }, async (request, reply) =>
    handle(request, reply, request.body, (userId, code) => app.services.totp.verify(userId, code)),
  );

  app.post('/second-factor/recovery-code', { schema: { body: Form } }, async (request, reply) =>
    handle(request, reply, request.body, async (userId, code) =>
      Boolean(await app.services.recoveryCodes.use(userId, code, { ip: meta(request).ip })),
    ),
  );
}
