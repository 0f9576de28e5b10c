// Admin web pages: applications (list, form, details, integration snippets).
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import { DEFAULT_ALLOWED_SCOPES, SCOPES } from '../../src/oauth/scopes.js';
import type { Application } from '../../src/domain/application.js';
import { alert, hidden, html } from '../pages/kit.js';
import { type Errors, type Frame, field, layout, postButton } from './views-layout.js';
import { oauth4webapiSnippet, openidClientSnippet } from './snippets.js';

/**
 * Only https images are shown (the pages' CSP allows no other remote images; loopback http logos are valid but
 * not previewed).
 */
function previewable(url: string | null | undefined): boolean {
  return Boolean(url && /^https:\/\/[^\s"'<>]+$/.test(url));
}

export function applicationList(
  frame: Frame,
  o: { items: Application[]; q: string | undefined; nextCursor?: string | undefined; staticSource: string | undefined },
): string {
  const p = frame.adminPath;
  return layout({
    title: 'Applications',
    frame,
    current: 'applications',
    body: html`<section class="card"><div class="row"><h1>Applications</h1>\
<a class="button" href="${p}/applications/new">New application</a></div>
<form method="get" action="${p}/applications" role="search" class="row"><label for="q">Search</label>\
<input id="q" type="search" name="q" value="${o.q ?? ''}" placeholder="name or client id">\
<button type="submit" class="secondary">Search</button></form>
<div class="scroll"><table><thead><tr><th>Name</th><th>Client id</th><th>Status</th><th>Source</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="4">No applications${o.q ? ' match' : ' yet'}.</td></tr>` : ''}
${o.items.map(
  (a) => html`<tr><td><a href="${p}/applications/${encodeURIComponent(a.clientId)}">${a.clientName}</a></td>\
<td><code>${a.clientId}</code></td>\
<td><span class="badge ${a.enabled ? 'on' : 'off'}">${a.enabled ? 'enabled' : 'disabled'}</span></td><td>${
    a.source === 'static' ? html`static (read-only${o.staticSource ? html`, ${o.staticSource}` : ''})` : 'database'
  }</td></tr>`,
)}
</tbody></table></div>
${
  o.nextCursor
    ? html`<p><a href="${p}/applications?\
${new URLSearchParams({ ...(o.q ? { q: o.q } : {}), cursor: o.nextCursor }).toString()}">Next page</a></p>`
    : ''
}
</section>`,
  });
}

export interface ApplicationForm {
  clientName?: string;
  clientDescription?: string;
  clientLogoUrl?: string;
  redirectUris?: string;
  allowedWebOrigins?: string;
  postLogoutRedirectUris?: string;
  postVerificationRedirectPath?: string;
  allowedScopes?: string[];
}

export function formFromApplication(a: Application): ApplicationForm {
  return {
    clientName: a.clientName,
    clientDescription: a.clientDescription ?? '',
    clientLogoUrl: a.clientLogoUrl ?? '',
    redirectUris: a.redirectUris.join('\n'),
    allowedWebOrigins: a.allowedWebOrigins.join('\n'),
    postLogoutRedirectUris: a.postLogoutRedirectUris.join('\n'),
    postVerificationRedirectPath: a.postVerificationRedirectPath ?? '',
    allowedScopes: a.allowedScopes,
  };
}

export function applicationForm(
  frame: Frame,
  o: { app?: Application; values: ApplicationForm; errors?: Errors; formError?: string },
): string {
  const p = frame.adminPath;
  const e = o.errors ?? {};
  const editing = Boolean(o.app);
  const action = editing ? `${p}/applications/${encodeURIComponent(o.app!.clientId)}` : `${p}/applications`;
  const scopes: readonly string[] = o.values.allowedScopes ?? DEFAULT_ALLOWED_SCOPES;
  return layout({
    title: editing ? `Edit ${o.app!.clientName}` : 'New application',
    frame,
    current: 'applications',
    body: html`<section class="card"><h1>${editing ? html`Edit ${o.app!.clientName}` : 'New application'}</h1>
${alert(o.formError)}
<form method="post" action="${action}" novalidate>
${hidden('csrf', frame.csrf)}
${field({ name: 'clientName', label: 'Name', value: o.values.clientName, error: e.clientName, required: true })}
${field({
  name: 'clientDescription',
  label: 'Description',
  value: o.values.clientDescription,
  error: e.clientDescription,
  textarea: true,
})}
${field({
  name: 'clientLogoUrl',
  label: 'Logo URL',
  type: 'url',
  value: o.values.clientLogoUrl,
  error: e.clientLogoUrl,
  hint: 'https URL of a square image, shown on the sign-in and consent pages',
})}
${
  previewable(o.values.clientLogoUrl) && !e.clientLogoUrl
    ? html`<p><img class="logo" src="${o.values.clientLogoUrl}" alt="Logo preview"></p>`
    : ''
}
${field({
  name: 'redirectUris',
  label: 'Redirect URIs',
  value: o.values.redirectUris,
  error: e.redirectUris,
  textarea: true,
  required: true,
  hint: 'One per line; matched exactly. https, or http on localhost/127.0.0.1',
})}
${field({
  name: 'allowedWebOrigins',
  label: 'Allowed web origins (browser CORS)',
  value: o.values.allowedWebOrigins,
  error: e.allowedWebOrigins,
  textarea: true,
  hint: 'One per line, e.g. https://app.example.com (scheme, host, port; no path)',
})}
${field({
  name: 'postLogoutRedirectUris',
  label: 'Post-logout redirect URIs',
  value: o.values.postLogoutRedirectUris,
  error: e.postLogoutRedirectUris,
  textarea: true,
  hint: 'One per line; where RP-initiated logout may return',
})}
${field({
  name: 'postVerificationRedirectPath',
  label: 'Post-verification redirect path',
  value: o.values.postVerificationRedirectPath,
  error: e.postVerificationRedirectPath,
  hint: 'A path such as /welcome, on the origin of the redirect URI used',
})}
<fieldset${e.allowedScopes ? html` aria-describedby="f-allowedScopes-error"` : ''}><legend>Allowed scopes</legend>
${SCOPES.map(
  (s) => html`<label><input type="checkbox" name="allowedScopes" value="${s.name}"\
${scopes.includes(s.name) ? html` checked` : ''}> <code>${s.name}</code>: ${s.label}</label>`,
)}
${e.allowedScopes ? html`<p class="error" id="f-allowedScopes-error">${e.allowedScopes}</p>` : ''}
</fieldset>
<div class="row"><button type="submit">${editing ? 'Save changes' : 'Create application'}</button>\
<a class="button secondary" href="${editing ? action : `${p}/applications`}">Cancel</a></div>
</form></section>`,
  });
}

export function applicationView(frame: Frame, o: { app: Application; staticSource: string | undefined }): string {
  const p = frame.adminPath;
  const a = o.app;
  const base = `${p}/applications/${encodeURIComponent(a.clientId)}`;
  const list = (items: string[]) =>
    items.length
      ? html`<ul>${items.map((i) => html`<li><code>${i}</code></li>`)}</ul>`
      : html`<span class="muted">none</span>`;
  return layout({
    title: a.clientName,
    frame,
    current: 'applications',
    body: html`<section class="card"><div class="row">\
${previewable(a.clientLogoUrl) ? html`<img class="logo" src="${a.clientLogoUrl}" alt="">` : ''}<h1>${a.clientName}</h1>\
<span class="badge ${a.enabled ? 'on' : 'off'}">${a.enabled ? 'enabled' : 'disabled'}</span></div>
${
  a.source === 'static'
    ? html`<p class="notice">\
Static application from ${o.staticSource ?? 'the static applications file'}: read-only here. \
Change it in that file and restart.</p>`
    : ''
}
<div class="scroll"><table><tbody>
<tr><th>Client id</th><td><code>${a.clientId}</code></td></tr>
<tr><th>Description</th><td>${a.clientDescription ?? ''}</td></tr>
<tr><th>Redirect URIs</th><td>${list(a.redirectUris)}</td></tr>
<tr><th>Allowed web origins</th><td>${list(a.allowedWebOrigins)}</td></tr>
<tr><th>Post-logout redirect URIs</th><td>${list(a.postLogoutRedirectUris)}</td></tr>
<tr><th>Post-verification path</th><td>${a.postVerificationRedirectPath ?? ''}</td></tr>
<tr><th>Allowed scopes</th><td>${a.allowedScopes.join(' ')}</td></tr>
<tr><th>Created</th><td>${a.createdAt ?? ''}</td></tr>
</tbody></table></div>
${
  a.source === 'database'
    ? html`<div class="row"><a class="button" href="${base}/edit">Edit</a>
${postButton({
  action: `${base}/${a.enabled ? 'disable' : 'enable'}`,
  csrf: frame.csrf,
  label: a.enabled ? 'Disable' : 'Enable',
  className: 'secondary',
})}
<a class="button secondary" href="${base}/created">Integration snippet</a>
<a class="button secondary" href="${base}/delete">Delete…</a></div>`
    : html`<p><a class="button secondary" href="${base}/created">Integration snippet</a></p>`
}
</section>`,
  });
}

export function applicationCreated(
  frame: Frame,
  o: { app: Application; issuer: string; justCreated: boolean },
): string {
  const a = o.app;
  const redirectUri = a.redirectUris[0] ?? 'https://app.example.com/callback';
  const scope = a.allowedScopes.filter((s) => s !== 'permissions').join(' ');
  const discovery = `${o.issuer}/.well-known/openid-configuration`;
  const input = { issuer: o.issuer, clientId: a.clientId, redirectUri, scope };
  const openidClient = openidClientSnippet(input);
  const oauth4webapi = oauth4webapiSnippet(input);
  return layout({
    title: `${a.clientName}: integration`,
    frame,
    current: 'applications',
    body: html`<section class="card"><h1>\
${o.justCreated ? html`Created ${a.clientName}` : html`Integrate ${a.clientName}`}</h1>
<div class="scroll"><table><tbody>
<tr><th>Client id</th><td><code id="client-id">${a.clientId}</code></td></tr>
<tr><th>Issuer</th><td><code>${o.issuer}</code></td></tr>
<tr><th>Discovery URL</th><td><code id="discovery-url">${discovery}</code></td></tr>
<tr><th>Redirect URI</th><td><code>${redirectUri}</code></td></tr>
<tr><th>Scopes</th><td><code>${scope}</code></td></tr>
<tr><th>Client type</th><td>public: no secret; PKCE with S256 is required</td></tr>
</tbody></table></div>
<h2>openid-client</h2><pre><code id="snippet-openid-client">${openidClient}</code></pre>
<h2>oauth4webapi</h2><pre><code id="snippet-oauth4webapi">${oauth4webapi}</code></pre>
<p><a href="${frame.adminPath}/applications/${encodeURIComponent(a.clientId)}">\
Back to the application</a></p></section>`,
  });
}
