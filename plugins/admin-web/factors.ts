// Admin web: a user's second factors (issue 34). The user's page lists them (views-factors.ts); removing one
// or all of them is dangerous (the user may be locked out of an account that only they should reach, or a
// stolen account loses its protection), so, as for deletion, it needs a password entered within
// ADMIN_FRESHNESS, a confirmation page, and a CSRF-checked POST. Every removal ends every session of the
// user, mails the user and is audited (services.factors.removeOne, resetAll).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { type AdminContext, Form } from './context.js';
import * as views from './views.js';

const UserParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) });
const FactorParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  factorId: Type.String({ minLength: 1, maxLength: 128 }),
});

export function registerFactorRoutes({ app, adminPath, page, see, requireAdmin, requireAdminPost }: AdminContext) {
  const { users, factors } = app.services;
  const userPath = (id: string) => `/users/${encodeURIComponent(id)}`;

  /** The user's factor `factorId`, or 404 (the admin web's error page). */
  async function factorOf(userId: string, factorId: string) {
    const found = (await factors.list(userId)).find((f) => f.id === factorId);
    if (!found) throw new AppError(404, 'FACTOR_NOT_FOUND', 'This user has no such second factor.');
    return found;
  }

  app.get('/users/:id/factors/reset', { schema: { params: UserParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const base = `${adminPath}/users/${user.id}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Reset every second factor of ${user.email}?`,
        message:
          'Every passkey, the authenticator app and the recovery codes of this account are removed, and every ' +
          'session of the user ends. The user can then sign in with the password alone and enrol new factors. ' +
          'Do this only for a user whose identity you have checked: the account loses its second factor.',
        action: `${base}/factors/reset`,
        button: 'Reset all second factors',
        current: 'users',
        back: base,
      }),
    );
  });
  app.post('/users/:id/factors/reset', { schema: { params: UserParams, body: Form } }, async (request, reply) => {
    const base = userPath(request.params.id);
    const admin = await requireAdminPost(request, reply, { returnPath: `${base}/factors/reset`, fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    await factors.resetAll(user.id, admin.actor);
    return see(reply, `${adminPath}/users/${user.id}?done=factors-reset`);
  });

  app.get('/users/:id/factors/:factorId/remove', { schema: { params: FactorParams } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    const user = await users.get(request.params.id);
    const factor = await factorOf(user.id, request.params.factorId);
    const base = `${adminPath}/users/${user.id}`;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: `Remove ${views.factorLabel(factor)} of ${user.email}?`,
        message:
          'The factor stops working at once and every session of the user ends; the user is told by mail. ' +
          'This cannot be undone: the user has to enrol it again.',
        action: `${base}/factors/${encodeURIComponent(factor.id)}/remove`,
        button: 'Remove',
        current: 'users',
        back: base,
      }),
    );
  });
  app.post(
    '/users/:id/factors/:factorId/remove',
    { schema: { params: FactorParams, body: Form } },
    async (request, reply) => {
      const returnPath = `${userPath(request.params.id)}/factors/${encodeURIComponent(request.params.factorId)}/remove`;
      const admin = await requireAdminPost(request, reply, { returnPath, fresh: true });
      if (!admin) return reply;
      const user = await users.get(request.params.id);
      await factors.removeOne(user.id, request.params.factorId, admin.actor);
      return see(reply, `${adminPath}/users/${user.id}?done=factor-removed`);
    },
  );
}
