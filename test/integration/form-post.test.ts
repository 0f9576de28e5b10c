// response_mode=form_post (OAuth 2.0 Form Post Response Mode) at the authorize endpoint: every way an answer
// leaves it (a code at once, after sign-in and consent, errors redirected, prompt=none's errors, a denial, the
// JSON consent endpoint) reaches the client as a page that POSTs to the redirect_uri, with a strict CSP; errors
// before the client and redirect_uri are trusted are rendered, never posted. The attacker's cases: an
// unregistered redirect_uri, a hostile state, another browser opening a sealed delivery.
import { createHash } from 'node:crypto';
import t, { type Test } from 'tap';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildTestApp } from '../helpers/app.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { cookiesOf, tokenRequest } from '../helpers/flow.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import { generateToken } from '../../src/oauth/tokens.js';

const { app } = await buildTestApp(t);
const actor = { actor: 'test' };
const ISSUER = 'http://localhost:3000/api/auth';
const LOGIN = 'http://localhost:3000/login';
const AUTHORIZE = '/api/auth/oauth2/authorize';
const REDIRECT = 'https://rp.example.com/callback';
const VERIFIER = generateToken();
const PASSWORD = 'correct horse battery staple';

const client = await app.services.applications.create(
  { clientName: 'Form post RP', redirectUris: [REDIRECT], allowedScopes: ['openid', 'profile', 'email'] },
  actor,
);

type Jar = Record<string, string>;
/** Each test's browser: its request-binding cookie, and later its session. */
const newBrowser = (): Jar => ({ 'idp.authz': generateToken() });
const inject = (options: InjectOptions & { cookies: Jar }) => app.inject(options);

let counter = 0;
async function createUser(label: string) {
  const email = `${label}-${++counter}@example.com`;
  const user = await app.services.users.create({ email, password: PASSWORD, emailVerified: true }, actor);
  return { ...user, email };
}

function request(overrides: Record<string, string | undefined> = {}) {
  const params: Record<string, string> = {
    client_id: client.clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    response_mode: 'form_post',
    scope: 'openid',
    state: 'st-fp',
    nonce: 'n-fp',
    code_challenge: s256Challenge(VERIFIER),
    code_challenge_method: 'S256',
  };
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) delete params[k];
    else params[k] = v;
  }
  return params;
}

const authorize = (params: Record<string, string>, jar: Jar, method: 'GET' | 'POST' = 'GET') =>
  method === 'GET'
    ? inject({ method: 'GET', url: `${AUTHORIZE}?${new URLSearchParams(params)}`, cookies: jar })
    : inject({
        method: 'POST',
        url: AUTHORIZE,
        cookies: jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams(params).toString(),
      });

const pathOf = (location: string) => {
  const url = new URL(location);
  return `${url.pathname}${url.search}`;
};

/** Signs in on the hosted page for a request; the jar afterwards carries the session. */
async function signIn(email: string, requestId: string, jar: Jar) {
  const page = await inject({ method: 'GET', url: `/login/sign-in?request=${requestId}`, cookies: jar });
  const merged = { ...jar, ...cookiesOf(page) };
  const res = await inject({
    method: 'POST',
    url: '/login/sign-in',
    cookies: merged,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      ...BrowserClient.hiddenFields(page.body, '/login/sign-in'),
      email,
      password: PASSWORD,
    }).toString(),
  });
  return { res, jar: { ...merged, ...cookiesOf(res) } };
}

/** Posts the consent form. */
async function consent(requestId: string, jar: Jar, decision: 'allow' | 'deny') {
  const page = await inject({ method: 'GET', url: `/login/consent?request=${requestId}`, cookies: jar });
  const merged = { ...jar, ...cookiesOf(page) };
  return inject({
    method: 'POST',
    url: '/login/consent',
    cookies: merged,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ ...BrowserClient.hiddenFields(page.body, '/login/consent'), decision }).toString(),
  });
}

/** authorize without a session, sign in, and continue: the answer at the consent step (a 303 to it). */
async function toConsent(email: string, jar: Jar, params = request()) {
  const start = await authorize(params, jar);
  const requestId = new URL(start.headers.location as string).searchParams.get('request')!;
  const signed = await signIn(email, requestId, jar);
  const continued = await inject({
    method: 'GET',
    url: pathOf(signed.res.headers.location as string),
    cookies: signed.jar,
  });
  return { continued, requestId, jar: signed.jar };
}

const decode = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e as 'amp']!);

/**
 * The form_post page: 200 HTML, the headers it must carry (CSP with default-src 'none', form-action the
 * redirect_uri's origin, the script by hash; no-store; no-referrer; no framing), one form POSTing to the
 * redirect_uri, no Location. Returns the form's fields.
 */
function expectFormPost(t: Test, res: LightMyRequestResponse, label = 'form_post'): Record<string, string> {
  t.equal(res.statusCode, 200, `${label}: 200`);
  t.equal(res.headers.location, undefined, `${label}: no Location (nothing in the URL)`);
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/, `${label}: HTML`);
  t.equal(res.headers['cache-control'], 'no-store', `${label}: no-store`);
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${label}: no-referrer`);
  t.equal(res.headers['x-frame-options'], 'DENY', `${label}: not framed`);
  const csp = String(res.headers['content-security-policy']);
  const directives = new Map(csp.split(/;\s*/).map((d) => [d.split(' ')[0]!, d.split(' ').slice(1).join(' ')]));
  t.equal(directives.get('default-src'), "'none'", `${label}: default-src 'none'`);
  t.equal(directives.get('form-action'), 'https://rp.example.com', `${label}: form-action: the redirect_uri's origin`);
  t.equal(directives.get('frame-ancestors'), "'none'", `${label}: frame-ancestors 'none'`);
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, `${label}: nothing unsafe, no wildcard`);
  // The only script is the one the CSP hash allows; no inline handlers.
  const scripts = [...res.body.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1]!);
  t.equal(scripts.length, 1, `${label}: one script`);
  t.equal((res.body.match(/<script/g) ?? []).length, 1, `${label}: no other script element`);
  const hash = createHash('sha256').update(scripts[0]!).digest('base64');
  t.equal(directives.get('script-src'), `'sha256-${hash}'`, `${label}: the script is allowed by its hash alone`);
  t.notMatch(res.body, /\son[a-z]+=/i, `${label}: no inline event handler`);
  // Without JavaScript: a button inside <noscript> submits the form.
  t.match(res.body, /<noscript>[\s\S]*<button type="submit"[^>]*>Continue<\/button>[\s\S]*<\/noscript>/);
  const forms = [...res.body.matchAll(/<form method="post" action="([^"]*)">/g)];
  t.equal(forms.length, 1, `${label}: one form`);
  t.equal(decode(forms[0]![1]!), REDIRECT, `${label}: POSTs to the redirect_uri`);
  const fields: Record<string, string> = {};
  for (const m of res.body.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)">/g))
    fields[decode(m[1]!)] = decode(m[2]!);
  t.equal(fields.iss, ISSUER, `${label}: iss (RFC 9207)`);
  return fields;
}

t.test(
  'a code after sign-in and consent is POSTed to the client; the code is good at the token endpoint',
  async (t) => {
    const user = await createUser('walk');
    const { continued, requestId, jar } = await toConsent(user.email, newBrowser());
    t.equal(continued.headers.location, `${LOGIN}/consent?request=${requestId}`, 'the consent page comes first');
    const fields = expectFormPost(t, await consent(requestId, jar, 'allow'));
    t.same(Object.keys(fields).sort(), ['code', 'iss', 'state'], 'code, state and iss only');
    t.equal(fields.state, 'st-fp');
    const token = await tokenRequest(app, {
      grant_type: 'authorization_code',
      code: fields.code!,
      code_verifier: VERIFIER,
      client_id: client.clientId,
      redirect_uri: REDIRECT,
    });
    t.equal(token.statusCode, 200, 'the posted code is exchanged');
    t.ok(token.json().id_token);

    // Signed in, consent remembered: the code is issued at once (single sign-on in one statement), also posted;
    // by POST to authorize too, and without state then.
    const sso = expectFormPost(t, await authorize(request(), jar), 'single sign-on');
    t.ok(sso.code, 'a code at once');
    const posted = expectFormPost(t, await authorize(request({ state: undefined }), jar, 'POST'), 'POST authorize');
    t.same(Object.keys(posted).sort(), ['code', 'iss'], 'no state when none was sent');

    // response_mode=query (or none) stays a redirect.
    for (const mode of ['query', undefined]) {
      const res = await authorize(request({ response_mode: mode }), jar);
      t.equal(res.statusCode, 303, `response_mode=${mode}: a redirect`);
      t.ok(new URL(res.headers.location as string).searchParams.get('code'), 'with the code in the query');
    }
  },
);

t.test('errors after the client is trusted are POSTed: prompt=none, a bad parameter, a denial', async (t) => {
  const jar = newBrowser();
  const loginRequired = expectFormPost(t, await authorize(request({ prompt: 'none' }), jar), 'login_required');
  t.equal(loginRequired.error, 'login_required');
  t.equal(loginRequired.state, 'st-fp');
  t.ok(loginRequired.error_description);
  t.notOk(loginRequired.code);

  for (const [label, overrides] of [
    ['prompt=bogus', { prompt: 'bogus' }],
    ['no PKCE', { code_challenge: undefined }],
    ['an unknown scope', { scope: 'openid admin' }],
    ['display=bogus', { display: 'bogus' }],
    ['claims not JSON', { claims: '{"userinfo":' }],
  ] as const) {
    const fields = expectFormPost(t, await authorize(request(overrides), jar), label);
    t.equal(fields.error, label === 'an unknown scope' ? 'invalid_scope' : 'invalid_request', `${label}: error`);
    t.equal(fields.state, 'st-fp', `${label}: state`);
  }

  const user = await createUser('deny');
  const { requestId, jar: signedIn } = await toConsent(user.email, newBrowser());
  const denied = expectFormPost(t, await consent(requestId, signedIn, 'deny'), 'access_denied');
  t.equal(denied.error, 'access_denied');

  // prompt=none for a signed-in user without consent: consent_required, posted.
  const user2 = await createUser('none');
  const start = await authorize(request({ scope: 'openid profile' }), signedIn);
  t.equal(start.statusCode, 303);
  const other = await toConsent(user2.email, newBrowser());
  const consentRequired = expectFormPost(
    t,
    await authorize(request({ prompt: 'none', scope: 'openid email' }), other.jar),
    'consent_required',
  );
  t.equal(consentRequired.error, 'consent_required');
});

t.test('response modes other than query and form_post stay invalid_request, answered in the query', async (t) => {
  for (const mode of ['fragment', 'query.jwt', 'form_post.jwt', 'jwt', 'FORM_POST']) {
    const res = await authorize(request({ response_mode: mode }), newBrowser());
    t.equal(res.statusCode, 303, `${mode}: a redirect`);
    const url = new URL(res.headers.location as string);
    t.equal(`${url.origin}${url.pathname}`, REDIRECT);
    t.equal(url.searchParams.get('error'), 'invalid_request', `${mode}: invalid_request`);
    t.equal(url.searchParams.get('error_description'), 'only response_mode=query or form_post is supported');
    t.equal(url.searchParams.get('state'), 'st-fp');
    t.equal(url.searchParams.get('iss'), ISSUER);
  }
});

t.test('attacker: an unregistered redirect_uri or unknown client gets a rendered error, never a form', async (t) => {
  for (const [label, overrides] of [
    ['unregistered redirect_uri', { redirect_uri: 'https://evil.example/steal' }],
    ['registered one with a suffix', { redirect_uri: `${REDIRECT}/x` }],
    ['unknown client', { client_id: 'no-such-client', redirect_uri: 'https://evil.example/steal' }],
  ] as const) {
    const res = await authorize(request({ ...overrides, prompt: 'none' }), newBrowser());
    t.equal(res.statusCode, 400, `${label}: 400`);
    t.equal(res.headers.location, undefined, `${label}: no Location`);
    t.match(res.headers['content-type'], /^text\/html/);
    t.equal(res.headers['cache-control'], 'no-store');
    t.notMatch(res.body, /<form method="post" action="https:\/\/(evil|rp)/, `${label}: no form to the client`);
    t.notMatch(res.body, /evil\.example/, `${label}: the URI is not on the page`);
    t.notMatch(String(res.headers['content-security-policy']), /form-action https:/, `${label}: not the form CSP`);
  }
});

t.test('attacker: a hostile state is escaped in the form and cannot add markup or fields', async (t) => {
  const hostile = `"><script>alert(1)</script><input type="hidden" name="code" value="attacker">&amp;'`;
  const fields = expectFormPost(t, await authorize(request({ prompt: 'none', state: hostile }), newBrowser()));
  t.equal(fields.state, hostile, 'the state comes back exactly as sent');
  t.equal(fields.error, 'login_required');
  t.notOk('code' in fields, 'no code field injected');
  const res = await authorize(request({ prompt: 'none', state: hostile }), newBrowser());
  t.notMatch(res.body, /<script>alert/, 'no injected script');
  t.match(res.body, /value="&quot;&gt;&lt;script&gt;alert\(1\)&lt;\/script&gt;/, 'the state is HTML-escaped');
});

t.test('the JSON consent endpoint hands over a sealed delivery page, for this browser only', async (t) => {
  const user = await createUser('json');
  const { requestId, jar } = await toConsent(user.email, newBrowser());
  const json = await inject({
    method: 'POST',
    url: '/api/auth/consent',
    cookies: jar,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ request: requestId, decision: 'allow' }),
  });
  t.equal(json.statusCode, 200);
  const redirectTo = new URL(json.json().redirectTo as string);
  t.equal(`${redirectTo.origin}${redirectTo.pathname}`, `${ISSUER}/oauth2/authorize/deliver`);
  t.notOk(redirectTo.searchParams.has('code'), 'no code readable in the URL');
  t.notMatch(redirectTo.search, /st-fp/, 'nor the state');

  // Another browser (or none) gets the expired-request page.
  for (const [label, cookies] of [
    ['another browser', { ...jar, 'idp.authz': generateToken() }],
    ['no binding cookie', { 'idp.session': jar['idp.session']! }],
  ] as const) {
    const stolen = await inject({ method: 'GET', url: pathOf(redirectTo.toString()), cookies });
    t.equal(stolen.statusCode, 400, `${label}: 400`);
    t.match(stolen.headers['content-type'], /^text\/html/);
    t.match(stolen.body, /<code>invalid_request<\/code>/);
    t.notMatch(stolen.body, /rp\.example\.com/, `${label}: nothing of the answer`);
  }
  const tampered = new URL(redirectTo);
  const sealed = tampered.searchParams.get('response')!;
  tampered.searchParams.set('response', `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BA' : 'AA'}`);
  const forged = await inject({ method: 'GET', url: pathOf(tampered.toString()), cookies: jar });
  t.equal(forged.statusCode, 400, 'a tampered delivery: 400');

  const fields = expectFormPost(t, await inject({ method: 'GET', url: pathOf(redirectTo.toString()), cookies: jar }));
  t.equal(fields.state, 'st-fp');
  const token = await tokenRequest(app, {
    grant_type: 'authorization_code',
    code: fields.code!,
    code_verifier: VERIFIER,
    client_id: client.clientId,
    redirect_uri: REDIRECT,
  });
  t.equal(token.statusCode, 200, 'the delivered code is good');
});
