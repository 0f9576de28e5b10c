// Admin web pages: the audit log.
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { AuditEvent } from '../../src/services/audit.js';
import { alert, html, type Html } from '../pages/kit.js';
import { type Frame, layout } from './views-layout.js';

/** What the events of a page name, looked up once per page: user id → e-mail, client id → application name. */
export interface AuditNames {
  users: Map<string, string>;
  applications: Map<string, string>;
}

/** A detail value as a person reads it: lists joined, nothing as "none", anything nested as compact JSON. */
function readable(value: unknown): string {
  if (value === null || value === undefined) return 'none';
  if (Array.isArray(value)) return value.length ? value.map(readable).join(', ') : 'none';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** The event's detail as key: value lines (escaped like every value of the page). */
function detailList(detail: Record<string, unknown>): Html | string {
  const entries = Object.entries(detail);
  if (!entries.length) return '';
  return html`<ul class="detail">${entries.map(
    ([key, value]) => html`<li><span class="key">${key}</span>: ${readable(value)}</li>`,
  )}</ul>`;
}

/** The user an event names: the e-mail address when the user still exists, the full id on hover. */
function userCell(p: string, id: string | null, names: AuditNames): Html | string {
  if (!id) return '';
  const email = names.users.get(id);
  return html`<a href="${p}/users/${id}" title="${id}">${email ?? html`<code>${id}</code>`}</a>`;
}

/** The application an event names: its name when it still exists, the client id on hover. */
function applicationCell(p: string, clientId: string | null, names: AuditNames): Html | string {
  if (!clientId) return '';
  const name = names.applications.get(clientId);
  return name === undefined
    ? html`<code>${clientId}</code>`
    : html`<a href="${p}/applications/${encodeURIComponent(clientId)}" title="${clientId}">${name}</a>`;
}

export function auditPage(
  frame: Frame,
  o: {
    items: AuditEvent[];
    names?: AuditNames;
    filters: Record<string, string | undefined>;
    nextCursor?: string | undefined;
    types: string[];
    error?: string | undefined;
  },
): string {
  const p = frame.adminPath;
  const f = o.filters;
  const names = o.names ?? { users: new Map(), applications: new Map() };
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
<div class="scroll"><table class="audit"><thead><tr><th>Time (UTC)</th><th>Event</th><th>Actor</th>\
<th>User</th><th>Application</th><th>IP</th><th>Detail</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="7">No events.</td></tr>` : ''}
${o.items.map(
  (e) => html`<tr><td>${e.createdAt.replace('T', ' ').replace(/\.\d+Z$/, '')}</td>\
<td><code>${e.type}</code></td><td>${e.actor ?? ''}</td>\
<td>${userCell(p, e.userId, names)}</td><td>${applicationCell(p, e.clientId, names)}</td><td>${e.ip ?? ''}</td>\
<td>${detailList(e.detail)}</td></tr>`,
)}
</tbody></table></div>
${next ? html`<p><a href="${p}/audit?${next}">Older events</a></p>` : ''}
</section>`,
  });
}
