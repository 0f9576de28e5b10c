// Admin web pages: server-rendered, no JavaScript (progressive enhancement only), every value escaped.
// The document, fields, hidden inputs and shared style rules come from the page kit.
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import { SCOPES } from '../../src/oauth/scopes.js';
import type { Application } from '../../src/domain/application.js';
import type { User } from '../../src/domain/user.js';
import type { AuditEvent } from '../../src/services/audit.js';
import { alert, CSS, field as kitField, hidden, html, htmlDocument, type Html } from '../pages/kit.js';

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
`;

/**
 * Only https images are shown (the pages' CSP allows no other remote images; loopback http logos are valid but
 * not previewed).
 */
function previewable(url: string | null | undefined): boolean {
  return Boolean(url && /^https:\/\/[^\s"'<>]+$/.test(url));
}

function field(o: {
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

function postButton(o: { action: string; csrf: string; label: string; className?: string }): Html {
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
${nav('applications', 'Applications')}${nav('users', 'Users')}\
${nav('keys', 'Signing keys')}${nav('audit', 'Audit log')}</nav>
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

// Applications

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
<table><thead><tr><th>Name</th><th>Client id</th><th>Status</th><th>Source</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="4">No applications${o.q ? ' match' : ' yet'}.</td></tr>` : ''}
${o.items.map(
  (a) => html`<tr><td><a href="${p}/applications/${encodeURIComponent(a.clientId)}">${a.clientName}</a></td>\
<td><code>${a.clientId}</code></td>\
<td><span class="badge ${a.enabled ? 'on' : 'off'}">${a.enabled ? 'enabled' : 'disabled'}</span></td><td>${
    a.source === 'static' ? html`static (read-only${o.staticSource ? html`, ${o.staticSource}` : ''})` : 'database'
  }</td></tr>`,
)}
</tbody></table>
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
  const scopes = o.values.allowedScopes ?? ['openid', 'profile', 'email'];
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
<table><tbody>
<tr><th>Client id</th><td><code>${a.clientId}</code></td></tr>
<tr><th>Description</th><td>${a.clientDescription ?? ''}</td></tr>
<tr><th>Redirect URIs</th><td>${list(a.redirectUris)}</td></tr>
<tr><th>Allowed web origins</th><td>${list(a.allowedWebOrigins)}</td></tr>
<tr><th>Post-logout redirect URIs</th><td>${list(a.postLogoutRedirectUris)}</td></tr>
<tr><th>Post-verification path</th><td>${a.postVerificationRedirectPath ?? ''}</td></tr>
<tr><th>Allowed scopes</th><td>${a.allowedScopes.join(' ')}</td></tr>
<tr><th>Created</th><td>${a.createdAt ?? ''}</td></tr>
</tbody></table>
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
  const openidClient = `import * as client from 'openid-client';

const config = await client.discovery(new URL('${o.issuer}'), '${a.clientId}');
// Public client with PKCE (S256); no client secret.
const codeVerifier = client.randomPKCECodeVerifier();
const codeChallenge = await client.calculatePKCECodeChallenge(codeVerifier);
const url = client.buildAuthorizationUrl(config, {
  redirect_uri: '${redirectUri}',
  scope: '${scope}',
  code_challenge: codeChallenge,
  code_challenge_method: 'S256',
});
// ... after the redirect back to ${redirectUri}:
const tokens = await client.authorizationCodeGrant(config, new URL(callbackUrl), { pkceCodeVerifier: codeVerifier });`;
  const oauth4webapi = `import * as oauth from 'oauth4webapi';

const issuer = new URL('${o.issuer}');
const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer));
const client = { client_id: '${a.clientId}' };
const clientAuth = oauth.None();
const codeVerifier = oauth.generateRandomCodeVerifier();
const url = new URL(as.authorization_endpoint);
url.search = new URLSearchParams({
  client_id: client.client_id,
  redirect_uri: '${redirectUri}',
  response_type: 'code',
  scope: '${scope}',
  code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
  code_challenge_method: 'S256',
}).toString();
// ... on ${redirectUri}:
const params = oauth.validateAuthResponse(as, client, new URL(callbackUrl));
const response = await oauth.authorizationCodeGrantRequest\
(as, client, clientAuth, params, '${redirectUri}', codeVerifier);
const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);`;
  return layout({
    title: `${a.clientName}: integration`,
    frame,
    current: 'applications',
    body: html`<section class="card"><h1>\
${o.justCreated ? html`Created ${a.clientName}` : html`Integrate ${a.clientName}`}</h1>
<table><tbody>
<tr><th>Client id</th><td><code id="client-id">${a.clientId}</code></td></tr>
<tr><th>Issuer</th><td><code>${o.issuer}</code></td></tr>
<tr><th>Discovery URL</th><td><code id="discovery-url">${discovery}</code></td></tr>
<tr><th>Redirect URI</th><td><code>${redirectUri}</code></td></tr>
<tr><th>Scopes</th><td><code>${scope}</code></td></tr>
<tr><th>Client type</th><td>public: no secret; PKCE with S256 is required</td></tr>
</tbody></table>
<h2>openid-client</h2><pre><code id="snippet-openid-client">${openidClient}</code></pre>
<h2>oauth4webapi</h2><pre><code id="snippet-oauth4webapi">${oauth4webapi}</code></pre>
<p><a href="${frame.adminPath}/applications/${encodeURIComponent(a.clientId)}">\
Back to the application</a></p></section>`,
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

// Users

export function userList(
  frame: Frame,
  o: { items: User[]; q: string | undefined; nextCursor?: string | undefined },
): string {
  const p = frame.adminPath;
  return layout({
    title: 'Users',
    frame,
    current: 'users',
    body: html`<section class="card"><h1>Users</h1>
<form method="get" action="${p}/users" role="search" class="row"><label for="q">Search</label>\
<input id="q" type="search" name="q" value="${o.q ?? ''}" placeholder="e-mail or name">\
<button type="submit" class="secondary">Search</button></form>
<table><thead><tr><th>E-mail</th><th>Name</th><th>Verified</th><th>Status</th><th>Role</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="5">No users${o.q ? ' match' : ' yet'}.</td></tr>` : ''}
${o.items.map(
  (u) => html`<tr><td><a href="${p}/users/${u.id}">${u.email}</a></td><td>${u.name ?? ''}</td>\
<td>${u.emailVerified ? 'yes' : 'no'}</td>\
<td><span class="badge ${u.disabled ? 'off' : 'on'}">${u.disabled ? 'disabled' : 'active'}</span></td>\
<td>${u.role}</td></tr>`,
)}
</tbody></table>
${
  o.nextCursor
    ? html`<p><a href="${p}/users?\
${new URLSearchParams({ ...(o.q ? { q: o.q } : {}), cursor: o.nextCursor }).toString()}">Next page</a></p>`
    : ''
}
</section>`,
  });
}

export function userView(
  frame: Frame,
  o: {
    user: User;
    sessions: Array<{
      id: string;
      createdAt: string;
      lastSeenAt: string;
      active: boolean;
      ip: string | null;
      userAgent: string | null;
    }>;
    grants: Array<{ id: string; clientId: string; scope: string; createdAt: string; revokedAt: string | null }>;
  },
): string {
  const u = o.user;
  const base = `${frame.adminPath}/users/${u.id}`;
  const live = o.sessions.filter((s) => s.active);
  const grants = o.grants.filter((g) => !g.revokedAt);
  return layout({
    title: u.email,
    frame,
    current: 'users',
    body: html`<section class="card"><div class="row"><h1>${u.email}</h1>\
<span class="badge ${u.disabled ? 'off' : 'on'}">${u.disabled ? 'disabled' : 'active'}</span>\
${u.role === 'admin' ? html`<span class="badge">admin</span>` : ''}</div>
<table><tbody>
<tr><th>User id</th><td><code>${u.id}</code></td></tr>
<tr><th>Name</th><td>${u.name ?? ''}</td></tr>
<tr><th>E-mail verified</th><td>${u.emailVerified ? 'yes' : 'no'}</td></tr>
<tr><th>Permissions</th><td>${u.permissions.join(' ')}</td></tr>
<tr><th>Created</th><td>${u.createdAt}</td></tr>
</tbody></table>
<div class="row">
${postButton({
  action: `${base}/${u.disabled ? 'enable' : 'disable'}`,
  csrf: frame.csrf,
  label: u.disabled ? 'Enable' : 'Disable',
  className: 'secondary',
})}
${
  u.emailVerified
    ? ''
    : postButton({
        action: `${base}/verify`,
        csrf: frame.csrf,
        label: 'Mark e-mail verified',
        className: 'secondary',
      })
}
${postButton({
  action: `${base}/revoke-sessions`,
  csrf: frame.csrf,
  label: 'Revoke all sessions',
  className: 'secondary',
})}
${postButton({ action: `${base}/revoke-grants`, csrf: frame.csrf, label: 'Revoke all grants', className: 'secondary' })}
<a class="button secondary" href="${base}/delete">Delete…</a>
</div></section>
<section class="card"><h2>Sessions (${live.length} active)</h2>
<table><thead><tr><th>Started</th><th>Last seen</th><th>IP</th><th>Browser</th></tr></thead><tbody>
${live.length === 0 ? html`<tr><td colspan="4">No active sessions.</td></tr>` : ''}
${live.map(
  (s) => html`<tr><td>${s.createdAt}</td><td>${s.lastSeenAt}</td>\
<td>${s.ip ?? ''}</td><td>${(s.userAgent ?? '').slice(0, 80)}</td></tr>`,
)}
</tbody></table></section>
<section class="card"><h2>Grants (${grants.length} live)</h2>
<table><thead><tr><th>Application</th><th>Scope</th><th>Granted</th></tr></thead><tbody>
${grants.length === 0 ? html`<tr><td colspan="3">No live grants.</td></tr>` : ''}
${grants.map(
  (g) => html`<tr><td><a href="${frame.adminPath}/applications/${encodeURIComponent(g.clientId)}">\
<code>${g.clientId}</code></a></td><td>${g.scope}</td><td>${g.createdAt}</td></tr>`,
)}
</tbody></table></section>`,
  });
}

// Keys and audit

export function keysPage(
  frame: Frame,
  o: {
    keys: Array<{
      kid: string;
      alg: string;
      state: string;
      createdAt: string;
      activatedAt: string | null;
      retiredAt: string | null;
    }>;
    error?: string | undefined;
  },
): string {
  return layout({
    title: 'Signing keys',
    frame,
    current: 'keys',
    body: html`<section class="card"><h1>Signing keys</h1>
${alert(o.error)}
<table><thead><tr><th>Key id</th><th>Algorithm</th><th>State</th>\
<th>Created</th><th>Activated</th><th>Retired</th></tr></thead><tbody>
${o.keys.map(
  (k) => html`<tr><td><code>${k.kid}</code></td><td>${k.alg}</td>\
<td><span class="badge${k.state === 'current' ? ' on' : ''}">${k.state}</span></td>\
<td>${k.createdAt}</td><td>${k.activatedAt ?? ''}</td><td>${k.retiredAt ?? ''}</td></tr>`,
)}
</tbody></table>
<p class="muted">Rotation promotes the published next key to current and publishes a new next key; \
the old key stays published for verification.</p>
<p><a class="button" href="${frame.adminPath}/keys/rotate">Rotate…</a></p></section>`,
  });
}

export function auditPage(
  frame: Frame,
  o: {
    items: AuditEvent[];
    filters: Record<string, string | undefined>;
    nextCursor?: string | undefined;
    types: string[];
    error?: string | undefined;
  },
): string {
  const p = frame.adminPath;
  const f = o.filters;
  const next = o.nextCursor
    ? new URLSearchParams({
        ...(Object.fromEntries(Object.entries(f).filter(([, v]) => v)) as Record<string, string>),
        cursor: o.nextCursor,
      }).toString()
    : undefined;
  return layout({
    title: 'Audit log',
    frame,
    current: 'audit',
    body: html`<section class="card"><h1>Audit log</h1>
${alert(o.error)}
<form method="get" action="${p}/audit" class="filters">
<div><label for="a-type">Event type</label><select id="a-type" name="type"><option value="">any</option>\
${o.types.map((t) => html`<option value="${t}"${f.type === t ? html` selected` : ''}>${t}</option>`)}</select></div>
<div><label for="a-user">User id</label><input id="a-user" type="text" name="userId" value="${f.userId ?? ''}"></div>
<div><label for="a-client">Client id</label>\
<input id="a-client" type="text" name="clientId" value="${f.clientId ?? ''}"></div>
<div><label for="a-from">From (UTC)</label>\
<input id="a-from" type="datetime-local" name="from" value="${f.from ?? ''}"></div>
<div><label for="a-to">To (UTC)</label><input id="a-to" type="datetime-local" name="to" value="${f.to ?? ''}"></div>
<div><button type="submit" class="secondary">Filter</button></div>
</form>
<table><thead><tr><th>Time (UTC)</th><th>Event</th><th>Actor</th>\
<th>User</th><th>Application</th><th>IP</th><th>Detail</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="7">No events.</td></tr>` : ''}
${o.items.map(
  (e) => html`<tr><td>${e.createdAt.replace('T', ' ').replace(/\.\d+Z$/, '')}</td>\
<td><code>${e.type}</code></td><td>${e.actor ?? ''}</td>\
<td>${e.userId ? html`<a href="${p}/users/${e.userId}">${e.userId.slice(0, 8)}…</a>` : ''}</td>\
<td>${e.clientId ? html`<code>${e.clientId}</code>` : ''}</td><td>${e.ip ?? ''}</td>\
<td><code>${JSON.stringify(e.detail)}</code></td></tr>`,
)}
</tbody></table>
${next ? html`<p><a href="${p}/audit?${next}">Older events</a></p>` : ''}
</section>`,
  });
}

// Pages outside the signed-in frame

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
