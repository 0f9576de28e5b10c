// Walks authorize → sign-in → consent → code → token with app.inject, for tests that need tokens.
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { s256Challenge } from '../../src/oauth/pkce.js';

export interface FlowOptions {
  clientId: string;
  redirectUri: string;
  email: string;
  password: string;
  scope?: string;
  nonce?: string;
}

/** The cookies a response set, as a jar for the next request. */
export function cookiesOf(res: LightMyRequestResponse): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of res.cookies as Array<{ name: string; value: string }>) out[c.name] = c.value;
  return out;
}

/** The value of a hidden form field of a hosted page (throws when the page has none). */
export function hiddenField(body: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(body);
  if (!m) throw new Error(`no hidden field ${name}`);
  return m[1]!;
}

/** GETs a hosted form page: the response, the jar with its cookies, and its CSRF token. */
export async function formPage(app: FastifyInstance, path: string, jar: Record<string, string> = {}) {
  const res = await app.inject({ method: 'GET', url: path, cookies: jar });
  return { res, jar: { ...jar, ...cookiesOf(res) }, csrf: hiddenField(res.body, 'csrf') };
}

const pathOf = (location: string) => {
  const u = new URL(location, 'http://localhost');
  return u.pathname + u.search;
};

/** Signs in on the hosted page; `jar` carries the browser's cookies (the request binding among them). */
export async function signInWithInject(
  app: FastifyInstance,
  email: string,
  password: string,
  requestId?: string,
  browser: Record<string, string> = {},
) {
  const page = await app.inject({
    method: 'GET',
    url: `/login/sign-in${requestId ? `?request=${requestId}` : ''}`,
    cookies: browser,
  });
  const jar = { ...browser, ...cookiesOf(page) };
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
  const res = await app.inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ csrf, email, password, ...(requestId && { request: requestId }) }).toString(),
  });
  return { res, jar: { ...jar, ...cookiesOf(res) }, csrf };
}

/** Returns the code (and the session cookie jar) after a full, consenting walk. */
export async function obtainCode(app: FastifyInstance, o: FlowOptions, jar?: Record<string, string>) {
  const verifier = `v${'x'.repeat(42)}${Math.random().toString(36).slice(2)}`.slice(0, 64);
  const query = new URLSearchParams({
    client_id: o.clientId,
    redirect_uri: o.redirectUri,
    response_type: 'code',
    scope: o.scope ?? 'openid offline_access',
    code_challenge: s256Challenge(verifier),
    code_challenge_method: 'S256',
    ...(o.nonce && { nonce: o.nonce }),
  });
  let res = await app.inject({ method: 'GET', url: `/api/auth/oauth2/authorize?${query}`, cookies: jar ?? {} });
  let cookies = { ...(jar ?? {}), ...cookiesOf(res) };
  for (let hops = 0; hops < 10; hops++) {
    const location = res.headers.location as string | undefined;
    if (!location) throw new Error(`flow stopped at ${res.statusCode}: ${res.body.slice(0, 200)}`);
    if (location.startsWith(o.redirectUri)) {
      const code = new URL(location).searchParams.get('code');
      if (!code) throw new Error(`no code: ${location}`);
      return { code, verifier, jar: cookies };
    }
    const path = pathOf(location);
    if (path.startsWith('/login/sign-in')) {
      const requestId = new URL(location, 'http://x').searchParams.get('request')!;
      const signed = await signInWithInject(app, o.email, o.password, requestId, cookies);
      cookies = { ...cookies, ...signed.jar };
      res = signed.res;
      continue;
    }
    if (path.startsWith('/login/consent')) {
      const page = await app.inject({ method: 'GET', url: path, cookies });
      cookies = { ...cookies, ...cookiesOf(page) };
      const csrf = /name="csrf" value="([^"]+)"/.exec(page.body)![1]!;
      const requestId = new URL(location, 'http://x').searchParams.get('request')!;
      res = await app.inject({
        method: 'POST',
        url: '/login/consent',
        cookies,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ csrf, request: requestId, decision: 'allow' }).toString(),
      });
      continue;
    }
    res = await app.inject({ method: 'GET', url: path, cookies });
    cookies = { ...cookies, ...cookiesOf(res) };
  }
  throw new Error('too many redirects');
}

export async function tokenRequest(app: FastifyInstance, form: Record<string, string>) {
  return app.inject({
    method: 'POST',
    url: '/api/auth/oauth2/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams(form).toString(),
  });
}

export async function obtainTokens(app: FastifyInstance, o: FlowOptions, jar?: Record<string, string>) {
  const { code, verifier, jar: cookies } = await obtainCode(app, o, jar);
  const res = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    client_id: o.clientId,
    redirect_uri: o.redirectUri,
  });
  if (res.statusCode !== 200) throw new Error(`token exchange failed: ${res.statusCode} ${res.body}`);
  return {
    tokens: res.json() as {
      access_token: string;
      refresh_token?: string;
      id_token: string;
      scope: string;
      expires_in: number;
    },
    jar: cookies,
  };
}

export async function userinfo(app: FastifyInstance, accessToken: string) {
  return app.inject({
    method: 'GET',
    url: '/api/auth/oauth2/userinfo',
    headers: { authorization: `Bearer ${accessToken}` },
  });
}

/**
 * A mailed verification or e-mail change link, clicked in a browser (issue 31): the GET only opens the
 * confirmation page; its button POSTs the form (CSRF token and link token). Returns the POST's answer.
 */
export async function confirmMailedLink(app: FastifyInstance, link: string, jar: Record<string, string> = {}) {
  const page = await app.inject({ method: 'GET', url: pathOf(link), cookies: jar });
  if (page.statusCode !== 200) return page;
  const cookies = { ...jar, ...cookiesOf(page) };
  const action = /<form method="post" action="([^"]*\/verify-email\/confirm)"/.exec(page.body)?.[1];
  if (!action) throw new Error(`no confirmation form on the page: ${page.body.slice(0, 300)}`);
  return app.inject({
    method: 'POST',
    url: action,
    cookies,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      csrf: hiddenField(page.body, 'csrf'),
      token: hiddenField(page.body, 'token'),
    }).toString(),
  });
}
