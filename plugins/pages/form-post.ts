// OAuth 2.0 Form Post Response Mode: the authorization response (a code or an error, with state and iss) as
// hidden fields of a form the browser POSTs to the client's redirect_uri. One inline script submits it on load,
// allowed by its hash alone; without JavaScript the <noscript> button does it. Nothing else may load or run:
// `default-src 'none'`, and the form may only go to the redirect_uri's origin (form-action). Every value is
// escaped (html``); the redirect_uri is one the application registered (the service checked it, exactly).
// node-oidc-provider's lib/response_modes/form_post.js is the model.
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { Html, html } from '../../src/html.js';

/** The one script of the page, inserted as is (its hash is in the CSP). */
const SUBMIT_SCRIPT = 'document.forms[0].submit();';
const SUBMIT_SCRIPT_HASH = `'sha256-${createHash('sha256').update(SUBMIT_SCRIPT).digest('base64')}'`;

/** What form-action allows for an action URL: its origin (http, https), or its scheme alone (a custom one). */
function formActionSource(action: string): string {
  const url = new URL(action);
  return url.origin !== 'null' ? url.origin : url.protocol;
}

/** The page's Content-Security-Policy for a form posted to `action`. */
export function formPostCsp(action: string): string {
  return [
    "default-src 'none'",
    `script-src ${SUBMIT_SCRIPT_HASH}`,
    `form-action ${formActionSource(action)}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; ');
}

export function formPostPage(action: string, fields: Record<string, string>): string {
  const inputs = Object.entries(fields).map(
    ([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`,
  );
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Returning to the application</title>
</head>
<body>
<form method="post" action="${action}">
${inputs}<noscript>
<p>JavaScript is off: press the button to return to the application.</p>
<button type="submit" autofocus>Continue</button>
</noscript>
</form>
<script>${new Html(SUBMIT_SCRIPT)}</script>
</body>
</html>`.value
  }`;
}

/** Sends the page: no caching, no referrer, no framing, the CSP above. */
export function sendFormPost(reply: FastifyReply, action: string, fields: Record<string, string>): FastifyReply {
  return reply
    .code(200)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .header('content-security-policy', formPostCsp(action))
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .type('text/html; charset=utf-8')
    .send(formPostPage(action, fields));
}
