// The demo relying party's protocol side: only what any third party has, the issuer's URL. Everything else
// comes from discovery, and every call is a real HTTP request to the provider's public endpoints (to this
// server's own BASE_URL): authorize with PKCE S256, state and nonce; the code and refresh grants at the token
// endpoint; the ID token verified against the JWKS with jose; UserInfo and /api/external/me with the
// access token; RP-initiated logout at end_session_endpoint.
import { createHash, randomBytes } from 'node:crypto';
import * as jose from 'jose';

export interface Discovery {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  userinfo_endpoint: string;
  jwks_uri: string;
  end_session_endpoint: string;
}

export interface TokenSet {
  access_token: string;
  id_token?: string;
  refresh_token?: string;
  expires_in?: number;
  scope?: string;
}

export interface VerifiedIdToken {
  header: jose.ProtectedHeaderParameters;
  claims: jose.JWTPayload;
}

const TIMEOUT_MS = 10_000;
const random = () => randomBytes(32).toString('base64url');

export class DemoError extends Error {}

async function json(response: Response, what: string): Promise<Record<string, unknown>> {
  const body = (await response.json().catch(() => undefined)) as Record<string, unknown> | undefined;
  if (!response.ok || !body) {
    const detail = body?.error
      ? `${String(body.error)}${body.error_description ? `: ${body.error_description}` : ''}`
      : '';
    throw new DemoError(`${what} answered HTTP ${response.status}${detail ? ` (${detail})` : ''}`);
  }
  return body;
}

export function createDemoClient(o: { issuer: string; clientId: string; redirectUri: string; apiBase: string }) {
  let discovery: Promise<Discovery> | undefined;
  let jwks: ReturnType<typeof jose.createRemoteJWKSet> | undefined;

  function metadata(): Promise<Discovery> {
    discovery ??= fetch(`${o.issuer}/.well-known/openid-configuration`, { signal: AbortSignal.timeout(TIMEOUT_MS) })
      .then((r) => json(r, 'Discovery') as Promise<unknown> as Promise<Discovery>)
      .catch((error: unknown) => {
        discovery = undefined; // tried again on the next request
        throw error;
      });
    return discovery;
  }

  async function token(params: Record<string, string>): Promise<TokenSet> {
    const { token_endpoint } = await metadata();
    const response = await fetch(token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({ ...params, client_id: o.clientId }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return (await json(response, 'The token endpoint')) as unknown as TokenSet;
  }

  async function bearerGet(url: string, accessToken: string, what: string) {
    const response = await fetch(url, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' },
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
    return json(response, what);
  }

  return {
    metadata,

    /** A new authorization request: the URL to send the browser to, and what the callback must check. */
    async authorizationRequest() {
      const { authorization_endpoint } = await metadata();
      const flow = { state: random(), nonce: random(), verifier: random() };
      const url = new URL(authorization_endpoint);
      url.search = new URLSearchParams({
        client_id: o.clientId,
        redirect_uri: o.redirectUri,
        response_type: 'code',
        scope: 'openid profile email offline_access',
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: createHash('sha256').update(flow.verifier).digest('base64url'),
        code_challenge_method: 'S256',
      }).toString();
      return { url: url.toString(), flow };
    },

    exchangeCode: (code: string, verifier: string) =>
      token({ grant_type: 'authorization_code', code, redirect_uri: o.redirectUri, code_verifier: verifier }),

    refresh: (refreshToken: string) => token({ grant_type: 'refresh_token', refresh_token: refreshToken }),

    /** Signature (JWKS), issuer, audience, lifetime and, after a code exchange, the nonce. */
    async verifyIdToken(idToken: string, nonce?: string): Promise<VerifiedIdToken> {
      const meta = await metadata();
      jwks ??= jose.createRemoteJWKSet(new URL(meta.jwks_uri));
      const { payload, protectedHeader } = await jose.jwtVerify(idToken, jwks, {
        issuer: meta.issuer,
        audience: o.clientId,
      });
      if (nonce !== undefined && payload.nonce !== nonce) throw new DemoError('The ID token has another nonce');
      return { header: protectedHeader, claims: payload };
    },

    userinfo: async (accessToken: string) => bearerGet((await metadata()).userinfo_endpoint, accessToken, 'UserInfo'),

    me: (accessToken: string) => bearerGet(`${o.apiBase}/api/external/me`, accessToken, '/api/external/me'),

    async endSessionUrl(idToken: string | undefined, postLogoutRedirectUri: string) {
      const url = new URL((await metadata()).end_session_endpoint);
      url.search = new URLSearchParams({
        client_id: o.clientId,
        post_logout_redirect_uri: postLogoutRedirectUri,
        ...(idToken ? { id_token_hint: idToken } : {}),
      }).toString();
      return url.toString();
    },
  };
}

export type DemoClient = ReturnType<typeof createDemoClient>;

/** What the page shows of a refresh token: a short prefix and a SHA-256 fingerprint, never the token. */
export function fingerprint(token: string | undefined): string | undefined {
  if (!token) return undefined;
  return `${token.slice(0, 6)}… (SHA-256 ${createHash('sha256').update(token).digest('base64url').slice(0, 12)})`;
}
