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
export function continueUrl(issuer: string, requestId: string): string {
  return `${issuer}/oauth2/authorize/continue?request=${encodeURIComponent(requestId)}`;
}

/** The authorize endpoint's page for a sealed form_post answer (AuthorizationService.sealDelivery). */
export function deliverUrl(issuer: string, sealed: string): string {
  return `${issuer}/oauth2/authorize/deliver?response=${encodeURIComponent(sealed)}`;
}
