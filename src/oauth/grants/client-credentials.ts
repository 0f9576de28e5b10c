// grant_type=client_credentials (RFC 6749 §4.4): a confidential client asks for an access token of its own, with no
// user behind it. Only a confidential client (RFC 6749 §4.4: "MUST only be used by confidential clients") whose
// grant types include client_credentials (the token endpoint checks that before this handler) gets one. The answer
// is an opaque access token and nothing else: no refresh token (§4.4.3: SHOULD NOT), no ID token (there is no user).
//
// Scope (RFC 6749 §3.3):
//  - asked values must be known here and among the application's allowed scopes (invalid_scope otherwise), as
//    node-oidc-provider's lib/actions/grants/client_credentials.js and ory/fosite's client credentials handler do;
//  - `openid` and `offline_access` are refused with invalid_scope. Both providers would pass them through (they only
//    check the allow list), but here every client is allowed `openid`, and a token that says `openid` yet has no
//    subject, or `offline_access` yet can never be refreshed, only misleads whoever reads its scope (introspection,
//    the client's own logs). A client that asks for them is misconfigured, and saying so beats dropping them silently;
//  - no scope asked means no scope granted (node-oidc-provider's default: the token's scope is empty, the response
//    and introspection then leave `scope` out). §3.3 lets the server use "a pre-defined default value": the empty one.
//
// Resource indicators (RFC 8707 §2): `resource` (at most one) names the resource server the token is for; the client
// must be allowed to use it. For a registered one the scope may hold only its scopes (none asked: none granted), the
// lifetime and format (opaque or an RFC 9068 JWT whose sub is the client, §2.2) are its own, and the token's
// audience is it. For the built-in one (or none), the scope rules above; a scope of a resource server asked for
// without naming it is invalid_scope naming the resource to add.
//
// Pure protocol logic: the token is recorded through ClientCredentialsStore.
import { OAuthError } from '../errors.js';
import {
  type AccessTokenPlan,
  checkResourceScopes,
  REPEATED_RESOURCE_SEPARATOR,
  type ResourceRegistry,
  usableResource,
} from '../resource-indicators.js';
import { canonicalScopes, formatScope, scopeNames, splitScope } from '../scope.js';
import { isScopeName } from '../scopes.js';
import { type GrantClient, type GrantHandler, selfRegistered } from './grant.js';

/** The authenticated client, with what this grant checks besides the others. */
export interface ClientCredentialsClient extends GrantClient {
  clientType: 'public' | 'confidential';
  allowedScopes: readonly string[];
}

/** A recorded client access token. */
export interface ClientTokens {
  accessToken: string;
  /** Space-delimited; empty when no scope was asked. */
  scope: string;
  expiresIn: number;
}

export interface ClientCredentialsStore {
  /**
   * Records a new access token of this client (its hash only) and token.issued, together; with a plan (a resource
   * named), the token is that plan's (audience, lifetime, format; a JWT is signed before the transaction).
   */
  issue(clientId: string, scope: string, plan?: AccessTokenPlan): Promise<ClientTokens>;
  /** The resource servers (cached), read only when a resource or a scope outside the scope table is asked. */
  registry(): Promise<ResourceRegistry>;
}

/** Scopes that only mean something with a user. */
export const USER_SCOPES: readonly string[] = ['openid', 'offline_access'];

/** The scope of a client_credentials token: see the file comment. */
export function clientCredentialsScope(scope: string | undefined, allowed: readonly string[]): string {
  const names = scopeNames(scope, allowed) ?? [];
  const userScopes = names.filter((name) => USER_SCOPES.includes(name));
  if (userScopes.length) {
    throw new OAuthError(
      'invalid_scope',
      'openid and offline_access need a user; a client_credentials token has none',
      {
        detail: `scope ${userScopes.join(' ')}`,
      },
    );
  }
  return formatScope(canonicalScopes(names));
}

export const clientCredentialsGrant: GrantHandler<ClientCredentialsStore, ClientCredentialsClient, ClientTokens> = {
  grantType: 'client_credentials',
  parameters: [],

  async handle(params, client, store) {
    // The application's grant types already refuse this for a public client (decisions.md "Protocol"); checked
    // again here, where the rule is the protocol's.
    if (client.clientType !== 'confidential') {
      throw new OAuthError('unauthorized_client', 'client_credentials is for confidential clients only', {
        detail: `client ${client.clientId}`,
      });
    }
    if (!client.enabled) throw new OAuthError('invalid_client', 'this application is disabled');
    const resource = params.resource;
    if (resource === undefined || resource === '') {
      const asked = splitScope(params.scope ?? '');
      if (asked.some((name) => !isScopeName(name))) checkResourceScopes(asked, [], await store.registry());
      return store.issue(client.clientId, clientCredentialsScope(params.scope, client.allowedScopes));
    }
    if (resource.includes(REPEATED_RESOURCE_SEPARATOR))
      throw new OAuthError('invalid_target', 'name at most one resource at the token endpoint');
    const registry = await store.registry();
    const server = usableResource(registry, resource, {
      clientId: client.clientId,
      selfRegistered: selfRegistered(client),
    });
    const ttl = server.accessTokenTtl ?? registry.builtIn.accessTokenTtl ?? 3600;
    if (server.builtIn) {
      const scope = clientCredentialsScope(params.scope, client.allowedScopes);
      return store.issue(client.clientId, scope, {
        audience: resource,
        scope: splitScope(scope),
        ttl,
        format: 'opaque',
      });
    }
    const own = server.scopes.map((s) => s.name);
    if (params.scope !== undefined && /[^\x21\x23-\x5b\x5d-\x7e ]/.test(params.scope))
      throw new OAuthError('invalid_scope', 'scope contains characters that RFC 6749 section 3.3 does not allow');
    const asked = splitScope(params.scope ?? '');
    const foreign = asked.filter((name) => !own.includes(name));
    if (foreign.length)
      throw new OAuthError(
        'invalid_scope',
        'scope has a value that is not one of the scopes of the requested resource',
        {
          detail: `resource ${resource} scope ${foreign.join(' ').slice(0, 200)}`,
        },
      );
    const plan: AccessTokenPlan = { audience: resource, scope: asked, ttl, format: server.accessTokenFormat };
    return store.issue(client.clientId, formatScope(asked), plan);
  },
};
