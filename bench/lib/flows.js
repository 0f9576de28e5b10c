// The operations of `npm run bench`, one set for every target: the hosted sign-in of our server (/login/sign-in,
// /login/consent) and the interaction pages of the anchor (bench/anchor/server.js: /interaction/:uid), the code
// exchange, UserInfo and refresh. A target is a plain object (it crosses the process boundary to the driver):
//   { kind: 'ours' | 'anchor' | 'bare', origin, issuer, loginUrl, redirectUri, clientId,
//     paths: { authorize, token, userinfo, me, discovery, jwks, scopes } }
// Imports core.js and http.js.
import { createHash, randomBytes } from 'node:crypto';
import { b64url, StepError } from './core.js';
import { Browser, codeFrom, expectStatus, snippet } from './http.js';

export const FLOW_SCOPE = 'openid profile email';
export const REFRESH_SCOPE = 'openid offline_access';

/** A new authorization request (PKCE S256, state, nonce) for `scope`. */
export function newAuth(t, scope, prompt) {
  const verifier = b64url(randomBytes(32));
  const state = b64url(randomBytes(12));
  const nonce = b64url(randomBytes(12));
  const url = new URL(t.origin + t.paths.authorize);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: t.clientId,
    redirect_uri: t.redirectUri,
    scope,
    state,
    nonce,
    code_challenge: b64url(createHash('sha256').update(verifier).digest()),
    code_challenge_method: 'S256',
    ...(prompt && { prompt }),
  }).toString();
  return { url: url.toString(), verifier, state, nonce };
}

const isPage = (t, url, name) =>
  t.kind === 'ours' ? url.startsWith(`${t.loginUrl}/${name}?`) : /\/interaction\/[\w-]+$/.test(new URL(url).pathname);

/**
 * Follows the authorization request through whatever pages the server shows (sign-in, consent) until the
 * redirect to the client; returns the code. `allowConsent` false: a consent page is an error (consent is
 * remembered after the setup flow).
 */
export async function authorize(t, browser, auth, user, { allowConsent = false } = {}) {
  let res = await browser.fetch(auth.url);
  for (let hops = 0; hops < 12; hops++) {
    if (res.location?.startsWith(`${t.redirectUri}?`)) return codeFrom(t, 'authorize', res, auth);
    if (res.status !== 302 && res.status !== 303) expectStatus('authorize', res, 303);
    const next = res.location;
    if (t.kind === 'ours' && isPage(t, next, 'sign-in')) {
      res = await browser.fetch(next);
      expectStatus('sign-in page', res, 200);
      const fields = Browser.hiddenFields(res.body, '/sign-in');
      if (!fields?.csrf) throw new StepError('sign-in page', 'no csrf field', res.status);
      res = await browser.fetch(`${t.loginUrl}/sign-in`, {
        form: { ...fields, email: user.email, password: user.password },
      });
    } else if (t.kind === 'ours' && isPage(t, next, 'consent')) {
      if (!allowConsent) throw new StepError('consent', 'asked for consent again', res.status);
      res = await browser.fetch(next);
      expectStatus('consent page', res, 200);
      const fields = Browser.hiddenFields(res.body, '/consent');
      if (!fields?.csrf) throw new StepError('consent page', 'no csrf field', res.status);
      res = await browser.fetch(`${t.loginUrl}/consent`, { form: { ...fields, decision: 'allow' } });
    } else if (t.kind === 'anchor' && isPage(t, next, 'interaction')) {
      res = await browser.fetch(next);
      expectStatus('interaction page', res, 200);
      const action = /<form method="post" action="([^"]+)"/.exec(res.body)?.[1];
      if (!action) throw new StepError('interaction page', `no form: ${snippet(res)}`, res.status);
      if (action.endsWith('/confirm') && !allowConsent)
        throw new StepError('consent', 'asked for consent again', res.status);
      const form = action.endsWith('/login') ? { email: user.email, password: user.password } : { ok: '1' };
      res = await browser.fetch(new URL(action, next).toString(), { form });
    } else {
      res = await browser.fetch(next);
    }
  }
  throw new StepError('authorize', `no redirect to the client after 12 hops (last ${res.status} ${res.url})`);
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' };

/** POST to the token endpoint; a 200 with a Bearer access token or a StepError. */
async function tokenRequest(t, client, step, params) {
  const res = await client.request(t.origin + t.paths.token, {
    method: 'POST',
    headers: FORM,
    body: new URLSearchParams({ ...params, client_id: t.clientId }).toString(),
  });
  if (res.status !== 200) {
    let error;
    try {
      error = JSON.parse(res.body).error;
    } catch {}
    const e = new StepError(step, `${res.status} ${error ?? snippet(res)}`, res.status);
    e.oauthError = error;
    throw e;
  }
  const tokens = JSON.parse(res.body);
  if (tokens.token_type?.toLowerCase() !== 'bearer' || !tokens.access_token)
    throw new StepError(step, `no Bearer access token: ${res.body.slice(0, 160)}`, 200);
  return tokens;
}

const claimsOf = (jwt) => JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));

export async function exchange(t, client, auth, code, user) {
  const tokens = await tokenRequest(t, client, 'token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: t.redirectUri,
    code_verifier: auth.verifier,
  });
  const claims = tokens.id_token ? claimsOf(tokens.id_token) : {};
  if (claims.sub !== user.id || claims.aud !== t.clientId || claims.nonce !== auth.nonce)
    throw new StepError('token', `ID token for another sign-in: sub ${claims.sub}, aud ${claims.aud}`, 200);
  return tokens;
}

export async function userinfo(t, client, accessToken, user) {
  const res = await client.request(t.origin + t.paths.userinfo, {
    headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
  });
  expectStatus('userinfo', res, 200);
  const body = JSON.parse(res.body);
  if (body.sub !== user.id || body.email !== user.email)
    throw new StepError('userinfo', `claims of another user: ${res.body.slice(0, 160)}`, 200);
  return body;
}

/** One refresh with rotation: returns the new refresh token. */
export async function refresh(t, client, chain) {
  const tokens = await tokenRequest(t, client, 'refresh', { grant_type: 'refresh_token', refresh_token: chain.token });
  if (!tokens.refresh_token || tokens.refresh_token === chain.token)
    throw new StepError('refresh', 'no new refresh token (no rotation)', 200);
  if (!tokens.id_token || claimsOf(tokens.id_token).sub !== chain.user.id)
    throw new StepError('refresh', 'no ID token for the chain', 200);
  return tokens.refresh_token;
}

/** The complete flow in a fresh browser: sign-in (argon2id) → code → token → userinfo. */
export async function loginFlow(t, client, user, { scope = FLOW_SCOPE, allowConsent = false, browser } = {}) {
  const b = browser ?? new Browser(client);
  // node-oidc-provider drops offline_access unless prompt=consent (OpenID Connect Core 11): ask for it there.
  const prompt = t.kind === 'anchor' && scope.includes('offline_access') ? 'consent' : undefined;
  const auth = newAuth(t, scope, prompt);
  const code = await authorize(t, b, auth, user, { allowConsent });
  const tokens = await exchange(t, client, auth, code, user);
  if (scope === FLOW_SCOPE) await userinfo(t, client, tokens.access_token, user);
  return { browser: b, tokens };
}

/** With the session of `browser`: authorize → code redirect at once → token → userinfo. */
export async function ssoFlow(t, client, user, browser) {
  const auth = newAuth(t, FLOW_SCOPE);
  const res = await browser.fetch(auth.url);
  const code = codeFrom(t, 'authorize (session)', res, auth);
  const tokens = await exchange(t, client, auth, code, user);
  await userinfo(t, client, tokens.access_token, user);
}
