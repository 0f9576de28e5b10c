// HTTP on loopback (a client refusing other origins), the cookie-jar Browser, the steps of the hosted sign-in
// flow (authorize, sign-in, consent, code, token) and the admin API helpers. Imports core.js only.
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { b64url, freePort, now, run, StepError } from './core.js';

/**
 * requests to `client.origin` only (set it once the port is known); `countStatuses` keeps a count per
 * HTTP status in `client.statusCounts` (which the caller may replace with a new Map).
 */
export function createHttpClient({ maxSockets, userAgent, countStatuses = false, timeoutMs = 30_000 }) {
  const agent = new http.Agent({ keepAlive: true, maxSockets });
  run.agents.push(agent);
  const client = { origin: undefined, agent, userAgent, statusCounts: new Map() };
  client.request = (url, { method = 'GET', headers = {}, body } = {}) => {
    const u = new URL(url);
    if (u.origin !== client.origin)
      return Promise.reject(new Error(`refusing a request outside the server under test: ${u.origin}`));
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          agent,
          host: u.hostname,
          port: u.port,
          path: u.pathname + u.search,
          method,
          headers: body === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('error', reject);
          res.on('end', () => {
            if (countStatuses)
              client.statusCounts.set(res.statusCode, (client.statusCounts.get(res.statusCode) ?? 0) + 1);
            resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
          });
        },
      );
      req.setTimeout(timeoutMs, () =>
        req.destroy(new Error(`no answer within ${timeoutMs} ms: ${method} ${u.pathname}`)),
      );
      req.on('error', reject);
      if (body !== undefined) req.write(body);
      req.end();
    });
  };
  return client;
}

/** A cookie jar and manual redirects, as in test/helpers/browser-client.ts. */
export class Browser {
  cookies = new Map();

  constructor(client) {
    this.client = client;
  }

  async fetch(url, { form, headers: extra } = {}) {
    const headers = { accept: 'text/html', 'user-agent': this.client.userAgent, ...extra };
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body;
    if (form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(form).toString();
    }
    const res = await this.client.request(url, { method: form ? 'POST' : 'GET', headers, body });
    for (const line of res.headers['set-cookie'] ?? []) {
      const [pair] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0|expires=thu, 01 jan 1970/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const location = res.headers.location;
    return { ...res, url, location: location ? new URL(location, url).toString() : undefined };
  }

  /** Hidden inputs of the first form whose action ends with `action`. */
  static hiddenFields(html, action) {
    const form = new RegExp(
      `<form[^>]*action="[^"]*${action.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"[^>]*>([\\s\\S]*?)</form>`,
    ).exec(html);
    if (!form) return undefined;
    const fields = {};
    for (const m of form[1].matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
      fields[m[1]] = m[2]
        .replace(/&amp;/g, '&')
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, '<')
        .replace(/&gt;/g, '>');
    }
    return fields;
  }
}

export const snippet = (res) =>
  res.body
    .replace(/<[^>]+>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 160);

export function expectStatus(step, res, status) {
  if (res.status !== status) {
    throw new StepError(
      step,
      `expected ${status}, got ${res.status}${res.location ? ` → ${res.location}` : ''}: ${snippet(res)}`,
      res.status,
    );
  }
}

export function expectRedirect(step, res, prefix) {
  if (res.status !== 303 && res.status !== 302) expectStatus(step, res, 303);
  if (!res.location?.startsWith(prefix)) {
    throw new StepError(step, `expected a redirect to ${prefix}…, got ${res.status} → ${res.location}`, res.status);
  }
}

/**
 * Picks the server's port and a callback port (closed again: nothing listens there, and nothing fetches
 * it); sets `client.origin` and oidc's issuer, loginUrl and redirectUri. Returns { port, origin, adminToken }.
 */
export async function setupEndpoints(client, oidc) {
  const port = await freePort();
  const callbackPort = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  client.origin = origin;
  oidc.issuer = `${origin}/api/auth`;
  oidc.loginUrl = `${origin}/login`;
  oidc.redirectUri = `http://127.0.0.1:${callbackPort}/cb`;
  return { port, origin, adminToken: b64url(randomBytes(32)) };
}

// ------------------------------------------------------------------------------- the hosted sign-in
/**
 * The OIDC side of a run: `{ client, issuer, loginUrl, redirectUri, clientId, scope }` (clientId once the
 * application exists).
 */
export function newAuthorization(oidc) {
  const verifier = b64url(randomBytes(32));
  const challenge = b64url(createHash('sha256').update(verifier).digest());
  const state = b64url(randomBytes(12));
  const nonce = b64url(randomBytes(12));
  const url = new URL(`${oidc.issuer}/oauth2/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: oidc.redirectUri,
    scope: oidc.scope,
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  return { url: url.toString(), verifier, state, nonce };
}

/** The callback redirect: checks state and iss (RFC 9207), returns the code. */
export function codeFrom(oidc, step, res, auth) {
  expectRedirect(step, res, `${oidc.redirectUri}?`);
  const params = new URL(res.location).searchParams;
  if (params.get('error'))
    throw new StepError(step, `error redirect: ${params.get('error')}: ${params.get('error_description')}`, res.status);
  if (params.get('state') !== auth.state) throw new StepError(step, 'state on the callback does not match', res.status);
  if (params.get('iss') !== oidc.issuer)
    throw new StepError(step, `iss on the callback is ${params.get('iss')}`, res.status);
  const code = params.get('code');
  if (!code) throw new StepError(step, 'no code on the callback', res.status);
  return code;
}

/**
 * authorize → sign-in page → sign-in POST → continue (→ consent page → allow, when `consent`) → code
 * redirect; returns the code. `times` gets the milliseconds of authorize, sign-in and continue.
 */
export async function signInPages(
  oidc,
  browser,
  auth,
  user,
  { consent = true, codeStep = 'consent', times = {} } = {},
) {
  let t = now();
  let res = await browser.fetch(auth.url);
  expectRedirect('authorize', res, `${oidc.loginUrl}/sign-in?request=`);
  res = await browser.fetch(res.location);
  expectStatus('authorize', res, 200);
  const signInFields = Browser.hiddenFields(res.body, '/sign-in');
  if (!signInFields?.csrf || !signInFields.request)
    throw new StepError('authorize', 'the sign-in page has no csrf or request field', res.status);
  times.authorize = now() - t;

  t = now();
  res = await browser.fetch(`${oidc.loginUrl}/sign-in`, {
    form: { ...signInFields, email: user.email, password: user.password },
  });
  expectRedirect('sign-in', res, `${oidc.issuer}/oauth2/authorize/continue?request=`);
  times['sign-in'] = now() - t;

  t = now();
  res = await browser.fetch(res.location);
  if (consent) {
    expectRedirect('consent', res, `${oidc.loginUrl}/consent?request=`);
    res = await browser.fetch(res.location);
    expectStatus('consent', res, 200);
    const fields = Browser.hiddenFields(res.body, '/consent');
    if (!fields?.csrf) throw new StepError('consent', 'the consent page has no csrf field', res.status);
    res = await browser.fetch(`${oidc.loginUrl}/consent`, { form: { ...fields, decision: 'allow' } });
  }
  const code = codeFrom(oidc, codeStep, res, auth);
  times.continue = now() - t;
  return code;
}

/** grant_type=authorization_code with the PKCE verifier; a 200 or a StepError of `step`. Returns { res, tokens }. */
export async function exchangeCode(oidc, auth, code, step) {
  const res = await oidc.client.request(`${oidc.issuer}/oauth2/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: oidc.redirectUri,
      client_id: oidc.clientId,
      code_verifier: auth.verifier,
    }).toString(),
  });
  expectStatus(step, res, 200);
  return { res, tokens: JSON.parse(res.body) };
}

const adminHeaders = (adminToken) => ({
  authorization: `Bearer ${adminToken}`,
  'content-type': 'application/json',
  accept: 'application/json',
});

/** POST /api/admin/applications; returns the client_id. */
export async function createApplication(client, adminToken, { clientName, redirectUri, scope }) {
  const res = await client.request(`${client.origin}/api/admin/applications`, {
    method: 'POST',
    headers: adminHeaders(adminToken),
    body: JSON.stringify({ clientName, redirectUris: [redirectUri], allowedScopes: scope.split(' ') }),
  });
  if (res.status !== 201) throw new Error(`creating the application: ${res.status} ${res.body}`);
  return JSON.parse(res.body).clientId;
}

/** POST /api/admin/users (email verified); returns the user's id. */
export async function createUser(client, adminToken, { email, password, name }) {
  const r = await client.request(`${client.origin}/api/admin/users`, {
    method: 'POST',
    headers: adminHeaders(adminToken),
    body: JSON.stringify({ email, password, name, emailVerified: true }),
  });
  if (r.status !== 201) throw new Error(`creating user ${email}: ${r.status} ${r.body}`);
  return JSON.parse(r.body).id;
}
