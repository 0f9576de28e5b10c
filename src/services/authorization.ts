// The authorization code flow with PKCE: authorize request validation, the decision after each step
// (sign-in, verification, consent), code issuance and the code exchange. The order of checks of each
// endpoint reads top to bottom here.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../db/create-db.js';
import type { AuthorizationRequestParams } from '../../db/tables.js';
import * as authz from '../../db/repositories/authorization.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { findUserById } from '../../db/repositories/users.js';
import type { Application } from '../../schemas/admin.js';
import type { Config } from '../config.js';
import { OAuthError } from '../oauth/errors.js';
import { signIdToken } from '../oauth/id-token.js';
import { isValidCodeChallenge, isValidCodeVerifier, verifyPkce } from '../oauth/pkce.js';
import { formatScope, parseRequestedScope, splitScope } from '../oauth/scope.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import type { ApplicationService } from './applications.js';
import type { KeyStore } from './key-store.js';
import type { SessionContext } from './sessions.js';

export type RawParams = Record<string, string | string[] | undefined>;

/** An error shown to the user (HTML or JSON), never redirected: client or redirect_uri is not trusted. */
export class AuthorizeRenderError extends OAuthError {}

export type Decision =
  | { kind: 'redirect'; url: string }
  | { kind: 'sign-in'; requestId: string }
  | { kind: 'sign-up'; requestId: string }
  | { kind: 'verify-email'; requestId: string }
  | { kind: 'consent'; requestId: string };

const PROMPTS = new Set(['none', 'login', 'consent', 'create']);

/** RFC 6749 §3.1: parameters must not be included more than once. */
function single(params: RawParams, name: string): string | undefined {
  const v = params[name];
  if (Array.isArray(v)) throw new OAuthError('invalid_request', `${name} must not be repeated`);
  return v === undefined || v === '' ? undefined : v;
}

export function appendQuery(uri: string, values: Record<string, string | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(values)) if (v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  id_token?: string;
  refresh_token?: string;
  scope: string;
}

export function createAuthorizationService(deps: { db: Db; config: Config; applications: ApplicationService; keys: KeyStore }) {
  const { db, config } = deps;
  const issuer = config.issuer;

  function errorRedirect(params: { redirect_uri: string; state?: string | undefined }, error: OAuthError): Decision {
    return {
      kind: 'redirect',
      url: appendQuery(params.redirect_uri, {
        error: error.error,
        error_description: error.description,
        state: params.state,
        iss: issuer,
      }),
    };
  }

  /** Client and redirect_uri first: until both are verified, errors are rendered, never redirected. */
  async function verifyClient(raw: RawParams): Promise<{ app: Application; redirectUri: string; state: string | undefined }> {
    let clientId: string | undefined;
    let redirectUri: string | undefined;
    try {
      clientId = single(raw, 'client_id');
      redirectUri = single(raw, 'redirect_uri');
    } catch (error) {
      throw new AuthorizeRenderError('invalid_request', (error as OAuthError).description);
    }
    if (!clientId) throw new AuthorizeRenderError('invalid_request', 'client_id is required');
    if (clientId.length > 256) throw new AuthorizeRenderError('invalid_request', 'client_id is not valid');
    const app = await deps.applications.find(clientId);
    if (!app) throw new AuthorizeRenderError('invalid_client', 'unknown client_id');
    if (!app.enabled) throw new AuthorizeRenderError('invalid_client', 'this application is disabled');
    if (!redirectUri) throw new AuthorizeRenderError('invalid_request', 'redirect_uri is required');
    // Exact string comparison (RFC 9700 §4.1.3): no normalisation, no prefix or wildcard matching.
    if (!app.redirectUris.includes(redirectUri)) {
      throw new AuthorizeRenderError('invalid_request', 'redirect_uri is not registered for this client');
    }
    // RFC 6749 §3.1: a parameter sent without a value is treated as omitted, here as on success.
    const state = typeof raw.state === 'string' && raw.state !== '' ? raw.state : undefined;
    return { app, redirectUri, state };
  }

  function parseRest(raw: RawParams, app: Application, redirectUri: string): AuthorizationRequestParams {
    for (const name of Object.keys(raw)) {
      if (Array.isArray(raw[name])) throw new OAuthError('invalid_request', `${name} must not be repeated`);
    }
    if (single(raw, 'request') !== undefined) throw new OAuthError('request_not_supported', 'request objects are not supported');
    if (single(raw, 'request_uri') !== undefined) throw new OAuthError('request_uri_not_supported', 'request_uri is not supported');
    const responseType = single(raw, 'response_type');
    if (!responseType) throw new OAuthError('invalid_request', 'response_type is required');
    if (responseType !== 'code') throw new OAuthError('unsupported_response_type', 'only response_type=code is supported');
    const responseMode = single(raw, 'response_mode');
    if (responseMode !== undefined && responseMode !== 'query') throw new OAuthError('invalid_request', 'only response_mode=query is supported');
    const scope = parseRequestedScope(single(raw, 'scope'), app.allowedScopes);
    const codeChallenge = single(raw, 'code_challenge');
    const method = single(raw, 'code_challenge_method');
    if (!codeChallenge) throw new OAuthError('invalid_request', 'code_challenge is required (PKCE)');
    if (!method) throw new OAuthError('invalid_request', 'code_challenge_method is required and must be S256');
    if (method !== 'S256') throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
    if (!isValidCodeChallenge(codeChallenge)) throw new OAuthError('invalid_request', 'code_challenge must be 43 base64url characters');
    const prompt = splitScope(single(raw, 'prompt') ?? '');
    const unknownPrompt = prompt.filter((p) => !PROMPTS.has(p));
    if (unknownPrompt.length) throw new OAuthError('invalid_request', `unsupported prompt value: ${unknownPrompt.join(' ')}`);
    if (prompt.includes('none') && prompt.length > 1) throw new OAuthError('invalid_request', 'prompt=none cannot be combined with other values');
    const maxAgeRaw = single(raw, 'max_age');
    let maxAge: number | undefined;
    if (maxAgeRaw !== undefined) {
      if (!/^\d{1,10}$/.test(maxAgeRaw)) throw new OAuthError('invalid_request', 'max_age must be a non-negative integer');
      maxAge = Number(maxAgeRaw);
    }
    const state = single(raw, 'state');
    const nonce = single(raw, 'nonce');
    const loginHint = single(raw, 'login_hint');
    for (const [name, value] of [['state', state], ['nonce', nonce], ['login_hint', loginHint]] as const) {
      if (value !== undefined && value.length > 2048) throw new OAuthError('invalid_request', `${name} is too long`);
    }
    return {
      client_id: app.clientId,
      redirect_uri: redirectUri,
      scope,
      code_challenge: codeChallenge,
      prompt,
      ...(state !== undefined && { state }),
      ...(nonce !== undefined && { nonce }),
      ...(maxAge !== undefined && { max_age: maxAge }),
      ...(loginHint !== undefined && { login_hint: loginHint }),
    };
  }

  /** The next step for a stored request, given who is signed in. */
  async function decide(requestId: string, ctx: SessionContext | undefined): Promise<Decision> {
    const request = await authz.findPendingAuthorizationRequest(db, requestId);
    if (!request) throw new AuthorizeRenderError('invalid_request', 'this sign-in request has expired or was already used; start again from the application');
    const params = request.params;
    const app = await deps.applications.find(params.client_id);
    if (!app || !app.enabled) throw new AuthorizeRenderError('invalid_client', 'this application is disabled');
    const none = params.prompt.includes('none');
    // An error ends the request: it cannot be continued afterwards.
    const fail = async (error: OAuthError) => {
      await authz.markAuthorizationRequest(db, request.id, 'completed_at');
      return errorRedirect(params, error);
    };

    const loginFresh = request.login_completed_at !== null;
    if (!ctx) {
      if (none) return fail(new OAuthError('login_required', 'the user is not signed in'));
      return { kind: params.prompt.includes('create') ? 'sign-up' : 'sign-in', requestId };
    }
    if (params.prompt.includes('login') && !loginFresh) return { kind: 'sign-in', requestId };
    if (params.max_age !== undefined) {
      const age = (Date.now() - new Date(ctx.session.auth_time).getTime()) / 1000;
      if (age > params.max_age && !loginFresh) {
        if (none) return fail(new OAuthError('login_required', 'the sign-in is older than max_age'));
        return { kind: 'sign-in', requestId };
      }
    }
    if (!ctx.user.email_verified) {
      if (none) return fail(new OAuthError('interaction_required', 'the e-mail address is not verified'));
      return { kind: 'verify-email', requestId };
    }
    const consented = request.consent_given_at !== null;
    if (!consented) {
      const remembered = (await authz.findConsent(db, ctx.user.id, app.clientId)) ?? [];
      const needsConsent = params.prompt.includes('consent') || params.scope.some((s) => !remembered.includes(s));
      if (needsConsent) {
        if (none) return fail(new OAuthError('consent_required', 'the user has not consented to these scopes'));
        return { kind: 'consent', requestId };
      }
    }
    return issueCode(request.id, params, ctx);
  }

  async function issueCode(requestId: string, params: AuthorizationRequestParams, ctx: SessionContext): Promise<Decision> {
    const code = generateToken();
    const completed = await db.transaction().execute(async (trx) => {
      // Completing the request and issuing the code happen together, once.
      if (!(await authz.markAuthorizationRequest(trx, requestId, 'completed_at'))) return false;
      const grantId = randomUUID();
      const scope = formatScope(params.scope);
      await authz.insertGrant(trx, { id: grantId, user_id: ctx.user.id, client_id: params.client_id, scope, session_id: ctx.session.id, auth_time: ctx.session.auth_time });
      await authz.insertAuthorizationCode(trx, {
        code_hash: hashToken(code),
        grant_id: grantId,
        client_id: params.client_id,
        user_id: ctx.user.id,
        redirect_uri: params.redirect_uri,
        code_challenge: params.code_challenge,
        nonce: params.nonce ?? null,
        scope,
        auth_time: ctx.session.auth_time,
        session_id: ctx.session.id,
        expires_at: new Date(Date.now() + config.ttl.authorizationCode * 1000),
      });
      await appendAuditEvent(trx, { type: 'authorization.granted', userId: ctx.user.id, clientId: params.client_id, detail: { scope, grantId } });
      return true;
    });
    if (!completed) throw new AuthorizeRenderError('invalid_request', 'this sign-in request was already used; start again from the application');
    return { kind: 'redirect', url: appendQuery(params.redirect_uri, { code, state: params.state, iss: issuer }) };
  }

  return {
    /** GET/POST authorize: validate, store the request, and decide the first step. */
    async authorize(raw: RawParams, ctx: SessionContext | undefined): Promise<Decision> {
      const { app, redirectUri, state } = await verifyClient(raw);
      let params: AuthorizationRequestParams;
      try {
        params = parseRest(raw, app, redirectUri);
      } catch (error) {
        if (error instanceof OAuthError) return errorRedirect({ redirect_uri: redirectUri, state }, error);
        throw error;
      }
      const id = generateToken();
      await authz.insertAuthorizationRequest(db, {
        id,
        client_id: app.clientId,
        params,
        expires_at: new Date(Date.now() + config.ttl.consentRequest * 1000),
      });
      return decide(id, ctx);
    },

    decide,

    async pendingRequest(requestId: string) {
      const request = await authz.findPendingAuthorizationRequest(db, requestId);
      if (!request) return undefined;
      const app = await deps.applications.find(request.client_id);
      return app ? { request, app } : undefined;
    },

    async markLoginCompleted(requestId: string) {
      await authz.markAuthorizationRequest(db, requestId, 'login_completed_at');
    },

    /** The consent page's answer. Allow remembers the scopes; deny ends the request with access_denied. */
    async consent(requestId: string, ctx: SessionContext, allow: boolean): Promise<Decision> {
      const request = await authz.findPendingAuthorizationRequest(db, requestId);
      if (!request) throw new AuthorizeRenderError('invalid_request', 'this sign-in request has expired or was already used; start again from the application');
      if (!allow) {
        await authz.markAuthorizationRequest(db, requestId, 'completed_at');
        return errorRedirect(request.params, new OAuthError('access_denied', 'the user denied the request'));
      }
      await db.transaction().execute(async (trx) => {
        await authz.upsertConsent(trx, ctx.user.id, request.client_id, request.params.scope);
        await authz.markAuthorizationRequest(trx, requestId, 'consent_given_at');
        await appendAuditEvent(trx, { type: 'consent.granted', userId: ctx.user.id, clientId: request.client_id, detail: { scope: formatScope(request.params.scope) } });
      });
      return decide(requestId, ctx);
    },

    /** POST token, grant_type=authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6). */
    async exchangeCode(body: RawParams, app: Application): Promise<TokenResponse> {
      const code = single(body, 'code');
      const verifier = single(body, 'code_verifier');
      const redirectUri = single(body, 'redirect_uri');
      if (!code) throw new OAuthError('invalid_request', 'code is required');
      if (!verifier) throw new OAuthError('invalid_request', 'code_verifier is required');
      if (!redirectUri) throw new OAuthError('invalid_request', 'redirect_uri is required');
      if (!isValidCodeVerifier(verifier)) throw new OAuthError('invalid_request', 'code_verifier must be 43-128 unreserved characters');
      if (code.length > 256) throw new OAuthError('invalid_grant', 'the authorization code is invalid, expired or already used');

      const result = await authz.consumeAuthorizationCode(db, hashToken(code));
      const invalid = () => new OAuthError('invalid_grant', 'the authorization code is invalid, expired or already used');
      if (!result) throw invalid();
      const { code: row } = result;
      if (result.replayed) {
        await db.transaction().execute(async (trx) => {
          await authz.revokeGrant(trx, row.grant_id);
          await appendAuditEvent(trx, { type: 'code.reuse_detected', userId: row.user_id, clientId: row.client_id, detail: { grantId: row.grant_id } });
        });
        throw invalid();
      }
      if (row.client_id !== app.clientId) throw new OAuthError('invalid_grant', 'the authorization code was issued to another client');
      if (new Date(row.expires_at).getTime() <= Date.now()) throw invalid();
      if (row.redirect_uri !== redirectUri) throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
      if (!verifyPkce(verifier, row.code_challenge)) throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
      const user = await findUserById(db, row.user_id);
      if (!user || user.disabled) throw new OAuthError('invalid_grant', 'the user is not available');

      const scopes = splitScope(row.scope);
      const accessToken = generateToken();
      const refreshToken = scopes.includes('offline_access') ? generateToken() : undefined;
      const key = await deps.keys.currentKey();
      const idToken = await signIdToken(
        {
          issuer,
          subject: user.id,
          clientId: app.clientId,
          authTime: new Date(row.auth_time),
          nonce: row.nonce,
          accessToken,
          sessionId: row.session_id,
          lifetimeSeconds: config.ttl.idToken,
        },
        key,
      );
      const now = Date.now();
      await db.transaction().execute(async (trx) => {
        await authz.insertAccessToken(trx, {
          token_hash: hashToken(accessToken),
          grant_id: row.grant_id,
          client_id: app.clientId,
          user_id: user.id,
          scope: row.scope,
          session_id: row.session_id,
          expires_at: new Date(now + config.ttl.accessToken * 1000),
        });
        if (refreshToken) {
          await authz.insertRefreshToken(trx, {
            id: randomUUID(),
            token_hash: hashToken(refreshToken),
            grant_id: row.grant_id,
            client_id: app.clientId,
            user_id: user.id,
            scope: row.scope,
            expires_at: new Date(now + config.ttl.refreshToken * 1000),
            absolute_expires_at: new Date(now + config.ttl.refreshTokenAbsolute * 1000),
          });
        }
        await appendAuditEvent(trx, { type: 'token.issued', userId: user.id, clientId: app.clientId, detail: { grantId: row.grant_id, scope: row.scope, refresh: Boolean(refreshToken) } });
      });
      return {
        access_token: accessToken,
        token_type: 'Bearer',
        expires_in: config.ttl.accessToken,
        id_token: idToken,
        ...(refreshToken && { refresh_token: refreshToken }),
        scope: row.scope,
      };
    },
  };
}

export type AuthorizationService = ReturnType<typeof createAuthorizationService>;
