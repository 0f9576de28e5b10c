// Admin web pages: a user's second factors (issue 34), a section of the user's page. Removing goes through a
// confirmation page (plugins/admin-web/factors.ts); nothing here shows a secret.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { Factor } from '../../src/domain/mfa.js';
import { html, type Html } from '../pages/kit.js';
import type { Frame } from './views-layout.js';

const KINDS: Record<Factor['kind'], string> = {
  passkey: 'Passkey',
  totp: 'Authenticator app',
  recovery_code: 'Recovery codes',
};

/** How a factor is named in a sentence: 'the passkey "Laptop"', 'the authenticator app', 'the recovery codes'. */
export function factorLabel(f: Factor): string {
  if (f.kind === 'passkey') return `the passkey "${f.name}"`;
  return f.kind === 'totp' ? 'the authenticator app' : 'the recovery codes';
}

function details(f: Factor): string {
  if (f.kind === 'passkey') return f.backedUp ? 'synced' : 'this device only';
  if (f.kind === 'recovery_code') return `${f.remaining ?? 0} unused`;
  return '';
}

export function factorSection(frame: Frame, userId: string, factors: Factor[]): Html {
  const base = `${frame.adminPath}/users/${userId}/factors`;
  // No empty table: on a narrow screen its headers alone would scroll, with nothing in it to focus.
  if (factors.length === 0)
    return html`<section class="card"><h2>Second factors (0)</h2><p>No second factors.</p></section>`;
  return html`<section class="card"><h2>Second factors (${factors.length})</h2>
<div class="scroll"><table><thead><tr><th>Type</th><th>Name</th><th>Created</th><th>Last used</th>\
<th>Details</th><th><span class="muted">Action</span></th></tr></thead><tbody>
${factors.map(
  (f) => html`<tr><td>${KINDS[f.kind]}</td><td>${f.name}</td><td>${f.createdAt}</td>\
<td>${f.lastUsedAt ?? 'never'}</td><td>${details(f)}</td>\
<td><a class="button secondary" href="${base}/${encodeURIComponent(f.id)}/remove" \
aria-label="Remove ${factorLabel(f)}">Remove…</a></td></tr>`,
)}
</tbody></table></div>
<div class="row"><a class="button secondary" href="${base}/reset">Reset all second factors…</a></div>
</section>`;
}
