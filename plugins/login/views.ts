// Hosted login pages: server-rendered, no JavaScript, every value escaped by html``.
import { html, type Html } from '../../src/html.js';
import { SCOPES } from '../../src/oauth/scopes.js';

export interface AppBrand {
  clientName: string;
  clientLogoUrl?: string | null;
}

export interface FieldErrors {
  [field: string]: string | undefined;
}

export function layout(options: { title: string; loginPath: string; app?: AppBrand | undefined; body: Html }): string {
  const { app } = options;
  return `<!doctype html>${html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${options.title}${app ? ` · ${app.clientName}` : ''}</title>
<link rel="stylesheet" href="${options.loginPath}/assets/style.css">
</head>
<body>
<main class="card">
${app ? html`<header class="brand">${app.clientLogoUrl ? html`<img src="${app.clientLogoUrl}" alt="" width="48" height="48">` : ''}<p>${app.clientName}</p></header>` : ''}
${options.body}
</main>
</body>
</html>`.value}`;
}

function field(options: { name: string; label: string; type: string; value?: string | undefined; autocomplete: string; error?: string | undefined; autofocus?: boolean; required?: boolean }): Html {
  const id = `field-${options.name}`;
  const errorId = `${id}-error`;
  return html`<div class="field${options.error ? ' invalid' : ''}">
<label for="${id}">${options.label}</label>
<input id="${id}" name="${options.name}" type="${options.type}" autocomplete="${options.autocomplete}"${options.value !== undefined ? html` value="${options.value}"` : ''}${options.required === false ? '' : html` required`}${options.autofocus ? html` autofocus` : ''}${options.error ? html` aria-invalid="true" aria-describedby="${errorId}"` : ''}>
${options.error ? html`<p class="error" id="${errorId}">${options.error}</p>` : ''}
</div>`;
}

function hidden(name: string, value: string | undefined): Html {
  return value === undefined ? html`` : html`<input type="hidden" name="${name}" value="${value}">`;
}

function formError(message: string | undefined): Html {
  return message ? html`<p class="alert" role="alert">${message}</p>` : html``;
}

export function signInPage(o: { loginPath: string; csrf: string; requestId?: string | undefined; email?: string | undefined; error?: string | undefined; app?: AppBrand | undefined; returnTo?: string | undefined; reauthenticate?: boolean }): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  return layout({
    title: 'Sign in',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Sign in</h1>
${o.reauthenticate ? html`<p class="notice" role="status">Enter your password again to continue.</p>` : ''}
<form method="post" action="${o.loginPath}/sign-in" novalidate>
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}${hidden('return_to', o.returnTo)}
${field({ name: 'email', label: 'E-mail address', type: 'email', value: o.email, autocomplete: 'username', autofocus: !o.email })}
${field({ name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', autofocus: Boolean(o.email), error: o.error })}
<button type="submit">Sign in</button>
</form>
<p><a href="${o.loginPath}/forgot-password">Forgot your password?</a></p>
<p>No account yet? <a href="${o.loginPath}/sign-up${q}">Create one</a></p>`,
  });
}

export function signUpPage(o: { loginPath: string; csrf: string; requestId?: string | undefined; values?: { email?: string; name?: string }; errors?: FieldErrors; error?: string | undefined; app?: AppBrand | undefined }): string {
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  const errors = o.errors ?? {};
  return layout({
    title: 'Create an account',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Create an account</h1>
${formError(o.error)}
<form method="post" action="${o.loginPath}/sign-up" novalidate>
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
${field({ name: 'name', label: 'Name', type: 'text', value: o.values?.name, autocomplete: 'name', error: errors.name, autofocus: true, required: false })}
${field({ name: 'email', label: 'E-mail address', type: 'email', value: o.values?.email, autocomplete: 'email', error: errors.email })}
${field({ name: 'password', label: 'Password (at least 8 characters)', type: 'password', autocomplete: 'new-password', error: errors.password })}
<button type="submit">Create account</button>
</form>
<p>Have an account? <a href="${o.loginPath}/sign-in${q}">Sign in</a></p>`,
  });
}

export function verifyEmailPage(o: { loginPath: string; csrf: string; requestId?: string | undefined; email: string; sent?: boolean; app?: AppBrand | undefined }): string {
  return layout({
    title: 'Verify your e-mail address',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Check your inbox</h1>
${o.sent ? html`<p class="notice" role="status">We sent a new link.</p>` : ''}
<p>We sent a verification link to <strong>${o.email}</strong>. Open it to continue; you can close this page.</p>
<form method="post" action="${o.loginPath}/verify-email/resend">
${hidden('csrf', o.csrf)}${hidden('request', o.requestId)}
<button type="submit" class="secondary">Send the link again</button>
</form>`,
  });
}

export function consentPage(o: { loginPath: string; csrf: string; requestId: string; scopes: string[]; userEmail: string; app: AppBrand }): string {
  const items = SCOPES.filter((s) => o.scopes.includes(s.name));
  return layout({
    title: 'Allow access',
    loginPath: o.loginPath,
    app: o.app,
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

export function messagePage(o: { loginPath: string; title: string; message: string; app?: AppBrand | undefined; link?: { href: string; text: string } | undefined; role?: 'alert' | 'status' }): string {
  return layout({
    title: o.title,
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>${o.title}</h1><p${o.role ? html` role="${o.role}"` : ''}>${o.message}</p>${o.link ? html`<p><a href="${o.link.href}">${o.link.text}</a></p>` : ''}`,
  });
}

export function signedInPage(o: { loginPath: string; csrf: string; email: string }): string {
  return layout({
    title: 'Signed in',
    loginPath: o.loginPath,
    body: html`<h1>Signed in</h1><p>You are signed in as <strong>${o.email}</strong>.</p>
<form method="post" action="${o.loginPath}/sign-out">${hidden('csrf', o.csrf)}<button type="submit" class="secondary">Sign out</button></form>`,
  });
}

export function errorPage(o: { loginPath: string; error: string; description: string }): string {
  return layout({
    title: 'This request cannot be completed',
    loginPath: o.loginPath,
    body: html`<h1>This request cannot be completed</h1><p role="alert">${o.description}</p><p class="muted">Error code: <code>${o.error}</code></p>`,
  });
}

export const STYLESHEET = `*{box-sizing:border-box}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1b1f24}
.card{background:#fff;max-width:26rem;width:100%;padding:2rem;border-radius:12px;box-shadow:0 2px 12px rgba(0,0,0,.08);margin:1rem}
h1{font-size:1.4rem;margin:0 0 1rem}
.brand{display:flex;align-items:center;gap:.75rem;margin-bottom:1rem}.brand img{border-radius:8px}.brand p{margin:0;font-weight:600}
.field{margin-bottom:1rem}label{display:block;font-weight:600;margin-bottom:.25rem}
input{width:100%;padding:.6rem .7rem;border:1px solid #9aa1ab;border-radius:6px;font:inherit}
input:focus,button:focus,a:focus{outline:3px solid #2563eb;outline-offset:2px}
.invalid input{border-color:#b42318}.error{color:#b42318;margin:.25rem 0 0;font-size:.9rem}
.alert{background:#fef3f2;color:#b42318;padding:.6rem .8rem;border-radius:6px}
.notice{background:#ecfdf3;color:#05603a;padding:.6rem .8rem;border-radius:6px}
button{background:#1d4ed8;color:#fff;border:0;border-radius:6px;padding:.65rem 1.1rem;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1b1f24}
.buttons{display:flex;gap:.75rem}strong{overflow-wrap:anywhere}.scopes{padding-left:1.2rem}.muted{color:#5b636e;font-size:.9rem}
`;

export function logoutConfirmPage(o: { loginPath: string; action: string; csrf: string; email: string; app?: AppBrand | undefined; fields: Record<string, string | undefined> }): string {
  return layout({
    title: 'Sign out',
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>Sign out?</h1>
<p>You are signed in as <strong>${o.email}</strong>${o.app ? html`. ${o.app.clientName} asks to sign you out` : ''}.</p>
<form method="post" action="${o.action}">
${hidden('csrf', o.csrf)}${Object.entries(o.fields).map(([k, v]) => hidden(k, v))}
<div class="buttons">
<button type="submit" name="decision" value="sign-out">Sign out</button>
<button type="submit" name="decision" value="stay" class="secondary">Stay signed in</button>
</div>
</form>`,
  });
}

export function forgotPasswordPage(o: { loginPath: string; csrf: string; email?: string | undefined; sent?: boolean; error?: string | undefined }): string {
  return layout({
    title: 'Reset your password',
    loginPath: o.loginPath,
    body: o.sent
      ? html`<h1>Check your e-mail</h1>
<p role="status">If this email exists in our system, check your email for the reset link. It works once and expires soon.</p>
<p><a href="${o.loginPath}/sign-in">Back to sign in</a></p>`
      : html`<h1>Reset your password</h1>
<p>Enter the e-mail address of your account; we will send you a link to choose a new password.</p>
<form method="post" action="${o.loginPath}/forgot-password" novalidate>
${hidden('csrf', o.csrf)}
${field({ name: 'email', label: 'E-mail address', type: 'email', value: o.email, autocomplete: 'username', autofocus: true, error: o.error })}
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
${field({ name: 'newPassword', label: 'New password (8 to 128 characters)', type: 'password', autocomplete: 'new-password', autofocus: !errors.confirmPassword || Boolean(errors.newPassword), error: errors.newPassword })}
${field({ name: 'confirmPassword', label: 'Repeat the new password', type: 'password', autocomplete: 'new-password', autofocus: Boolean(errors.confirmPassword) && !errors.newPassword, error: errors.confirmPassword })}
<button type="submit">Change password</button>
</form>`,
  });
}
