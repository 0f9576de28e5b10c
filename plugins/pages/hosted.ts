// The frame of the hosted pages under LOGIN_URL's path (sign-in, consent, end-session, the authorize
// error page): their layout, stylesheet, and the message and error pages that the login and the OpenID
// plugins both render.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { CSS, htmlDocument, html, hidden, type Html } from './kit.js';

export interface AppBrand {
  clientName: string;
  clientLogoUrl?: string | null;
}

/**
 * A hosted page, branded with the application it speaks for: its logo and name above the body, or only the
 * logo (`brand: 'logo'`) when the body's heading names the application already.
 */
export function layout(options: {
  title: string;
  loginPath: string;
  app?: AppBrand | undefined;
  brand?: 'full' | 'logo';
  body: Html;
}): string {
  const { app } = options;
  const nameShown = options.brand !== 'logo';
  return htmlDocument({
    title: `${options.title}${app ? ` · ${app.clientName}` : ''}`,
    stylesheet: `${options.loginPath}/assets/style.css`,
    body: html`<main class="card">
${
  app && (nameShown || app.clientLogoUrl)
    ? html`<header class="brand">\
${app.clientLogoUrl ? html`<img src="${app.clientLogoUrl}" alt="" width="48" height="48">` : ''}\
${nameShown ? html`<p>${app.clientName}</p>` : ''}</header>`
    : ''
}
${options.body}
</main>`,
  });
}

export function messagePage(o: {
  loginPath: string;
  title: string;
  message: string;
  app?: AppBrand | undefined;
  link?: { href: string; text: string } | undefined;
  role?: 'alert' | 'status';
}): string {
  return layout({
    title: o.title,
    loginPath: o.loginPath,
    app: o.app,
    body: html`<h1>${o.title}</h1><p${o.role ? html` role="${o.role}"` : ''}>${o.message}</p>\
${o.link ? html`<p><a href="${o.link.href}">${o.link.text}</a></p>` : ''}`,
  });
}

/** After a sign-out (or a sign-out with nobody signed in): not a dead end, a way to sign in again. */
export function signedOutPage(o: { loginPath: string; message: string; app?: AppBrand | undefined }): string {
  return messagePage({
    ...o,
    title: 'Signed out',
    role: 'status',
    link: { href: `${o.loginPath}/sign-in`, text: 'Sign in again' },
  });
}

/** A protocol error that must not be redirected (unknown client or redirect_uri, expired request). */
export function errorPage(o: { loginPath: string; error: string; description: string }): string {
  return layout({
    title: 'This request cannot be completed',
    loginPath: o.loginPath,
    body: html`<h1>This request cannot be completed</h1><p role="alert">${o.description}</p>\
<p class="muted">Error code: <code>${o.error}</code></p>`,
  });
}

export function logoutConfirmPage(o: {
  loginPath: string;
  action: string;
  csrf: string;
  email: string;
  app?: AppBrand | undefined;
  fields: Record<string, string | undefined>;
}): string {
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

export const STYLESHEET = `${CSS.reset}
body{margin:0;min-height:100vh;display:flex;align-items:center;\
justify-content:center;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1b1f24}
.card{background:#fff;max-width:26rem;width:100%;\
padding:2rem;border-radius:12px;box-shadow:0 2px 12px rgba(0,0,0,.08);margin:1rem}
${CSS.heading}
.brand{display:flex;align-items:center;gap:.75rem;margin-bottom:1rem}\
.brand img{border-radius:8px}.brand p{margin:0;font-weight:600}
${CSS.field}
input{width:100%;padding:.6rem .7rem;border:1px solid #9aa1ab;border-radius:6px;font:inherit}
input:focus,button:focus,a:focus{outline:3px solid #2563eb;outline-offset:2px}
.invalid input{border-color:#b42318}${CSS.error}
${CSS.alert}
${CSS.notice}
button{background:#1d4ed8;color:#fff;border:0;border-radius:6px;\
padding:.65rem 1.1rem;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1b1f24}
.buttons{display:flex;gap:.75rem}\
.upstreams form{margin:.5rem 0}\
button.upstream{width:100%;display:flex;align-items:center;justify-content:center;gap:.5rem}\
.or{text-align:center;margin:1rem 0 .5rem}strong{overflow-wrap:anywhere}.scopes,.apis{padding-left:1.2rem}${CSS.muted}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}details{margin:1.5rem 0 1rem}summary{cursor:pointer}
`;
