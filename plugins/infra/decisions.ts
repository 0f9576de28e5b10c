// Where the browser goes after an authorization decision (src/services/authorization.ts): the
// redirect_uri with a code or an error, or the hosted page that must come next. Shared by the authorize
// endpoint and the login pages and API, so neither plugin family imports the other.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { Decision } from '../../src/services/authorization.js';
import { sendFormPost } from '../pages/form-post.js';
import { logOAuthError } from './error-handlers.js';

/** Where a decision sends the browser; a form_post answer has no such URL (sendDecision renders its page). */
export function decisionLocation(decision: Exclude<Decision, { kind: 'form_post' }>, loginUrl: string): string {
  switch (decision.kind) {
    case 'redirect':
      return decision.url;
    case 'sign-in':
    case 'sign-up':
    case 'verify-email':
    case 'consent':
      return `${loginUrl}/${decision.kind}?request=${encodeURIComponent(decision.requestId)}`;
    case 'second-factor':
      // A step-up: the page steps the session up in place, then goes on to the continue URL.
      return `${loginUrl}/second-factor?request=${encodeURIComponent(decision.requestId)}`;
    case 'enrol':
      // No second factor yet: the sign-in methods page offers "Continue" to the request once one exists.
      return `${loginUrl}/account/sign-in-methods?return_to=${encodeURIComponent(decision.continueUrl)}`;
  }
}

/** An error sent to the client's redirect_uri is logged like one answered directly (its detail only here). */
export function logDecision(log: FastifyBaseLogger, decision: Decision) {
  if ((decision.kind === 'redirect' || decision.kind === 'form_post') && decision.error)
    logOAuthError(log, decision.error);
}

export function sendDecision(reply: FastifyReply, decision: Decision, loginUrl: string) {
  logDecision(reply.log, decision);
  if (decision.kind === 'form_post') return sendFormPost(reply, decision.action, decision.fields);
  return reply
    .code(303)
    .header('cache-control', 'no-store')
    .header('location', decisionLocation(decision, loginUrl))
    .send();
}

/** The authorize endpoint's continuation after a hosted page. */
export { continueUrl } from '../../src/services/authorization.js';

/** The authorize endpoint's page for a sealed form_post answer (AuthorizationService.sealDelivery). */
export function deliverUrl(issuer: string, sealed: string): string {
  return `${issuer}/oauth2/authorize/deliver?response=${encodeURIComponent(sealed)}`;
}
