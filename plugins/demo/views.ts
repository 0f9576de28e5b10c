// The demo relying party's page (/demo): signed out, a "Sign in" button; signed in, the verified ID token
// (header and claims), UserInfo, /api/external/me, the refresh token's fingerprints and the buttons.
import { html, htmlDocument, type Html } from '../pages/kit.js';
import type { VerifiedIdToken } from './client.js';

export interface DemoView {
  stylesheet: string;
  issuer: string;
  error?: string | undefined;
  notice?: string | undefined;
  signedIn?:
    | {
        idToken: VerifiedIdToken;
        userinfo: Record<string, unknown> | string;
        me: Record<string, unknown> | string;
        scope: string | undefined;
        accessTokenExpiresAt: string | undefined;
        refresh: { current: string | undefined; previous: string | undefined; count: number };
      }
    | undefined;
}

const pretty = (value: unknown) =>
  html`<pre>${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>`;

function signedInBody(s: NonNullable<DemoView['signedIn']>): Html {
  const fromUserinfo = typeof s.userinfo === 'object' ? s.userinfo.email : undefined;
  const who = String(fromUserinfo ?? s.idToken.claims.email ?? s.idToken.claims.sub);
  return html`<p role="status">Signed in as <strong>${who}</strong> through the provider.</p>
<div class="buttons">
<form method="post" action="/demo/refresh"><button type="submit">Refresh</button></form>
<form method="post" action="/demo/logout"><button type="submit" class="secondary">Sign out</button></form>
</div>
<h2>ID token (signature verified against the JWKS)</h2>
<p class="muted">Checked with jose: signature, issuer, audience, expiry and the nonce of the sign-in.</p>
<h3>Header</h3>${pretty(s.idToken.header)}
<h3>Claims</h3>${pretty(s.idToken.claims)}
<h2>UserInfo</h2>${pretty(s.userinfo)}
<h2>/api/external/me</h2>${pretty(s.me)}
<h2>Tokens</h2>
<dl>
<dt>Scope</dt><dd><code>${s.scope ?? ''}</code></dd>
<dt>Access token expires</dt><dd>${s.accessTokenExpiresAt ?? 'unknown'}</dd>
<dt>Refresh token</dt><dd id="refresh-current"><code>${s.refresh.current ?? 'none'}</code></dd>
<dt>Previous refresh token</dt><dd id="refresh-previous"><code>${s.refresh.previous ?? 'none yet'}</code>\
${s.refresh.previous ? html` <span class="muted">(rotated: it no longer works)</span>` : ''}</dd>
<dt>Refreshes</dt><dd id="refresh-count">${s.refresh.count}</dd>
</dl>
<p class="muted">Refresh tokens are shown as a short prefix and a SHA-256 fingerprint only.</p>`;
}

export function demoPage(v: DemoView): string {
  return htmlDocument({
    title: 'Demo application',
    stylesheet: v.stylesheet,
    body: html`<main>
<h1>Demo application</h1>
<p class="demo-note">This is a demo of the identity provider: a relying party that signs you in through \
<code>${v.issuer}</code> like any third-party application would (authorization code flow with PKCE, state \
and nonce; only the public endpoints). See the <a href="/">welcome page</a>, the \
<a href="/api/openapi.json">OpenAPI document</a> and the README's <em>Endpoints</em> section.</p>
${v.error ? html`<p class="alert" role="alert">${v.error}</p>` : ''}\
${v.notice ? html`<p class="notice" role="status">${v.notice}</p>` : ''}
${
  v.signedIn
    ? signedInBody(v.signedIn)
    : html`<p>You are not signed in to the demo.</p>
<div class="buttons"><a class="button" href="/demo/login">Sign in</a></div>`
}
</main>`,
  });
}
