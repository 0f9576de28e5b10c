// Which client authentication a token, revocation or introspection request presents (RFC 6749 §2.3, RFC 7523
// §2.2), read from the Authorization header and the form body: pure parsing, the order of node-oidc-provider's
// lib/shared/token_auth.js. The service then checks the presented method against the application's one
// (plugins/oidc/client-endpoint.ts authenticateClient).
import { OAuthError, parameterError } from './errors.js';
/** The form body of a client endpoint (as src/oauth/grants/grant.ts TokenParams). */
type TokenParams = Readonly<Record<string, string | undefined>>;

export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

export type PresentedClientAuth =
  | { method: 'none'; clientId: string }
  | { method: 'client_secret_basic' | 'client_secret_post'; clientId: string; secret: string }
  | { method: 'private_key_jwt'; clientId: string; assertion: string };

/** Thrown for a refusal after an Authorization header was tried: the answer names the scheme (RFC 6749 §5.2). */
export class ClientAuthError extends OAuthError {
  constructor(
    error: OAuthError,
    readonly scheme: 'Basic' | 'Bearer' | undefined,
  ) {
    super(error.error, error.error_description, {
      status: error.statusCode,
      ...(error.detail && { detail: error.detail }),
    });
  }
}

/** RFC 6749 §2.3.1: the id and secret are form-urlencoded before they are joined and base64-encoded. */
function decodeBasic(value: string): { clientId: string; secret: string } | undefined {
  let decoded: string;
  try {
    decoded = Buffer.from(value, 'base64').toString('utf8');
  } catch {
    return undefined;
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  try {
    const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    return { clientId: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
  } catch {
    return undefined;
  }
}

/** An assertion's `sub` (RFC 7523 §3: the client_id), read without verifying: only to find the client. */
function assertionSubject(assertion: string): string | undefined {
  const payload = assertion.split('.')[1];
  if (!payload) return undefined;
  try {
    const sub = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown }).sub;
    return typeof sub === 'string' && sub.length > 0 ? sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The one client authentication of the request. More than one (a Basic header and a client_secret, an assertion
 * and a secret) is invalid_request (RFC 6749 §2.3: a client MUST NOT use more than one method). A client_id in the
 * body that differs from the authenticated one is invalid_request.
 */
export function presentedClientAuth(authorization: string | undefined, params: TokenParams): PresentedClientAuth {
  const bodyId = params.client_id;
  const secret = params.client_secret;
  const assertion = params.client_assertion;
  const assertionType = params.client_assertion_type;
  if (authorization !== undefined) {
    const [scheme = '', value = ''] = authorization.trim().split(/\s+/, 2);
    if (!/^basic$/i.test(scheme)) {
      throw new ClientAuthError(
        new OAuthError('invalid_client', 'the Authorization header is not valid Basic client authentication', {
          detail: `scheme ${scheme.slice(0, 20)}`,
        }),
        /^bearer$/i.test(scheme) ? 'Bearer' : 'Basic',
      );
    }
    const basic = decodeBasic(value);
    if (!basic) {
      throw new ClientAuthError(
        new OAuthError('invalid_client', 'the Authorization header is not valid Basic client authentication'),
        'Basic',
      );
    }
    if (secret !== undefined || assertion !== undefined || assertionType !== undefined) {
      throw new OAuthError('invalid_request', 'client authentication must use one method only (RFC 6749 section 2.3)');
    }
    if (bodyId !== undefined && bodyId !== basic.clientId) {
      throw new OAuthError('invalid_request', 'client_id does not match the client authentication');
    }
    return { method: 'client_secret_basic', clientId: basic.clientId, secret: basic.secret };
  }
  if (assertion !== undefined || assertionType !== undefined) {
    if (secret !== undefined) {
      throw new OAuthError('invalid_request', 'client authentication must use one method only (RFC 6749 section 2.3)');
    }
    if (assertionType !== JWT_BEARER_ASSERTION) {
      throw new OAuthError(
        'invalid_request',
        'client_assertion_type must be urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      );
    }
    if (!assertion) throw parameterError('client_assertion', 'is required');
    const subject = assertionSubject(assertion);
    if (!subject) throw new OAuthError('invalid_client', 'the client assertion is invalid', { detail: 'no sub' });
    if (bodyId !== undefined && bodyId !== subject) {
      throw new OAuthError('invalid_request', 'client_id does not match the client authentication');
    }
    return { method: 'private_key_jwt', clientId: subject, assertion };
  }
  if (!bodyId) throw parameterError('client_id', 'is required');
  if (secret !== undefined) return { method: 'client_secret_post', clientId: bodyId, secret };
  return { method: 'none', clientId: bodyId };
}
