// Shared set-up of the /api/me/* tests (issue 17): an app with a real SMTP server, users, JSON sign-in,
// and requests with the session cookie.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildTestApp, type TestApp } from './app.js';
import { cookiesOf } from './flow.js';
import { startSmtp } from './smtp.js';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export const PASSWORD = 'correct horse battery';

export async function meTestApp(t: TapLike, env: Record<string, string> = {}) {
  const smtp = await startSmtp();
  t.teardown(() => smtp.close());
  const test: TestApp = await buildTestApp(t, { env: { SMTP_URL: smtp.url, ...env } });
  const { app } = test;
  let counter = 0;

  async function newUser(o: { password?: string; name?: string } = {}) {
    const email = `me${++counter}-${Math.random().toString(36).slice(2, 8)}@example.com`;
    const password = o.password ?? PASSWORD;
    const user = await app.services.users.create(
      { email, password, emailVerified: true, ...(o.name && { name: o.name }) },
      { actor: 'test' },
    );
    return { id: user.id, email, password };
  }

  /** Signs in through the JSON endpoint: the cookie jar with the session cookie. */
  async function signIn(email: string, password: string = PASSWORD, userAgent = 'test-agent/1.0') {
    const res = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-in',
      headers: { 'content-type': 'application/json', 'user-agent': userAgent },
      payload: JSON.stringify({ email, password }),
    });
    if (res.statusCode !== 200) throw new Error(`sign-in failed: ${res.statusCode} ${res.body}`);
    return cookiesOf(res);
  }

  /** A request to /api/me/*: JSON body when given, the jar's cookies. */
  function me(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'PUT',
    path: string,
    o: { jar?: Record<string, string>; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<LightMyRequestResponse> {
    return app.inject({
      method,
      url: `/api/me${path}`,
      cookies: o.jar ?? {},
      headers: {
        ...(o.body !== undefined && { 'content-type': 'application/json' }),
        ...o.headers,
      },
      ...(o.body !== undefined && { payload: typeof o.body === 'string' ? o.body : JSON.stringify(o.body) }),
    });
  }

  /** Waits for the mail queue. */
  const settle = () => app.services.mailer.drain();

  return { ...test, smtp, newUser, signIn, me, settle };
}

/** No header of any CORS kind. */
export function corsHeaders(res: LightMyRequestResponse): string[] {
  return Object.keys(res.headers).filter((h) => h.toLowerCase().startsWith('access-control-'));
}

export type MeApp = Awaited<ReturnType<typeof meTestApp>>;
export type { FastifyInstance };
