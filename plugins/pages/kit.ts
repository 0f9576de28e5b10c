// The page kit of every server-rendered page (hosted login pages, end-session, admin web): the security
// headers, the HTML document, hidden inputs, form fields, alerts, and the rules both stylesheets share.
// Every value is escaped by html`` (src/html.ts).
// Long lines of markup and CSS end in a backslash: a line continuation inside a template literal adds nothing
// to the string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { FastifyReply } from 'fastify';
import { html, type Html } from '../../src/html.js';

export { escapeHtml, html, Html } from '../../src/html.js';

export const PAGE_CSP = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' https: data:",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/**
 * The CSP of a page that loads scripts of ours (the passkey ceremonies, issue 34): scripts from this origin only
 * (never inline), and fetch to this origin only; every other directive as PAGE_CSP.
 */
export const SCRIPTED_PAGE_CSP = `${PAGE_CSP}; script-src 'self'; connect-src 'self'`;

/**
 * Headers of every page: no caching, no framing, a CSP without inline scripts (`scripts`: scripts of this
 * origin allowed, SCRIPTED_PAGE_CSP).
 */
export function securityHeaders(reply: FastifyReply, o: { scripts?: boolean } = {}): FastifyReply {
  return reply
    .header('cache-control', 'no-store')
    .header('content-security-policy', o.scripts ? SCRIPTED_PAGE_CSP : PAGE_CSP)
    .header('x-frame-options', 'DENY')
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer');
}

/** Sends a rendered page with the security headers (a page with a <script src> element may load scripts of ours). */
export function sendPage(reply: FastifyReply, body: string, status = 200): FastifyReply {
  securityHeaders(reply, { scripts: body.includes('<script src="/') });
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

/** Sends a stylesheet of the kit (cached for an hour). */
export function sendStylesheet(reply: FastifyReply, css: string): FastifyReply {
  return reply
    .header('content-type', 'text/css; charset=utf-8')
    .header('cache-control', 'public, max-age=3600')
    .send(css);
}

/** The HTML document around a page body. */
export function htmlDocument(o: { title: string; stylesheet: string; body: Html }): string {
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${o.title}</title>
<link rel="stylesheet" href="${o.stylesheet}">
</head>
<body>
${o.body}
</body>
</html>`.value
  }`;
}

export function hidden(name: string, value: string | undefined): Html {
  return value === undefined ? html`` : html`<input type="hidden" name="${name}" value="${value}">`;
}

/** A form-level error. */
export function alert(message: string | undefined): Html {
  return message ? html`<p class="alert" role="alert">${message}</p>` : html``;
}

/**
 * One labelled form field: the wrapper (marked invalid), the label, the control the caller built, an
 * optional hint and the error paragraph the control points at (`${id}-hint`, `${id}-error`).
 */
export function field(o: {
  id: string;
  label: string;
  control: Html;
  hint?: string | undefined;
  error?: string | undefined;
  separator?: string;
}): Html {
  const nl = o.separator ?? '';
  const hint = o.hint ? html`<p class="hint" id="${o.id}-hint">${o.hint}</p>` : '';
  const error = o.error ? html`<p class="error" id="${o.id}-error">${o.error}</p>` : '';
  const label = html`<label for="${o.id}">${o.label}</label>`;
  return html`<div class="field${o.error ? ' invalid' : ''}">\
${nl}${label}${nl}${o.control}${hint}${nl}${error}${nl}</div>`;
}

/** Rules both stylesheets share, in the order each stylesheet places them. */
export const CSS = {
  reset: '*{box-sizing:border-box}',
  heading: 'h1{font-size:1.4rem;margin:0 0 1rem}',
  field: '.field{margin-bottom:1rem}label{display:block;font-weight:600;margin-bottom:.25rem}',
  alert: '.alert{background:#fef3f2;color:#b42318;padding:.6rem .8rem;border-radius:6px}',
  notice: '.notice{background:#ecfdf3;color:#05603a;padding:.6rem .8rem;border-radius:6px}',
  error: '.error{color:#b42318;margin:.25rem 0 0;font-size:.9rem}',
  muted: '.muted{color:#5b636e;font-size:.9rem}',
} as const;
