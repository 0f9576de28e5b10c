// The authorize state machine: where a pending authorization request stands for the browser session presenting
// it (the request's life in the database is drawn at the top of src/services/authorization.ts). Pure: the
// service loads everything a decision reads first (the request, the session presenting it, that user's
// remembered consent to the client) and passes the clock in; nothing here reads a database or the time.
//
// The checks, in this order; the first that asks for something decides (node-oidc-provider's interaction
// policy, lib/helpers/interaction_policy/prompts/{login,consent}.js, names the same checks):
//   no_session       no session presents the request, or its user is disabled ─▶ sign-in (sign-up with
//                    prompt=create; login_required with prompt=none)
//   login_prompt     prompt=login ─▶ sign-in, unless sign-in was completed on this request BY THIS SESSION
//                    (signedInHere: login_session_id and login_user_id are the presenting session's)
//   max_age          the session's auth_time is more than max_age seconds before `now` ─▶ sign-in
//                    (login_required with prompt=none), unless signed in here
//   level            the request requires a level (requiredAcr: MFA=required, the application's requireMfa,
//                    acr_values or the claims parameter's id_token.acr) the session's amr does not meet (meetsAcr)
//                    ─▶ second-factor (a step-up of the session in place) when the user holds a second factor,
//                    enrol (the sign-in methods page) when not; login_required with prompt=none (it cannot be met
//                    silently), unmet_authentication_requirements with MFA=off (no factor can be given)
//   email_unverified the user's e-mail is unverified ─▶ verify-email (interaction_required with prompt=none)
//   consent_prompt   prompt=consent ─▶ consent (consent_required with prompt=none), unless consent was given on
//                    this request BY THIS USER to all its scopes (consentedHere)
//   op_scopes_missing a scope beyond the user's remembered consent ─▶ consent (consent_required with
//                    prompt=none), unless consented here
//   otherwise        ─▶ issue: a code for the presenting session's user.
// A step recorded on the request counts only for whoever did it: a sign-in for the session it created, a
// consent for the user who gave it and the scopes shown (SECURITY.md §2, the pending request: one browser's
// request continued by another user, or after the session changed, starts that user's own steps).
// The consent page's answer is accepted only when nextStep() says 'consent' for the user presenting it.
// For a request nothing was done on that asks neither prompt=login nor prompt=consent (ssoApplies), nextStep()
// answers 'issue' exactly when every check of issueChecks holds: those are the TypeScript twins of the rules the
// one-statement single sign-on states in SQL (db/repositories/sso-rules.ts; test/integration/sso-rules.test.ts
// checks each pair, and the two decisions, agree).
// There are no first-party or pre-consented applications: every application is asked for consent.
import { ACR_MFA, ACR_VALUES, type AcrValue, meetsAcr } from './acr.js';
import type { AuthorizeParams } from './authorize-params.js';
import { OAuthError } from './errors.js';
import { hashToken } from './tokens.js';

/** What the decision reads of a request's parameters. */
export type StepParams = Pick<AuthorizeParams, 'prompt' | 'max_age' | 'scope'> &
  Partial<Pick<AuthorizeParams, 'acr_values' | 'claims'>>;

/** What sets the level a request requires besides its own parameters: MFA and the application's requireMfa. */
export interface LevelPolicy {
  /** MFA (src/domain/mfa.ts MfaMode). */
  mfa: 'off' | 'optional' | 'required';
  applicationRequiresMfa: boolean;
}

/** The weakest of the known values among `values` (any of them satisfies the request); unknown ones are ignored. */
function weakestKnown(values: readonly unknown[]): AcrValue | undefined {
  const known = ACR_VALUES.filter((v) => values.includes(v));
  return known[0];
}

/**
 * The level a request requires, or undefined for none: urn:idp:mfa with MFA=required or an application that
 * requires MFA; otherwise what the request asks for, by acr_values (OpenID Connect Core §3.1.2.1) or the claims
 * parameter's id_token.acr with a value or values (§5.5.1.1): of the values it names, the weakest known one (any
 * satisfies it). Values this provider does not know are ignored (as a voluntary claim is).
 */
export function requiredAcr(params: StepParams, policy: LevelPolicy): AcrValue | undefined {
  if (policy.mfa === 'required' || policy.applicationRequiresMfa) return ACR_MFA;
  const asked: AcrValue[] = [];
  const byValues = params.acr_values && weakestKnown(params.acr_values);
  if (byValues) asked.push(byValues);
  const claim = params.claims?.id_token?.acr;
  if (claim) {
    const values = [...(claim.value !== undefined ? [claim.value] : []), ...(claim.values ?? [])];
    const byClaim = weakestKnown(values);
    if (byClaim) asked.push(byClaim);
  }
  // Asked both ways: the stronger of the two.
  return ACR_VALUES.filter((v) => asked.includes(v)).at(-1);
}

/**
 * What has happened on a pending request (the columns of authorization_requests): who completed sign-in on it
 * and in which session, who consented and to which scopes. A request not stored yet has done nothing
 * (nothingDone).
 */
export interface RequestProgress {
  params: StepParams;
  login_completed_at: Date | null;
  login_session_id: string | null;
  login_user_id: string | null;
  consent_user_id: string | null;
  consent_scopes: readonly string[] | null;
}

/** The hosted-login session presenting a request, and its user: a SessionContext fits. */
export interface Presenter {
  session: { id: string; auth_time: Date; amr: readonly string[] };
  user: { id: string; email_verified: boolean; disabled: boolean };
}

/** Everything nextStep() reads, loaded before it is called. */
export interface StepInput {
  request: RequestProgress;
  /** The session the browser presents; undefined when it presents none (or a dead one). */
  presenter: Presenter | undefined;
  /** The scopes the presenting user has allowed the request's client before; undefined: none remembered. */
  remembered: readonly string[] | undefined;
  /** The current time, against which max_age is measured. */
  now: Date;
  /** MFA and the request's application's requireMfa (with the request's parameters: requiredAcr). */
  policy: LevelPolicy;
  /**
   * The presenting user holds a second factor (src/domain/mfa.ts hasSecondFactor); loaded when a level is required
   * (undefined: not known, taken as none).
   */
  hasSecondFactor?: boolean | undefined;
}

/** Where a pending request stands for the session presenting it. */
export type Step =
  | 'sign-in'
  | 'sign-up'
  | 'verify-email'
  | 'second-factor'
  | 'enrol'
  | 'consent'
  | 'issue'
  | { error: OAuthError };

/** A request nothing has happened on yet. */
export const nothingDone = <P extends StepParams>(params: P) => ({
  params,
  login_completed_at: null,
  login_session_id: null,
  login_user_id: null,
  consent_user_id: null,
  consent_scopes: null,
});

export const consentRequired = () => ({
  error: new OAuthError('consent_required', 'the user has not consented to these scopes'),
});

/** A sign-in on this request counts only for the session it created (and that session's user). */
export function signedInHere(request: RequestProgress, presenter: Presenter): boolean {
  return (
    request.login_completed_at !== null &&
    request.login_session_id === presenter.session.id &&
    request.login_user_id === presenter.user.id
  );
}

/** max_age (OpenID Connect Core §3.1.2.1): the session's sign-in is more than max_age seconds old at `now`. */
export function signInTooOld(params: StepParams, presenter: Presenter, now: Date): boolean {
  if (params.max_age === undefined) return false;
  const age = (now.getTime() - new Date(presenter.session.auth_time).getTime()) / 1000;
  return age > params.max_age;
}

/** Consent on this request counts only for the user who gave it, and only for the scopes shown. */
export function consentedHere(request: RequestProgress, presenter: Presenter): boolean {
  return (
    request.consent_user_id === presenter.user.id &&
    request.params.scope.every((s) => request.consent_scopes?.includes(s))
  );
}

/** The remembered consent covers every requested scope. */
export function consentCovers(remembered: readonly string[] | undefined, scopes: readonly string[]): boolean {
  return scopes.every((s) => (remembered ?? []).includes(s));
}

/** What a check of issueChecks reads: nextStep()'s input, with a session presenting the request. */
export type PresentedInput = StepInput & { presenter: Presenter };

/**
 * What nextStep() asks of the presenting session before it answers 'issue', each named as the rule of the
 * one-statement single sign-on it is the twin of (db/repositories/sso-rules.ts). For a request nothing was done on
 * that ssoApplies to, nextStep() answers 'issue' exactly when all hold.
 */
export const issueChecks = {
  userActive: ({ presenter }: PresentedInput) => !presenter.user.disabled,
  emailVerified: ({ presenter }: PresentedInput) => presenter.user.email_verified,
  signInFresh: ({ request, presenter, now }: PresentedInput) => !signInTooOld(request.params, presenter, now),
  levelMet: ({ request, presenter, policy }: PresentedInput) => {
    const required = requiredAcr(request.params, policy);
    return required === undefined || meetsAcr(presenter.session.amr, required);
  },
  consentCovers: ({ request, remembered }: PresentedInput) => consentCovers(remembered, request.params.scope),
};

/** Single sign-on in one statement is tried only for a request that asks neither prompt=login nor prompt=consent. */
export const ssoApplies = (params: StepParams): boolean =>
  !params.prompt.includes('login') && !params.prompt.includes('consent');

/** The step a pending request is at for the session presenting it (the checks above, in order). */
export function nextStep(input: StepInput): Step {
  const { request, presenter } = input;
  const params = request.params;
  const none = params.prompt.includes('none');
  const presented = presenter && { ...input, presenter };
  if (!presented || !issueChecks.userActive(presented)) {
    if (none) return { error: new OAuthError('login_required', 'the user is not signed in') };
    return params.prompt.includes('create') ? 'sign-up' : 'sign-in';
  }
  const ctx = presented.presenter;
  const signedIn = signedInHere(request, ctx);
  if (params.prompt.includes('login') && !signedIn) return 'sign-in';
  if (!signedIn && !issueChecks.signInFresh(presented)) {
    if (none) return { error: new OAuthError('login_required', 'the sign-in is older than max_age') };
    return 'sign-in';
  }
  if (!issueChecks.levelMet(presented)) {
    if (none) return { error: new OAuthError('login_required', 'the session does not meet the required level') };
    if (input.policy.mfa === 'off')
      return { error: new OAuthError('unmet_authentication_requirements', 'second factors are turned off here') };
    return input.hasSecondFactor ? 'second-factor' : 'enrol';
  }
  if (!issueChecks.emailVerified(presented)) {
    if (none) return { error: new OAuthError('interaction_required', 'the e-mail address is not verified') };
    return 'verify-email';
  }
  if (!consentedHere(request, ctx)) {
    if (params.prompt.includes('consent')) return none ? consentRequired() : 'consent';
    if (!issueChecks.consentCovers(presented)) return none ? consentRequired() : 'consent';
  }
  return 'issue';
}

/**
 * How a pending request is found in the browser presenting it: by its id AND the SHA-256 of that browser's
 * binding secret (the cookie authorize set when it stored the request; browserHash), so a link to someone
 * else's request is as good as expired. Without the cookie, or with an id no request has, nothing is looked up.
 */
export function boundRequestKey(
  requestId: string,
  browser: string | undefined,
): { id: string; browserHash: string } | undefined {
  if (!browser || requestId.length > 128) return undefined;
  return { id: requestId, browserHash: browserHash(browser) };
}

/** What a pending request stores of the binding secret of the browser that started it. */
export const browserHash = (browser: string): string => hashToken(browser);
