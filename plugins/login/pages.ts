// The hosted login pages under LOGIN_URL's path: sign-in, sign-up, e-mail verification, consent,
// sign-out. Forms work without JavaScript; every POST carries a double-submit CSRF token.
// Each group of pages lives in a module of its own, registered here, inside this plugin (so the error
// handler below applies to all of them), with one shared context (page-context.ts).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../src/config.js';
import { hostedPageErrors } from '../infra/error-handlers.js';
import { sendStylesheet } from '../pages/kit.js';
import { createLoginContext, first, Form } from './page-context.js';
import { registerPasskeyPages } from './passkey-pages.js';
import { registerRecoveryPages } from './recovery-pages.js';
import { registerSignInPages } from './sign-in-pages.js';
import { createSecondFactorFlow, registerSecondFactorPages } from './second-factor.js';
import { registerTotpSecondFactor } from './totp-second-factor.js';
import { registerUpstreamPages } from './upstream-pages.js';
import { registerVerificationPages } from './verification-pages.js';
import * as views from './views.js';

export interface LoginPagesOptions {
  config: Config;
  loginPath: string;
}

const loginPages: FastifyPluginAsyncTypebox<LoginPagesOptions> = async (app, { config, loginPath }) => {
  const context = createLoginContext(app, config, loginPath);
  const { csrfToken, checkCsrf, page } = context;

  app.setErrorHandler(hostedPageErrors(loginPath));

  app.get('/assets/style.css', async (_request, reply) => sendStylesheet(reply, views.STYLESHEET));

  // A mistyped or outdated address under the login path (the account pages' included): a browser gets a
  // page with a way on, not the API's JSON 404; other clients keep the JSON body.
  app.setNotFoundHandler(async (request, reply) => {
    if (!String(request.headers.accept ?? '').includes('text/html')) {
      return reply
        .code(404)
        .send({ error: 'NOT_FOUND', message: `No route ${request.method} ${request.url.split('?')[0]}` });
    }
    const body = views.messagePage({
      loginPath,
      title: 'Page not found',
      message: 'There is no page at this address.',
      link: (await app.currentSession(request))
        ? { href: `${loginPath}/account`, text: 'Go to your account' }
        : { href: `${loginPath}/sign-in`, text: 'Sign in' },
    });
    return page(reply, body, 404);
  });

  app.get('/', async (request, reply) => {
    const ctx = await app.currentSession(request);
    if (!ctx) return reply.code(303).header('location', `${loginPath}/sign-in`).send();
    return page(reply, views.signedInPage({ loginPath, csrf: csrfToken(request, reply), email: ctx.user.email }));
  });

  registerSignInPages(context);
  const secondFactor = createSecondFactorFlow(context);
  registerSecondFactorPages(context, secondFactor);
  registerPasskeyPages(context, secondFactor);
  registerTotpSecondFactor(context, secondFactor);
  registerVerificationPages(context);
  registerRecoveryPages(context);
  registerUpstreamPages(context);

  // Sign out
  app.get('/sign-out', async (request, reply) => {
    const ctx = await app.currentSession(request);
    if (!ctx) return page(reply, views.signedOutPage({ loginPath, message: 'You are not signed in.' }));
    return page(reply, views.signedInPage({ loginPath, csrf: csrfToken(request, reply), email: ctx.user.email }));
  });
  app.post('/sign-out', { schema: { body: Form } }, async (request, reply) => {
    checkCsrf(request, request.body);
    await app.signOut(request, reply);
    // "Not you?" on the consent page (ASVS 7.4.4): signed out, back to sign-in on the same pending request,
    // when it still belongs to this browser; otherwise the plain signed-out page.
    const requestId = first(request.body.request);
    if (requestId && (await app.services.authorization.pendingRequest(requestId, app.browserBinding(request)))) {
      return reply
        .code(303)
        .header('location', `${loginPath}/sign-in?request=${encodeURIComponent(requestId)}`)
        .send();
    }
    return page(reply, views.signedOutPage({ loginPath, message: 'You are signed out.' }));
  });
};

export default loginPages;
