// Real upstream identity providers for the tests of sign-in with another provider (issue 35), each on a
// 127.0.0.1 port of its own:
//  - startCompanyUpstream: node-oidc-provider as a company's OpenID provider. Its own interactions are
//    completed by a tiny handler that logs in the account the test chose (login()) and grants what is asked;
//    clients are registered once the test made its provider rows (register(): client_secret_basic, and
//    private_key_jwt with the public key of the provider row).
//  - startGitHubLike: a small GitHub-like OAuth 2.0 server (/login/oauth/authorize, /login/oauth/access_token
//    answering a form or JSON by Accept, /user, /user/emails, refresh tokens).
//  - startFakeOidc: a tiny OpenID provider that misbehaves on demand (an error response, a forged, expired or
//    wrong-nonce ID token), for the failures node-oidc-provider would never produce.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import Provider, { type ClientMetadata } from 'oidc-provider';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface UpstreamAccount {
  sub: string;
  email?: string;
  email_verified?: boolean;
  name?: string;
  given_name?: string;
  family_name?: string;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function closeOnTeardown(t: TapLike, server: Server) {
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
};

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** node-oidc-provider as a company's OpenID provider. */
export async function startCompanyUpstream(t: TapLike) {
  let provider: Provider | undefined;
  const accounts = new Map<string, UpstreamAccount>();
  let current: UpstreamAccount | undefined;
  const server = createServer(async (req, res) => {
    if (!provider) return json(res, 503, { error: 'not_ready' });
    try {
      if (req.url?.startsWith('/interaction/')) return await interact(provider, req, res);
      return provider.callback()(req, res);
    } catch (error) {
      return json(res, 500, { error: 'server_error', error_description: String(error) });
    }
  });
  const issuer = await listen(server);
  closeOnTeardown(t, server);

  /** Logs in the account the test chose; grants every scope and claim asked for. */
  async function interact(p: Provider, req: IncomingMessage, res: ServerResponse) {
    const details = await p.interactionDetails(req, res);
    if (details.prompt.name === 'login') {
      if (!current) return json(res, 500, { error: 'no account chosen for the login' });
      return p.interactionFinished(req, res, { login: { accountId: current.sub } }, { mergeWithLastSubmission: false });
    }
    const accountId = details.session?.accountId as string;
    const grant = details.grantId
      ? await p.Grant.find(details.grantId)
      : new p.Grant({ accountId, clientId: details.params.client_id as string });
    if (!grant) return json(res, 500, { error: 'no grant' });
    const missing = details.prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[] };
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    const grantId = await grant.save();
    return p.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  return {
    issuer,
    /** The account the next interactive login signs in (and that findAccount knows from then on). */
    login(account: UpstreamAccount) {
      accounts.set(account.sub, account);
      current = account;
    },
    /** Starts the provider with these clients (after the test made the provider rows it needs). */
    async register(clients: ClientMetadata[]) {
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const signing = { ...(await exportJWK(privateKey)), kid: 'company-1', alg: 'RS256', use: 'sig' };
      provider = new Provider(issuer, {
        clients: clients.map((c) => ({
          grant_types: ['authorization_code', 'refresh_token'],
          response_types: ['code'],
          ...c,
        })),
        jwks: { keys: [signing as never] },
        // Explicit lifetimes (the defaults print notices).
        ttl: {
          AccessToken: 3600,
          AuthorizationCode: 60,
          Grant: 3600,
          IdToken: 3600,
          Interaction: 600,
          RefreshToken: 86400,
          Session: 3600,
        },
        cookies: { keys: [randomBytes(16).toString('hex')] },
        features: { devInteractions: { enabled: false } },
        interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
        claims: {
          openid: ['sub'],
          email: ['email', 'email_verified'],
          profile: ['name', 'given_name', 'family_name'],
        },
        issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(type: string): boolean }) =>
          client.grantTypeAllowed('refresh_token'),
        findAccount: async (_ctx: unknown, sub: string) => {
          const account = accounts.get(sub);
          if (!account) return undefined;
          return { accountId: sub, claims: async () => ({ ...account }) };
        },
      });
    },
    /** The provider (e.g. to check a token it issued). */
    get provider() {
      return provider as Provider;
    },
  };
}

export interface GitHubUser {
  id: number;
  login: string;
  name: string | null;
  email: string | null;
  avatar_url: string;
}

/** A small GitHub-like OAuth 2.0 server (no ID token; the user and their addresses from the API). */
export async function startGitHubLike(t: TapLike, client: { clientId: string; clientSecret: string }) {
  const state = {
    user: undefined as GitHubUser | undefined,
    emails: [] as Array<{ email: string; primary: boolean; verified: boolean; visibility: string | null }>,
    /** 'error': the authorize endpoint answers ?error=access_denied. */
    mode: 'ok' as 'ok' | 'error',
    /** Seconds an access token lives (expires_in); undefined: none (GitHub's OAuth apps). */
    expiresIn: undefined as number | undefined,
    /** The refresh_token grant is refused (the user revoked the application upstream). */
    refuseRefresh: false,
    /** What each token request asked for (its grant type, how it authenticated). */
    tokenRequests: [] as Array<Record<string, string>>,
  };
  const codes = new Map<string, { user: GitHubUser; challenge: string; redirectUri: string }>();
  const tokens = new Map<string, GitHubUser>();
  const refreshTokens = new Map<string, GitHubUser>();

  function issue(res: ServerResponse, req: IncomingMessage, user: GitHubUser) {
    const accessToken = `gho_${randomBytes(16).toString('hex')}`;
    const refreshToken = `ghr_${randomBytes(16).toString('hex')}`;
    tokens.set(accessToken, user);
    refreshTokens.set(refreshToken, user);
    const answer: Record<string, string> = {
      access_token: accessToken,
      token_type: 'bearer',
      scope: 'read:user,user:email',
    };
    if (state.expiresIn !== undefined) {
      answer.expires_in = String(state.expiresIn);
      answer.refresh_token = refreshToken;
    }
    // GitHub answers a form unless asked for JSON.
    if (String(req.headers.accept ?? '').includes('application/json')) {
      return json(res, 200, {
        ...answer,
        ...(answer.expires_in ? { expires_in: Number(answer.expires_in) } : {}),
      });
    }
    res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' });
    return res.end(new URLSearchParams(answer).toString());
  }

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://github.invalid');
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') {
      const redirectUri = url.searchParams.get('redirect_uri') ?? '';
      const back = new URL(redirectUri);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      if (state.mode === 'error' || !state.user || url.searchParams.get('client_id') !== client.clientId) {
        back.searchParams.set('error', 'access_denied');
        back.searchParams.set('error_description', 'The user has denied your application access.');
      } else {
        const code = randomBytes(10).toString('hex');
        codes.set(code, { user: state.user, challenge: url.searchParams.get('code_challenge') ?? '', redirectUri });
        back.searchParams.set('code', code);
      }
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
      state.tokenRequests.push(form);
      if (form.client_id !== client.clientId || form.client_secret !== client.clientSecret) {
        return json(res, 401, { error: 'incorrect_client_credentials' });
      }
      if (form.grant_type === 'refresh_token') {
        const user = state.refuseRefresh ? undefined : refreshTokens.get(form.refresh_token ?? '');
        if (!user) return json(res, 400, { error: 'bad_refresh_token' });
        refreshTokens.delete(form.refresh_token ?? '');
        return issue(res, req, user);
      }
      const grant = codes.get(form.code ?? '');
      codes.delete(form.code ?? '');
      if (!grant || grant.redirectUri !== form.redirect_uri || s256(form.code_verifier ?? '') !== grant.challenge) {
        return json(res, 400, { error: 'bad_verification_code' });
      }
      return issue(res, req, grant.user);
    }
    const auth = /^(?:Bearer|token) (.+)$/i.exec(String(req.headers.authorization ?? ''));
    const user = auth ? tokens.get(auth[1]!) : undefined;
    // GitHub Enterprise Server's API lives under /api/v3 (docs/upstreams.md points the preset there).
    const api = url.pathname.replace(/^\/api\/v3(?=\/)/, '');
    if (req.method === 'GET' && (api === '/user' || api === '/user/emails')) {
      if (!user) return json(res, 401, { message: 'Bad credentials' });
      return json(res, 200, api === '/user' ? user : state.emails);
    }
    return json(res, 404, { message: 'Not Found' });
  });
  const origin = await listen(server);
  closeOnTeardown(t, server);
  return {
    origin,
    state,
    /** The endpoints as a provider row takes them (the GitHub preset's paths on this server). */
    endpoints: {
      authorizationEndpoint: `${origin}/login/oauth/authorize`,
      tokenEndpoint: `${origin}/login/oauth/access_token`,
      userinfoEndpoint: `${origin}/user`,
      emailsEndpoint: `${origin}/user/emails`,
    },
    /** Whether this access token works at the API. */
    works: (accessToken: string) => tokens.has(accessToken),
  };
}

export type FakeOidcMode = 'ok' | 'error' | 'forged' | 'expired' | 'wrong_nonce' | 'wrong_audience';

/** A tiny OpenID provider that can misbehave: its ID tokens are signed by a key in its JWKS unless told. */
export async function startFakeOidc(t: TapLike, client: { clientId: string; clientSecret: string }) {
  const good = await generateKeyPair('RS256', { extractable: true });
  const other = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(good.publicKey)), kid: 'fake-1', alg: 'RS256', use: 'sig' };
  const state = {
    mode: 'ok' as FakeOidcMode,
    account: { sub: 'fake-user', email: 'fake@example.com', email_verified: true } as UpstreamAccount,
  };
  const codes = new Map<string, { nonce: string; challenge: string }>();
  let issuer = '';
  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        userinfo_endpoint: `${issuer}/userinfo`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      });
    }
    if (url.pathname === '/jwks') return json(res, 200, { keys: [publicJwk] });
    if (url.pathname === '/authorize') {
      const back = new URL(url.searchParams.get('redirect_uri') ?? '');
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      if (state.mode === 'error') {
        back.searchParams.set('error', 'access_denied');
        back.searchParams.set('error_description', 'The resource owner denied the request');
      } else {
        const code = randomBytes(10).toString('hex');
        codes.set(code, {
          nonce: url.searchParams.get('nonce') ?? '',
          challenge: url.searchParams.get('code_challenge') ?? '',
        });
        back.searchParams.set('code', code);
      }
      res.writeHead(302, { location: back.href });
      return res.end();
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
      // RFC 6749 §2.3.1: the id and secret are form-encoded before base64 (openid-client encodes "-" too).
      const basic = /^Basic (.+)$/.exec(String(req.headers.authorization ?? ''));
      const [id, secret] = Buffer.from(basic?.[1] ?? '', 'base64')
        .toString('utf8')
        .split(':')
        .map((part) => decodeURIComponent(part.replace(/\+/g, ' ')));
      if (id !== client.clientId || secret !== client.clientSecret) return json(res, 401, { error: 'invalid_client' });
      const grant = codes.get(form.code ?? '');
      codes.delete(form.code ?? '');
      if (!grant || s256(form.code_verifier ?? '') !== grant.challenge)
        return json(res, 400, { error: 'invalid_grant' });
      const now = Math.floor(Date.now() / 1000);
      const claims = {
        ...state.account,
        nonce: state.mode === 'wrong_nonce' ? 'not-the-nonce' : grant.nonce,
      };
      const idToken = await new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'fake-1' })
        .setIssuer(issuer)
        .setAudience(state.mode === 'wrong_audience' ? 'someone-else' : client.clientId)
        .setIssuedAt(state.mode === 'expired' ? now - 7200 : now)
        .setExpirationTime(state.mode === 'expired' ? now - 3600 : now + 300)
        .sign(state.mode === 'forged' ? other.privateKey : good.privateKey);
      return json(res, 200, { access_token: randomBytes(16).toString('hex'), token_type: 'Bearer', id_token: idToken });
    }
    if (url.pathname === '/userinfo') return json(res, 200, state.account);
    return json(res, 404, { error: 'not_found' });
  });
  issuer = await listen(server);
  closeOnTeardown(t, server);
  return { issuer, state };
}
