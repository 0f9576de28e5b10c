// The account pages under `${loginPath}/account` (issue 17): profile, security (password, sessions, export,
// deletion) and connected applications, over app.services.me. Server-rendered, working without JavaScript:
// plain forms with the double-submit CSRF token, Post/Redirect/Get with a status code, form errors next to
// their fields (400/404/409/429 with the page), the hosted pages' security headers (no-store, CSP with
// frame-ancestors 'none', X-Frame-Options DENY, no referrer).
// A plugin of its own rather than a module of the login pages: its prefix gives it the paths, and it shares
// with them only what is shared by config anyway (the CSRF cookie, the session cookie, hostedPageErrors), so
// neither group of pages has to know the other's routes. Signed out, a page answers 303 to the sign-in
// page with `return_to` (a path under the login path: plugins/login/page-context.ts, safeReturnTo).
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../src/config.js';
import { hostedPageErrors } from '../infra/error-handlers.js';
import { messagePage, signedOutPage } from '../pages/hosted.js';
import { sendPage, sendStylesheet } from '../pages/kit.js';
import { createAccountContext } from './context.js';
import { ACCOUNT_STYLESHEET } from './layout.js';
import { registerApplicationPages } from './application-pages.js';
import { registerProfilePages } from './profile-pages.js';
import { registerSecurityPages } from './security-pages.js';
import { createFactorPages } from './factor-pages.js';
import { registerPasskeyPages } from './passkey-pages.js';
import { registerTotpPages } from './totp-pages.js';
import { registerIdentityPages } from './identity-pages.js';

export interface AccountPagesOptions {
  config: Config;
  loginPath: string;
}

const accountPages: FastifyPluginAsyncTypebox<AccountPagesOptions> = async (app, { config, loginPath }) => {
  app.setErrorHandler(hostedPageErrors(loginPath));
  const context = createAccountContext(app, config, loginPath);

  app.get('/assets/account.css', async (_request, reply) => sendStylesheet(reply, ACCOUNT_STYLESHEET));

  registerProfilePages(context);
  registerSecurityPages(context);
  const factorPages = createFactorPages(context);
  registerPasskeyPages(context, factorPages);
  registerTotpPages(context, factorPages);
  registerIdentityPages(context, factorPages);
  registerApplicationPages(context);

  // Where the sign-out of this browser's own session (from the sessions list) and the deletion land.
  app.get('/signed-out', async (_request, reply) =>
    sendPage(reply, signedOutPage({ loginPath, message: 'You are signed out.' })),
  );
  app.get('/deleted', async (_request, reply) =>
    sendPage(
      reply,
      messagePage({
        loginPath,
        title: 'Your account is deleted',
        message: 'Your account and everything stored about it are deleted. Applications can no longer use it.',
        role: 'status',
      }),
    ),
  );
};

export default accountPages;
