// The authorization code flow with PKCE: authorize request validation, the decision after each step
// (sign-in, verification, consent), code issuance and the code exchange. The order of checks of each
// endpoint reads top to bottom here.
//
// A pending authorization request (table authorization_requests), from authorize to the code:
//
//   authorize ─▶ PENDING ─┬─ sign-in / sign-up on it ──▶ records login_user_id, login_session_id, login_completed_at
//                         ├─ consent (allow) ──────────▶ records consent_user_id, consent_scopes, consent_given_at
//                         └─ code issued, an error redirected, a denial ─▶ COMPLETED (completed_at; once, atomically)
//   (a request not completed within CONSENT_REQUEST_TTL expires; clean-up deletes it)
//
// Who may move it: only the browser that started it. authorize() asks for a browser-binding secret (an
// HttpOnly cookie the authorize endpoint sets then) when it stores a request, and stores its SHA-256
// (browser_hash) with it; every later step finds the request by id AND that hash, so a link to someone
// else's request is as good as expired, whoever is signed in.
// What each step is worth: the next step is never stored, it is derived by nextStep() (src/oauth/authorize-flow.ts,
// pure: its checks and their order are listed there) from the request, the session presenting it (the
// hosted-login cookie), the user's remembered consent and the time, all loaded here before it is called:
//   sign-in / sign-up / verify-email / second-factor / enrol / consent (a page), an error redirected, or
//   issue: complete the request and issue a (sealed) code for the presenting session's user.
// consent() is accepted only when nextStep() says "consent" for the user presenting the request; at any
// other step it records nothing and the browser is sent to the step that is due.
// A signed-in browser with nothing to ask (the common single sign-on) stores no request at all: the code
// is issued only if the user's remembered consent covers the scopes; only when a page must be shown is the
// request stored, bound as above. Without prompt=login or prompt=consent one statement finds the session
// (sessionForCode): the cookie's live session, of an enabled user with a verified e-mail, within max_age,
// with the consent remembered, with a second factor when the request requires it (requiredAcr), is what nextStep()
// answers 'issue' for (the rules of db/repositories/sso-rules.ts,
// twins of nextStep's issueChecks); when it finds none, the session is looked up and nextStep() decides as
// above. Codes are sealed (src/oauth/sealed-code.ts): issuing one writes nothing; the exchange creates the grant.
// How the answer reaches the client is the request's response mode (kept with the pending request): query (a
// redirect) or form_post (OAuth 2.0 Form Post Response Mode: a page that POSTs it; plugins/pages/form-post.ts).
// Every answer, a code or an error, goes through respond(), which reads it.
// id_token_hint (OpenID Connect Core §3.1.2.1): an ID token we signed (expired ones too: it is a hint) whose
// audience includes the client. Invalid: invalid_request. Valid, for another user than the session's: with
// prompt=none login_required; otherwise the user is asked to sign in (as with prompt=login).
import { randomUUID } from 'node:crypto';
import * as jose from 'jose';
import type { Db } from '../../db/create-db.js';
import type { AuthorizationRequestParams } from '../../db/tables.js';
import * as requests from '../../db/repositories/authorization-requests.js';
import type { AuthorizationRequestRow } from '../../db/repositories/authorization-requests.js';
import { findConsent, upsertConsent } from '../../db/repositories/consents.js';
import {
  type CodeSession,
  completeRequestForCode,
  consentCoversForCode,
  sessionForCode,
} from '../../db/repositories/issuance.js';
import { appendAuditEvent } from '../../db/repositories/audit.js';
import { type Application, isSelfRegistered } from '../domain/application.js';
import type { ResourceServer } from '../domain/resource-server.js';
import type { Config } from '../config.js';
import {
  appendQuery,
  needsResourceRegistry,
  parseAuthorizeParams,
  type ResourceContext,
  type RawParams,
  requestedResponseMode,
  single,
} from '../oauth/authorize-params.js';
import {
  boundRequestKey,
  browserHash,
  consentRequired,
  nextStep,
  nothingDone,
  type RequestProgress,
  ssoApplies,
  type Step,
  type StepInput,
  type LevelPolicy,
  requiredAcr,
} from '../oauth/authorize-flow.js';
import { OAuthError, type OAuthErrorCode } from '../oauth/errors.js';
import { formatScope } from '../oauth/scope.js';
import { redirectUriHash, sealCode } from '../oauth/sealed-code.js';
import { seal, unseal } from '../oauth/seal.js';
import { generateToken, hashToken } from '../oauth/tokens.js';
import type { ApplicationService } from './applications.js';
import type { SessionContext } from '../domain/session.js';
import { ACR_MFA, type FactorSummary, hasSecondFactor } from '../domain/mfa.js';
import { sessionTouchSeconds } from './sessions.js';
import type { KeyStore } from './key-store.js';
import type { ResourceServerService } from './resource-servers.js';
import type { SelfRegistrationService } from './self-registration.js';

export { appendQuery, type RawParams };

export const EXPIRED_REQUEST =
  'the sign-in request has expired or was already used (or is from another browser); go back to the application';

/** An error shown to the user (HTML or JSON), never redirected: client or redirect_uri is not trusted. */
export class AuthorizeRenderError<E extends OAuthErrorCode = OAuthErrorCode> extends OAuthError<E> {}

/** Where an authorization response goes, and how (AuthorizationRequestParams' fields of it). */
type ResponseTarget = Pick<AuthorizationRequestParams, 'redirect_uri' | 'state' | 'response_mode'>;

export type Decision =
  | { kind: 'redirect'; url: string; error?: OAuthError }
  /** response_mode=form_post: the fields, POSTed to `action` (the redirect_uri) by the page the browser gets. */
  | { kind: 'form_post'; action: string; fields: Record<string, string>; error?: OAuthError }
  | { kind: 'sign-in'; requestId: string }
  | { kind: 'sign-up'; requestId: string }
  | { kind: 'verify-email'; requestId: string }
  /** A step-up: the session lacks the level the request requires, and the user holds a second factor. */
  | { kind: 'second-factor'; requestId: string }
  /** The level is required, and the user holds no second factor: the sign-in methods page, then continueUrl. */
  | { kind: 'enrol'; requestId: string; continueUrl: string }
  | { kind: 'consent'; requestId: string };

/** The authorize endpoint's continuation after a hosted page. */
export function continueUrl(issuer: string, requestId: string): string {
  return `${issuer}/oauth2/authorize/continue?request=${encodeURIComponent(requestId)}`;
}

/** The hosted-login session a request presents: its cookie's value, and its lookup (once per request). */
export interface PresentedSession {
  cookie: string | undefined;
  resolve(): Promise<SessionContext | undefined>;
}

/** A pending authorization request as the hosted pages see it. */
export interface PendingRequest {
  id: string;
  params: AuthorizationRequestParams;
}

/** What a verification mail says of the pending request it continues (nothing without one). */
export function verificationContext(found: { request: PendingRequest; app: Application } | undefined) {
  if (!found) return {};
  const { request, app } = found;
  return {
    requestId: request.id,
    clientId: app.clientId,
    clientName: app.clientName,
    redirectUri: request.params.redirect_uri,
  };
}

export function createAuthorizationService(deps: {
  db: Db;
  config: Config;
  applications: ApplicationService;
  keys: Pick<KeyStore, 'jwks'>;
  /** The user's second factors (services.factors), read when a request requires a level. */
  factors: { summary(userId: string): Promise<FactorSummary> };
  /** The resource servers (RFC 8707), read (cached) only by a request that names a resource or a scope of one. */
  resourceServers?: Pick<ResourceServerService, 'builtIn' | 'list'>;
  /** Client ID metadata documents (an https client_id) and the last use of self-registered clients. */
  selfRegistration?: Pick<SelfRegistrationService, 'resolve' | 'touch'>;
}) {
  const { db, config } = deps;
  const issuer = config.issuer;
  const secretKey = config.secretKey!;

  /** The authorization response, in the request's response mode; state (if sent) and iss (RFC 9207) added. */
  function respond(target: ResponseTarget, values: Record<string, string>, error?: OAuthError): Decision {
    const all = { ...values, ...(target.state !== undefined && { state: target.state }), iss: issuer };
    const logged = error ? { error } : {};
    if (target.response_mode === 'form_post')
      return { kind: 'form_post', action: target.redirect_uri, fields: all, ...logged };
    return { kind: 'redirect', url: appendQuery(target.redirect_uri, all), ...logged };
  }

  function errorRedirect(target: ResponseTarget, error: OAuthError): Decision {
    return respond(target, { error: error.error, error_description: error.error_description }, error);
  }

  /**
   * The subject of an id_token_hint: an ID token this server signed (with a key of its JWKS, any age: a hint
   * may have expired) for this client. Anything else is invalid_request.
   */
  async function hintSubject(hint: string, clientId: string): Promise<string> {
    try {
      const { payload } = await jose.compactVerify(hint, jose.createLocalJWKSet(await deps.keys.jwks()));
      const claims = JSON.parse(new TextDecoder().decode(payload)) as jose.JWTPayload;
      const audience = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
      if (claims.iss !== issuer) throw new Error(`issuer ${String(claims.iss)}`);
      if (!audience.includes(clientId)) throw new Error('audience without the client');
      if (typeof claims.sub !== 'string') throw new Error('no subject');
      return claims.sub;
    } catch (error) {
      const detail = String(error).slice(0, 200);
      throw new OAuthError('invalid_request', 'id_token_hint is not an ID token issued to this client', { detail });
    }
  }

  /** Client and redirect_uri first: until both are verified, errors are rendered, never redirected. */
  async function verifyClient(
    raw: RawParams,
  ): Promise<{ app: Application; redirectUri: string; state: string | undefined }> {
    let clientId: string | undefined;
    let redirectUri: string | undefined;
    try {
      clientId = single(raw, 'client_id');
      redirectUri = single(raw, 'redirect_uri');
    } catch (error) {
      const { error_description, detail } = error as OAuthError<'invalid_request'>;
      throw new AuthorizeRenderError('invalid_request', error_description, detail ? { detail } : {});
    }
    if (!clientId) throw new AuthorizeRenderError('invalid_request', 'client_id is required');
    if (clientId.length > 256) throw new AuthorizeRenderError('invalid_request', 'client_id is not valid');
    const app = await resolveClient(clientId);
    if (!app)
      throw new AuthorizeRenderError('invalid_client', 'unknown client_id', { detail: `client_id ${clientId}` });
    if (!app.enabled) throw new AuthorizeRenderError('invalid_client', 'this application is disabled');
    await deps.selfRegistration?.touch(app);
    if (!redirectUri) throw new AuthorizeRenderError('invalid_request', 'redirect_uri is required');
    // Exact string comparison (RFC 9700 §4.1.3): no normalisation, no prefix or wildcard matching.
    if (!app.redirectUris.includes(redirectUri)) {
      const detail = `redirect_uri ${redirectUri}`;
      throw new AuthorizeRenderError('invalid_request', 'redirect_uri is not registered for this client', { detail });
    }
    // RFC 6749 §3.1: a parameter sent without a value is treated as omitted, here as on success.
    const state = typeof raw.state === 'string' && raw.state !== '' ? raw.state : undefined;
    return { app, redirectUri, state };
  }

  /** The application of a client_id; an https URL names a client ID metadata document (fetched when stale). */
  async function resolveClient(clientId: string): Promise<Application | undefined> {
    if (!deps.selfRegistration) return deps.applications.find(clientId);
    try {
      return await deps.selfRegistration.resolve(clientId);
    } catch (error) {
      if (error instanceof OAuthError && !(error instanceof AuthorizeRenderError)) {
        throw new AuthorizeRenderError(
          error.error,
          error.error_description,
          error.detail ? { detail: error.detail } : {},
        );
      }
      throw error;
    }
  }

  const notFound = () => new AuthorizeRenderError('invalid_request', EXPIRED_REQUEST);

  /** The registry and the client as resource indicators read them; undefined when the request needs neither. */
  async function resourceContext(raw: RawParams, app: Application): Promise<ResourceContext | undefined> {
    if (!deps.resourceServers || !needsResourceRegistry(raw)) return undefined;
    const [builtIn, ...registered] = await deps.resourceServers.list();
    return {
      registry: { builtIn: builtIn!, registered },
      client: { clientId: app.clientId, selfRegistered: isSelfRegistered(app) },
    };
  }

  /** What sets the level a request of `app` requires besides its parameters (requiredAcr). */
  const policyOf = (app: Application | undefined): LevelPolicy => ({
    mfa: config.mfa.mode,
    applicationRequiresMfa: app?.requireMfa ?? false,
  });

  /**
   * What nextStep() reads besides the request, loaded before it decides: the session presenting the request,
   * its user's remembered consent to the client, the time, the level policy, and (when a level is required) the
   * user's second factors.
   */
  async function stepInput(
    request: RequestProgress & { params: AuthorizationRequestParams },
    ctx: SessionContext | undefined,
    app?: Application,
  ): Promise<StepInput> {
    const client = app ?? (await deps.applications.find(request.params.client_id));
    // A self-registered client always sees the consent page (decisions.md): no remembered consent counts for it.
    const remembered =
      ctx && !(client && isSelfRegistered(client))
        ? await findConsent(db, ctx.user.id, request.params.client_id)
        : undefined;
    const policy = policyOf(client);
    const required = requiredAcr(request.params, policy) !== undefined;
    const factors = ctx && required ? await deps.factors.summary(ctx.user.id) : undefined;
    return {
      request,
      presenter: ctx,
      remembered,
      now: new Date(),
      policy,
      hasSecondFactor: factors && hasSecondFactor(factors),
    };
  }

  async function findBound(
    requestId: string,
    browser: string | undefined,
  ): Promise<AuthorizationRequestRow | undefined> {
    const key = boundRequestKey(requestId, browser);
    if (!key) return undefined;
    return requests.findPendingAuthorizationRequest(db, key.id, key.browserHash);
  }

  /** The next step for a stored request of this browser, given who is signed in. */
  async function decide(
    requestId: string,
    browser: string | undefined,
    ctx: SessionContext | undefined,
  ): Promise<Decision> {
    const request = await findBound(requestId, browser);
    if (!request) throw notFound();
    return decideFor(request, ctx, nextStep(await stepInput(request, ctx)));
  }

  /** Where the browser goes at `step` (nextStep() of this request for this session). */
  async function decideFor(
    request: AuthorizationRequestRow,
    ctx: SessionContext | undefined,
    step: Step,
  ): Promise<Decision> {
    const app = await deps.applications.find(request.client_id);
    if (!app?.enabled) throw new AuthorizeRenderError('invalid_client', 'this application is disabled');
    if (typeof step === 'object') {
      // An error ends the request: it cannot be continued afterwards.
      await requests.completeAuthorizationRequest(db, request.id);
      return errorRedirect(request.params, step.error);
    }
    if (step === 'issue') return issueForRequest(request.id, request.params, ctx!);
    return pageDecision(step, request.id);
  }

  /** The hosted page of `step` for the stored request `requestId`. */
  const pageDecision = (step: Exclude<Step, 'issue' | { error: OAuthError }>, requestId: string): Decision =>
    step === 'enrol'
      ? { kind: step, requestId, continueUrl: continueUrl(issuer, requestId) }
      : { kind: step, requestId };

  /** A code for the presenting session's user, if the gate passes (the pending request completed, once). */
  async function issueCode(
    gate: { requestId: string } | { consentCovers: string[] },
    params: AuthorizationRequestParams,
    ctx: SessionContext,
  ): Promise<Decision | undefined> {
    const issuedAt =
      'requestId' in gate
        ? await completeRequestForCode(db, gate.requestId)
        : await consentCoversForCode(db, ctx.user.id, params.client_id, gate.consentCovers);
    if (!issuedAt) return undefined;
    const session = {
      sessionId: ctx.session.id,
      userId: ctx.user.id,
      authTime: ctx.session.auth_time,
      amr: ctx.session.amr,
      issuedAt,
    };
    return codeRedirect(params, session);
  }

  /** The sealed code (src/oauth/sealed-code.ts) of this request for this session, in the redirect to the client. */
  const codeRedirect = (params: AuthorizationRequestParams, session: CodeSession): Decision => {
    const code = sealCode(
      {
        ...session,
        grantId: randomUUID(),
        clientId: params.client_id,
        expiresAt: new Date(Date.now() + config.ttl.authorizationCode * 1000),
        redirectUriHash: redirectUriHash(params.redirect_uri),
        codeChallenge: params.code_challenge ?? null,
        nonce: params.nonce ?? null,
        scope: formatScope(params.scope),
        resources: params.resource ?? [],
      },
      secretKey,
    );
    return respond(params, { code });
  };

  /**
   * Single sign-on in one statement, for a request that asks neither prompt=login nor prompt=consent: a code
   * for the cookie's session if nextStep() would answer 'issue' for it (see sessionForCode); undefined
   * otherwise.
   */
  async function issueForSessionCookie(params: AuthorizationRequestParams, cookie: string, app: Application) {
    if (cookie.length > 100 || !ssoApplies(params) || isSelfRegistered(app)) return undefined;
    const session = await sessionForCode(db, params.client_id, {
      sessionHash: hashToken(cookie),
      idleSeconds: config.ttl.sessionIdle,
      touchSeconds: sessionTouchSeconds(config.ttl.sessionIdle),
      maxAge: params.max_age ?? null,
      scopes: params.scope,
      mfaRequired: requiredAcr(params, policyOf(app)) === ACR_MFA,
    });
    return session ? codeRedirect(params, session) : undefined;
  }

  async function issueForRequest(requestId: string, params: AuthorizationRequestParams, ctx: SessionContext) {
    const decision = await issueCode({ requestId }, params, ctx);
    if (!decision)
      throw new AuthorizeRenderError(
        'invalid_request',
        'this sign-in request was already used; start again from the application',
      );
    return decision;
  }

  const storeRequest = (params: AuthorizationRequestParams, browser: () => string) =>
    requests.insertAuthorizationRequest(db, {
      id: generateToken(),
      client_id: params.client_id,
      params,
      expires_at: new Date(Date.now() + config.ttl.consentRequest * 1000),
      browser_hash: browserHash(browser()),
    });

  /**
   * A signed-in browser: the request is stored only if a page must be shown. Nothing to ask (the
   * session is fresh enough, the consent remembered) issues the code at once: one statement that
   * writes nothing unless the remembered consent still covers the scopes as the code is issued (it may
   * have been withdrawn since it was read).
   */
  async function authorizeSignedIn(
    params: AuthorizationRequestParams,
    browser: () => string,
    ctx: SessionContext,
    app: Application,
  ): Promise<Decision> {
    const step = nextStep(await stepInput(nothingDone(params), ctx, app));
    if (typeof step === 'object') return errorRedirect(params, step.error);
    if (step === 'issue') {
      const issued = await issueCode({ consentCovers: params.scope }, params, ctx);
      if (issued) return issued;
      if (params.prompt.includes('none')) return errorRedirect(params, consentRequired().error);
      return { kind: 'consent', requestId: (await storeRequest(params, browser)).id };
    }
    return pageDecision(step, (await storeRequest(params, browser)).id);
  }

  const DELIVERY = 'form post delivery';

  return {
    /**
     * A form_post answer the JSON consent endpoint cannot send as a page (its caller navigates to a URL): sealed
     * for this browser (its binding cookie) for the code's lifetime, opened by the authorize endpoint's
     * delivery page (openDelivery), which POSTs it. Only this server can read it, only this browser use it.
     */
    sealDelivery(decision: Extract<Decision, { kind: 'form_post' }>, browser: string): string {
      const expiresAt = Date.now() + config.ttl.authorizationCode * 1000;
      const plain = JSON.stringify([decision.action, decision.fields, expiresAt]);
      return seal(plain, { secretKey, purpose: DELIVERY, aad: browserHash(browser) });
    },

    /** A sealed form_post answer of this browser, unexpired; undefined otherwise. */
    openDelivery(sealed: string, browser: string | undefined): Extract<Decision, { kind: 'form_post' }> | undefined {
      if (!browser || sealed.length > 16_000) return undefined;
      const plain = unseal(sealed, { secretKey, purpose: DELIVERY, aad: browserHash(browser) });
      if (plain === undefined) return undefined;
      const [action, fields, expiresAt] = JSON.parse(plain) as [string, Record<string, string>, number];
      return expiresAt > Date.now() ? { kind: 'form_post', action, fields } : undefined;
    },

    /**
     * GET/POST authorize: validate, store the request bound to this browser, and decide the first step.
     * `browser` gives the browser-binding secret the endpoint keeps in a cookie, called only when a request
     * is stored (it sets the cookie); `session` the hosted-login session the browser presents.
     */
    async authorize(raw: RawParams, browser: () => string, session: PresentedSession): Promise<Decision> {
      const { app, redirectUri, state } = await verifyClient(raw);
      // From here every error goes back to the client, in the response mode asked for (if it is one we know).
      const target = { redirect_uri: redirectUri, state, response_mode: requestedResponseMode(raw) };
      let params: AuthorizationRequestParams;
      let hinted: string | undefined;
      try {
        params = parseAuthorizeParams(raw, app, redirectUri, await resourceContext(raw, app));
        const hint = single(raw, 'id_token_hint');
        hinted = hint === undefined ? undefined : await hintSubject(hint, app.clientId);
      } catch (error) {
        if (error instanceof OAuthError) return errorRedirect(target, error);
        throw error;
      }
      if (session.cookie && hinted === undefined) {
        const issued = await issueForSessionCookie(params, session.cookie, app);
        if (issued) return issued;
      }
      const ctx = await session.resolve();
      if (ctx && hinted !== undefined && ctx.user.id !== hinted) {
        const other = new OAuthError('login_required', 'the signed-in user is not the one of the id_token_hint');
        if (params.prompt.includes('none')) return errorRedirect(params, other);
        // Someone else is signed in: the hinted user signs in (prompt=login), or says who they are.
        if (!params.prompt.includes('login')) params = { ...params, prompt: [...params.prompt, 'login'] };
      }
      if (ctx) return authorizeSignedIn(params, browser, ctx, app);
      const stored = await storeRequest(params, browser);
      return decideFor(stored, ctx, nextStep(await stepInput(stored, ctx, app)));
    },

    decide,

    /**
     * The step-up's Cancel (the second-factor page) on a request of this browser: accepted only where nextStep()
     * asks this session for a second factor (or to enrol one); it ends the request and answers the application
     * with unmet_authentication_requirements. At any other step nothing is ended and the browser goes to the
     * step that is due.
     */
    async cancelStepUp(requestId: string, browser: string | undefined, ctx: SessionContext): Promise<Decision> {
      const request = await findBound(requestId, browser);
      if (!request) throw notFound();
      const step = nextStep(await stepInput(request, ctx));
      if (step !== 'second-factor' && step !== 'enrol') return decideFor(request, ctx, step);
      const unmet = new OAuthError('unmet_authentication_requirements', 'the user did not give a second factor');
      return decideFor(request, ctx, { error: unmet });
    },

    /**
     * A pending request of this browser (what the pages show of it), with its application and the resource servers
     * it names (RFC 8707 `resource`, in the order asked; their names and scopes for the consent page).
     */
    async pendingRequest(
      requestId: string,
      browser: string | undefined,
    ): Promise<{ request: PendingRequest; app: Application; resources: ResourceServer[] } | undefined> {
      const request = await findBound(requestId, browser);
      if (!request) return undefined;
      const app = await deps.applications.find(request.client_id);
      if (!app) return undefined;
      const named = request.params.resource ?? [];
      const all = named.length && deps.resourceServers ? await deps.resourceServers.list() : [];
      const resources = named.flatMap((id) => all.filter((s) => s.identifier === id));
      return { request: { id: request.id, params: request.params }, app, resources };
    },

    /** After a sign-in or sign-up on a request: records who signed in, in which session. */
    async recordSignIn(
      requestId: string,
      browser: string | undefined,
      who: { userId: string; sessionId: string },
    ): Promise<boolean> {
      if (!browser) return false;
      return requests.recordRequestSignIn(db, requestId, browserHash(browser), who);
    },

    /**
     * The consent page's answer. Accepted only at the consent step of the user presenting the request:
     * allow remembers the scopes and continues; deny ends the request with access_denied. At any other
     * step nothing is recorded and the browser goes to the step that is due.
     */
    async consent(
      requestId: string,
      browser: string | undefined,
      ctx: SessionContext,
      allow: boolean,
    ): Promise<Decision> {
      const request = await findBound(requestId, browser);
      if (!request) throw notFound();
      if (!allow) {
        await requests.completeAuthorizationRequest(db, requestId);
        return errorRedirect(request.params, new OAuthError('access_denied', 'the user denied the request'));
      }
      const input = await stepInput(request, ctx);
      const step = nextStep(input);
      if (step !== 'consent') return decideFor(request, ctx, step);
      const scopes = request.params.scope;
      const recorded = await db.transaction().execute(async (trx) => {
        if (!(await requests.recordRequestConsent(trx, requestId, ctx.user.id, scopes))) return false;
        await upsertConsent(trx, ctx.user.id, request.client_id, scopes);
        await appendAuditEvent(trx, {
          type: 'consent.granted',
          userId: ctx.user.id,
          clientId: request.client_id,
          detail: { scope: formatScope(scopes) },
        });
        return true;
      });
      if (!recorded) throw notFound();
      const consented = {
        ...request,
        consent_user_id: ctx.user.id,
        consent_scopes: scopes,
        consent_given_at: new Date(),
      };
      // Remembered now: what was before and these scopes (upsertConsent); nextStep() reads it no more anyway.
      const remembered = [...new Set([...(input.remembered ?? []), ...scopes])];
      return decideFor(consented, ctx, nextStep({ ...input, request: consented, remembered, now: new Date() }));
    },
  };
}

export type AuthorizationService = ReturnType<typeof createAuthorizationService>;
