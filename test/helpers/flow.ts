// Walks authorize → sign-in → consent → code → token with app.inject, for tests that need tokens.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { s256Challenge } from '../../src/oauth/pkce.js';

export interface FlowOptions {
  clientId: string;
  redirectUri: string;
  email: string;
  password: string;
  scope?: string;
  nonce?: string;
  /** RFC 8707 resource indicators, each sent as a `resource` parameter. */
  resource?: string[];
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
  for (const resource of o.resource ?? []) query.append('resource', resource);
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

// Sign-up (issue 31, item 3): the account exists only once the mailed link is confirmed (GET the page,
// POST its button). These helpers find the link in the mail and walk the confirmation, so a test that
// needs a fresh account changes little.

/** The subject of the mail a sign-up sends to a free address (or one held by an unverified account). */
export const SIGN_UP_MAIL_SUBJECT = 'Confirm your e-mail address to create your account';
/** The subject of the mail a sign-up sends to the owner of an existing account. */
export const SIGN_UP_ATTEMPT_SUBJECT = 'Someone tried to create an account with your address';

/** Finds the newest not yet taken link of a mail to `to` with `subject` (waits for it to arrive). */
export type MailLinks = (to: string, subject?: string) => Promise<string>;

const LINK = /https?:\/\/\S+/;

async function poll<T>(find: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 10000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`no ${what} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function linkFinder(list: () => Promise<Array<{ to: string; subject: string; text: string }>>): MailLinks {
  const taken = new Set<string>();
  return (to, subject = SIGN_UP_MAIL_SUBJECT) =>
    poll(async () => {
      for (const mail of (await list()).reverse()) {
        if (!mail.to.toLowerCase().includes(to.toLowerCase()) || mail.subject !== subject) continue;
        const link = LINK.exec(mail.text)?.[0];
        if (link && !taken.has(link)) {
          taken.add(link);
          return link;
        }
      }
      return undefined;
    }, `mail "${subject}" for ${to}`);
}

/** Links from the in-process SMTP server (test/helpers/smtp.ts). */
export function smtpLinks(smtp: { mails: Array<{ to: string; subject: string; text: string }> }): MailLinks {
  return linkFinder(async () => [...smtp.mails]);
}

/** Links from DATA_DIR/outbox.jsonl (no SMTP_URL: the mailer keeps mail there). */
export function outboxLinks(dataDir: string): MailLinks {
  const outbox = join(dataDir, 'outbox.jsonl');
  return linkFinder(async () => {
    const text = await readFile(outbox, 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { to: string; subject: string; text: string });
  });
}

/** Opens a mailed sign-up link (GET: a page with a button) and presses the button (POST), in `browser`. */
export async function confirmSignUpLink(
  app: FastifyInstance,
  link: string,
  browser: Record<string, string> = {},
  /** Typed into the page's password field, if it shows one (a browser other than the one that signed up). */
  password?: string,
) {
  const page = await app.inject({ method: 'GET', url: pathOf(link), cookies: browser });
  if (page.statusCode !== 200) throw new Error(`sign-up link page: ${page.statusCode} ${page.body.slice(0, 300)}`);
  const jar = { ...browser, ...cookiesOf(page) };
  const asked = /<input id="field-password" name="password"/.test(page.body);
  const res = await app.inject({
    method: 'POST',
    url: new URL(link).pathname,
    cookies: jar,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      csrf: hiddenField(page.body, 'csrf'),
      token: hiddenField(page.body, 'token'),
      ...(asked && password !== undefined && { password }),
    }).toString(),
  });
  return { page, res, jar: { ...jar, ...cookiesOf(res) } };
}

/**
 * Signs up (the hosted page, or the JSON endpoint with via: 'json') and confirms the mailed link in the same
 * browser (its sign-up cookie: no password asked). The confirmation signs the browser in (issue 31); with
 * requestId (a request this browser holds) it answers 303 to the request's continue URL. signIn: true
 * signs in on the hosted page only if the confirmation set no session. `jar` is the browser's cookies.
 */
export async function signUpAndConfirm(
  app: FastifyInstance,
  links: MailLinks,
  o: {
    email: string;
    password: string;
    name?: string;
    requestId?: string | undefined;
    browser?: Record<string, string>;
    via?: 'page' | 'json';
    signIn?: boolean;
    remoteAddress?: string;
  },
) {
  let jar = { ...(o.browser ?? {}) };
  const q = o.requestId ? `?request=${encodeURIComponent(o.requestId)}` : '';
  let signUp: LightMyRequestResponse;
  if (o.via === 'json') {
    signUp = await app.inject({
      method: 'POST',
      url: '/api/auth/sign-up',
      cookies: jar,
      ...(o.remoteAddress && { remoteAddress: o.remoteAddress }),
      payload: {
        email: o.email,
        password: o.password,
        ...(o.name && { name: o.name }),
        ...(o.requestId && { request: o.requestId }),
      },
    });
    if (signUp.statusCode !== 201) throw new Error(`sign-up: ${signUp.statusCode} ${signUp.body}`);
  } else {
    const page = await app.inject({
      method: 'GET',
      url: `/login/sign-up${q}`,
      cookies: jar,
      ...(o.remoteAddress && { remoteAddress: o.remoteAddress }),
    });
    jar = { ...jar, ...cookiesOf(page) };
    signUp = await app.inject({
      method: 'POST',
      url: '/login/sign-up',
      cookies: jar,
      ...(o.remoteAddress && { remoteAddress: o.remoteAddress }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        csrf: hiddenField(page.body, 'csrf'),
        email: o.email,
        password: o.password,
        ...(o.name && { name: o.name }),
        ...(o.requestId && { request: o.requestId }),
      }).toString(),
    });
    if (signUp.statusCode !== 200) throw new Error(`sign-up: ${signUp.statusCode} ${signUp.body.slice(0, 300)}`);
  }
  jar = { ...jar, ...cookiesOf(signUp) };
  // The browser that signed up: no password asked, and the confirmation signs it in.
  const confirmed = await confirmSignUpLink(app, await links(o.email), jar);
  jar = confirmed.jar;
  const confirm = confirmed.res;
  if (o.signIn && !o.requestId && !cookiesOf(confirm)[app.sessionCookieName]) {
    const signed = await signInWithInject(app, o.email, o.password, undefined, jar);
    if (signed.res.statusCode !== 303) throw new Error(`sign-in after sign-up: ${signed.res.statusCode}`);
    jar = signed.jar;
  }
  return { signUp, confirm, jar };
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
