// Admin web: the first-admin setup link (a one-time form outside the signed-in frame).
import Type from 'typebox';
import { AppError } from '../../src/errors.js';
import { type AdminContext, fieldErrors, first, Form } from './context.js';
import * as views from './views.js';

export function registerSetupRoutes({ app, adminPath, csrf, signIn, abs, page, see }: AdminContext) {
  const { adminSetup } = app.services;

  app.get(
    '/setup',
    { schema: { querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }) } },
    async (request, reply) => {
      const token = request.query.token ?? '';
      if (!(await adminSetup.isUsable(token))) {
        const exists = await adminSetup.adminExists();
        return page(
          reply,
          views.messagePage(
            adminPath,
            exists
              ? {
                  title: 'Setup is done',
                  message: 'An administrator exists already. Sign in instead.',
                  link: { href: signIn(abs('/applications')), text: 'Sign in' },
                }
              : {
                  title: 'This link does not work',
                  message:
                    'The setup link is invalid, expired or was used already. Restart the server for a new one, ' +
                    'or run: idp users create --admin --email EMAIL --password-stdin',
                },
          ),
          400,
        );
      }
      return page(reply, views.setupPage(adminPath, { token, csrf: csrf.token(request, reply) }));
    },
  );
  app.post('/setup', { schema: { body: Form } }, async (request, reply) => {
    csrf.check(request, first(request.body.csrf));
    const token = first(request.body.token) ?? '';
    const values = { email: first(request.body.email) ?? '', name: first(request.body.name) ?? '' };
    const password = first(request.body.password) ?? '';
    const again = (errors: views.Errors, status = 400, formError?: string) =>
      page(
        reply,
        views.setupPage(adminPath, {
          token,
          csrf: csrf.token(request, reply),
          values,
          errors,
          ...(formError && { formError }),
        }),
        status,
      );
    if (password !== (first(request.body.confirmPassword) ?? ''))
      return again({ confirmPassword: 'The two passwords are not the same' });
    try {
      const { sessionToken } = await adminSetup.complete(
        token,
        { ...values, password },
        { ip: request.ip, userAgent: request.headers['user-agent'] ?? null },
      );
      app.setSessionCookie(reply, sessionToken);
      return see(reply, `${adminPath}/applications?done=created`);
    } catch (error) {
      if (error instanceof AppError && (error.code === 'VALIDATION_ERROR' || error.code === 'EMAIL_TAKEN'))
        return again(fieldErrors(error.details), error.statusCode);
      throw error;
    }
  });
}
