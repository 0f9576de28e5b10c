// OAuth 2.0 Protected Resource Metadata (RFC 9728) of the built-in resource, /api/external: where a client that
// meets a 401 there learns which authorization server issues its tokens (MCP clients start from it).

/** RFC 9728 §3.1: the well-known segment, inserted between the identifier's origin and its path. */
export const PROTECTED_RESOURCE_WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * The path, at the root of the host, where the metadata of this resource identifier is served (RFC 9728 §3.1: the
 * identifier's path is kept after the well-known segment, so `https://host/base/api/external` has
 * `/.well-known/oauth-protected-resource/base/api/external`). A trailing slash of the identifier is dropped, as the
 * RFC says (a path of `/` alone gives the well-known segment alone).
 */
export function protectedResourceMetadataPath(identifier: string): string {
  const path = new URL(identifier).pathname.replace(/\/+$/, '');
  return `${PROTECTED_RESOURCE_WELL_KNOWN}${path}`;
}

/** The metadata's URL: the identifier's origin and protectedResourceMetadataPath. */
export function protectedResourceMetadataUrl(identifier: string): string {
  return `${new URL(identifier).origin}${protectedResourceMetadataPath(identifier)}`;
}

/** RFC 9728 §2, the members this server fills for a resource whose tokens it issues as `issuer`. */
export function protectedResourceMetadata(
  resource: { identifier: string; name: string; scopes: ReadonlyArray<{ name: string }> },
  issuer: string,
) {
  return {
    resource: resource.identifier,
    authorization_servers: [issuer],
    scopes_supported: resource.scopes.map((s) => s.name),
    // RFC 6750 §2.1 only: /api/external never reads a token from a body or the query string (decisions.md).
    bearer_methods_supported: ['header'],
    resource_name: resource.name,
  };
}
