// The frame of the account pages (issue 17): the document, the header with the signed-in address, the nav
// between the three pages (aria-current), the status line after a redirect, the error summary of a form,
// labelled fields whose errors are tied to them, and the stylesheet. Every value is escaped by html``.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { CSS, hidden, html, htmlDocument, type Html } from '../pages/kit.js';

export type AccountTab = 'profile' | 'security' | 'sign-in-methods' | 'applications';

/** Errors of one form: messages by field name, and one for the form as a whole. */
export interface FormErrors {
  form: string;
  fields: Record<string, string | undefined>;
  message?: string | undefined;
}

const TABS: Array<{ tab: AccountTab; path: string; label: string }> = [
  { tab: 'profile', path: '', label: 'Profile' },
  { tab: 'security', path: '/security', label: 'Security' },
  { tab: 'sign-in-methods', path: '/sign-in-methods', label: 'Sign-in methods' },
  { tab: 'applications', path: '/applications', label: 'Applications' },
];

export function accountLayout(o: {
  loginPath: string;
  tab: AccountTab;
  title: string;
  email: string;
  csrf: string;
  status?: string | undefined;
  body: Html;
}): string {
  const base = `${o.loginPath}/account`;
  return htmlDocument({
    title: `${o.title} · Your account`,
    stylesheet: `${base}/assets/account.css`,
    body: html`<div class="page">
<header class="top">
<p class="who">Signed in as <strong>${o.email}</strong></p>
<form method="post" action="${o.loginPath}/sign-out">${hidden('csrf', o.csrf)}\
<button type="submit" class="secondary">Sign out</button></form>
<nav aria-label="Your account"><ul class="tabs">
${TABS.map(
  (t) => html`<li><a href="${base}${t.path}"${t.tab === o.tab ? html` aria-current="page"` : ''}>${t.label}</a></li>`,
)}
</ul></nav>
</header>
<main>
<h1>${o.title}</h1>
${o.status ? html`<p class="notice" role="status">${o.status}</p>` : ''}
${o.body}
</main>
</div>`,
  });
}

/** The summary above a form that was refused: what is wrong, each item a link to its field. */
export function errorSummary(errors: FormErrors | undefined, form: string, ids: Record<string, string>): Html {
  if (!errors || errors.form !== form) return html``;
  const items = Object.entries(errors.fields).filter(([, message]) => message);
  const item = (name: string, message: string) =>
    html`<li><a href="#${ids[name] ?? `${form}-${name}`}">${message}</a></li>`;
  return html`<div class="alert" role="alert" id="${form}-errors">\
<p>${errors.message ?? 'Please correct the following:'}</p>\
${items.length ? html`<ul>${items.map(([name, message]) => item(name, message!))}</ul>` : ''}</div>`;
}

const errorOf = (errors: FormErrors | undefined, form: string, name: string) =>
  errors?.form === form ? errors.fields[name] : undefined;

/** The cursor goes to the first field of a refused form that needs fixing (as on the sign-up page). */
const focus = (errors: FormErrors | undefined, form: string, name: string) =>
  errors?.form === form && Object.keys(errors.fields).find((k) => errors.fields[k]) === name ? html` autofocus` : '';

/** A labelled input; its hint and error are tied to it by aria-describedby. */
export function input(o: {
  form: string;
  name: string;
  label: string;
  type: string;
  autocomplete: string;
  value?: string | null | undefined;
  hint?: string;
  errors?: FormErrors | undefined;
  required?: boolean;
}): Html {
  const id = `${o.form}-${o.name}`;
  const error = errorOf(o.errors, o.form, o.name);
  const describedBy = [o.hint ? `${id}-hint` : '', error ? `${id}-error` : ''].filter(Boolean).join(' ');
  const value = o.value ?? undefined;
  return html`<div class="field${error ? ' invalid' : ''}">
<label for="${id}">${o.label}</label>
<input id="${id}" name="${o.name}" type="${o.type}" autocomplete="${o.autocomplete}"\
${value !== undefined ? html` value="${value}"` : ''}${o.required ? html` required` : ''}\
${error ? html` aria-invalid="true"` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}\
${focus(o.errors, o.form, o.name)}>
${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ''}\
${error ? html`<p class="error" id="${id}-error">${error}</p>` : ''}
</div>`;
}

/** A checkbox with its label after it (the explicit confirmation of the account deletion). */
export function checkbox(o: { form: string; name: string; label: string; errors?: FormErrors | undefined }): Html {
  const id = `${o.form}-${o.name}`;
  const error = errorOf(o.errors, o.form, o.name);
  return html`<div class="field check${error ? ' invalid' : ''}">
<input id="${id}" name="${o.name}" type="checkbox" value="yes" required\
${error ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}${focus(o.errors, o.form, o.name)}>
<label for="${id}">${o.label}</label>
${error ? html`<p class="error" id="${id}-error">${error}</p>` : ''}
</div>`;
}

/** A moment as the pages show it: `2026-11-24 13:05 UTC`, the ISO value in datetime. */
export function when(iso: string | null | undefined, never = 'Never'): Html {
  if (!iso) return html`${never}`;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return html`${iso}`;
  const shown = `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
  return html`<time datetime="${date.toISOString()}">${shown}</time>`;
}

/** The same moment as plain text (for the hidden part of a button's name). */
export function whenText(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/**
 * A user agent in a short readable form, "Firefox on Windows": the browser, then the system. Only a
 * display: the order of the tests matters (Edge and Opera also say Chrome, Chrome also says Safari).
 */
export function describeUserAgent(ua: string | null | undefined): string {
  if (!ua) return 'Unknown device';
  const browsers: Array<[RegExp, string]> = [
    [/\bEdg(e|A|iOS)?\//, 'Edge'],
    [/\bOPR\/|\bOpera\b/, 'Opera'],
    [/\bFirefox\/|\bFxiOS\//, 'Firefox'],
    [/\bHeadlessChrome\//, 'Headless Chrome'],
    [/\bChrom(e|ium)\/|\bCriOS\//, 'Chrome'],
    [/\bVersion\/[\d.]+.*\bSafari\//, 'Safari'],
    [/^curl\//, 'curl'],
  ];
  const systems: Array<[RegExp, string]> = [
    [/\biPhone|\biPad|\biPod/, 'iOS'],
    [/\bAndroid\b/, 'Android'],
    [/\bWindows\b/, 'Windows'],
    [/\bCrOS\b/, 'ChromeOS'],
    [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
    [/\bLinux\b/, 'Linux'],
  ];
  const browser = browsers.find(([re]) => re.test(ua))?.[1];
  const system = systems.find(([re]) => re.test(ua))?.[1];
  if (browser && system) return `${browser} on ${system}`;
  if (browser || system) return (browser ?? system)!;
  const product = /^[^\s/]{1,40}/.exec(ua)?.[0];
  return product ? `Other (${product})` : 'Unknown device';
}

export const ACCOUNT_STYLESHEET = `${CSS.reset}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1b1f24}
.page{background:#fff;max-width:44rem;margin:1rem auto;padding:1.5rem;border-radius:12px;\
box-shadow:0 2px 12px rgba(0,0,0,.08)}
@media (max-width:30rem){.page{margin:0;border-radius:0;padding:1rem}}
.top{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:.5rem;\
border-bottom:1px solid #e5e7eb;padding-bottom:.75rem;margin-bottom:1rem}
.top form{margin:0}.who{margin:0;overflow-wrap:anywhere;min-width:0}
.tabs{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;padding:0;margin:0;width:100%}
.tabs a{display:inline-block;padding:.25rem 0;color:#1d4ed8}
.tabs a[aria-current=page]{color:#1b1f24;font-weight:700;text-decoration:none;border-bottom:3px solid #1d4ed8}
nav{width:100%}
${CSS.heading}
h2{font-size:1.15rem;margin:2rem 0 .5rem}h3{font-size:1rem;margin:0}
a{color:#1d4ed8}
${CSS.field}
input:not([type=checkbox]){width:100%;padding:.6rem .7rem;border:1px solid #6b7280;border-radius:6px;font:inherit}
.check{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-start}.check input{margin-top:.3rem}\
.check label{flex:1;font-weight:400}.check .error{width:100%}
input:focus,button:focus,a:focus,input:focus-visible,button:focus-visible,a:focus-visible\
{outline:3px solid #2563eb;outline-offset:2px}
.invalid input{border-color:#b42318}${CSS.error}
.hint{margin:.25rem 0 0;font-size:.9rem;color:#5b636e}
${CSS.alert}.alert{margin:0 0 1rem}.alert p{margin:0}\
.alert ul{margin:.25rem 0 0;padding-left:1.2rem}.alert a{color:#b42318}
${CSS.notice}
button{background:#1d4ed8;color:#fff;border:0;border-radius:6px;\
padding:.6rem 1.1rem;font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#e5e7eb;color:#1b1f24}button.danger{background:#b42318}
.items{list-style:none;padding:0;margin:0}\
.items>li{border:1px solid #e5e7eb;border-radius:8px;padding:.75rem 1rem;margin:.75rem 0}
.items form{margin:.5rem 0 0}.item-head{display:flex;align-items:center;gap:.75rem}.item-head img{border-radius:8px}
.item-head h2{margin:0}.items p{margin:.5rem 0}
dl{display:grid;grid-template-columns:minmax(0,max-content) minmax(0,1fr);gap:.2rem 1rem;margin:.5rem 0 0}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
@media (max-width:30rem){dl{grid-template-columns:minmax(0,1fr)}dd{margin-bottom:.3rem}}
.scopes{padding-left:1.2rem;margin:.5rem 0}.badge{display:inline-block;font-size:.8rem;font-weight:600;\
padding:0 .4rem;border-radius:4px;background:#ecfdf3;color:#05603a}.badge.warn{background:#fffaeb;color:#93370d}
.picture{border-radius:50%;object-fit:cover}
strong{overflow-wrap:anywhere}
.visually-hidden{position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;\
clip:rect(0 0 0 0);white-space:nowrap;border:0}
${CSS.muted}
`;
