// The browser's cookies, every one of them in this module (names, attributes, how each is read and written),
// so that what a browser holds is read in one place:
//  - the hosted-login session (`__Host-idp.session`, `idp.session` on http): app.currentSession,
//    setSessionCookie, clearSessionCookie, signOut;
//  - the browser binding of pending authorization requests (`__Host-idp.authz`): browserBinding, bindBrowser;
//  - the sign-up cookie (`__Host-idp.signup`): signUpBrowser, bindSignUpBrowser;
//  - the sign-in waiting for its second factor (`__Host-idp.mfa`, issue 34): pendingSignInToken,
//    setPendingSignInCookie, clearPendingSignInCookie;
//  - the round trips to upstream providers (`__Secure-idp.upstream`, `idp.upstream` on http, issue 35): the
//    browser's secret of its round trips and a pending link's token, on the login path's upstream prefix only:
//    upstreamBrowser, bindUpstreamBrowser, pendingLinkToken, setPendingLinkCookie, clearPendingLinkCookie;
//  - the device cookie of the sign-in limits (`__Secure-idp.device`): deviceCookie, used by rate-limit.ts
//    (its signed value: src/device-cookie.ts);
//  - the CSRF double-submit cookie of the hosted forms (`__Host-idp.csrf`): createCsrf.
// The `__Host-`/`__Secure-` prefixes apply when COOKIE_SECURE (https); plain names on http development setups.
// Not here: the first-party refresh-token cookie (plugins/oidc/token-cookie.ts, an OAuth token held for an
// application) and the demo relying party's own cookies (plugins/demo/).
import { randomBytes, timingSafeEqual } from 'node:crypto';
import fp from 'fastify-plugin';
import '@fastify/cookie';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../src/config.js';
import { createDeviceCookies, DEVICE_COOKIE_MAX_AGE_SECONDS, type Device } from '../../src/device-cookie.js';
import type { SessionContext } from '../../src/domain/session.js';
import { AppError } from '../../src/errors.js';
import { originOf } from '../../src/oauth/redirect-uri.js';
import { generateToken } from '../../src/oauth/tokens.js';
import { PENDING_SIGN_IN_SECONDS } from '../../src/services/factors/index.js';
import { PENDING_LINK_SECONDS, UPSTREAM_FLOW_SECONDS } from '../../src/services/upstreams/flow.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The session of the hosted-login cookie, if any (resolved once per request). */
    currentSession(request: FastifyRequest): Promise<SessionContext | undefined>;
    sessionCookieName: string;
    /**
     * Sets the hosted-login session cookie (the one place its attributes are written): it lasts SESSION_TTL,
     * or until `expiresAt` for a session that already has one.
     */
    setSessionCookie(reply: FastifyReply, token: string, expiresAt?: Date): FastifyReply;
    /** Clears the session cookie without revoking a session (an account deleted: its session row is gone). */
    clearSessionCookie(reply: FastifyReply): FastifyReply;
    /** Signs this browser out: revokes its session, if any, and clears the cookie. */
    signOut(request: FastifyRequest, reply: FastifyReply): Promise<void>;
    /** The browser-binding secret of pending authorization requests (cookie), if this browser has one. */
    browserBinding(request: FastifyRequest): string | undefined;
    /**
     * The browser-binding secret, (re)set as a cookie lasting CONSENT_REQUEST_TTL: authorize calls it when it
     * stores a pending request, so that the cookie outlives the request.
     */
    bindBrowser(request: FastifyRequest, reply: FastifyReply): string;
    /** The secret of this browser's sign-up cookie, if it has one (issue 31: the browser that signed up). */
    signUpBrowser(request: FastifyRequest): string | undefined;
    /**
     * The sign-up cookie's secret, (re)set on every sign-up answer (whatever the address: the answers stay
     * alike) and lasting as long as a sign-up link; the pending sign-up stores only its hash.
     */
    bindSignUpBrowser(request: FastifyRequest, reply: FastifyReply): string;
    /** The secret of this browser's sign-in waiting for a second factor (services.factors.pending), if any. */
    pendingSignInToken(request: FastifyRequest): string | undefined;
    /** Sets the pending sign-in's cookie (HttpOnly, as long as the pending sign-in lives). */
    setPendingSignInCookie(reply: FastifyReply, token: string): FastifyReply;
    clearPendingSignInCookie(reply: FastifyReply): FastifyReply;
    /** The secret binding this browser's round trips to upstream providers (issue 35), if it has one. */
    upstreamBrowser(request: FastifyRequest): string | undefined;
    /** The round trips' secret, (re)set for as long as a round trip lives. */
    bindUpstreamBrowser(request: FastifyRequest, reply: FastifyReply): string;
    /** The token of this browser's pending upstream link (waiting for the account owner's sign-in), if any. */
    pendingLinkToken(request: FastifyRequest): string | undefined;
    setPendingLinkCookie(reply: FastifyReply, token: string): FastifyReply;
    clearPendingLinkCookie(reply: FastifyReply): FastifyReply;
  }
}

export default fp(
  async function browserSession(app: FastifyInstance, { config }: { config: Config }) {
    const { sessions } = app.services;
    const cookieName = config.cookieSecure ? '__Host-idp.session' : 'idp.session';
    const resolved = new WeakMap<FastifyRequest, Promise<SessionContext | undefined>>();
    app.decorate('sessionCookieName', cookieName);
    const sameSite = config.cookieSameSite;
    const sessionCookie = { path: '/', httpOnly: true, secure: config.cookieSecure, sameSite } as const;
    app.decorate('setSessionCookie', (reply: FastifyReply, token: string, expiresAt?: Date) => {
      // A renewed secret of an existing session (a password change) ends with the session, not SESSION_TTL
      // from now. At least one second: the session was live a moment ago.
      const maxAge = expiresAt
        ? Math.max(1, Math.floor((expiresAt.getTime() - Date.now()) / 1000))
        : config.ttl.session;
      return reply.setCookie(cookieName, token, { ...sessionCookie, maxAge });
    });
    app.decorate('clearSessionCookie', (reply: FastifyReply) => reply.clearCookie(cookieName, sessionCookie));
    app.decorate('signOut', async (request: FastifyRequest, reply: FastifyReply) => {
      const token = request.cookies[cookieName];
      if (token) await sessions.revoke(token, { ip: request.ip });
      reply.clearCookie(cookieName, sessionCookie);
    });
    app.decorate('currentSession', (request: FastifyRequest) => {
      let p = resolved.get(request);
      if (!p) {
        p = sessions.resolve(request.cookies?.[cookieName]);
        resolved.set(request, p);
      }
      return p;
    });
    // Pending authorization requests are bound to the browser that started them (see
    // src/services/authorization.ts): a random secret in an HttpOnly cookie, its hash on each request.
    // One secret serves every tab; it is renewed by each authorize that stores a request, so it lasts at least
    // as long as every pending request of the browser. An authorize that issues a code at once (single
    // sign-on) or answers with an error stores nothing and sets no cookie. SameSite=Lax at most, so that it
    // is sent on the top-level navigation back from the application's site (None when configured).
    const bindingCookie = config.cookieSecure ? '__Host-idp.authz' : 'idp.authz';
    const bindingAttributes = {
      path: '/',
      httpOnly: true,
      secure: config.cookieSecure,
      sameSite: config.cookieSameSite === 'none' ? 'none' : 'lax',
      maxAge: config.ttl.consentRequest,
    } as const;
    /** A browser-binding cookie: a random secret of 43 base64url characters, read back only in that shape. */
    const browserCookie = (name: string, attributes: Omit<typeof bindingAttributes, 'path'> & { path: string }) => {
      const read = (request: FastifyRequest) => {
        const value = request.cookies?.[name];
        return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
      };
      const bind = (request: FastifyRequest, reply: FastifyReply) => {
        const value = read(request) ?? generateToken();
        reply.setCookie(name, value, attributes);
        return value;
      };
      return { read, bind };
    };
    const authzBrowser = browserCookie(bindingCookie, bindingAttributes);
    app.decorate('browserBinding', authzBrowser.read);
    app.decorate('bindBrowser', authzBrowser.bind);
    // A pending sign-up is bound to the browser that made it (issue 31): its link confirms without the
    // password only where this cookie is. One secret per browser, its hash in each sign-up request row.
    const signUpBrowser = browserCookie(config.cookieSecure ? '__Host-idp.signup' : 'idp.signup', {
      ...bindingAttributes,
      maxAge: config.ttl.emailVerification,
    });
    app.decorate('signUpBrowser', signUpBrowser.read);
    app.decorate('bindSignUpBrowser', signUpBrowser.bind);
    // A sign-in waiting for its second factor (issue 34): the secret of the pending sign-in, this browser's only.
    const pendingName = config.cookieSecure ? '__Host-idp.mfa' : 'idp.mfa';
    const pendingAttributes = { ...sessionCookie, maxAge: PENDING_SIGN_IN_SECONDS };
    app.decorate('pendingSignInToken', (request: FastifyRequest) => {
      const value = request.cookies?.[pendingName];
      return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    });
    app.decorate('setPendingSignInCookie', (reply: FastifyReply, token: string) =>
      reply.setCookie(pendingName, token, pendingAttributes),
    );
    app.decorate('clearPendingSignInCookie', (reply: FastifyReply) => reply.clearCookie(pendingName, sessionCookie));
    // Round trips to upstream providers (issue 35): HttpOnly, SameSite=Lax (sent on the upstream's redirect
    // back), only under {login path}/upstream (the start, the callback, the pending link's pages). Not __Host-:
    // that prefix needs Path=/.
    const upstreamPath = `${new URL(config.loginUrl).pathname.replace(/\/$/, '')}/upstream`;
    const upstreamAttributes = {
      path: upstreamPath,
      httpOnly: true,
      secure: config.cookieSecure,
      sameSite: 'lax',
      maxAge: UPSTREAM_FLOW_SECONDS,
    } as const;
    const prefix = config.cookieSecure ? '__Secure-' : '';
    const upstreamBrowser = browserCookie(`${prefix}idp.upstream`, upstreamAttributes);
    app.decorate('upstreamBrowser', upstreamBrowser.read);
    app.decorate('bindUpstreamBrowser', upstreamBrowser.bind);
    const linkName = `${prefix}idp.upstream-link`;
    const linkAttributes = { ...upstreamAttributes, maxAge: PENDING_LINK_SECONDS };
    app.decorate('pendingLinkToken', (request: FastifyRequest) => {
      const value = request.cookies?.[linkName];
      return value && /^[A-Za-z0-9_-]{43}$/.test(value) ? value : undefined;
    });
    app.decorate('setPendingLinkCookie', (reply: FastifyReply, token: string) =>
      reply.setCookie(linkName, token, linkAttributes),
    );
    app.decorate('clearPendingLinkCookie', (reply: FastifyReply) => reply.clearCookie(linkName, linkAttributes));
  },
  { name: 'browser-session', dependencies: ['services'] },
);

/**
 * The device cookie of the sign-in limits (plugins/infra/rate-limit.ts): set on a successful sign-in, on the
 * sign-in route's own path, for a year; it outlives sessions and sign-out. Its value is signed
 * (src/device-cookie.ts), so only a cookie of ours names a device.
 */
export function deviceCookie(config: Config) {
  if (!config.secretKey) throw new Error('SECRET_KEY is not resolved (call resolveSecretKey before buildApp)');
  const devices = createDeviceCookies(config.secretKey);
  const name = config.cookieSecure ? '__Secure-idp.device' : 'idp.device';
  return {
    name,
    /** The tag of an account (deviceAccount(...)) inside device cookies. */
    tag: devices.tag,
    /** The device this browser's cookie names, if it holds a valid one. */
    read: (request: FastifyRequest): Device | undefined => devices.read(request.cookies[name]),
    /** Sets the cookie after a successful sign-in to the account with this tag (most recent first). */
    write(request: FastifyRequest, reply: FastifyReply, device: Device | undefined, tag: string) {
      reply.setCookie(name, devices.write(device, tag), {
        path: request.routeOptions.url ?? request.url.split('?')[0]!,
        httpOnly: true,
        secure: config.cookieSecure,
        sameSite: config.cookieSameSite,
        maxAge: DEVICE_COOKIE_MAX_AGE_SECONDS,
      });
    },
  };
}

/**
 * Double-submit CSRF tokens for the hosted forms: a random cookie, echoed in a hidden field, compared in
 * constant time; a foreign Origin is refused outright.
 */
export function createCsrf(config: Config) {
  const cookieName = config.cookieSecure ? '__Host-idp.csrf' : 'idp.csrf';
  const cookie = { path: '/', httpOnly: true, secure: config.cookieSecure, sameSite: config.cookieSameSite } as const;
  const trustedOrigins = new Set(
    [originOf(config.loginUrl), originOf(config.baseUrl), originOf(config.adminUrl)].filter(Boolean) as string[],
  );
  return {
    trustedOrigins,
    token(request: FastifyRequest, reply: FastifyReply): string {
      const existing = request.cookies[cookieName];
      if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
      const token = randomBytes(32).toString('base64url');
      reply.setCookie(cookieName, token, cookie);
      return token;
    },
    check(request: FastifyRequest, field: string | undefined) {
      const origin = request.headers.origin;
      if (origin !== undefined && origin !== 'null' && !trustedOrigins.has(origin)) {
        throw new AppError(403, 'CSRF', 'This form was sent from another site');
      }
      const value = request.cookies[cookieName];
      if (
        !value ||
        !field ||
        value.length !== field.length ||
        !timingSafeEqual(Buffer.from(value), Buffer.from(field))
      ) {
        throw new AppError(403, 'CSRF', 'This form has expired; go back, reload the page and try again');
      }
    },
  };
}
