// The round trip to an upstream provider (issue 35) and what its answer leads to. Everything protocol is
// openid-client's: discovery (kind 'oidc') or a Configuration from the provider's endpoints (kind 'oauth2'),
// PKCE (S256), state and nonce, the code grant with the ID token validated by it (never by hand), the user
// endpoint, the refresh of stored tokens.
//
// A round trip is a row of upstream_flows keyed by the SHA-256 of its `state`, bound to the browser that started
// it (the hash of a cookie's value), taken once at the callback. Its answer, an identity (provider, subject):
//  - linked already: that user signs in (amr fed; a second factor when one is due); a disabled user is refused;
//  - a signed-in user's "link another" (purpose link): linked to that user, if the session is still theirs;
//  - not linked, its address has an account: never linked at once; a pending link waits for that account's owner
//    to sign in to it in the same browser and confirm (decisions.md, "Mailed links and sign-up");
//  - not linked, no account: an account just in time, when the provider allows sign-up and a trusted provider
//    verified the address; otherwise refused. Nothing is created or linked without a verified, allowed address.
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { importJWK } from 'jose';
import * as client from 'openid-client';
import type { Db } from '../../../db/create-db.js';
import { appendAuditEvent } from '../../../db/repositories/audit.js';
import {
  findUpstreamIdentityById,
  findUpstreamPendingLink,
  insertUpstreamFlow,
  insertUpstreamPendingLink,
  takeUpstreamFlow,
  takeUpstreamPendingLink,
  type UpstreamIdentityRow,
  updateUpstreamIdentity,
} from '../../../db/repositories/upstreams.js';
import { findUserByEmail, findUserById, insertUser } from '../../../db/repositories/users.js';
import type { Config } from '../../config.js';
import {
  domainAllowed,
  identityFromClaims,
  type UpstreamIdentity,
  type UpstreamProvider,
} from '../../domain/upstream.js';
import { generateToken, hashToken } from '../../oauth/tokens.js';
import { seal, unseal } from '../../oauth/seal.js';
import { isUniqueViolation } from '../db-errors.js';
import type { FactorService } from '../factors/index.js';
import type { SessionService } from '../sessions.js';
import type { UpstreamIdentityStore } from './identities.js';
import type { UpstreamProviderStore } from './providers.js';

/** How long a round trip may take (the upstream's sign-in included), and a pending link waits. */
export const UPSTREAM_FLOW_SECONDS = 600;
export const PENDING_LINK_SECONDS = 600;
/** A discovered configuration is used this long (and forgotten at once when the provider's row changes). */
export const DISCOVERY_CACHE_SECONDS = 600;
/** Every request to an upstream gives up after this long. */
export const UPSTREAM_TIMEOUT_SECONDS = 10;
/** A stored access token this close to its expiry is refreshed first. */
const REFRESH_MARGIN_MS = 30_000;
const TOKEN_PURPOSE = 'upstream token';

/** Why a round trip failed: the error page says which, with a way back; no session is made. */
export type UpstreamFailure =
  | 'unknown_provider'
  | 'unreachable'
  | 'upstream_error'
  | 'bad_state'
  | 'wrong_browser'
  | 'invalid_response'
  | 'user_endpoint';

export class UpstreamFlowError extends Error {
  constructor(
    readonly reason: UpstreamFailure,
    /** For the log only (may quote the upstream). */
    readonly detail?: string,
    /** The round trip's pending authorization request, when the failure came after its row was read. */
    readonly requestId?: string | null,
  ) {
    super(`upstream sign-in failed: ${reason}${detail ? ` (${detail})` : ''}`);
  }
}

/** Why an identity the upstream vouched for leads nowhere: nothing is created, linked or signed in. */
export type UpstreamRefusal =
  | 'no_email'
  | 'email_unverified'
  | 'domain_not_allowed'
  | 'sign_up_closed'
  | 'disabled'
  | 'linked_elsewhere'
  | 'wrong_user';

interface Where {
  requestId: string | null;
  returnTo: string | null;
}

export type UpstreamOutcome =
  | ({ kind: 'signed_in'; userId: string; sessionToken: string; sessionId: string } & Where)
  | ({ kind: 'second_factor'; userId: string } & Where)
  | ({ kind: 'linked'; userId: string } & Where)
  | ({ kind: 'pending_link'; token: string; email: string; providerName: string } & Where)
  | ({ kind: 'refused'; reason: UpstreamRefusal; providerName: string; email: string | null } & Where);

export interface PendingLinkView {
  email: string;
  userId: string;
  providerId: string;
  providerName: string;
  requestId: string | null;
  createdAt: Date;
}

type Meta = { ip: string | null; userAgent: string | null };

const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');
const sameHash = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** http is allowed only for loopback hosts (a development upstream, the tests'); https otherwise. */
export function upstreamUrlAllowed(value: string): { ok: boolean; insecure: boolean } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { ok: false, insecure: false };
  }
  if (url.protocol === 'https:') return { ok: true, insecure: false };
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || /^127\./.test(url.hostname);
  return { ok: url.protocol === 'http:' && loopback, insecure: true };
}

/** An openid-client error for the log: its code and message, and its causes' (which claim failed, say). */
function describe(error: unknown, depth = 0): string {
  if (!(error instanceof Error)) {
    const claim = (error as { claim?: unknown })?.claim;
    return typeof claim === 'string' ? `claim ${claim}` : '';
  }
  const code = (error as { code?: unknown }).code;
  const own = `${typeof code === 'string' ? `${code}: ` : ''}${error.message}`;
  const cause = depth < 3 && error.cause !== undefined ? describe(error.cause, depth + 1) : '';
  return cause ? `${own} (${cause})` : own;
}

/** A failure of a request to the upstream that never got an answer (refused, reset, timed out). */
function unreachable(error: unknown): boolean {
  const e = error as { name?: string; cause?: unknown; code?: string };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return true;
  if (e?.name === 'TypeError' && /fetch failed/i.test(String((error as Error).message))) return true;
  return e?.cause !== undefined && e.cause !== error && unreachable(e.cause);
}

export function createUpstreamFlow(deps: {
  db: Db;
  config: Pick<Config, 'secretKey' | 'loginUrl'>;
  providers: UpstreamProviderStore;
  identities: UpstreamIdentityStore;
  sessions: Pick<SessionService, 'signedIn'>;
  factors: Pick<FactorService, 'secondFactorDue'>;
}) {
  const { db, providers, identities } = deps;
  const secretKey = () => deps.config.secretKey as string;
  const configurations = new Map<string, { key: string; expires: number; value: client.Configuration }>();

  /** The address the upstream sends the browser back to (registered there as the client's redirect URI). */
  const redirectUri = (providerId: string) => `${deps.config.loginUrl}/upstream/${providerId}/callback`;

  async function clientAuthOf(provider: UpstreamProvider): Promise<client.ClientAuth> {
    const credentials = await providers.credentials(provider.id);
    if (provider.clientAuth === 'private_key_jwt') {
      const jwk = credentials?.privateJwk;
      if (!jwk) throw new UpstreamFlowError('unknown_provider', 'private_key_jwt without a key');
      const key = (await importJWK(jwk, jwk.alg ?? 'ES256')) as client.CryptoKey;
      return client.PrivateKeyJwt({ key, kid: jwk.kid as string });
    }
    const secret = credentials?.clientSecret ?? undefined;
    return provider.clientAuth === 'client_secret_post'
      ? client.ClientSecretPost(secret)
      : client.ClientSecretBasic(secret);
  }

  /**
   * The provider's openid-client Configuration: discovered (oidc) or built from its endpoints (oauth2), cached
   * per provider row (id and updatedAt) for DISCOVERY_CACHE_SECONDS. An upstream that does not answer:
   * UpstreamFlowError unreachable.
   */
  async function configurationOf(provider: UpstreamProvider): Promise<client.Configuration> {
    const key = `${provider.id}\u0000${provider.updatedAt}`;
    const cached = configurations.get(provider.id);
    if (cached && cached.key === key && cached.expires > Date.now()) return cached.value;
    configurations.delete(provider.id);
    const auth = await clientAuthOf(provider);
    let value: client.Configuration;
    if (provider.kind === 'oidc') {
      const issuer = upstreamUrlAllowed(provider.issuer ?? '');
      if (!issuer.ok) throw new UpstreamFlowError('unknown_provider', 'the issuer is not https (or loopback http)');
      try {
        value = await client.discovery(new URL(provider.issuer as string), provider.clientId, undefined, auth, {
          execute: issuer.insecure ? [client.allowInsecureRequests] : [],
          timeout: UPSTREAM_TIMEOUT_SECONDS,
        });
      } catch (error) {
        throw new UpstreamFlowError('unreachable', `discovery: ${(error as Error).message}`);
      }
      // The ID token's signature is checked against the upstream's JWKS too (openid-client skips it by default for
      // a token endpoint's answer over TLS, OpenID Connect Core §3.1.3.7): a forged token never counts here.
      client.enableNonRepudiationChecks(value);
    } else {
      const endpoints = [provider.authorizationEndpoint, provider.tokenEndpoint, provider.userinfoEndpoint];
      if (provider.emailsEndpoint) endpoints.push(provider.emailsEndpoint);
      const checked = endpoints.map((e) => upstreamUrlAllowed(e ?? ''));
      if (checked.some((c) => !c.ok)) {
        throw new UpstreamFlowError('unknown_provider', 'an endpoint is missing or not https (or loopback http)');
      }
      const authorization = new URL(provider.authorizationEndpoint as string);
      value = new client.Configuration(
        {
          issuer: authorization.origin,
          authorization_endpoint: authorization.href,
          token_endpoint: provider.tokenEndpoint as string,
          userinfo_endpoint: provider.userinfoEndpoint as string,
        },
        provider.clientId,
        undefined,
        auth,
      );
      if (checked.some((c) => c.insecure)) client.allowInsecureRequests(value);
    }
    value.timeout = UPSTREAM_TIMEOUT_SECONDS;
    configurations.set(provider.id, { key, expires: Date.now() + DISCOVERY_CACHE_SECONDS * 1000, value });
    return value;
  }

  async function enabledProvider(id: string): Promise<UpstreamProvider> {
    const provider = await providers.get(id);
    if (!provider?.enabled) throw new UpstreamFlowError('unknown_provider', id);
    return provider;
  }

  /** The claims of the answer: the ID token's (validated by openid-client) and the user endpoint's. */
  async function claimsOf(
    provider: UpstreamProvider,
    config: client.Configuration,
    tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers,
  ): Promise<{ claims: Record<string, unknown>; verifiedEmail?: string }> {
    const email = { ...{ email: 'email' }, ...provider.mapping }.email;
    if (provider.kind === 'oidc') {
      const claims = { ...(tokens.claims() ?? {}) } as Record<string, unknown>;
      if (claims[email] !== undefined || !config.serverMetadata().userinfo_endpoint) return { claims };
      try {
        const info = await client.fetchUserInfo(config, tokens.access_token, String(claims.sub));
        return { claims: { ...info, ...claims } };
      } catch (error) {
        throw new UpstreamFlowError('user_endpoint', (error as Error).message);
      }
    }
    const get = async (url: string) => {
      const response = await client.fetchProtectedResource(config, tokens.access_token, new URL(url), 'GET');
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return response.json() as Promise<unknown>;
    };
    try {
      const claims = (await get(provider.userinfoEndpoint as string)) as Record<string, unknown>;
      if (!claims || typeof claims !== 'object' || Array.isArray(claims)) throw new Error('not a JSON object');
      if (!provider.emailsEndpoint) return { claims };
      // A GitHub-style list of addresses: the primary one, if the upstream verified it.
      const list = await get(provider.emailsEndpoint);
      const primary = Array.isArray(list)
        ? (list as Array<Record<string, unknown>>).find((e) => e?.primary === true && e.verified === true)
        : undefined;
      const verifiedEmail = typeof primary?.email === 'string' ? primary.email : undefined;
      return verifiedEmail ? { claims, verifiedEmail } : { claims };
    } catch (error) {
      throw new UpstreamFlowError('user_endpoint', (error as Error).message);
    }
  }

  /** With store_tokens, the upstream's tokens replace the link's (sealed, the identity id as associated data). */
  async function saveTokens(provider: UpstreamProvider, row: { id: string }, given: UpstreamIdentity['tokens']) {
    const tokens = provider.storeTokens ? given : undefined;
    const sealed = (value: string) => seal(value, { secretKey: secretKey(), purpose: TOKEN_PURPOSE, aad: row.id });
    await updateUpstreamIdentity(db, row.id, {
      access_token: tokens ? sealed(tokens.accessToken) : null,
      refresh_token: tokens?.refreshToken ? sealed(tokens.refreshToken) : null,
      token_expires_at: tokens?.expiresAt ?? null,
    });
  }

  async function signIn(userId: string, meta: Meta, where: Where): Promise<UpstreamOutcome> {
    if (await deps.factors.secondFactorDue(userId)) return { kind: 'second_factor', userId, ...where };
    const { token, session } = await deps.sessions.signedIn(userId, meta, ['fed']);
    return { kind: 'signed_in', userId, sessionToken: token, sessionId: session.id, ...where };
  }

  return {
    redirectUri,

    /**
     * Starts a round trip: the flow row (bound to `browserSecret`, the value of this browser's cookie) and the
     * upstream's authorization URL to send the browser to.
     */
    async start(input: {
      providerId: string;
      purpose: 'sign_in' | 'link';
      userId?: string | undefined;
      requestId?: string | undefined;
      returnTo?: string | undefined;
      loginHint?: string | undefined;
      browserSecret: string;
    }): Promise<URL> {
      const provider = await enabledProvider(input.providerId);
      const config = await configurationOf(provider);
      const state = client.randomState();
      const nonce = client.randomNonce();
      const verifier = client.randomPKCECodeVerifier();
      await insertUpstreamFlow(db, {
        id: sha256(state),
        provider_id: provider.id,
        browser_hash: hashToken(input.browserSecret),
        nonce,
        code_verifier: verifier,
        purpose: input.purpose,
        user_id: input.purpose === 'link' ? (input.userId ?? null) : null,
        request_id: input.requestId ?? null,
        return_to: input.returnTo ?? null,
        expires_at: new Date(Date.now() + UPSTREAM_FLOW_SECONDS * 1000),
      });
      const parameters: Record<string, string> = {
        redirect_uri: redirectUri(provider.id),
        scope: provider.scopes.join(' '),
        state,
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
      };
      if (provider.kind === 'oidc') parameters.nonce = nonce;
      if (input.loginHint) parameters.login_hint = input.loginHint;
      return client.buildAuthorizationUrl(config, parameters);
    },

    /**
     * The callback: takes the flow of `state` (once), checks it against this browser and the provider in the
     * path, redeems the code and decides (see the module's comment). `callbackQuery`: the callback's query string.
     * Failures throw UpstreamFlowError; refusals are an outcome.
     */
    async finish(input: {
      providerId: string;
      callbackQuery: string;
      browserSecret: string | undefined;
      /** The user of this browser's session, if any (a link must still be theirs). */
      sessionUserId: string | undefined;
      /** That session: a link it makes ends the user's other sessions, never this one (as a factor change). */
      sessionId?: string | undefined;
      meta: Meta;
    }): Promise<UpstreamOutcome> {
      const callbackUrl = new URL(redirectUri(input.providerId));
      callbackUrl.search = input.callbackQuery;
      const state = callbackUrl.searchParams.get('state');
      if (!state || state.length > 512) throw new UpstreamFlowError('bad_state', 'no state');
      const flow = await takeUpstreamFlow(db, sha256(state));
      if (!flow || flow.provider_id !== input.providerId) throw new UpstreamFlowError('bad_state', 'unknown state');
      const where: Where = { requestId: flow.request_id, returnTo: flow.return_to };
      const fail = (reason: UpstreamFailure, detail: string) => new UpstreamFlowError(reason, detail, flow.request_id);
      if (!input.browserSecret || !sameHash(flow.browser_hash, hashToken(input.browserSecret))) {
        throw fail('wrong_browser', 'the flow is bound to another browser');
      }
      const provider = await enabledProvider(flow.provider_id).catch(() => {
        throw fail('unknown_provider', flow.provider_id);
      });
      const config = await configurationOf(provider).catch((error: UpstreamFlowError) => {
        throw fail(error.reason, error.detail ?? '');
      });
      let tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
      try {
        tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: flow.code_verifier,
          expectedState: state,
          ...(provider.kind === 'oidc' ? { expectedNonce: flow.nonce, idTokenExpected: true } : {}),
        });
      } catch (error) {
        if (error instanceof client.AuthorizationResponseError) {
          throw fail('upstream_error', `${error.error}: ${error.error_description ?? ''}`);
        }
        throw fail(unreachable(error) ? 'unreachable' : 'invalid_response', describe(error));
      }
      const { claims, verifiedEmail } = await claimsOf(provider, config, tokens).catch((error: UpstreamFlowError) => {
        throw fail(error.reason, error.detail ?? error.message);
      });
      const identity = identityFromClaims(provider, claims, verifiedEmail);
      if (!identity) throw fail('invalid_response', 'no subject in the answer');
      const expiresIn = tokens.expiresIn();
      identity.tokens = {
        accessToken: tokens.access_token,
        refreshToken: tokens.refresh_token ?? null,
        expiresAt: expiresIn !== undefined ? new Date(Date.now() + expiresIn * 1000) : null,
      };
      const refused = (reason: UpstreamRefusal): UpstreamOutcome => ({
        kind: 'refused',
        reason,
        providerName: provider.name,
        email: identity.email,
        ...where,
      });
      const allowedEmail = () =>
        provider.allowedDomains.length === 0 || (identity.email !== null && domainAllowed(provider, identity.email));
      const actor = { ip: input.meta.ip };
      const linked = await identities.find(provider.id, identity.subject);

      if (flow.purpose === 'link') {
        // A signed-in user's "link another": still that user's browser, and the identity nobody else's.
        if (!flow.user_id || input.sessionUserId !== flow.user_id) return refused('wrong_user');
        if (linked && linked.user_id !== flow.user_id) return refused('linked_elsewhere');
        if (!allowedEmail()) return refused('domain_not_allowed');
        if (linked) {
          await saveTokens(provider, linked, identity.tokens);
          return { kind: 'linked', userId: flow.user_id, ...where };
        }
        const link = {
          userId: flow.user_id,
          providerId: provider.id,
          subject: identity.subject,
          email: identity.email,
        };
        const id = await identities.link(link, { ...actor, keepSessionId: input.sessionId });
        await saveTokens(provider, { id }, identity.tokens);
        return { kind: 'linked', userId: flow.user_id, ...where };
      }

      if (linked) {
        const user = await findUserById(db, linked.user_id);
        if (!user || user.disabled) return refused('disabled');
        if (identity.email !== null && !domainAllowed(provider, identity.email)) return refused('domain_not_allowed');
        await identities.touch(linked.id);
        await saveTokens(provider, linked, identity.tokens);
        return signIn(user.id, input.meta, where);
      }

      // Not linked: only a verified address at an allowed domain leads anywhere.
      if (!identity.email) return refused('no_email');
      if (!identity.emailVerified) return refused('email_unverified');
      if (!domainAllowed(provider, identity.email)) return refused('domain_not_allowed');
      const holder = await findUserByEmail(db, identity.email);
      if (holder) {
        if (holder.disabled) return refused('disabled');
        // Never linked at once: the account's owner proves it first (a sign-in in this browser, then confirm).
        const token = generateToken();
        const now = new Date();
        await insertUpstreamPendingLink(db, {
          id: randomUUID(),
          token_hash: hashToken(token),
          provider_id: provider.id,
          subject: identity.subject,
          email: identity.email,
          user_id: holder.id,
          profile: JSON.stringify(identity.profile),
          request_id: flow.request_id,
          created_at: now,
          expires_at: new Date(now.getTime() + PENDING_LINK_SECONDS * 1000),
        });
        return { kind: 'pending_link', token, email: holder.email, providerName: provider.name, ...where };
      }
      if (!provider.allowSignUp) return refused('sign_up_closed');
      let created: { userId: string; identityId: string };
      try {
        created = await db.transaction().execute(async (trx) => {
          const user = await insertUser(trx, {
            id: randomUUID(),
            email: identity.email as string,
            password_hash: null,
            name: identity.profile.name ?? null,
            given_name: identity.profile.given_name ?? null,
            family_name: identity.profile.family_name ?? null,
            picture: identity.profile.picture ?? null,
            permissions: '[]',
            email_verified: true,
            self_registered: true,
          });
          await appendAuditEvent(trx, {
            type: 'user.signed_up',
            userId: user.id,
            ip: input.meta.ip,
            detail: { provider: provider.id },
          });
          const link = { userId: user.id, providerId: provider.id, subject: identity.subject, email: identity.email };
          const identityId = await identities.link(link, actor, trx);
          return { userId: user.id, identityId };
        });
      } catch (error) {
        // The same address or identity was taken meanwhile (a second callback racing this one): nothing made.
        if (isUniqueViolation(error) || (error as { code?: string }).code === 'UPSTREAM_IDENTITY_TAKEN') {
          return refused('linked_elsewhere');
        }
        throw error;
      }
      await saveTokens(provider, { id: created.identityId }, identity.tokens);
      return signIn(created.userId, input.meta, where);
    },

    /** The pending link of this browser's cookie, if it is live. */
    async pendingLink(token: string | undefined): Promise<PendingLinkView | undefined> {
      if (!token) return undefined;
      const row = await findUpstreamPendingLink(db, hashToken(token));
      if (!row) return undefined;
      const provider = await providers.get(row.provider_id);
      return {
        email: row.email,
        userId: row.user_id,
        providerId: row.provider_id,
        providerName: provider?.name ?? row.provider_id,
        requestId: row.request_id,
        createdAt: new Date(row.created_at),
      };
    },

    /**
     * The account's owner confirms a pending link: only a session of that account, signed in after the pending
     * link was made (the proof), links it; the pending link is then used up. Undefined: no such live link.
     */
    async confirmLink(
      token: string | undefined,
      session: { userId: string; authTime: Date },
      meta: Meta,
    ): Promise<{ outcome: 'linked' | 'wrong_account' | 'not_proven'; requestId: string | null } | undefined> {
      const pending = await this.pendingLink(token);
      if (!pending || !token) return undefined;
      const requestId = pending.requestId;
      if (session.userId !== pending.userId) return { outcome: 'wrong_account', requestId };
      if (session.authTime.getTime() < pending.createdAt.getTime()) return { outcome: 'not_proven', requestId };
      const row = await takeUpstreamPendingLink(db, hashToken(token));
      if (!row) return undefined;
      const link = { userId: row.user_id, providerId: row.provider_id, subject: row.subject, email: row.email };
      await identities.link(link, { ip: meta.ip });
      return { outcome: 'linked', requestId };
    },

    /**
     * A usable upstream access token of a link stored with store_tokens: refreshed first (refresh_token grant)
     * when it expires within 30 seconds. Undefined when none is stored, or it expired and cannot be refreshed.
     */
    async accessToken(identityId: string): Promise<string | undefined> {
      const row: UpstreamIdentityRow | undefined = await findUpstreamIdentityById(db, identityId);
      if (!row?.access_token) return undefined;
      const open = (value: string) => unseal(value, { secretKey: secretKey(), purpose: TOKEN_PURPOSE, aad: row.id });
      const fresh = !row.token_expires_at || new Date(row.token_expires_at).getTime() - REFRESH_MARGIN_MS > Date.now();
      if (fresh) return open(row.access_token);
      const refreshToken = row.refresh_token ? open(row.refresh_token) : undefined;
      if (!refreshToken) return undefined;
      const provider = await enabledProvider(row.provider_id);
      let tokens: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
      try {
        tokens = await client.refreshTokenGrant(await configurationOf(provider), refreshToken);
      } catch (error) {
        if (unreachable(error)) throw new UpstreamFlowError('unreachable', describe(error));
        // Refused (revoked, expired): the stored tokens are useless; they go.
        await saveTokens(provider, row, undefined);
        return undefined;
      }
      const expiresIn = tokens.expiresIn();
      await saveTokens(provider, row, {
        accessToken: tokens.access_token,
        // An upstream that does not rotate refresh tokens keeps the one it gave.
        refreshToken: tokens.refresh_token ?? refreshToken,
        expiresAt: expiresIn !== undefined ? new Date(Date.now() + expiresIn * 1000) : null,
      });
      return tokens.access_token;
    },
  };
}

export type UpstreamFlow = ReturnType<typeof createUpstreamFlow>;
