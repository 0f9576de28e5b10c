// Admin web pages outside the signed-in frame: the first-admin setup form and messages.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import { alert, hidden, html } from '../pages/kit.js';
import { type Errors, field, layout } from './views-layout.js';

export function setupPage(
  adminPath: string,
  o: { token: string; csrf: string; values?: { email?: string; name?: string }; errors?: Errors; formError?: string },
): string {
  const e = o.errors ?? {};
  return layout({
    adminPath,
    title: 'Create the first admin',
    body: html`<section class="card"><h1>Create the first admin</h1>
<p>This one-time link creates the administrator account of this identity provider. It works once.</p>
${alert(o.formError)}
<form method="post" action="${adminPath}/setup" novalidate>
${hidden('csrf', o.csrf)}${hidden('token', o.token)}
${field({ name: 'name', label: 'Name', value: o.values?.name, error: e.name, autocomplete: 'name' })}
${field({
  name: 'email',
  label: 'E-mail address',
  type: 'email',
  value: o.values?.email,
  error: e.email,
  required: true,
  autocomplete: 'username',
})}
${field({
  name: 'password',
  label: 'Password (8 to 128 characters)',
  type: 'password',
  error: e.password,
  required: true,
  autocomplete: 'new-password',
})}
${field({
  name: 'confirmPassword',
  label: 'Repeat the password',
  type: 'password',
  error: e.confirmPassword,
  required: true,
  autocomplete: 'new-password',
})}
<button type="submit">Create admin account</button>
</form></section>`,
  });
}

export function messagePage(
  adminPath: string,
  o: { title: string; message: string; link?: { href: string; text: string } },
): string {
  return layout({
    adminPath,
    title: o.title,
    body: html`<section class="card"><h1>${o.title}</h1><p role="alert">${o.message}</p>\
${o.link ? html`<p><a href="${o.link.href}">${o.link.text}</a></p>` : ''}</section>`,
  });
}
