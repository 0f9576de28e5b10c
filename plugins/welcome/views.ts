// The welcome page at / (WELCOME_PAGE): what this server is and where to go. `public` leaves out the
// admin web; no setup token is ever shown here (the setup link is printed on the server's console).
import { html, htmlDocument, type Html } from '../pages/kit.js';

export interface WelcomeView {
  mode: 'on' | 'public';
  issuer: string;
  signInUrl: string;
  /** The account pages (profile, security, connected applications). */
  accountUrl: string;
  adminUrl: string;
  /** Only in mode on: whether an admin exists yet. */
  adminExists?: boolean | undefined;
  /** In production no setup link is printed at start: only the commands are named. */
  production: boolean;
  demoUrl?: string | undefined;
  stylesheet: string;
}

const link = (href: string, text: string) => html`<a href="${href}">${text}</a>`;

export function welcomePage(v: WelcomeView): string {
  const discovery = `${v.issuer}/.well-known/openid-configuration`;
  const printed = v.production ? '' : 'Open the one-time setup link the server printed on its console at start, or ';
  const admin: Html =
    v.mode !== 'on'
      ? html``
      : v.adminExists
        ? html`<dt>Admin web</dt><dd>${link(v.adminUrl, v.adminUrl)}</dd>`
        : html`<dt>Admin web</dt><dd>${link(v.adminUrl, v.adminUrl)}<br>\
<strong>No admin exists yet: create the first admin.</strong> \
<span class="muted">${printed}\
run <code>idp admin setup-link</code> (or <code>idp users create --admin</code>).</span></dd>`;
  return htmlDocument({
    title: 'Identity provider',
    stylesheet: v.stylesheet,
    body: html`<main>
<h1>Identity provider</h1>
<p>This server is an OpenID Connect provider: applications send their users here to sign in.</p>
<dl>
<dt>Issuer</dt><dd><code>${v.issuer}</code></dd>
<dt>Discovery</dt><dd>${link(discovery, discovery)}</dd>
<dt>Sign in</dt><dd>${link(v.signInUrl, 'Sign in or create an account')}</dd>
<dt>Your account</dt><dd>${link(v.accountUrl, 'Profile, security and connected applications')}</dd>
${admin}
${
  v.demoUrl
    ? html`<dt>Live demo</dt><dd>${link(v.demoUrl, 'Try the demo application')} \
<span class="muted">(a relying party that signs you in through this provider)</span></dd>`
    : ''
}
</dl>
<h2>Documentation</h2>
<ul>
<li>${link('/api/openapi.json', 'OpenAPI document')} <span class="muted">(/api/openapi.json)</span></li>
<li>The README: <em>Quick start</em>, <em>Configuration</em>, \
<em>Endpoints</em> (the authorization code flow with PKCE)</li>
</ul>
</main>`,
  });
}
