// The authenticator app (TOTP) and recovery codes on the sign-in methods page (issue 34): two sections of the
// page (registerFactorSection) and the forms that change them, under `${base}/sign-in-methods`:
//   POST /totp/start          a new secret: the page answers with the QR code, the key as text and a code field
//   POST /totp/confirm        the first code: the app is set up (and, without any, ten recovery codes are shown)
//   POST /totp/remove         removes the app (or drops a setup that never got its first code)
//   POST /recovery-codes/generate   a new set of ten codes, shown once; the old set stops working
// Every one: the CSRF token (signedInPost), then a recent authentication (factorPages.requireFresh: a stale
// session is sent to sign in again and comes back to the page). A secret or a code appears only on the page
// that answers the POST (no-store, as every page), never in a URL; anything else ends in a 303 with a status
// code (Post/Redirect/Get). `return_to` (a sign-in that must enrol first) rides along in every form and
// redirect, so the page can offer "Continue" once a second factor exists. No JavaScript.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hasSecondFactor } from '../../src/domain/mfa.js';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import type { TotpEnrolment } from '../../src/services/factors/totp.js';
import { hidden, html, Html } from '../pages/kit.js';
import { type AccountContext, Form, type FormBody, text } from './context.js';
import { type FactorPages, type FactorSectionInput, registerFactorSection } from './factor-pages.js';
import { input, when } from './layout.js';

/** What only the page answering a POST shows: the enrolment being set up, a new set of recovery codes. */
interface Shown {
  enrolment?: TotpEnrolment | undefined;
  recoveryCodes?: string[] | undefined;
}
// The sections render from FactorSectionInput, which carries the session context of the request: what one
// answer shows is kept under that object, for that rendering only (nothing outlives the request).
const shown = new WeakMap<SessionContext, Shown>();

const errorLine = (message: string | undefined) => (message ? html`<p class="alert" role="alert">${message}</p>` : '');

function totpSection(o: FactorSectionInput): Html {
  const action = (path: string) => `${o.base}/sign-in-methods${path}`;
  const common = html`${hidden('csrf', o.csrf)}${hidden('return_to', o.returnTo)}`;
  const fresh = o.fresh ? '' : html`<p class="muted">You will be asked to sign in again before a change.</p>`;
  const factor = o.factors.find((f) => f.kind === 'totp');
  const enrolment = shown.get(o.ctx)?.enrolment;
  let body: Html;
  if (factor) {
    body = html`<p><span class="badge">On</span> After your password, sign-in asks for the code your \
authenticator app shows.</p>
<dl><dt>Set up</dt><dd>${when(factor.createdAt)}</dd><dt>Last used</dt><dd>${when(factor.lastUsedAt)}</dd></dl>
${fresh}
<form method="post" action="${action('/totp/remove')}">${common}
<button type="submit" class="danger">Remove the authenticator app</button>
</form>`;
  } else if (enrolment) {
    const codeError = o.errors?.['totp-confirm'];
    body = html`<ol>
<li><p>Scan this QR code with your authenticator app (for example Aegis, Google Authenticator, 1Password or \
Microsoft Authenticator).</p>
<div class="qr" role="img" aria-label="QR code to add this account to an authenticator app">\
${new Html(enrolment.qrSvg)}</div>
<p>Or enter this key in the app by hand: <code id="totp-secret">${enrolment.secret}</code> \
(time-based, 6 digits, 30 seconds). On this device: <a href="${enrolment.uri}">open it in an authenticator app</a>.</p>
</li>
<li><p>Enter the 6-digit code the app now shows, to finish.</p>
<form method="post" action="${action('/totp/confirm')}" novalidate>${common}
${input({
  form: 'totp-confirm',
  name: 'code',
  label: 'Code from the app',
  type: 'text',
  autocomplete: 'one-time-code',
  hint: 'Six digits.',
  required: true,
  errors: codeError ? { form: 'totp-confirm', fields: { code: codeError } } : undefined,
})}
<button type="submit">Turn on</button>
</form>
</li>
</ol>
<form method="post" action="${action('/totp/remove')}">${common}
<button type="submit" class="secondary">Cancel the setup</button>
</form>`;
  } else {
    body = html`<p>An authenticator app on your phone shows a new 6-digit code every 30 seconds. \
After your password, sign-in asks for it.</p>
${fresh}
<form method="post" action="${action('/totp/start')}">${common}
<button type="submit">Set up an authenticator app</button>
</form>`;
  }
  return html`<section aria-labelledby="totp-heading">
<h2 id="totp-heading">Authenticator app</h2>
${errorLine(o.errors?.totp)}
${body}
</section>`;
}

function recoveryCodeSection(o: FactorSectionInput): Html | string {
  const set = o.factors.find((f) => f.kind === 'recovery_code');
  const codes = shown.get(o.ctx)?.recoveryCodes;
  const withFactor = hasSecondFactor(o.summary);
  if (!set && !withFactor) return '';
  const action = `${o.base}/sign-in-methods/recovery-codes/generate`;
  const common = html`${hidden('csrf', o.csrf)}${hidden('return_to', o.returnTo)}`;
  let body: Html;
  if (codes) {
    body = html`<div class="notice" role="status"><p><strong>Your new recovery codes.</strong> Save them now \
(print them or keep them in a password manager): they are shown only this once.</p></div>
<ol class="codes" aria-label="Recovery codes">${codes.map((c) => html`<li><code>${c}</code></li>`)}</ol>
<p>Each code signs you in once, instead of your second factor, if you lose it. \
Making new codes makes these stop working.</p>`;
  } else if (set) {
    body = html`<p>If you lose your second factor, a recovery code signs you in instead, once.</p>
<dl><dt>Unused codes</dt><dd>${String(set.remaining ?? 0)} of 10</dd>\
<dt>Made</dt><dd>${when(set.createdAt)}</dd><dt>Last used</dt><dd>${when(set.lastUsedAt)}</dd></dl>`;
  } else {
    body = html`<p>If you lose your second factor, a recovery code signs you in instead, once. \
You have none yet.</p>`;
  }
  const generate = withFactor
    ? html`${errorLine(o.errors?.['recovery-codes'])}
<form method="post" action="${action}">${common}
<button type="submit"${codes ? html` class="secondary"` : ''}>\
${set ? 'Make new recovery codes' : 'Make recovery codes'}</button>
</form>${set ? html`<p class="muted">New codes replace every old one.</p>` : ''}`
    : html`<p class="muted">Recovery codes only stand in for a second factor: set one up to use them.</p>`;
  return html`<section aria-labelledby="recovery-codes-heading">
<h2 id="recovery-codes-heading">Recovery codes</h2>
${body}
${generate}
</section>`;
}

export function registerTotpPages(context: AccountContext, factorPages: FactorPages) {
  const { app, config, base, signedInPost, meta } = context;
  const path = factorPages.path;
  registerFactorSection('totp', totpSection);
  registerFactorSection('recovery_code', recoveryCodeSection);

  /** The page's address with `return_to` kept (where a signed-out browser comes back after signing in). */
  const pageWith = (returnTo: string | undefined, m?: string) => {
    const query = new URLSearchParams();
    if (m) query.set('m', m);
    if (returnTo) query.set('return_to', returnTo);
    const q = query.toString();
    return `${path}${q ? `?${q}` : ''}`;
  };

  /**
   * What every change does first: the CSRF token, the session, a recent authentication, second factors not
   * switched off. Undefined when it answered already (a redirect to sign in).
   */
  async function changeOf(request: FastifyRequest, form: FormBody, reply: FastifyReply) {
    const returnTo = factorPages.safeReturnTo(text(form, 'return_to') || undefined);
    const ctx = await signedInPost(request, form, reply, pageWith(returnTo));
    if (!ctx) return undefined;
    if (!factorPages.requireFresh(reply, ctx, returnTo)) return undefined;
    if (config.mfa.mode === 'off') throw new AppError(409, 'MFA_OFF', 'Second factors are switched off on this server');
    return { ctx, returnTo, by: { keepSessionId: ctx.session.id, ip: meta(request).ip } };
  }

  /** The page answering a POST, with what only it shows. */
  function answer(
    request: FastifyRequest,
    reply: FastifyReply,
    ctx: SessionContext,
    o: { returnTo: string | undefined; show?: Shown; m?: string; status?: number; errors?: Record<string, string> },
  ) {
    if (o.show) shown.set(ctx, o.show);
    return factorPages.render(request, reply, ctx, {
      returnTo: o.returnTo,
      ...(o.m && { m: o.m }),
      ...(o.status && { status: o.status }),
      ...(o.errors && { errors: o.errors }),
    });
  }

  const done = (reply: FastifyReply, returnTo: string | undefined, m: string) =>
    reply
      .code(303)
      .header('location', `${base}${pageWith(returnTo, m)}`)
      .send();

  /** An AppError of the services as the message of one form; anything else is not a refusal. */
  const refused = (error: unknown) => {
    if (!(error instanceof AppError) || error.statusCode >= 500) throw error;
    return error;
  };

  app.post(`${path}/totp/start`, { schema: { body: Form } }, async (request, reply) => {
    const change = await changeOf(request, request.body, reply);
    if (!change) return reply;
    const { ctx, returnTo } = change;
    try {
      const enrolment = await app.services.totp.start(ctx.user);
      return answer(request, reply, ctx, { returnTo, show: { enrolment } });
    } catch (error) {
      const e = refused(error);
      return answer(request, reply, ctx, { returnTo, status: e.statusCode, errors: { totp: e.message } });
    }
  });

  app.post(`${path}/totp/confirm`, { schema: { body: Form } }, async (request, reply) => {
    const change = await changeOf(request, request.body, reply);
    if (!change) return reply;
    const { ctx, returnTo, by } = change;
    const code = text(request.body, 'code');
    try {
      if (!code.trim()) throw new AppError(400, 'INVALID_TOTP_CODE', 'Enter the 6-digit code the app shows');
      const { recoveryCodes } = await app.services.totp.confirm(ctx.user.id, code, by);
      // The first code proved the app just as a sign-in with it would: this session now has two factors (an
      // enrolment that a sign-in or the admin web asked for goes on without asking for the code again).
      await app.services.sessions.stepUp(ctx.session.id, ctx.user.id, ['otp'], meta(request));
      if (!recoveryCodes) return done(reply, returnTo, 'totp-enabled');
      // The first second factor: its recovery codes, shown on this answer only.
      return answer(request, reply, ctx, { returnTo, m: 'totp-enabled', show: { recoveryCodes } });
    } catch (error) {
      const e = refused(error);
      if (e.code !== 'INVALID_TOTP_CODE') {
        return answer(request, reply, ctx, { returnTo, status: e.statusCode, errors: { totp: e.message } });
      }
      // A wrong code: the same setup again, with the error next to the field.
      const enrolment = await app.services.totp.pendingEnrolment(ctx.user);
      return answer(request, reply, ctx, {
        returnTo,
        status: 400,
        show: { enrolment },
        errors: { 'totp-confirm': e.message },
      });
    }
  });

  app.post(`${path}/totp/remove`, { schema: { body: Form } }, async (request, reply) => {
    const change = await changeOf(request, request.body, reply);
    if (!change) return reply;
    const { ctx, returnTo, by } = change;
    try {
      const { wasEnabled } = await app.services.totp.remove(ctx.user.id, by);
      return done(reply, returnTo, wasEnabled ? 'totp-removed' : 'totp-cancelled');
    } catch (error) {
      const e = refused(error);
      return answer(request, reply, ctx, { returnTo, status: e.statusCode, errors: { totp: e.message } });
    }
  });

  app.post(`${path}/recovery-codes/generate`, { schema: { body: Form } }, async (request, reply) => {
    const change = await changeOf(request, request.body, reply);
    if (!change) return reply;
    const { ctx, returnTo, by } = change;
    try {
      const recoveryCodes = await app.services.recoveryCodes.generate(ctx.user.id, by);
      return answer(request, reply, ctx, { returnTo, m: 'recovery-codes-made', show: { recoveryCodes } });
    } catch (error) {
      const e = refused(error);
      return answer(request, reply, ctx, { returnTo, status: e.statusCode, errors: { 'recovery-codes': e.message } });
    }
  });
}
