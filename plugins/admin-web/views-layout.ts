// Admin web pages, the frame: the stylesheet, the page layout (navigation, sign-out, notice), the form field
// and post-button helpers, and the confirmation page shared by the areas. Server-rendered, every value escaped.
// The document, fields, hidden inputs and shared style rules come from the page kit.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { CSS, field as kitField, hidden, html, htmlDocument, type Html } from '../pages/kit.js';

export type Errors = Record<string, string | undefined>;

export interface Frame {
  adminPath: string;
  csrf: string;
  email: string;
  loginUrl: string;
  notice?: string | undefined;
}

export const ADMIN_STYLESHEET = `${CSS.reset}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1b1f24}
header.top{display:flex;align-items:center;gap:1.5rem;background:#111827;color:#fff;padding:.7rem 1.5rem;flex-wrap:wrap}
header.top a{color:#e5e7eb;text-decoration:none;font-weight:600}\
header.top a[aria-current]{color:#fff;text-decoration:underline}
header.top .who{margin-left:auto;font-size:.9rem}header.top form{display:inline}
header.top button{background:transparent;border:1px solid #6b7280;color:#fff;padding:.25rem .7rem}
main{max-width:68rem;margin:1.5rem auto;padding:0 1rem}
section.card{background:#fff;padding:1.5rem;border-radius:10px;\
box-shadow:0 1px 6px rgba(0,0,0,.06);margin-bottom:1.5rem}
${CSS.heading}h2{font-size:1.1rem;margin:0 0 .75rem}
table{width:100%;border-collapse:collapse}\
th,td{text-align:left;padding:.45rem .5rem;border-bottom:1px solid #e5e7eb;vertical-align:top}
th{font-size:.85rem;color:#5b636e}td code,pre code{overflow-wrap:anywhere}
${CSS.field}.hint{color:#5b636e;font-size:.85rem;margin:.15rem 0 0}
input[type=text],input[type=email],input[type=password],input[type=url],input[type=search],input[type=datetime-local],\
textarea,select{width:100%;padding:.5rem .6rem;border:1px solid #9aa1ab;border-radius:6px;font:inherit}
textarea{min-height:5rem}fieldset{border:1px solid #d0d5dd;border-radius:6px;margin:0 0 1rem}
input:focus,textarea:focus,button:focus,a:focus,select:focus{outline:3px solid #2563eb;outline-offset:2px}
.invalid input,.invalid textarea{border-color:#b42318}${CSS.error}
${CSS.alert}${CSS.notice}
button,.button{display:inline-block;background:#1d4ed8;color:#fff;border:0;border-radius:6px;padding:.5rem 1rem;\
font:inherit;font-weight:600;cursor:pointer;text-decoration:none}
button.secondary,.button.secondary{background:#e5e7eb;color:#1b1f24}button.danger{background:#b42318}
.row{display:flex;gap:.75rem;align-items:center;flex-wrap:wrap}.row form{display:inline}
.badge{display:inline-block;font-size:.8rem;padding:.05rem .45rem;border-radius:999px;background:#e5e7eb}\
.badge.on{background:#dcfce7}.badge.off{background:#fee2e2}
pre{background:#0f172a;color:#e2e8f0;padding:1rem;border-radius:8px;overflow:auto}\
img.logo{max-width:64px;max-height:64px;border-radius:8px;border:1px solid #e5e7eb}
${CSS.muted}.filters{display:grid;grid-template-columns:repeat(auto-fit,minmax(10rem,1fr));gap:.75rem;align-items:end}
.scroll{overflow-x:auto;max-width:100%}td{overflow-wrap:break-word}header.top .who,h1,h2{overflow-wrap:anywhere}
ul.detail{list-style:none;margin:0;padding:0}ul.detail .key{color:#5b636e}\
.audit td:first-child,.audit td code{white-space:nowrap;overflow-wrap:normal}
@media (max-width:40rem){header.top{padding:.6rem 1rem;gap:.5rem 1rem}main{margin:1rem auto;padding:0 .5rem}\
section.card{padding:1rem}}
`;

export function field(o: {
  name: string;
  label: string;
  value?: string | null | undefined;
  type?: string;
  error?: string | undefined;
  hint?: string;
  required?: boolean;
  textarea?: boolean;
  autocomplete?: string;
}): Html {
  const id = `f-${o.name}`;
  const described = [o.hint ? `${id}-hint` : '', o.error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const aria = html`${described ? html` aria-describedby="${described}"` : ''}\
${o.error ? html` aria-invalid="true"` : ''}${o.required ? html` required` : ''}`;
  const control = o.textarea
    ? html`<textarea id="${id}" name="${o.name}"${aria}>${o.value ?? ''}</textarea>`
    : html`<input id="${id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value ?? ''}"\
${o.autocomplete ? html` autocomplete="${o.autocomplete}"` : ''}${aria}>`;
  return kitField({ id, label: o.label, control, hint: o.hint, error: o.error });
}

export function postButton(o: { action: string; csrf: string; label: string; className?: string }): Html {
  return html`<form method="post" action="${o.action}">${hidden('csrf', o.csrf)}\
<button type="submit"${o.className ? html` class="${o.className}"` : ''}>${o.label}</button></form>`;
}

/** A page of the admin web: signed in (`frame`: navigation, sign-out, notice) or outside it (`adminPath`). */
export function layout(
  o: { title: string; body: Html; current?: string } & ({ frame: Frame } | { frame?: undefined; adminPath: string }),
): string {
  const f = o.frame;
  const adminPath = f ? f.adminPath : o.adminPath;
  const nav = (path: string, label: string) =>
    html`<a href="${adminPath}/${path}"${o.current === path ? html` aria-current="page"` : ''}>${label}</a>`;
  return htmlDocument({
    title: `${o.title} · Admin`,
    stylesheet: `${adminPath}/assets/admin.css`,
    body: html`${
      f
        ? html`<header class="top"><strong>idp admin</strong><nav class="row">\
${nav('applications', 'Applications')}${nav('users', 'Users')}${nav('upstreams', 'Sign-in providers')}\
${nav('apis', 'APIs')}${nav('keys', 'Signing keys')}${nav('audit', 'Audit log')}</nav>
<span class="who">${f.email}</span>\
${postButton({ action: `${f.adminPath}/sign-out`, csrf: f.csrf, label: 'Sign out' })}</header>`
        : ''
    }
<main>
${f?.notice ? html`<p class="notice" role="status">${f.notice}</p>` : ''}
${o.body}
</main>`,
  });
}

export function confirmPage(
  frame: Frame,
  o: { title: string; message: string; action: string; button: string; current: string; back: string },
): string {
  return layout({
    title: o.title,
    frame,
    current: o.current,
    body: html`<section class="card"><h1>${o.title}</h1><p role="alert">${o.message}</p>
<div class="row"><form method="post" action="${o.action}">${hidden('csrf', frame.csrf)}\
<button type="submit" class="danger">${o.button}</button></form>\
<a class="button secondary" href="${o.back}">Cancel</a></div></section>`,
  });
}
