// OpenID Provider metadata (OIDC Discovery 1.0 §3, RFC 8414). Every URL derives from config, never
// from the Host header. Advertises only what exists.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Config } from '../../src/config.js';
import { CLAIMS_SUPPORTED } from '../../src/oauth/claims.js';
import { SCOPE_NAMES } from '../../src/oauth/scopes.js';
import { DiscoverySchema, documentOnly } from '../../schemas/oauth.js';

export function discoveryDocument(config: Config) {
  const issuer = config.issuer;
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth2/authorize`,
    token_endpoint: `${issuer}/oauth2/token`,
    userinfo_endpoint: `${issuer}/oauth2/userinfo`,
    revocation_endpoint: `${issuer}/oauth2/revoke`,
    end_session_endpoint: `${issuer}/oauth2/end-session`,
    revocation_endpoint_auth_methods_supported: ['none'],
    jwks_uri: `${issuer}/jwks`,
    scopes_supported: [...SCOPE_NAMES],
    response_types_supported: ['code'],
    response_modes_supported: ['query', 'form_post'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    subject_types_supported: ['public'],
    // RS256 is what the generated keys use (OIDC Discovery requires it); ES256/EdDSA keys come with rotation.
    id_token_signing_alg_values_supported: ['RS256'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    prompt_values_supported: ['none', 'login', 'consent', 'create'],
    authorization_response_iss_parameter_supported: true,
  };
}

const discoveryPlugin: FastifyPluginAsyncTypebox<{ config: Config }> = async (app, { config }) => {
  const document = JSON.stringify(discoveryDocument(config));
  documentOnly(app);
  app.get(
    '/.well-known/openid-configuration',
    { schema: { response: { 200: DiscoverySchema } } },
    async (_request, reply) => {
      reply
        .header('content-type', 'application/json; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .header('access-control-allow-origin', '*');
      return reply.send(document as never);
    },
  );
};

export default discoveryPlugin;
