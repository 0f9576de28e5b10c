// Admin web pages: APIs (resource servers, issue 36): the list (the built-in /api/external first), the form (the
// scopes editor as rows of name, label and consent text, the token format and lifetime, the applications that may
// ask for tokens and those that may introspect them) and the details page.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { Application } from '../../src/domain/application.js';
import { ACCESS_TOKEN_TTL_MAX, ACCESS_TOKEN_TTL_MIN, type ResourceServer } from '../../src/domain/resource-server.js';
import { alert, hidden, html, type Html } from '../pages/kit.js';
import { type Errors, type Frame, field, layout, postButton } from './views-layout.js';

export const apiPath = (frame: Frame, identifier: string) =>
  `${frame.adminPath}/apis/${encodeURIComponent(identifier)}`;

const status = (s: ResourceServer) =>
  html`<span class="badge ${s.enabled ? 'on' : 'off'}">${s.enabled ? 'enabled' : 'disabled'}</span>`;

export function apiList(frame: Frame, o: { items: ResourceServer[] }): string {
  const p = frame.adminPath;
  return layout({
    title: 'APIs',
    frame,
    current: 'apis',
    body: html`<section class="card"><div class="row"><h1>APIs</h1>\
<a class="button" href="${p}/apis/new">Add an API</a></div>
<p class="hint">The APIs (resource servers) applications ask access tokens for, by their identifier (RFC 8707 \
<code>resource</code>): each token is for one API (its <code>aud</code>), with that API's scopes.</p>
<div class="scroll"><table><thead><tr><th>Name</th><th>Identifier</th><th>Token format</th><th>Scopes</th>\
<th>Status</th></tr></thead><tbody>
${o.items.map(
  (s) => html`<tr><td><a href="${apiPath(frame, s.identifier)}">${s.name}</a>\
${s.builtIn ? html` <span class="badge">built-in</span>` : ''}</td><td><code>${s.identifier}</code></td>\
<td>${s.accessTokenFormat === 'jwt' ? 'JWT' : 'opaque'}</td>\
<td>${s.builtIn ? html`<span class="muted">the built-in scopes</span>` : s.scopes.map((x) => x.name).join(' ')}</td>\
<td>${status(s)}</td></tr>`,
)}
</tbody></table></div></section>`,
  });
}

export interface ScopeRow {
  name: string;
  label: string;
  consent: string;
}

/** The form's values, as text. */
export interface ApiForm {
  identifier?: string;
  name?: string;
  description?: string;
  scopes: ScopeRow[];
  accessTokenFormat?: string;
  accessTokenTtl?: string;
  allowedClients: string[];
  allowSelfRegistered?: boolean;
  introspectionClients: string[];
  enabled?: boolean;
}

export function formFromApi(s: ResourceServer): ApiForm {
  return {
    identifier: s.identifier,
    name: s.name,
    description: s.description ?? '',
    scopes: s.scopes.map((x) => ({ name: x.name, label: x.label, consent: x.consentDescription })),
    accessTokenFormat: s.accessTokenFormat,
    accessTokenTtl: s.accessTokenTtl === null ? '' : String(s.accessTokenTtl),
    allowedClients: s.allowedClients,
    allowSelfRegistered: s.allowSelfRegistered,
    introspectionClients: s.introspectionClients,
    enabled: s.enabled,
  };
}

export const EMPTY_SCOPE_ROWS = 3;
const CONSENT_HINT = 'Shown on the consent page';

function checkbox(name: string, value: string, checked: boolean, label: Html | string): Html {
  return html`<label><input type="checkbox" name="${name}" value="${value}"${checked ? html` checked` : ''}> \
${label}</label><br>`;
}

/**
 * Applications as checkboxes: `apps` (operator-registered ones), and any id the setting holds that is not among them
 * (an application deleted since, or a self-registered one), so that saving keeps what it does not show.
 */
function clientPicker(o: {
  name: string;
  legend: string;
  hint: string;
  apps: Application[];
  selected: string[];
  error: string | undefined;
}): Html {
  const known = new Set(o.apps.map((a) => a.clientId));
  const others = o.selected.filter((id) => !known.has(id));
  return html`<fieldset><legend>${o.legend}</legend><p class="hint">${o.hint}</p>
${o.apps.length + others.length === 0 ? html`<p class="muted">No applications.</p>` : ''}\
${o.apps.map((a) =>
  checkbox(o.name, a.clientId, o.selected.includes(a.clientId), html`${a.clientName} <code>${a.clientId}</code>`),
)}\
${others.map((id) => checkbox(o.name, id, true, html`<code>${id}</code> <span class="muted">(not listed)</span>`))}\
${o.error ? html`<p class="error">${o.error}</p>` : ''}</fieldset>`;
}

export function apiForm(
  frame: Frame,
  o: {
    server?: ResourceServer;
    values: ApiForm;
    errors?: Errors;
    /** Problems of the scope rows, by row (0-based). */
    scopeErrors?: Record<number, string>;
    formError?: string;
    /** Applications to pick from (operator-registered), and the confidential ones among them for introspection. */
    apps: Application[];
    defaultTtl: number;
  },
): string {
  const e = o.errors ?? {};
  const v = o.values;
  const editing = Boolean(o.server);
  const action = editing ? apiPath(frame, o.server!.identifier) : `${frame.adminPath}/apis`;
  const title = editing ? `Edit ${o.server!.name}` : 'Add an API';
  const rows = [...v.scopes, ...Array.from({ length: EMPTY_SCOPE_ROWS }, () => ({ name: '', label: '', consent: '' }))];
  const scopeErrors = o.scopeErrors ?? {};
  const format = v.accessTokenFormat === 'jwt' ? 'jwt' : 'opaque';
  return layout({
    title,
    frame,
    current: 'apis',
    body: html`<section class="card"><h1>${title}</h1>
${alert(o.formError)}
<form method="post" action="${action}" novalidate>
${hidden('csrf', frame.csrf)}
${
  editing
    ? html`<p>Identifier: <code>${o.server!.identifier}</code> <span class="muted">(fixed)</span></p>`
    : field({
        name: 'identifier',
        label: 'Identifier',
        type: 'url',
        value: v.identifier,
        error: e.identifier,
        required: true,
        hint:
          'The API’s absolute URI, e.g. https://api.example.com/orders (or a urn:), without query or fragment: ' +
          'the resource applications ask for and the aud of its tokens. It cannot change later.',
      })
}
${field({ name: 'name', label: 'Name', value: v.name, error: e.name, required: true, hint: CONSENT_HINT })}
${field({ name: 'description', label: 'Description', value: v.description, error: e.description, textarea: true })}
<fieldset><legend>Scopes</legend>
<p class="hint">The API’s own scopes: a name (letters, digits and <code>:._/-</code>, e.g. <code>orders:read</code>; \
unique across every API, not a built-in scope), the label the consent page shows, and the sentence under it \
(empty: the label). Empty rows are ignored; clear a row to remove that scope.</p>
${e.scopes ? html`<p class="error">${e.scopes}</p>` : ''}
<div class="scroll"><table><thead><tr><th>#</th><th>Name</th><th>Label</th><th>Consent text</th></tr></thead><tbody>
${rows.map(
  (r, i) => html`<tr${scopeErrors[i] ? html` class="invalid"` : ''}><td>${String(i + 1)}</td>\
<td><input name="scopeName" type="text" value="${r.name}" aria-label="Scope ${String(i + 1)} name"></td>\
<td><input name="scopeLabel" type="text" value="${r.label}" aria-label="Scope ${String(i + 1)} label"></td>\
<td><input name="scopeConsent" type="text" value="${r.consent}" aria-label="Scope ${String(i + 1)} consent text">\
${scopeErrors[i] ? html`<p class="error">${scopeErrors[i]}</p>` : ''}</td></tr>`,
)}
</tbody></table></div>
<p><button type="submit" name="action" value="more-scopes" class="secondary">More scope rows</button></p>
</fieldset>
<fieldset><legend>Access tokens</legend>
<label><input type="radio" name="accessTokenFormat" value="opaque"${format === 'opaque' ? html` checked` : ''}> \
Opaque: the API checks each token by introspection</label><br>
<label><input type="radio" name="accessTokenFormat" value="jwt"${format === 'jwt' ? html` checked` : ''}> \
JWT (RFC 9068): the API checks the signature with the published keys, and introspects to learn of revocation</label>
${e.accessTokenFormat ? html`<p class="error">${e.accessTokenFormat}</p>` : ''}
${field({
  name: 'accessTokenTtl',
  label: 'Lifetime (seconds)',
  value: v.accessTokenTtl,
  error: e.accessTokenTtl,
  hint: `${ACCESS_TOKEN_TTL_MIN}-${ACCESS_TOKEN_TTL_MAX}; empty: ACCESS_TOKEN_TTL (${o.defaultTtl} s)`,
})}
</fieldset>
${clientPicker({
  name: 'allowedClients',
  legend: 'Applications that may ask for tokens for it',
  hint: 'Only these applications may name this API in resource.',
  apps: o.apps,
  selected: v.allowedClients,
  error: e.allowedClients,
})}
<p><label><input type="checkbox" name="allowSelfRegistered" value="on"${v.allowSelfRegistered ? html` checked` : ''}> \
Self-registered clients (dynamic registration, client ID metadata documents, e.g. MCP clients) may ask for tokens \
for it too</label></p>
${clientPicker({
  name: 'introspectionClients',
  legend: 'Introspection clients',
  hint:
    'Server-side applications (the API’s own credentials) that may introspect the tokens for this API ' +
    '(POST /api/auth/oauth2/introspect).',
  apps: o.apps.filter((a) => a.clientType === 'confidential'),
  selected: v.introspectionClients,
  error: e.introspectionClients,
})}
<p><label><input type="checkbox" name="enabled" value="on"${v.enabled ? html` checked` : ''}> \
Enabled: applications may ask for tokens for it</label></p>
<div class="row"><button type="submit" name="action" value="save">${editing ? 'Save changes' : 'Add API'}</button>\
<a class="button secondary" href="${editing ? action : `${frame.adminPath}/apis`}">Cancel</a></div>
</form></section>`,
  });
}

export function apiView(frame: Frame, o: { server: ResourceServer; defaultTtl: number }): string {
  const s = o.server;
  const base = apiPath(frame, s.identifier);
  const row = (label: string, value: Html | string) => html`<tr><th>${label}</th><td>${value}</td></tr>`;
  const ids = (items: string[]) =>
    items.length ? html`${items.map((i) => html`<code>${i}</code> `)}` : html`<span class="muted">none</span>`;
  return layout({
    title: s.name,
    frame,
    current: 'apis',
    body: html`<section class="card"><div class="row"><h1>${s.name}</h1>${status(s)}</div>
${
  s.builtIn
    ? html`<p class="notice">The built-in API: this provider’s own <code>/api/external/*</code> and UserInfo. \
Every application may ask for it, with the built-in scopes; it is read-only.</p>`
    : ''
}
<div class="scroll"><table><tbody>
${row('Identifier', html`<code id="identifier">${s.identifier}</code>`)}
${row('Description', s.description ?? '')}
${row('Token format', s.accessTokenFormat === 'jwt' ? 'JWT (RFC 9068)' : 'opaque (introspection)')}
${row('Token lifetime', s.accessTokenTtl === null ? `ACCESS_TOKEN_TTL (${o.defaultTtl} s)` : `${s.accessTokenTtl} s`)}
${row('Allowed applications', s.builtIn ? 'every application' : ids(s.allowedClients))}
${row('Self-registered clients', s.allowSelfRegistered ? 'allowed' : 'not allowed')}
${s.builtIn ? '' : row('Introspection clients', ids(s.introspectionClients))}
${s.createdAt ? row('Created', s.createdAt) : ''}
</tbody></table></div>
<h2>Scopes (${String(s.scopes.length)})</h2>
<div class="scroll"><table><thead><tr><th>Name</th><th>Label</th><th>Consent text</th></tr></thead><tbody>
${s.scopes.length === 0 ? html`<tr><td colspan="3">No scopes of its own.</td></tr>` : ''}
${s.scopes.map(
  (x) => html`<tr><td><code>${x.name}</code></td><td>${x.label}</td><td>${x.consentDescription}</td></tr>`,
)}
</tbody></table></div>
${
  s.builtIn
    ? ''
    : html`<div class="row"><a class="button" href="${base}/edit">Edit</a>
${postButton({
  action: `${base}/${s.enabled ? 'disable' : 'enable'}`,
  csrf: frame.csrf,
  label: s.enabled ? 'Disable' : 'Enable',
  className: 'secondary',
})}
<a class="button secondary" href="${base}/delete">Delete…</a></div>`
}
</section>`,
  });
}
