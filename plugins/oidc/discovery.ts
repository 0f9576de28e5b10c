// OpenID Provider metadata (OIDC Discovery 1.0 §3) and the same document as OAuth 2.0 Authorization Server
// Metadata (RFC 8414). Every URL derives from config, never from the Host header. Advertises only what exists.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../src/config.js';
import { TOKEN_ENDPOINT_AUTH_METHODS } from '../../src/domain/application.js';
import { ACR_VALUES } from '../../src/domain/mfa.js';
import { CLAIMS_SUPPORTED } from '../../src/oauth/claims.js';
import { CLIENT_ASSERTION_ALGORITHMS, clientEndpointUrls } from '../../src/oauth/client-assertion.js';
import { SCOPE_NAMES } from '../../src/oauth/scopes.js';
import { DiscoverySchema, documentOnly } from '../../schemas/oauth.js';

/** RFC 7591 §2 token_endpoint_auth_method values, the application's choice (src/domain/application.ts). */
const CLIENT_AUTH_METHODS = [...TOKEN_ENDPOINT_AUTH_METHODS];
/** private_key_jwt assertions: asymmetric algorithms only (src/oauth/client-assertion.ts). */
const CLIENT_AUTH_SIGNING_ALGS = [...CLIENT_ASSERTION_ALGORITHMS];

export function discoveryDocument(config: Config) {
  const issuer = config.issuer;
  const endpoints = clientEndpointUrls(issuer);
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: endpoints.token,
    userinfo_endpoint: `${issuer}/oauth2/userinfo`,
    revocation_endpoint: endpoints.revocation,
    introspection_endpoint: endpoints.introspection,
    end_session_endpoint: `${issuer}/oauth2/end-session`,
    jwks_uri: `${issuer}/jwks`,
    scopes_supported: [...SCOPE_NAMES],
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    subject_types_supported: ['public'],
    // RS256 is what the generated keys use (OIDC Discovery requires it); ES256/EdDSA keys come with rotation.
    id_token_signing_alg_values_supported: ['RS256'],
    // One client authentication for the token, revocation and introspection endpoints (client-endpoint.ts).
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: CLIENT_AUTH_SIGNING_ALGS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_signing_alg_values_supported: CLIENT_AUTH_SIGNING_ALGS,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    introspection_endpoint_auth_signing_alg_values_supported: CLIENT_AUTH_SIGNING_ALGS,
    code_challenge_methods_supported: ['S256'],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: true,
    // The levels a request may ask for (acr_values, or the claims parameter's id_token.acr): src/domain/mfa.ts.
    acr_values_supported: [...ACR_VALUES],
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    prompt_values_supported: ['none', 'login', 'consent', 'create'],
    authorization_response_iss_parameter_supported: true,
    // Self-registration, when the operator turned it on (decisions.md, Protocol; plugins/oidc/registration.ts).
    ...(config.registration.mode !== 'off' && { registration_endpoint: `${issuer}/register` }),
    ...(config.registration.metadataDocuments && { client_id_metadata_document_supported: true }),
  };
}

/** The metadata document, as every metadata URL answers it: public, cacheable, readable from any origin. */
function metadataRoute(app: FastifyInstance, path: string, document: string, description: string) {
  app.get(path, { schema: { response: { 200: DiscoverySchema }, description } }, async (_request, reply) => {
    reply
      .header('content-type', 'application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*');
    return reply.send(document as never);
  });
}

/**
 * Under the issuer path: OIDC Discovery 1.0 §4 (`${issuer}/.well-known/openid-configuration`) and, as
 * node-oidc-provider does and many OAuth clients look, `${issuer}/.well-known/oauth-authorization-server`.
 */
const discoveryPlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const document = JSON.stringify(discoveryDocument(config));
  documentOnly(app);
  metadataRoute(app, '/.well-known/openid-configuration', document, 'OpenID Provider metadata (OIDC Discovery 1.0)');
  metadataRoute(
    app,
    '/.well-known/oauth-authorization-server',
    document,
    'Authorization server metadata (RFC 8414), also under the issuer path',
  );
};

/**
 * RFC 8414 §3: the well-known segment goes between the host and the issuer's path, so for the issuer
 * https://host/api/auth the metadata is at https://host/.well-known/oauth-authorization-server/api/auth (at the
 * root of the host, even when BASE_URL has a path: a reverse proxy in front must route it here). The issuer in it
 * is the issuer exactly (§3.3).
 */
export const authorizationServerMetadataPlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (
  app,
  { config },
) => {
  const document = JSON.stringify(discoveryDocument(config));
  documentOnly(app);
  metadataRoute(
    app,
    `/.well-known/oauth-authorization-server${new URL(config.issuer).pathname}`,
    document,
    'Authorization server metadata (RFC 8414 §3)',
  );
};

export default discoveryPlugin;
