// Hosted login pages: server-rendered, no JavaScript, every value escaped by html``. The frame (layout,
// stylesheet, message and error pages) is plugins/pages/hosted.ts; the markup helpers are the page kit.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { SCOPES } from '../../src/oauth/scopes.js';
import { alert as formError, field as kitField, hidden, html, type Html } from '../pages/kit.js';
import { layout, type AppBrand } from '../pages/hosted.js';

export { errorPage, messagePage, signedOutPage, STYLESHEET } from '../pages/hosted.js';

export interface FieldErrors {
  [field: string]: string | undefined;
}

/** A field of the hosted forms: required unless told, the error tied to the input. */
function field(options: {
  name: string;
  label: string;
  type: string;
  value?: string | undefined;
  autocomplete: string;
  error?: string | undefined;
  autofocus?: boolean;
  required?: boolean;
}): Html {
  const id = `field-${options.name}`;
  const control = html`<input id="${id}" name="${options.name}" type="${options.type}" \
autocomplete="${options.autocomplete}"${options.value !== undefined ? html` value="${options.value}"` : ''}\
${options.required === false ? '' : html` required`}${options.autofocus ? html` autofocus` : ''}\
${options.error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}>`;
  return kitField({ id, label: options.label, control, error: options.error, separator: '\n' });
}

/** Development without SMTP_URL: where the mail went instead (see the login context's mailHint). */
function devMailHint(hint: string | undefined): Html | string {
  return hint ? html`<p class="muted" id="dev-mail-hint">${hint}</p>` : '';
}

export function signInPage(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  email?: string | undefined;
  error?: string | undefined;
  app?: AppBrand | undefined;
  returnTo?: string | undefined;
  reauthenticate?: boolean;
}): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  return layout({
    title: 'Sign in',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Sign in</h1>
${o.reauthenticate ? html`<p class="notice" role="status">Enter your password again to continue.</p>` : ''}
<form method="post" action="${o.loginPath}/sign-in" novalidate>
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}${hidden('return_to', o.returnTo)}
${field({
  name: 'email',
  label: 'E-mail address',
  type: 'email',
  value: o.email,
  autocomplete: 'username',
  autofocus: !o.email,
})}
${field({
  name: 'password',
  label: 'Password',
  type: 'password',
  autocomplete: 'current-password',
  autofocus: Boolean(o.email),
  error: o.error,
})}
<button type="submit">Sign in</button>
</form>
<p><a href="${o.loginPath}/forgot-password">Forgot your password?</a></p>
<p>No account yet? <a href="${o.loginPath}/sign-up${q}">Create one</a></p>`,
  });
}

export function signUpPage(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  values?: { email?: string; name?: string };
  errors?: FieldErrors;
  error?: string | undefined;
  app?: AppBrand | undefined;
}): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  const errors = o.errors ?? {};
  // The cursor goes to the first field that needs fixing (Name on a fresh form).
  const focus = (['name', 'email', 'password'] as const).find((name) => errors[name]) ?? 'name';
  return layout({
    title: 'Create an account',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Create an account</h1>
${formError(o.error)}
<form method="post" action="${o.loginPath}/sign-up" novalidate>
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
${field({
  name: 'name',
  label: 'Name',
  type: 'text',
  value: o.values?.name,
  autocomplete: 'name',
  error: errors.name,
  autofocus: focus === 'name',
  required: false,
})}
${field({
  name: 'email',
  label: 'E-mail address',
  type: 'email',
  value: o.values?.email,
  autocomplete: 'email',
  error: errors.email,
  autofocus: focus === 'email',
})}
${field({
  name: 'password',
  label: 'Password (at least 8 characters)',
  type: 'password',
  autocomplete: 'new-password',
  error: errors.password,
  autofocus: focus === 'password',
})}
<button type="submit">Create account</button>
</form>
<p>Have an account? <a href="${o.loginPath}/sign-in${q}">Sign in</a></p>`,
  });
}

export function verifyEmailPage(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  email: string;
  sent?: boolean;
  app?: AppBrand | undefined;
  mailHint?: string | undefined;
}): string {
  return layout({
    title: 'Verify your e-mail address',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Check your inbox</h1>
${o.sent ? html`<p class="notice" role="status">We sent a new link.</p>` : ''}
<p>We sent a verification link to <strong>${o.email}</strong>. Open it to continue; you can close this page.</p>
${devMailHint(o.mailHint)}
<form method="post" action="${o.loginPath}/verify-email/resend">
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
<button type="submit" class="secondary">Send the link again</button>
</form>`,
  });
}

export function consentPage(o: {
  loginPath: string;
  csrf: string;
  requestId: string;
  scopes: string[];
  userEmail: string;
  app: AppBrand;
}): string {
  const items = SCOPES.filter((s) => o.scopes.includes(s.name));
  return layout({
    title: 'Allow access',
    loginPath: o.loginPath,
    app: o.app,
    brand: 'logo',
    body: html`<h1>${o.app.clientName} wants to</h1>
<ul class="scopes">${items.map((s) => html`<li><strong>${s.label}</strong>: ${s.consentDescription}</li>`)}</ul>
<p class="muted">Signed in as ${o.userEmail}.</p>
<form method="post" action="${o.loginPath}/consent">
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
<div class="buttons">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`,
  });
}

export function signedInPage(o: { loginPath: string; csrf: string; email: string }): string {
  return layout({
    title: 'Signed in',
    loginPath: o.loginPath,
    body: html`<h1>Signed in</h1><p>You are signed in as <strong>${o.email}</strong>.</p>
<p><a href="${o.loginPath}/account">Manage your account</a></p>
<form method="post" action="${o.loginPath}/sign-out">${hidden('csrf', o.csrf)}\
<button type="submit" class="secondary">Sign out</button></form>`,
  });
}

export function forgotPasswordPage(o: {
  loginPath: string;
  csrf: string;
  email?: string | undefined;
  sent?: boolean;
  error?: string | undefined;
  mailHint?: string | undefined;
}): string {
  return layout({
    title: 'Reset your password',
    loginPath: o.loginPath,
    body: o.sent
      ? html`<h1>Check your e-mail</h1>
<p role="status">If this e-mail address has an account, we sent it a link to choose a new password. \
It works once and expires soon.</p>
${devMailHint(o.mailHint)}
<p><a href="${o.loginPath}/sign-in">Back to sign in</a></p>`
      : html`<h1>Reset your password</h1>
<p>Enter the e-mail address of your account; we will send you a link to choose a new password.</p>
<form method="post" action="${o.loginPath}/forgot-password" novalidate>
${hidden('csrf', o.csrf)}
${field({
  name: 'email',
  label: 'E-mail address',
  type: 'email',
  value: o.email,
  autocomplete: 'username',
  autofocus: true,
  error: o.error,
})}
<button type="submit">Send the link</button>
</form>
<p><a href="${o.loginPath}/sign-in">Back to sign in</a></p>`,
  });
}

export function resetPasswordPage(o: { loginPath: string; csrf: string; token: string; errors?: FieldErrors }): string {
  const errors = o.errors ?? {};
  return layout({
    title: 'Choose a new password',
    loginPath: o.loginPath,
    body: html`<h1>Choose a new password</h1>
<form method="post" action="${o.loginPath}/reset-password" novalidate>
${hidden('csrf', o.csrf)}${hidden('token', o.token)}
${field({
  name: 'newPassword',
  label: 'New password (8 to 128 characters)',
  type: 'password',
  autocomplete: 'new-password',
  autofocus: !errors.confirmPassword || Boolean(errors.newPassword),
  error: errors.newPassword,
})}
${field({
  name: 'confirmPassword',
  label: 'Repeat the new password',
  type: 'password',
  autocomplete: 'new-password',
  autofocus: Boolean(errors.confirmPassword) && !errors.newPassword,
  error: errors.confirmPassword,
})}
<button type="submit">Change password</button>
</form>`,
  });
}

/**
 * The answer to every accepted sign-up (issue 31, item 3): the same page whether the address is free or
 * has an account (the mail differs, the page does not), and no account or session yet.
 */
export function signUpSentPage(o: {
  loginPath: string;
  email: string;
  requestId?: string | undefined;
  app?: AppBrand | undefined;
  mailHint?: string | undefined;
}): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  return layout({
    title: 'Check your inbox',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Check your inbox</h1>
<p role="status">We sent a link to <strong>${o.email}</strong>. Open it and confirm to create your account; \
the link expires in a day. If the address has an account already, the mail tells you how to get back in.</p>
${devMailHint(o.mailHint)}
<p>Have an account? <a href="${o.loginPath}/sign-in${q}">Sign in</a></p>`,
  });
}

/** The page a sign-up link opens (a GET changes nothing): it names the address; the button confirms. */
export function signUpConfirmPage(o: { loginPath: string; csrf: string; token: string; email: string }): string {
  return layout({
    title: 'Create your account',
    loginPath: o.loginPath,
    body: html`<h1>Create your account for ${o.email}</h1>
<p>Confirm that <strong>${o.email}</strong> is your e-mail address to create the account with the password \
chosen when signing up. If you did not sign up yourself, do not confirm: close this page and nothing is created.</p>
<form method="post" action="${o.loginPath}/sign-up/confirm">
${hidden('csrf', o.csrf)}${hidden('token', o.token)}
<button type="submit">Create my account</button>
</form>`,
  });
}
