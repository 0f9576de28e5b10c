// Admin web pages: upstream identity providers (issue 35; list, form, details with the callback URL and the public
// key to register upstream) and a user's linked identities (a section of the user's page).
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { UpstreamProviderDetails } from '../../src/domain/upstream-config.js';
import { GITHUB_PRESET, MAPPING_FIELDS, type UpstreamProvider } from '../../src/domain/upstream.js';
import type { LinkedIdentity } from '../../src/services/upstreams/identities.js';
import { alert, hidden, html, type Html } from '../pages/kit.js';
import { type Errors, type Frame, field, layout } from './views-layout.js';

export function upstreamList(frame: Frame, o: { items: UpstreamProviderDetails[] }): string {
  const p = frame.adminPath;
  return layout({
    title: 'Sign-in providers',
    frame,
    current: 'upstreams',
    body: html`<section class="card"><div class="row"><h1>Sign-in providers</h1>\
<a class="button" href="${p}/upstreams/new?preset=github">Add GitHub</a>\
<a class="button" href="${p}/upstreams/new">Add an OpenID Connect provider</a>\
<a class="button secondary" href="${p}/upstreams/new?kind=oauth2">Add an OAuth 2.0 provider</a></div>
<p class="hint">People sign in with these instead of a password: Google, GitHub, your company's directory \
(Microsoft Entra ID, Okta, Keycloak…).</p>
<div class="scroll"><table><thead><tr><th>Name</th><th>Id</th><th>Kind</th><th>Status</th><th>SSO domains</th></tr>\
</thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="5">No sign-in providers yet.</td></tr>` : ''}
${o.items.map(
  (u) => html`<tr><td><a href="${p}/upstreams/${encodeURIComponent(u.id)}">${u.name}</a></td>\
<td><code>${u.id}</code></td><td>${u.kind === 'oidc' ? 'OpenID Connect' : 'OAuth 2.0'}</td>\
<td><span class="badge ${u.enabled ? 'on' : 'off'}">${u.enabled ? 'enabled' : 'disabled'}</span></td>\
<td>${u.ssoDomains.join(', ')}</td></tr>`,
)}
</tbody></table></div></section>`,
  });
}

/** The form's values, as text. */
export interface UpstreamForm {
  preset?: string;
  id?: string;
  kind?: string;
  name?: string;
  logoUrl?: string;
  issuer?: string;
  authorizationEndpoint?: string;
  tokenEndpoint?: string;
  userinfoEndpoint?: string;
  emailsEndpoint?: string;
  clientId?: string;
  clientAuth?: string;
  scopes?: string;
  mapping?: string;
  allowSignUp?: boolean;
  allowedDomains?: string;
  trustEmailVerified?: boolean;
  ssoDomains?: string;
  storeTokens?: boolean;
  enabled?: boolean;
}

const mappingText = (m: Record<string, string | undefined>) =>
  Object.entries(m)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

export function formFromUpstream(u: UpstreamProvider): UpstreamForm {
  return {
    kind: u.kind,
    name: u.name,
    logoUrl: u.logoUrl ?? '',
    issuer: u.issuer ?? '',
    authorizationEndpoint: u.authorizationEndpoint ?? '',
    tokenEndpoint: u.tokenEndpoint ?? '',
    userinfoEndpoint: u.userinfoEndpoint ?? '',
    emailsEndpoint: u.emailsEndpoint ?? '',
    clientId: u.clientId,
    clientAuth: u.clientAuth,
    scopes: u.scopes.join(' '),
    mapping: mappingText(u.mapping),
    allowSignUp: u.allowSignUp,
    allowedDomains: u.allowedDomains.join('\n'),
    trustEmailVerified: u.trustEmailVerified,
    ssoDomains: u.ssoDomains.join('\n'),
    storeTokens: u.storeTokens,
    enabled: u.enabled,
  };
}

/** A new provider's form: the GitHub preset's values, an OAuth 2.0 provider's, or an OpenID Connect provider's. */
export function newUpstreamForm(preset: string | undefined, kind: string | undefined): UpstreamForm {
  if (preset === 'github') {
    return {
      preset: 'github',
      id: 'github',
      kind: GITHUB_PRESET.kind,
      name: GITHUB_PRESET.name,
      authorizationEndpoint: GITHUB_PRESET.authorizationEndpoint,
      tokenEndpoint: GITHUB_PRESET.tokenEndpoint,
      userinfoEndpoint: GITHUB_PRESET.userinfoEndpoint,
      emailsEndpoint: GITHUB_PRESET.emailsEndpoint,
      clientAuth: GITHUB_PRESET.clientAuth,
      scopes: GITHUB_PRESET.scopes.join(' '),
      mapping: mappingText(GITHUB_PRESET.mapping),
      trustEmailVerified: GITHUB_PRESET.trustEmailVerified,
      enabled: true,
    };
  }
  if (kind === 'oauth2') return { kind: 'oauth2', clientAuth: 'client_secret_basic', enabled: true };
  return { kind: 'oidc', clientAuth: 'client_secret_basic', scopes: 'openid email profile', enabled: true };
}

function checkbox(name: string, checked: boolean | undefined, label: Html | string): Html {
  return html`<p><label><input type="checkbox" name="${name}" value="on"${checked ? html` checked` : ''}> \
${label}</label></p>`;
}

const BUTTON_HINT = 'The button says "Continue with …"';
const OVERRIDE = 'Only to override discovery';
const EMAILS_HINT = 'GitHub-style list of the user’s addresses, with the verified one';

const CLIENT_AUTH: Array<[string, string]> = [
  ['client_secret_basic', 'Client secret, HTTP Basic (client_secret_basic)'],
  ['client_secret_post', 'Client secret in the form body (client_secret_post)'],
  ['private_key_jwt', 'A key made here (private_key_jwt): register its public key at the provider'],
];

export function upstreamForm(
  frame: Frame,
  o: {
    provider?: UpstreamProviderDetails;
    values: UpstreamForm;
    errors?: Errors;
    formError?: string;
    callbackBase: string;
  },
): string {
  const p = frame.adminPath;
  const e = o.errors ?? {};
  const v = o.values;
  const editing = Boolean(o.provider);
  const action = editing ? `${p}/upstreams/${encodeURIComponent(o.provider!.id)}` : `${p}/upstreams`;
  const title = editing
    ? `Edit ${o.provider!.name}`
    : v.preset === 'github'
      ? 'Add GitHub'
      : v.kind === 'oauth2'
        ? 'Add an OAuth 2.0 provider'
        : 'Add an OpenID Connect provider';
  const oidc = v.kind !== 'oauth2';
  const urlField = (name: keyof UpstreamForm, label: string, hint: string) =>
    field({ name, label, type: 'url', value: v[name] as string | undefined, error: e[name], hint });
  return layout({
    title,
    frame,
    current: 'upstreams',
    body: html`<section class="card"><h1>${title}</h1>
${alert(o.formError)}
<p class="hint">Register this callback URL (redirect URI) at the provider: \
<code>${editing ? o.provider!.callbackUrl : `${o.callbackBase}/upstream/{id}/callback`}</code></p>
<form method="post" action="${action}" novalidate>
${hidden('csrf', frame.csrf)}${v.preset ? hidden('preset', v.preset) : ''}${hidden('kind', v.kind ?? 'oidc')}
${
  editing
    ? ''
    : field({
        name: 'id',
        label: 'Id',
        value: v.id,
        error: e.id,
        required: true,
        hint: 'Lower-case letters, digits and hyphens (up to 32), e.g. google or acme: part of the callback URL',
      })
}
${field({ name: 'name', label: 'Button name', value: v.name, error: e.name, required: true, hint: BUTTON_HINT })}
${
  oidc
    ? field({
        name: 'issuer',
        label: 'Issuer',
        type: 'url',
        value: v.issuer,
        error: e.issuer,
        required: true,
        hint: 'e.g. https://accounts.google.com, https://login.microsoftonline.com/{tenant}/v2.0, \
https://{org}.okta.com, https://keycloak.example.com/realms/{realm}',
      })
    : ''
}
${field({ name: 'clientId', label: 'Client id', value: v.clientId, error: e.clientId, required: true })}
${field({
  name: 'clientSecret',
  label: 'Client secret',
  type: 'password',
  value: '',
  error: e.clientSecret,
  autocomplete: 'off',
  hint: editing
    ? o.provider!.hasClientSecret
      ? 'A secret is stored (never shown). Leave empty to keep it; enter one to replace it.'
      : 'No secret is stored.'
    : 'The secret the provider gave this client (not needed with private_key_jwt). Stored encrypted, never shown.',
})}
<fieldset><legend>Client authentication at the provider</legend>
${CLIENT_AUTH.map(
  ([value, label]) =>
    html`<label><input type="radio" name="clientAuth" value="${value}"\
${(v.clientAuth ?? 'client_secret_basic') === value ? html` checked` : ''}> \
${label}</label><br>`,
)}
${e.clientAuth ? html`<p class="error">${e.clientAuth}</p>` : ''}
</fieldset>
${field({ name: 'scopes', label: 'Scopes', value: v.scopes, error: e.scopes, hint: 'Separated by spaces' })}
${checkbox('allowSignUp', v.allowSignUp, 'Create an account at a first sign-in with an address nobody has here')}
${checkbox(
  'trustEmailVerified',
  v.trustEmailVerified,
  'Trust the provider when it says an address is verified (an existing account is still linked only after its ' +
    'owner proves it)',
)}
${field({
  name: 'allowedDomains',
  label: 'Allowed e-mail domains',
  value: v.allowedDomains,
  error: e.allowedDomains,
  textarea: true,
  hint: 'One per line; empty: any. Only addresses at these domains may sign in with this provider',
})}
${field({
  name: 'ssoDomains',
  label: 'Single sign-on domains',
  value: v.ssoDomains,
  error: e.ssoDomains,
  textarea: true,
  hint: 'One per line: addresses at these domains go straight to this provider, and their password sign-in is off',
})}
${checkbox('enabled', v.enabled, 'Enabled: its button shows on the sign-in and sign-up pages')}
<details${oidc ? '' : html` open`}><summary>Endpoints, mapping and more</summary>
${urlField('authorizationEndpoint', 'Authorization endpoint', oidc ? OVERRIDE : 'Required')}
${urlField('tokenEndpoint', 'Token endpoint', oidc ? OVERRIDE : 'Required')}
${urlField('userinfoEndpoint', 'User endpoint', oidc ? OVERRIDE : 'Required: returns the user as JSON')}
${urlField('emailsEndpoint', 'E-mail addresses endpoint', EMAILS_HINT)}
${field({
  name: 'mapping',
  label: 'Claim mapping',
  value: v.mapping,
  error: e.mapping,
  textarea: true,
  hint: `One field=claim per line; fields: ${MAPPING_FIELDS.join(', ')}. Empty: the standard claims (sub, email…)`,
})}
${urlField('logoUrl', 'Logo URL', 'https URL of a square image')}
${checkbox('storeTokens', v.storeTokens, 'Keep the provider’s access and refresh tokens (encrypted)')}
</details>
<div class="row"><button type="submit">${editing ? 'Save changes' : 'Add provider'}</button>\
<a class="button secondary" href="${editing ? action : `${p}/upstreams`}">Cancel</a></div>
</form></section>`,
  });
}

export function upstreamView(frame: Frame, o: { provider: UpstreamProviderDetails; linked: number }): string {
  const u = o.provider;
  const base = `${frame.adminPath}/upstreams/${encodeURIComponent(u.id)}`;
  const row = (label: string, value: Html | string) => html`<tr><th>${label}</th><td>${value}</td></tr>`;
  const code = (value: string | null) => (value ? html`<code>${value}</code>` : '');
  return layout({
    title: u.name,
    frame,
    current: 'upstreams',
    body: html`<section class="card"><div class="row"><h1>${u.name}</h1>\
<span class="badge ${u.enabled ? 'on' : 'off'}">${u.enabled ? 'enabled' : 'disabled'}</span></div>
<h2>Register at the provider</h2>
<p>Callback URL (redirect URI): <code id="callback-url">${u.callbackUrl}</code></p>
${
  u.publicJwk
    ? html`<p>Public key (private_key_jwt), to register as the client's key:</p>\
<pre><code id="public-jwk">${JSON.stringify(u.publicJwk, null, 2)}</code></pre>`
    : ''
}
<div class="scroll"><table><tbody>
${row('Id', code(u.id))}
${row('Kind', u.kind === 'oidc' ? 'OpenID Connect' : 'OAuth 2.0 (no ID token)')}
${u.issuer ? row('Issuer', code(u.issuer)) : ''}
${u.authorizationEndpoint ? row('Authorization endpoint', code(u.authorizationEndpoint)) : ''}
${u.tokenEndpoint ? row('Token endpoint', code(u.tokenEndpoint)) : ''}
${u.userinfoEndpoint ? row('User endpoint', code(u.userinfoEndpoint)) : ''}
${u.emailsEndpoint ? row('E-mail addresses endpoint', code(u.emailsEndpoint)) : ''}
${row('Client id', code(u.clientId))}
${row('Client authentication', code(u.clientAuth))}
${row('Client secret', u.hasClientSecret ? 'stored (encrypted, never shown)' : 'none')}
${row('Scopes', u.scopes.join(' '))}
${row('Claim mapping', mappingText(u.mapping) || 'the standard claims')}
${row('Creates accounts', u.allowSignUp ? 'yes' : 'no')}
${row('Allowed domains', u.allowedDomains.join(', ') || 'any')}
${row('Trusts email_verified', u.trustEmailVerified ? 'yes' : 'no')}
${row('Single sign-on domains', u.ssoDomains.join(', ') || 'none')}
${row('Keeps tokens', u.storeTokens ? 'yes' : 'no')}
${row('Linked identities', String(o.linked))}
${row('Created', u.createdAt)}
</tbody></table></div>
<div class="row"><a class="button" href="${base}/edit">Edit</a>\
${
  u.clientAuth === 'private_key_jwt' ? html`<a class="button secondary" href="${base}/rotate-key">Rotate key…</a>` : ''
}\
<a class="button secondary" href="${base}/delete">Delete…</a></div></section>`,
  });
}

/** The user's linked identities, a section of the user's page; unlinking goes through a confirmation page. */
export function identitySection(frame: Frame, userId: string, items: LinkedIdentity[]): Html {
  const base = `${frame.adminPath}/users/${userId}/identities`;
  if (items.length === 0) {
    return html`<section class="card"><h2>Linked identities (0)</h2>\
<p>No identities at sign-in providers.</p></section>`;
  }
  return html`<section class="card"><h2>Linked identities (${items.length})</h2>
<div class="scroll"><table><thead><tr><th>Provider</th><th>Subject</th><th>E-mail</th><th>Linked</th>\
<th>Last used</th><th><span class="muted">Action</span></th></tr></thead><tbody>
${items.map(
  (i) => html`<tr><td>${i.providerName}</td><td><code>${i.subject}</code></td><td>${i.email ?? ''}</td>\
<td>${i.createdAt}</td><td>${i.lastUsedAt ?? 'never'}</td>\
<td><a class="button secondary" href="${base}/${encodeURIComponent(i.id)}/unlink" \
aria-label="Unlink the ${i.providerName} identity ${i.subject}">Unlink…</a></td></tr>`,
)}
</tbody></table></div></section>`;
}
