// Enterprise single sign-on by domain (issue 35): an operator says "addresses at example.com sign in with this
// upstream" (a provider's ssoDomains; providers.ssoFor). The hosted pages send such an address to the provider
// (home-realm discovery from the e-mail field); the JSON endpoints answer 409 SSO_REQUIRED with the address to go
// to. Password sign-in is off for an account at such a domain once it is linked to that domain's provider (before
// the link, its password is how its owner proves the account in order to link it); password sign-up and
// password reset for an address at such a domain are refused (the person is sent to the provider instead).
import type { UpstreamProvider } from './upstream.js';
import { AppError } from '../errors.js';

/**
 * Where a sign-in round trip to the provider starts: GET {login}/upstream/{id}/start (sign-in only), with the
 * pending authorization request, where to return without one, and the address typed (the upstream's login_hint).
 * `login`: the login path (pages) or LOGIN_URL (JSON answers).
 */
export function upstreamStartUrl(
  login: string,
  providerId: string,
  o: { requestId?: string | undefined; returnTo?: string | undefined; loginHint?: string | undefined } = {},
): string {
  const query = new URLSearchParams();
  if (o.requestId) query.set('request', o.requestId);
  if (o.returnTo) query.set('return_to', o.returnTo);
  if (o.loginHint) query.set('login_hint', o.loginHint);
  const q = query.toString();
  return `${login}/upstream/${encodeURIComponent(providerId)}/start${q ? `?${q}` : ''}`;
}

/**
 * 409 SSO_REQUIRED: this address signs in with its organisation's provider. The JSON body also names the
 * provider (`provider`: its id) and, when the caller knows it, where to start (`redirectTo`).
 */
export class SsoRequiredError extends AppError {
  redirectTo: string | undefined;
  constructor(
    readonly provider: Pick<UpstreamProvider, 'id' | 'name'>,
    redirectTo?: string,
  ) {
    super(409, 'SSO_REQUIRED', `Your organisation signs you in with ${provider.name}: continue there`);
    this.redirectTo = redirectTo;
  }

  override toJSON() {
    return { ...super.toJSON(), provider: this.provider.id, ...(this.redirectTo && { redirectTo: this.redirectTo }) };
  }
}
