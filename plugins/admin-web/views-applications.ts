// Admin web pages: applications (list, form, details, integration snippets).
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import { DEFAULT_ALLOWED_SCOPES, SCOPES } from '../../src/oauth/scopes.js';
import { type Application, isSelfRegistered } from '../../src/domain/application.js';
import type { ClientSecretInfo } from '../../src/services/applications.js';
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
<div class="scroll"><table><thead><tr><th>Name</th><th>Client id</th><th>Type</th><th>Status</th><th>Source</th></tr>\
</thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="5">No applications${o.q ? ' match' : ' yet'}.</td></tr>` : ''}
${o.items.map(
  (a) => html`<tr><td><a href="${p}/applications/${encodeURIComponent(a.clientId)}">${a.clientName}</a></td>\
<td><code>${a.clientId}</code></td>\
<td>${a.clientType === 'public' ? 'public' : html`server-side (<code>${a.tokenEndpointAuthMethod}</code>)`}</td>\
<td><span class="badge ${a.enabled ? 'on' : 'off'}">${a.enabled ? 'enabled' : 'disabled'}</span></td><td>${
    a.source === 'static'
      ? html`static (read-only${o.staticSource ? html`, ${o.staticSource}` : ''})`
      : isSelfRegistered(a)
        ? html`<span class="badge self-registered">${REGISTRATION_LABELS[a.registration]}</span>`
        : 'database'
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
  /** "public" (default) or "confidential" (a server-side application). */
  clientType?: string;
  /** Confidential only: client_secret_basic (default), client_secret_post or private_key_jwt. */
  authMethod?: string;
  pkce?: string;
  clientCredentials?: boolean;
  /** Only sessions with a second factor get codes. */
  requireMfa?: boolean;
  jwks?: string;
  jwksUri?: string;
}

/** The confidential methods the form offers, with their labels. */
const AUTH_METHODS: Array<[string, string]> = [
  ['client_secret_basic', 'Client secret, HTTP Basic (client_secret_basic)'],
  ['client_secret_post', 'Client secret in the form body (client_secret_post)'],
  ['private_key_jwt', 'Signed JWT with the application’s key (private_key_jwt)'],
];

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
    clientType: a.clientType,
    authMethod: a.tokenEndpointAuthMethod === 'none' ? 'client_secret_basic' : a.tokenEndpointAuthMethod,
    pkce: a.pkce,
    clientCredentials: a.grantTypes.includes('client_credentials'),
    requireMfa: a.requireMfa,
    jwks: a.jwks ? JSON.stringify(a.jwks, null, 2) : '',
    jwksUri: a.jwksUri ?? '',
  };
}

/** A group of radio buttons with a legend, its error under it (the fieldset points at it). */
function radios(o: {
  name: string;
  legend: string;
  value: string;
  choices: Array<[string, string]>;
  error?: string | undefined;
  hint?: string;
}) {
  const id = `f-${o.name}`;
  const described = [o.hint ? `${id}-hint` : '', o.error ? `${id}-error` : ''].filter(Boolean).join(' ');
  return html`<fieldset${described ? html` aria-describedby="${described}"` : ''}><legend>${o.legend}</legend>
${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ''}
${o.choices.map(
  ([value, label]) =>
    html`<label><input type="radio" name="${o.name}" value="${value}"${o.value === value ? html` checked` : ''}>\
 ${label}</label><br>`,
)}
${o.error ? html`<p class="error" id="${id}-error">${o.error}</p>` : ''}
</fieldset>`;
}

/** The application type and, for a server-side application, how it authenticates: every field shown (no script). */
function clientTypeFields(values: ApplicationForm, e: Errors) {
  const confidential = values.clientType === 'confidential';
  return html`${radios({
    name: 'clientType',
    legend: 'Application type',
    value: confidential ? 'confidential' : 'public',
    choices: [
      ['public', 'Browser or mobile app (public, PKCE): no secret'],
      ['confidential', 'Server-side application (confidential): authenticates at the token endpoint'],
    ],
    error: e.clientType,
  })}
<fieldset><legend>Server-side application only</legend>
<p class="hint">Ignored for a browser or mobile app.</p>
${radios({
  name: 'authMethod',
  legend: 'Token endpoint authentication',
  value: values.authMethod || 'client_secret_basic',
  choices: AUTH_METHODS,
  error: e.tokenEndpointAuthMethod,
  hint: 'A client secret is made by the server and shown once.',
})}
${field({
  name: 'jwks',
  label: 'JWKS (private_key_jwt): the application’s public keys',
  value: values.jwks,
  error: e.jwks,
  textarea: true,
  hint: 'A JWK Set, { "keys": [ ... ] }, public keys only; or give a JWKS URI instead',
})}
${field({
  name: 'jwksUri',
  label: 'JWKS URI (private_key_jwt)',
  type: 'url',
  value: values.jwksUri,
  error: e.jwksUri,
  hint: 'https URL where the application publishes its public keys',
})}
${radios({
  name: 'pkce',
  legend: 'PKCE',
  value: values.pkce === 'optional' ? 'optional' : 'required',
  choices: [
    ['required', 'Required (recommended)'],
    ['optional', 'Optional (legacy server-side frameworks; a request without PKCE must then carry a nonce)'],
  ],
  error: e.pkce,
})}
<label><input type="checkbox" name="clientCredentials" value="on"${values.clientCredentials ? html` checked` : ''}\
${e.grantTypes ? html` aria-describedby="f-grantTypes-error"` : ''}> Allow the <code>client_credentials</code> grant \
(tokens for the application itself, no user)</label>
${e.grantTypes ? html`<p class="error" id="f-grantTypes-error">${e.grantTypes}</p>` : ''}
</fieldset>`;
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
<label><input type="checkbox" name="requireMfa" value="on"${o.values.requireMfa ? html` checked` : ''}> \
Require a second factor (only sessions with a passkey or an authenticator app get codes; others are asked \
for one)</label>
${clientTypeFields(o.values, e)}
<div class="row"><button type="submit">${editing ? 'Save changes' : 'Create application'}</button>\
<a class="button secondary" href="${editing ? action : `${p}/applications`}">Cancel</a></div>
</form></section>`,
  });
}

const OVERLAPS: Array<[string, string]> = [
  ['0', 'now'],
  ['3600', 'in 1 hour'],
  ['86400', 'in 24 hours'],
  ['604800', 'in 7 days'],
];

/** What a person reads for the type of an application. */
export function typeLabel(a: Application): string {
  return a.clientType === 'public' ? 'Browser or mobile app (public, PKCE)' : 'Server-side application (confidential)';
}

/** The live secrets, each with its Revoke button, and the rotation form (client_secret_basic/post only). */
function secretsCard(frame: Frame, base: string, secrets: ClientSecretInfo[]) {
  return html`<section class="card" aria-labelledby="secrets-heading"><h2 id="secrets-heading">Client secrets</h2>
<p class="hint">Secrets are stored as hashes: none can be shown again. Rotate to make a new one.</p>
<div class="scroll"><table id="secrets"><thead><tr><th>Secret id</th><th>Created</th><th>Ends</th><th></th></tr>\
</thead><tbody>
${secrets.length === 0 ? html`<tr><td colspan="4">No live secret: rotate to make one.</td></tr>` : ''}
${secrets.map((s) => {
  const revoke = postButton({
    action: `${base}/secrets/${encodeURIComponent(s.id)}/revoke`,
    csrf: frame.csrf,
    label: 'Revoke',
    className: 'danger',
  });
  return html`<tr><td><code>${s.id}</code></td><td>${s.createdAt}</td><td>${s.expiresAt ?? 'no end date'}</td>\
<td>${revoke}</td></tr>`;
})}
</tbody></table></div>
<form method="post" action="${base}/secrets" class="row">${hidden('csrf', frame.csrf)}\
<label for="f-overlapSeconds">The current secret ends</label><select id="f-overlapSeconds" name="overlapSeconds">\
${OVERLAPS.map(([v, label]) => html`<option value="${v}"${v === '86400' ? html` selected` : ''}>${label}</option>`)}\
</select><button type="submit">Rotate secret</button></form>
</section>`;
}

/** How the lists and pages name who registered an application that registered itself. */
const REGISTRATION_LABELS: Record<Application['registration'], string> = {
  operator: 'operator',
  dynamic: 'self-registered (dynamic)',
  metadata_document: 'self-registered (metadata document)',
};

const selfBadge = (a: Application) =>
  isSelfRegistered(a) ? html` <span class="badge self-registered">${REGISTRATION_LABELS[a.registration]}</span>` : '';

function selfRegisteredNote(a: Application) {
  if (!isSelfRegistered(a)) return '';
  const how =
    a.registration === 'metadata_document'
      ? 'a client ID metadata document at its client id'
      : 'dynamic registration, RFC 7591';
  const stays = a.registration === 'metadata_document' ? ' (it stays refused when its document is fetched again)' : '';
  return html`<p class="notice" id="self-registered">This application registered itself (${how}); no operator set \
it up. Its users always see the consent page. Disable it to refuse it${stays}, or delete it.</p>`;
}

export function applicationView(
  frame: Frame,
  o: { app: Application; staticSource: string | undefined; secrets?: ClientSecretInfo[] | undefined },
): string {
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
<span class="badge ${a.enabled ? 'on' : 'off'}">${a.enabled ? 'enabled' : 'disabled'}</span>${selfBadge(a)}</div>
${selfRegisteredNote(a)}
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
<tr><th>Type</th><td id="client-type">${typeLabel(a)}</td></tr>
<tr><th>Token endpoint authentication</th><td><code id="auth-method">${a.tokenEndpointAuthMethod}</code></td></tr>
<tr><th>PKCE</th><td id="pkce">${a.pkce}</td></tr>
<tr><th>Second factor</th><td id="require-mfa">${a.requireMfa ? 'required' : 'as the MFA setting says'}</td></tr>
<tr><th>Grant types</th><td>${a.grantTypes.join(' ')}</td></tr>
${a.jwksUri ? html`<tr><th>JWKS URI</th><td><code>${a.jwksUri}</code></td></tr>` : ''}
${
  a.jwks
    ? html`<tr><th>JWKS</th><td>\
<pre><code id="jwks">${JSON.stringify(a.jwks, null, 2)}</code></pre></td></tr>`
    : ''
}
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
</section>
${o.secrets ? secretsCard(frame, base, o.secrets) : ''}`,
  });
}

/** The new client secret, on the one page that answers the POST that made it. */
function secretShownOnce(clientSecret: string, secretId: string | undefined) {
  return html`<section class="card" aria-labelledby="secret-heading"><h2 id="secret-heading">Client secret</h2>
<p class="alert" role="alert"><strong>Copy this secret now: it will not be shown again.</strong> \
Only its hash is kept; if it is lost, rotate to make a new one.</p>
<pre><code id="client-secret">${clientSecret}</code></pre>
${secretId ? html`<p class="hint">Secret id <code>${secretId}</code></p>` : ''}`;
}

function clientTypeText(a: Application): string {
  if (a.clientType === 'public') return 'public: no secret; PKCE with S256 is required';
  const pkce = a.pkce === 'required' ? 'PKCE with S256 is required' : 'PKCE is optional (then a nonce is required)';
  return `confidential (server-side): authenticates with ${a.tokenEndpointAuthMethod}; ${pkce}`;
}

export function applicationCreated(
  frame: Frame,
  o: {
    app: Application;
    issuer: string;
    justCreated: boolean;
    /** Only on the page that answers the create or rotate POST: never in a URL, a redirect or a cookie. */
    clientSecret?: string | undefined;
    secretId?: string | undefined;
  },
): string {
  const a = o.app;
  const redirectUri = a.redirectUris[0] ?? 'https://app.example.com/callback';
  const scope = a.allowedScopes.filter((s) => s !== 'permissions').join(' ');
  const discovery = `${o.issuer}/.well-known/openid-configuration`;
  const input = {
    issuer: o.issuer,
    clientId: a.clientId,
    redirectUri,
    scope,
    tokenEndpointAuthMethod: a.tokenEndpointAuthMethod,
  };
  const openidClient = openidClientSnippet(input);
  const oauth4webapi = oauth4webapiSnippet(input);
  return layout({
    title: `${a.clientName}: integration`,
    frame,
    current: 'applications',
    body: html`<section class="card"><h1>\
${o.justCreated ? html`Created ${a.clientName}` : html`Integrate ${a.clientName}`}</h1>
${o.clientSecret ? secretShownOnce(o.clientSecret, o.secretId) : ''}
<div class="scroll"><table><tbody>
<tr><th>Client id</th><td><code id="client-id">${a.clientId}</code></td></tr>
<tr><th>Issuer</th><td><code>${o.issuer}</code></td></tr>
<tr><th>Discovery URL</th><td><code id="discovery-url">${discovery}</code></td></tr>
<tr><th>Redirect URI</th><td><code>${redirectUri}</code></td></tr>
<tr><th>Scopes</th><td><code>${scope}</code></td></tr>
<tr><th>Client type</th><td>${clientTypeText(a)}</td></tr>
</tbody></table></div>
<h2>openid-client</h2><pre><code id="snippet-openid-client">${openidClient}</code></pre>
<h2>oauth4webapi</h2><pre><code id="snippet-oauth4webapi">${oauth4webapi}</code></pre>
<p><a href="${frame.adminPath}/applications/${encodeURIComponent(a.clientId)}">\
Back to the application</a></p></section>`,
  });
}
