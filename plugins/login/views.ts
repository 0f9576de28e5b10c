// Hosted login pages: server-rendered, no JavaScript, every value escaped by html``. The frame (layout,
// stylesheet, message and error pages) is plugins/pages/hosted.ts; the markup helpers are the page kit.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { SCOPES } from '../../src/oauth/scopes.js';
import { alert as formError, field as kitField, hidden, html, type Html } from '../pages/kit.js';
import { layout, type AppBrand } from '../pages/hosted.js';
import { passkeyScripts } from '../pages/passkey-script.js';

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

/** An upstream provider's button (issue 35): its name and, when it has one, its logo. */
export interface UpstreamButton {
  id: string;
  name: string;
  logoUrl?: string | null;
}

/**
 * One "Continue with {name}" button per enabled upstream provider: a small form POSTing to its start, with the
 * CSRF token and the pending request (or where a sign-in returns). A logo is shown only from where the pages'
 * CSP loads images (https:, data:, this origin): another would be a broken image.
 */
export function upstreamButtons(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  returnTo?: string | undefined;
  upstreams?: UpstreamButton[] | undefined;
}): Html | string {
  if (!o.upstreams?.length) return '';
  const logo = (url: string | null | undefined) =>
    url && /^(https:|data:image\/|\/(?!\/))/.test(url) ? html`<img src="${url}" alt="" width="20" height="20"> ` : '';
  return html`<div class="upstreams">
<p class="muted or">or</p>
${o.upstreams.map(
  (p) => html`<form method="post" action="${o.loginPath}/upstream/${p.id}/start">\
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}${hidden('return_to', o.returnTo)}\
<button type="submit" class="secondary upstream">${logo(p.logoUrl)}Continue with ${p.name}</button></form>
`,
)}</div>`;
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
  /** Passkeys offered (issue 34): conditional UI on the e-mail field and a "Use a passkey" button (not "Sign in
   * with a passkey": the password button must stay the only one named "Sign in..."). */
  passkeys?: unknown;
  /** The enabled upstream providers' buttons (issue 35). */
  upstreams?: UpstreamButton[] | undefined;
  /** Issue 35: some addresses sign in with their organisation's provider (SSO domains): the password is optional. */
  ssoDomains?: boolean;
  /** Issue 35: the address shown is at an SSO domain: its provider and where its sign-in starts. */
  sso?: { name: string; startUrl: string } | undefined;
}): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  const ssoNote = o.sso
    ? html`<p class="notice" role="status" id="sso-note">Your organisation signs you in with ${o.sso.name}. \
<a href="${o.sso.startUrl}">Continue with ${o.sso.name}</a></p>`
    : o.ssoDomains
      ? html`<p class="muted" id="sso-hint">If your organisation signs you in with its own account, enter your \
work address and leave the password empty.</p>`
      : '';
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
  autocomplete: o.passkeys ? 'username webauthn' : 'username',
  autofocus: !o.email,
})}
${field({
  name: 'password',
  label: o.ssoDomains || o.sso ? 'Password (not needed if your organisation signs you in)' : 'Password',
  type: 'password',
  autocomplete: 'current-password',
  autofocus: Boolean(o.email),
  error: o.error,
  required: !(o.ssoDomains || o.sso),
})}
${ssoNote}
<button type="submit">Sign in</button>
</form>
${o.passkeys ? passkeySignIn(o) : ''}
${upstreamButtons(o)}
<p><a href="${o.loginPath}/forgot-password">Forgot your password?</a></p>
<p>No account yet? <a href="${o.loginPath}/sign-up${q}">Create one</a></p>`,
  });
}

/** The passkey part of the sign-in page: its button and error line (shown by the script) and the scripts. */
function passkeySignIn(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  returnTo?: string | undefined;
  passkeys?: unknown;
}) {
  return html`<p class="alert" role="alert" id="passkey-error" hidden></p>
<p><button type="button" class="secondary" id="passkey-button" hidden>Use a passkey</button></p>
${passkeyScripts(o.loginPath, {
  mode: 'sign-in',
  endpoint: `${o.loginPath}/passkeys/sign-in`,
  csrf: o.csrf,
  requestId: o.requestId,
  returnTo: o.returnTo,
  options: o.passkeys,
})}`;
}

export function signUpPage(o: {
  loginPath: string;
  csrf: string;
  requestId?: string | undefined;
  values?: { email?: string; name?: string };
  errors?: FieldErrors;
  error?: string | undefined;
  app?: AppBrand | undefined;
  upstreams?: UpstreamButton[] | undefined;
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
${upstreamButtons(o)}
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
  /** The page is shown to the session of `email`: "Signed in as … Not you?" (issue 31). */
  notYou?: boolean;
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
</form>
${o.notYou ? notYouForm({ loginPath: o.loginPath, csrf: o.csrf, email: o.email, requestId: o.requestId }) : ''}`,
  });
}

/** A lifetime in words: whole days, else whole hours, else minutes (the consent page's offline access). */
function duration(seconds: number): string {
  const [count, unit] =
    seconds % 86400 === 0
      ? [seconds / 86400, 'day']
      : seconds % 3600 === 0
        ? [seconds / 3600, 'hour']
        : [Math.max(1, Math.round(seconds / 60)), 'minute'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
}

const SELF_REGISTERED_NOTE =
  'This is an agent or application that registered itself; it is not one the operator of this service set up.';

/**
 * The consent page (ASVS 7.4.4, 10.7.2): what the application asks for, how long offline access lasts, the
 * host the answer goes to, and the signed-in account with a "Not you?" sign-out that keeps the request.
 */
export function consentPage(o: {
  loginPath: string;
  csrf: string;
  requestId: string;
  scopes: string[];
  userEmail: string;
  app: AppBrand;
  /** The host of the request's redirect_uri (for a private-use scheme, the scheme). */
  redirectHost: string;
  /** REFRESH_TOKEN_TTL and REFRESH_TOKEN_ABSOLUTE_TTL in seconds, when offline_access is asked for. */
  offline?: { idle: number; absolute: number } | undefined;
  /**
   * A client that registered itself (RFC 7591, a client ID metadata document; issue 36): the page says an agent or
   * self-registered application is asking, and names the host that vouches for it (the metadata document's host,
   * or the redirect URI's for a dynamically registered one), since its name is whatever it chose.
   */
  selfRegistered?: { host: string } | undefined;
  /** The APIs (resource servers, RFC 8707) the request asks access to, by name, with their scopes asked for. */
  apis?: Array<{
    name: string;
    identifier: string;
    scopes: Array<{ name: string; label: string; consentDescription: string }>;
  }>;
}): string {
  const apiScopes = new Set((o.apis ?? []).flatMap((a) => a.scopes.map((s) => s.name)));
  const items = SCOPES.filter((s) => o.scopes.includes(s.name) && !apiScopes.has(s.name));
  const selfRegistered = o.selfRegistered
    ? html`<p id="self-registered" class="alert" role="note">${SELF_REGISTERED_NOTE} It is vouched for only by \
<strong>${o.selfRegistered.host}</strong>. Allow it only if you started this from an application you trust.</p>`
    : '';
  const apis = (o.apis ?? []).length
    ? html`<div id="apis"><p>It asks for access to ${o.apis!.length === 1 ? 'this API' : 'these APIs'} \
on your behalf:</p>
<ul class="apis">${o.apis!.map(
        (a) =>
          html`<li><strong>${a.name}</strong> <span class="muted">(${a.identifier})</span>${
            a.scopes.length
              ? html`<ul class="scopes">${a.scopes.map(
                  (s) => html`<li><strong>${s.label}</strong>: ${s.consentDescription}</li>`,
                )}</ul>`
              : ''
          }</li>`,
      )}</ul></div>`
    : '';
  const offline =
    o.offline && o.scopes.includes('offline_access')
      ? html`<p id="offline-duration">Access while you are away lasts until you revoke it under \
<a href="${o.loginPath}/account/applications">your applications</a>, at most ${duration(o.offline.absolute)}; \
it ends sooner when ${o.app.clientName} does not use it for ${duration(o.offline.idle)}.</p>`
      : '';
  return layout({
    title: 'Allow access',
    loginPath: o.loginPath,
    app: o.app,
    brand: 'logo',
    body: html`<h1>${o.app.clientName} wants to</h1>
${selfRegistered}
<ul class="scopes">${items.map((s) => html`<li><strong>${s.label}</strong>: ${s.consentDescription}</li>`)}</ul>
${apis}
${offline}
<p id="redirect-host">After you answer, you go to <strong>${o.redirectHost}</strong>.</p>
<p class="muted" id="signed-in-as">Signed in as <strong>${o.userEmail}</strong>.</p>
<form method="post" action="${o.loginPath}/sign-out">
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
<button type="submit" class="secondary" aria-describedby="signed-in-as">Not you? Sign out</button>
</form>
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

/**
 * Issue 35: an address at an SSO domain signs in with its organisation's provider; this page says so instead of
 * a sign-up or a reset by mail, with a button that starts the sign-in there (GET {loginPath}/upstream/:id/start).
 * It depends on the address's domain only, never on whether the address has an account.
 */
export function ssoPage(o: {
  loginPath: string;
  title: string;
  provider: string;
  startUrl: string;
  message: string;
  app?: AppBrand | undefined;
}): string {
  return layout({
    title: o.title,
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>${o.title}</h1>
<p role="status" id="sso-note">Your organisation signs you in with ${o.provider}. ${o.message}</p>
${startForm(o.startUrl, `Continue with ${o.provider}`)}
<p><a href="${o.loginPath}/sign-in">Back to sign in</a></p>`,
  });
}

/** A button that GETs a start address (a form of its query's fields: it works without JavaScript). */
function startForm(startUrl: string, label: string): Html {
  const url = new URL(startUrl, 'http://login.invalid');
  const fields = [...url.searchParams].map(([name, value]) => hidden(name, value));
  return html`<form method="get" action="${url.pathname}" id="sso-continue">${fields}
<button type="submit">${label}</button>
</form>`;
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
 * "Signed in as … Not you?" (ASVS 7.4.4): the button signs out (a POST with the CSRF token, never a GET
 * link) and opens the sign-in page, which then continues the pending request or comes back to `returnTo`.
 */
export function notYouForm(o: {
  loginPath: string;
  csrf: string;
  email: string;
  requestId?: string | undefined;
  returnTo?: string | undefined;
}): Html {
  return html`<form method="post" action="${o.loginPath}/switch-account" class="not-you">\
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}${hidden('return_to', o.returnTo)}
<p class="muted" id="signed-in-as">Signed in as <strong>${o.email}</strong>.</p>
<button type="submit" class="secondary">Not you? Sign in as someone else</button>
</form>`;
}

/**
 * The page a mailed verification or e-mail change link opens (issue 31): it names the address and the
 * action and changes nothing; the button POSTs (CSRF-protected) to confirm. A GET or HEAD of the link,
 * which mail scanners do, only shows this page.
 */
export function confirmLinkPage(o: {
  loginPath: string;
  csrf: string;
  token: string;
  action: { kind: 'verification'; email: string } | { kind: 'email-change'; email: string; account: string };
  /** The signed-in account, if any, with its "Not you?" button; `returnTo` is this page. */
  signedIn?: { email: string; returnTo: string } | undefined;
}): string {
  const change = o.action.kind === 'email-change';
  const signedIn = o.signedIn;
  const body = change
    ? html`<h1>Move your account to ${o.action.email}</h1>
<p>Your account <strong id="account-email">${(o.action as { account: string }).account}</strong> will use \
<strong id="new-email">${o.action.email}</strong> from now on: you sign in with it, and applications get it.</p>`
    : html`<h1>Confirm ${o.action.email} for your account</h1>
<p>Confirm that <strong id="address">${o.action.email}</strong> is your e-mail address.</p>`;
  return layout({
    title: change ? 'Confirm your new e-mail address' : 'Confirm your e-mail address',
    loginPath: o.loginPath,
    body: html`${body}
<form method="post" action="${o.loginPath}/verify-email/confirm">
${hidden('csrf', o.csrf)}${hidden('token', o.token)}
<button type="submit">${change ? `Move my account to ${o.action.email}` : 'Confirm this address'}</button>
</form>
${signedIn ? notYouForm({ ...signedIn, loginPath: o.loginPath, csrf: o.csrf }) : ''}`,
  });
}

const REFUSED = 'Nothing was changed: only the account that asked can confirm.';

/**
 * An e-mail change link opened without a session of the account that asked (issue 31): a way to sign in
 * to it and come back. The account's current address is not named (the visitor may not be its owner).
 */
export function signInToConfirmPage(o: {
  loginPath: string;
  csrf: string;
  email: string;
  returnTo: string;
  signedInAs?: string | undefined;
  refused?: boolean;
}): string {
  const signIn = `${o.loginPath}/sign-in?return_to=${encodeURIComponent(o.returnTo)}`;
  return layout({
    title: 'Sign in to confirm',
    loginPath: o.loginPath,
    body: html`<h1>Sign in to the account that asked for this change</h1>
${o.refused ? html`<p class="notice" role="alert">${REFUSED}</p>` : ''}
<p>Someone asked to move their account to <strong>${o.email}</strong>. Only that account can confirm it: \
sign in to it, and you come back to this page.</p>
${
  o.signedInAs
    ? html`<p>The account you are signed in to did not ask for this change.</p>
${notYouForm({ loginPath: o.loginPath, csrf: o.csrf, email: o.signedInAs, returnTo: o.returnTo })}`
    : html`<p><a href="${signIn}" id="sign-in-to-confirm">Sign in</a></p>`
}`,
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
export function signUpConfirmPage(o: {
  loginPath: string;
  csrf: string;
  token: string;
  email: string;
  /** Not the browser that signed up: the password chosen at sign-up proves it is the same person. */
  askPassword?: boolean;
  error?: string | undefined;
}): string {
  return layout({
    title: 'Create your account',
    loginPath: o.loginPath,
    body: html`<h1>Create your account for ${o.email}</h1>
<p>Confirm that <strong>${o.email}</strong> is your e-mail address to create the account with the password \
chosen when signing up. If you did not sign up yourself, do not confirm: close this page and nothing is created.</p>
<form method="post" action="${o.loginPath}/sign-up/confirm">
${hidden('csrf', o.csrf)}${hidden('token', o.token)}
${
  o.askPassword
    ? field({
        name: 'password',
        label: 'Enter the password you chose when you signed up',
        type: 'password',
        autocomplete: 'current-password',
        autofocus: true,
        error: o.error,
      })
    : ''
}
<button type="submit">Create my account</button>
</form>`,
  });
}
