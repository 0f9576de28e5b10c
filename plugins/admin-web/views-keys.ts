// Admin web pages: signing keys.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import { alert, html } from '../pages/kit.js';
import { type Frame, layout } from './views-layout.js';

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
<div class="scroll"><table><thead><tr><th>Key id</th><th>Algorithm</th><th>State</th>\
<th>Created</th><th>Activated</th><th>Retired</th></tr></thead><tbody>
${o.keys.map(
  (k) => html`<tr><td><code>${k.kid}</code></td><td>${k.alg}</td>\
<td><span class="badge${k.state === 'current' ? ' on' : ''}">${k.state}</span></td>\
<td>${k.createdAt}</td><td>${k.activatedAt ?? ''}</td><td>${k.retiredAt ?? ''}</td></tr>`,
)}
</tbody></table></div>
<p class="muted">Rotation promotes the published next key to current and publishes a new next key; \
the old key stays published for verification.</p>
<p><a class="button" href="${frame.adminPath}/keys/rotate">Rotate…</a></p></section>`,
  });
}
