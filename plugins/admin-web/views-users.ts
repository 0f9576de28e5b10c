// Admin web pages: users (list, details with sessions and grants).
// Long lines of markup end in a backslash: a line continuation inside a template literal adds nothing to the
// string, so the line after it starts at column 0 (indentation there would become part of the output).
import type { User } from '../../src/domain/user.js';
import { html, type Html } from '../pages/kit.js';
import { type Frame, layout, postButton } from './views-layout.js';

export function userList(
  frame: Frame,
  o: { items: User[]; q: string | undefined; nextCursor?: string | undefined },
): string {
  const p = frame.adminPath;
  return layout({
    title: 'Users',
    frame,
    current: 'users',
    body: html`<section class="card"><h1>Users</h1>
<form method="get" action="${p}/users" role="search" class="row"><label for="q">Search</label>\
<input id="q" type="search" name="q" value="${o.q ?? ''}" placeholder="e-mail or name">\
<button type="submit" class="secondary">Search</button></form>
<div class="scroll"><table><thead><tr>\
<th>E-mail</th><th>Name</th><th>Verified</th><th>Status</th><th>Role</th></tr></thead><tbody>
${o.items.length === 0 ? html`<tr><td colspan="5">No users${o.q ? ' match' : ' yet'}.</td></tr>` : ''}
${o.items.map(
  (u) => html`<tr><td><a href="${p}/users/${u.id}">${u.email}</a></td><td>${u.name ?? ''}</td>\
<td>${u.emailVerified ? 'yes' : 'no'}</td>\
<td><span class="badge ${u.disabled ? 'off' : 'on'}">${u.disabled ? 'disabled' : 'active'}</span></td>\
<td>${u.role}</td></tr>`,
)}
</tbody></table></div>
${
  o.nextCursor
    ? html`<p><a href="${p}/users?\
${new URLSearchParams({ ...(o.q ? { q: o.q } : {}), cursor: o.nextCursor }).toString()}">Next page</a></p>`
    : ''
}
</section>`,
  });
}

export function userView(
  frame: Frame,
  o: {
    user: User;
    sessions: Array<{
      id: string;
      createdAt: string;
      lastSeenAt: string;
      active: boolean;
      ip: string | null;
      userAgent: string | null;
    }>;
    grants: Array<{ id: string; clientId: string; scope: string; createdAt: string; revokedAt: string | null }>;
    /** More sections after the details (the second factors: views-factors.ts). */
    sections?: Html[];
  },
): string {
  const u = o.user;
  const base = `${frame.adminPath}/users/${u.id}`;
  const live = o.sessions.filter((s) => s.active);
  const grants = o.grants.filter((g) => !g.revokedAt);
  return layout({
    title: u.email,
    frame,
    current: 'users',
    body: html`<section class="card"><div class="row"><h1>${u.email}</h1>\
<span class="badge ${u.disabled ? 'off' : 'on'}">${u.disabled ? 'disabled' : 'active'}</span>\
${u.role === 'admin' ? html`<span class="badge">admin</span>` : ''}</div>
<div class="scroll"><table><tbody>
<tr><th>User id</th><td><code>${u.id}</code></td></tr>
<tr><th>Name</th><td>${u.name ?? ''}</td></tr>
<tr><th>E-mail verified</th><td>${u.emailVerified ? 'yes' : 'no'}</td></tr>
<tr><th>Permissions</th><td>${u.permissions.join(' ')}</td></tr>
<tr><th>Created</th><td>${u.createdAt}</td></tr>
</tbody></table></div>
<div class="row">
${postButton({
  action: `${base}/${u.disabled ? 'enable' : 'disable'}`,
  csrf: frame.csrf,
  label: u.disabled ? 'Enable' : 'Disable',
  className: 'secondary',
})}
${
  u.emailVerified
    ? ''
    : postButton({
        action: `${base}/verify`,
        csrf: frame.csrf,
        label: 'Mark e-mail verified',
        className: 'secondary',
      })
}
${postButton({
  action: `${base}/revoke-sessions`,
  csrf: frame.csrf,
  label: 'Revoke all sessions',
  className: 'secondary',
})}
${postButton({ action: `${base}/revoke-grants`, csrf: frame.csrf, label: 'Revoke all grants', className: 'secondary' })}
<a class="button secondary" href="${base}/delete">Delete…</a>
</div></section>
${o.sections ?? []}
<section class="card"><h2>Sessions (${live.length} active)</h2>
<div class="scroll"><table><thead><tr><th>Started</th><th>Last seen</th><th>IP</th><th>Browser</th></tr></thead><tbody>
${live.length === 0 ? html`<tr><td colspan="4">No active sessions.</td></tr>` : ''}
${live.map(
  (s) => html`<tr><td>${s.createdAt}</td><td>${s.lastSeenAt}</td>\
<td>${s.ip ?? ''}</td><td>${(s.userAgent ?? '').slice(0, 80)}</td></tr>`,
)}
</tbody></table></div></section>
<section class="card"><h2>Grants (${grants.length} live)</h2>
<div class="scroll"><table><thead><tr><th>Application</th><th>Scope</th><th>Granted</th></tr></thead><tbody>
${grants.length === 0 ? html`<tr><td colspan="3">No live grants.</td></tr>` : ''}
${grants.map(
  (g) => html`<tr><td><a href="${frame.adminPath}/applications/${encodeURIComponent(g.clientId)}">\
<code>${g.clientId}</code></a></td><td>${g.scope}</td><td>${g.createdAt}</td></tr>`,
)}
</tbody></table></div></section>`,
  });
}
