// RP-Initiated Logout 1.0: the rules of the end-session endpoint, without HTTP. A valid id_token_hint
// for the signed-in user ends the session at once; otherwise the user confirms. post_logout_redirect_uri
// must exactly match one the application registered, and needs the application to be known (hint or
// client_id). The plugin (plugins/oidc/end-session.ts) parses, renders and sets cookies.
import * as jose from 'jose';
import { OAuthError, parameterError } from '../oauth/errors.js';
import type { Application } from '../domain/application.js';
import type { ApplicationService } from './applications.js';
import { appendQuery, type RawParams } from './authorization.js';
import type { KeyStore } from './key-store.js';

export interface LogoutTarget {
  client: Application | undefined;
  redirect: string | undefined;
  state: string | undefined;
  hint: jose.JWTPayload | undefined;
}

/** One value of a parameter; a repeated one is invalid_request (names are fixed here, never from the request). */
export function singleParam(params: RawParams, name: string): string | undefined {
  const v = params[name];
  if (Array.isArray(v)) throw parameterError(name, 'must not be repeated');
  return v === undefined || v === '' ? undefined : v;
}

export function createEndSessionService(deps: {
  issuer: string;
  keys: Pick<KeyStore, 'jwks'>;
  applications: ApplicationService;
}) {
  /** The hint's claims if we signed it (expired hints are fine: OIDC RP-Initiated Logout §2). */
  async function verifyHint(hint: string): Promise<jose.JWTPayload> {
    try {
      const { payload } = await jose.compactVerify(hint, jose.createLocalJWKSet(await deps.keys.jwks()));
      const claims = JSON.parse(new TextDecoder().decode(payload)) as jose.JWTPayload;
      if (claims.iss !== deps.issuer) throw new Error(`issuer ${String(claims.iss)}`);
      return claims;
    } catch (error) {
      const detail = String(error);
      throw new OAuthError('invalid_request', 'id_token_hint is not an ID token issued here', { detail });
    }
  }

  return {
    /** Who asks, where to return, and the verified hint, from the request's parameters. */
    async resolve(params: RawParams): Promise<LogoutTarget> {
      const hintRaw = singleParam(params, 'id_token_hint');
      const clientId = singleParam(params, 'client_id');
      const redirect = singleParam(params, 'post_logout_redirect_uri');
      const state = singleParam(params, 'state');
      const hint = hintRaw ? await verifyHint(hintRaw) : undefined;
      const hintClient = hint ? (Array.isArray(hint.aud) ? hint.aud[0] : hint.aud) : undefined;
      if (clientId && hintClient && clientId !== hintClient) {
        throw new OAuthError('invalid_request', 'client_id does not match the id_token_hint');
      }
      const id = clientId ?? hintClient;
      const client = id ? await deps.applications.find(id) : undefined;
      if (id && !client) throw new OAuthError('invalid_request', 'unknown client_id', { detail: `client_id ${id}` });
      if (redirect) {
        if (!client) {
          throw new OAuthError('invalid_request', 'post_logout_redirect_uri needs client_id or id_token_hint');
        }
        if (!client.postLogoutRedirectUris.includes(redirect)) {
          const description = 'post_logout_redirect_uri is not registered for this client';
          throw new OAuthError('invalid_request', description, { detail: redirect });
        }
      }
      return { client, redirect, state, hint };
    },

    /** A hint for this very session (same user, and same sid when it carries one) needs no confirmation. */
    hintNamesSession(target: LogoutTarget, session: { userId: string; sessionId: string }): boolean {
      const hint = target.hint;
      return Boolean(hint && hint.sub === session.userId && (!hint.sid || hint.sid === session.sessionId));
    },

    /** Where the browser returns after logout, if the application asked for it. */
    returnUrl(target: LogoutTarget): string | undefined {
      return target.redirect ? appendQuery(target.redirect, { state: target.state }) : undefined;
    },
  };
}

export type EndSessionService = ReturnType<typeof createEndSessionService>;
