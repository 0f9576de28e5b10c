// Admin web: users (list, details, enable/disable, verify, revoke sessions or grants, delete).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { type Admin, type AdminContext, Form, ListQuery } from './context.js';
import * as views from './views.js';

const UserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });

export function registerUserRoutes({ app, adminPath, page, see, requireAdmin, requireAdminPost }: AdminContext) {
  const { users, access } = app.services;

  app.get('/users', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const { items, nextCursor } = await users.list({
      q: request.query.q || undefined,
      cursor: request.query.cursor,
      limit: 50,
    });
    return page(reply, views.userList(admin.frame, { items, q: request.query.q, nextCursor }));
  });

  app.get('/users/:id', { schema: { params: UserParams, querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const [sessions, grants, factors, linked] = await Promise.all([
      access.listSessions(user.id),
      access.listGrants(user.id),
      app.services.factors.list(user.id),
      app.services.upstreams.identities.listForUser(user.id),
    ]);
    const sections = [
      views.factorSection(admin.frame, user.id, factors),
      views.identitySection(admin.frame, user.id, linked),
    ];
    return page(reply, views.userView(admin.frame, { user, sessions, grants, sections }));
  });

  const userActions: Record<string, (id: string, admin: Admin) => Promise<unknown>> = {
    disable: (id, admin) => users.setDisabled(id, true, admin.actor),
    enable: (id, admin) => users.setDisabled(id, false, admin.actor),
    verify: (id, admin) => users.update(id, { emailVerified: true }, admin.actor),
    'revoke-sessions': (id, admin) => access.revokeSessions(id, admin.actor),
    'revoke-grants': (id, admin) => access.revokeGrants(id, admin.actor),
  };
  const doneOf: Record<string, string> = {
    disable: 'disabled',
    enable: 'enabled',
    verify: 'verified',
    'revoke-sessions': 'sessions-revoked',
    'revoke-grants': 'grants-revoked',
  };
  for (const [action, run] of Object.entries(userActions)) {
    app.post(`/users/:id/${action}`, { schema: { params: UserParams, body: Form } }, async (request, reply) => {
      const base = `/users/${encodeURIComponent(request.params.id)}`;
      const admin = await requireAdminPost(request, reply, { returnPath: base });
      if (!admin) return reply;
      const user = await users.get(request.params.id);
      if (action === 'disable' && user.id === admin.ctx.user.id)
        throw new AppError(409, 'SELF', 'You cannot disable your own account here (you would lock yourself out).');
      await run(user.id, admin);
      return see(reply, `${adminPath}${base}?done=${doneOf[action]}`);
    });
  }

  app.get('/users/:id/delete', { schema: { params: UserParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const base = `${adminPath}/users/${user.id}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Delete ${user.email}?`,
        message:
          'The account, its sessions, grants and tokens are deleted. This cannot be undone; disabling the account can.',
        action: `${base}/delete`,
        button: 'Delete user',
        current: 'users',
        back: base,
      }),
    );
  });
  app.post('/users/:id/delete', { schema: { params: UserParams, body: Form } }, async (request, reply) => {
    const base = `/users/${encodeURIComponent(request.params.id)}`;
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/delete`, fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    if (user.id === admin.ctx.user.id) throw new AppError(409, 'SELF', 'You cannot delete your own account here.');
    await users.remove(user.id, admin.actor);
    return see(reply, `${adminPath}/users?done=deleted`);
  });
}
