// GET / (WELCOME_PAGE=on|public|off): the welcome page. off registers nothing: / answers the JSON 404 of
// every unknown route, as before.
import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../src/config.js';
import { sendPage, sendStylesheet } from '../pages/kit.js';
import { WIDE_STYLESHEET } from './style.js';
import { welcomePage } from './views.js';

export const WIDE_STYLESHEET_PATH = '/assets/welcome.css';

const welcomePlugin: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  if (config.welcomePage === 'off') return;
  const mode = config.welcomePage;
  app.get(WIDE_STYLESHEET_PATH, { schema: { hide: true } as never }, async (_request, reply) =>
    sendStylesheet(reply, WIDE_STYLESHEET),
  );
  app.get('/', { schema: { hide: true } as never }, async (_request, reply) => {
    const adminExists = mode === 'on' ? await app.services.adminSetup.adminExists() : undefined;
    return sendPage(
      reply,
      welcomePage({
        mode,
        issuer: config.issuer,
        signInUrl: `${config.loginUrl}/sign-in`,
        accountUrl: `${config.loginUrl}/account`,
        adminUrl: config.adminUrl,
        adminExists,
        production: config.env === 'production',
        demoUrl: config.demo ? `${config.baseUrl}/demo` : undefined,
        stylesheet: WIDE_STYLESHEET_PATH,
      }),
    );
  });
};

export default welcomePlugin;
