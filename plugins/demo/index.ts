// /demo (DEMO=on): the live demo relying party. It talks to the provider only over HTTP, at the issuer's
// public endpoints (plugins/demo/client.ts), like any third party; what it has to remember lives in two
// HttpOnly cookies of its own under /demo, sealed (AES-256-GCM) with a key derived from SECRET_KEY:
// demo.flow (state, nonce, PKCE verifier; 10 minutes) and demo.session (the tokens). Never in a URL.
// The application "demo" is created or updated at start (onReady), or disabled when DEMO=off. An
// application "demo" the demo did not create (an operator's, from before the id was reserved) is left
// alone: the demo then stays off (404) and the start logs a warning saying why.
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../src/config.js';
import { seal, unseal } from '../../src/oauth/seal.js';
import { DEMO_CLIENT_ID, demoUrls, syncDemoApplication } from '../../src/services/demo.js';
import { sendPage, sendStylesheet } from '../pages/kit.js';
import { WIDE_STYLESHEET } from '../welcome/style.js';
import { createDemoClient, DemoError, fingerprint, type TokenSet } from './client.js';
import { demoPage, type DemoView } from './views.js';

const FLOW = 'demo.flow';
const SESSION = 'demo.session';
const STYLESHEET = '/demo/assets/style.css';

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
}
interface Session {
  idToken: string;
  accessToken: string;
  refreshToken?: string | undefined;
  expiresAt?: number | undefined;
  scope?: string | undefined;
  previous?: string | undefined;
  refreshes: number;
}

const demoPlugin: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  // The demo never stops a start: a database that refuses the application leaves a warning in the log.
  let notOurs = false;
  app.addHook('onReady', async () => {
    try {
      const outcome = await syncDemoApplication(app.services.applications, config);
      if (outcome === 'foreign') {
        notOurs = true;
        if (config.demo) {
          app.log.warn(
            { clientId: DEMO_CLIENT_ID },
            'demo: the database holds an application "demo" that the demo did not create (made by an operator ' +
              'before the client id was reserved); it is left unchanged and the demo at /demo stays off. To use ' +
              'the demo, give that application another client id and delete "demo", then restart.',
          );
        }
      } else if (outcome !== 'unchanged') {
        app.log.info({ clientId: DEMO_CLIENT_ID, outcome }, `demo application ${outcome}`);
      }
    } catch (error) {
      app.log.warn({ err: error, clientId: DEMO_CLIENT_ID }, 'demo application: could not be created or updated');
    }
  });
  if (!config.demo) return;
  // Someone else's application "demo": the demo would send its users to that application's redirect URIs.
  app.addHook('onRequest', async (_request, reply) => {
    if (notOurs) return reply.callNotFound();
  });

  const secretKey = config.secretKey ?? '';
  const urls = demoUrls(config);
  const client = createDemoClient({
    issuer: config.issuer,
    clientId: DEMO_CLIENT_ID,
    redirectUri: urls.callback,
    apiBase: config.baseUrl,
  });
  const cookieOptions = {
    path: '/demo',
    httpOnly: true,
    secure: config.cookieSecure,
    sameSite: 'lax' as const,
  };

  function read<T>(request: FastifyRequest, name: string): T | undefined {
    const raw = request.cookies[name];
    const plain = raw && unseal(raw, { secretKey, purpose: 'demo cookie', aad: name });
    return plain ? (JSON.parse(plain) as T) : undefined;
  }
  function write(reply: FastifyReply, name: string, value: unknown, maxAge?: number) {
    const sealed = seal(JSON.stringify(value), { secretKey, purpose: 'demo cookie', aad: name });
    reply.setCookie(name, sealed, { ...cookieOptions, ...(maxAge ? { maxAge } : {}) });
  }
  const clear = (reply: FastifyReply, name: string) => reply.clearCookie(name, cookieOptions);

  function sessionFrom(tokens: TokenSet, before?: Session): Session {
    const rotated = before?.refreshToken && tokens.refresh_token && before.refreshToken !== tokens.refresh_token;
    return {
      idToken: tokens.id_token ?? before?.idToken ?? '',
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token ?? before?.refreshToken,
      expiresAt: tokens.expires_in ? Math.floor(Date.now() / 1000) + tokens.expires_in : undefined,
      scope: tokens.scope ?? before?.scope,
      previous: rotated ? fingerprint(before.refreshToken) : before?.previous,
      refreshes: (before?.refreshes ?? 0) + (before ? 1 : 0),
    };
  }

  const page = (reply: FastifyReply, view: Omit<DemoView, 'stylesheet' | 'issuer'>, status = 200) =>
    sendPage(reply, demoPage({ ...view, stylesheet: STYLESHEET, issuer: config.issuer }), status);
  const message = (error: unknown) =>
    error instanceof DemoError || error instanceof Error ? error.message : String(error);

  /** A form post from another site carries an Origin of its own (ours sends "null": no-referrer). */
  const foreign = (request: FastifyRequest) => {
    const origin = request.headers.origin;
    return origin !== undefined && origin !== 'null' && origin !== new URL(config.baseUrl).origin;
  };

  app.get('/assets/style.css', { schema: { hide: true } as never }, async (_request, reply) =>
    sendStylesheet(reply, WIDE_STYLESHEET),
  );

  app.get('/', { schema: { hide: true } as never }, async (request, reply) => {
    const session = read<Session>(request, SESSION);
    if (!session) return page(reply, {});
    let idToken: Awaited<ReturnType<typeof client.verifyIdToken>>;
    try {
      idToken = await client.verifyIdToken(session.idToken);
    } catch (error) {
      clear(reply, SESSION);
      return page(reply, { error: `The stored ID token no longer verifies (${message(error)}): sign in again.` });
    }
    const [userinfo, me] = await Promise.all(
      [client.userinfo(session.accessToken), client.me(session.accessToken)].map((p) =>
        p.catch((error: unknown) => `Error: ${message(error)}`),
      ),
    );
    return page(reply, {
      signedIn: {
        idToken,
        userinfo: userinfo!,
        me: me!,
        scope: session.scope,
        accessTokenExpiresAt: session.expiresAt ? new Date(session.expiresAt * 1000).toISOString() : undefined,
        refresh: { current: fingerprint(session.refreshToken), previous: session.previous, count: session.refreshes },
      },
    });
  });

  app.get('/login', { schema: { hide: true } as never }, async (_request, reply) => {
    const { url, flow } = await client.authorizationRequest();
    write(reply, FLOW, flow, 600);
    return reply.redirect(url, 303);
  });

  app.get<{ Querystring: Record<string, string | undefined> }>(
    '/callback',
    { schema: { hide: true } as never },
    async (request, reply) => {
      const flow = read<Flow>(request, FLOW);
      clear(reply, FLOW);
      const { code, state, error, error_description: description } = request.query;
      if (!flow || typeof state !== 'string' || state !== flow.state)
        return page(reply, { error: 'This sign-in was not started here, or it expired (state mismatch).' }, 400);
      if (error)
        return page(reply, { error: `The provider answered ${error}${description ? `: ${description}` : ''}` });
      if (typeof code !== 'string') return page(reply, { error: 'The callback carries no code.' }, 400);
      try {
        const tokens = await client.exchangeCode(code, flow.verifier);
        if (!tokens.id_token) throw new DemoError('The token endpoint returned no ID token');
        await client.verifyIdToken(tokens.id_token, flow.nonce);
        write(reply, SESSION, sessionFrom(tokens));
      } catch (failure) {
        request.log.warn({ err: failure }, 'demo: code exchange failed');
        return page(reply, { error: `Signing in failed: ${message(failure)}` }, 502);
      }
      return reply.redirect('/demo', 303);
    },
  );

  app.post('/refresh', { schema: { hide: true } as never }, async (request, reply) => {
    const session = read<Session>(request, SESSION);
    if (foreign(request) || !session?.refreshToken) return reply.redirect('/demo', 303);
    try {
      const tokens = await client.refresh(session.refreshToken);
      if (tokens.id_token) await client.verifyIdToken(tokens.id_token);
      write(reply, SESSION, sessionFrom(tokens, session));
    } catch (failure) {
      clear(reply, SESSION);
      return page(reply, { error: `Refreshing failed: ${message(failure)}. Sign in again.` }, 502);
    }
    return reply.redirect('/demo', 303);
  });

  app.post('/logout', { schema: { hide: true } as never }, async (request, reply) => {
    if (foreign(request)) return reply.redirect('/demo', 303);
    const session = read<Session>(request, SESSION);
    clear(reply, SESSION);
    return reply.redirect(await client.endSessionUrl(session?.idToken, urls.home), 303);
  });
};

export default demoPlugin;
