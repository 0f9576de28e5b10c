// Admin web: signing keys (list, rotate).
import { AppError } from '../../src/errors.js';
import { type AdminContext, Form, ListQuery } from './context.js';
import * as views from './views.js';

export function registerKeyRoutes({ app, adminPath, page, see, requireAdmin, requireAdminPost }: AdminContext) {
  const { signingKeys } = app.services;

  app.get('/keys', { schema: { querystring: ListQuery } }, async (request, reply) => {
    const admin = await requireAdmin(request, reply);
    if (!admin) return reply;
    return page(reply, views.keysPage(admin.frame, { keys: await signingKeys.list() }));
  });
  app.get('/keys/rotate', async (request, reply) => {
    const admin = await requireAdmin(request, reply, { fresh: true });
    if (!admin) return reply;
    return page(
      reply,
      views.confirmPage(admin.frame, {
        title: 'Rotate the signing keys?',
        message:
          'The published next key becomes the signing key and a new next key is published. ' +
          'Tokens signed before stay valid.',
        action: `${adminPath}/keys/rotate`,
        button: 'Rotate now',
        current: 'keys',
        back: `${adminPath}/keys`,
      }),
    );
  });
  app.post('/keys/rotate', { schema: { body: Form } }, async (request, reply) => {
    const admin = await requireAdminPost(request, reply, { returnPath: '/keys/rotate', fresh: true });
    if (!admin) return reply;
    try {
      await signingKeys.rotate(admin.actor, { force: false });
    } catch (error) {
      if (error instanceof AppError && error.statusCode === 409)
        return page(reply, views.keysPage(admin.frame, { keys: await signingKeys.list(), error: error.message }), 409);
      throw error;
    }
    app.services.keys.invalidate();
    return see(reply, `${adminPath}/keys?done=rotated`);
  });
}
