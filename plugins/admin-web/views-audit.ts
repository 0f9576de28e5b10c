// Admin web pages: the audit log.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { AuditEvent } from '../../src/services/audit.js';
import { alert, html } from '../pages/kit.js';
import { type Frame, layout } from './views-layout.js';

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
