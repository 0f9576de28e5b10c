// oidcc-config-certification-test-plan (OIDCCConfigTestPlan.java): its one module,
// oidcc-discovery-endpoint-verification (OIDCCDiscoveryEndpointVerification.java), every condition it calls, in its
// order, against this deployment's discovery document at https://op.example.test/api/auth (static_client variant).
import t from 'tap';
import {
  allEndpointsHttpsProblems,
  arrayProblems,
  booleanOr,
  discoveryUrlProblems,
  httpsProblems,
  issuerProblems,
  issuerUrlProblems,
  jwksProblems,
  localeProblems,
  schemaProblems,
  scopeSyntaxProblems,
  unexpectedParameters,
  type Metadata,
} from './fixtures/discovery.js';
import { BASE_URL, DISCOVERY_URL } from './fixtures/suite.js';
import { buildTestApp } from '../helpers/app.js';

const { app } = await buildTestApp(t, { env: { BASE_URL } });

t.test('oidcc-discovery-endpoint-verification', async (t) => {
  // configure: GetDynamicServerConfiguration (GET server.discoveryUrl), EnsureDiscoveryEndpointResponseStatusCodeIs200,
  // CheckDiscoveryEndpointReturnedJsonContentType.
  const res = await app.inject({ method: 'GET', url: new URL(DISCOVERY_URL).pathname });
  t.equal(res.statusCode, 200, 'EnsureDiscoveryEndpointResponseStatusCodeIs200');
  t.match(res.headers['content-type'], /^application\/json/, 'CheckDiscoveryEndpointReturnedJsonContentType');
  const m = res.json() as Metadata;

  // performEndpointVerification, in its order.
  const codeFlowTypes = ['code', 'code id_token', 'id_token', 'token id_token', 'code id_token token', 'code token'];
  t.same(
    arrayProblems(m, 'response_types_supported', codeFlowTypes, 1),
    [],
    'OIDCCCheckDiscEndpointResponseTypesSupported',
  );
  t.same(discoveryUrlProblems(DISCOVERY_URL), [], 'CheckDiscEndpointDiscoveryUrl');
  t.same(issuerProblems(m, DISCOVERY_URL), [], 'CheckDiscEndpointIssuer');
  t.same(issuerUrlProblems(m), [], 'CheckDiscEndpointIssuerIsValidUrl');
  t.same(schemaProblems(m), [], 'ValidateServerMetadataAgainstSchema');
  t.same(unexpectedParameters(m), [], 'CheckForUnexpectedParametersInServerMetadata (a WARNING in the suite)');
  t.same(
    arrayProblems(m, 'subject_types_supported', ['public', 'pairwise'], 1),
    [],
    'CheckDiscEndpointSubjectTypesSupported',
  );
  t.same(
    arrayProblems(m, 'id_token_signing_alg_values_supported', ['RS256'], 1),
    [],
    'OIDCCCheckDiscEndpointIdTokenSigningAlgValuesSupported',
  );
  if (m.userinfo_signing_alg_values_supported !== undefined) {
    t.same(
      arrayProblems(m, 'userinfo_signing_alg_values_supported', [], 0),
      [],
      'OIDCCCheckDiscEndpointUserinfoSigningAlgValuesSupported',
    );
  }
  t.same(httpsProblems(m, 'authorization_endpoint'), [], 'CheckDiscEndpointAuthorizationEndpoint');
  t.same(httpsProblems(m, 'token_endpoint'), [], 'CheckDiscEndpointTokenEndpoint');
  // Skipped with a WARNING when absent (the userinfo endpoint is recommended): present here.
  t.same(httpsProblems(m, 'userinfo_endpoint'), [], 'CheckDiscEndpointUserinfoEndpoint');
  if (m.registration_endpoint !== undefined) {
    t.same(httpsProblems(m, 'registration_endpoint'), [], 'CheckDiscEndpointRegistrationEndpoint');
  }
  t.same(httpsProblems(m, 'jwks_uri'), [], 'CheckJwksUri');
  // FetchServerKeys + ValidateJwksSequence.
  const jwksRes = await app.inject({ method: 'GET', url: new URL(m.jwks_uri as string).pathname });
  t.equal(jwksRes.statusCode, 200, 'FetchServerKeys');
  t.same(await jwksProblems(jwksRes.json()), [], 'ValidateJwksSequence');
  // INFO-level: what the document says of request objects and the claims parameter (recorded, not required).
  t.type(booleanOr(m, 'request_parameter_supported', false), 'boolean', 'CheckDiscEndpointRequestParameterSupported');
  t.type(
    booleanOr(m, 'request_uri_parameter_supported', true),
    'boolean',
    'CheckDiscEndpointRequestUriParameterSupported',
  );
  if (m.request_object_signing_alg_values_supported !== undefined) {
    t.same(
      arrayProblems(m, 'request_object_signing_alg_values_supported', ['RS256'], 1),
      [],
      'CheckDiscEndpointRequestObjectSigningAlgValuesSupportedIncludesRS256 (a WARNING in the suite)',
    );
  }
  t.type(booleanOr(m, 'claims_parameter_supported', false), 'boolean', 'CheckDiscEndpointClaimsParameterSupported');
  // claims_supported is recommended: a WARNING when absent; asserted here.
  t.same(arrayProblems(m, 'claims_supported', [], 0), [], 'OIDCCCheckDiscEndpointClaimsSupported');
  // OIDCCCheckDiscEndpointGrantTypesSupported: if present, a non-empty array.
  if (m.grant_types_supported !== undefined) {
    t.ok(
      Array.isArray(m.grant_types_supported) && m.grant_types_supported.length > 0,
      'OIDCCCheckDiscEndpointGrantTypesSupported',
    );
  }
  t.same(arrayProblems(m, 'scopes_supported', ['openid'], 1), [], 'CheckDiscEndpointScopesSupportedContainsOpenId');
  t.same(scopeSyntaxProblems(m), [], 'CheckDiscEndpointScopesSupportedSyntax');
  t.same(localeProblems(m), [], 'CheckDiscEndpointLocalesSyntax, CheckDiscEndpointLocalesCanonicalCasing');
  t.same(allEndpointsHttpsProblems(m), [], 'CheckDiscEndpointAllEndpointsAreHttps');
  // EnsureServerConfigurationCodeChallengeMethodsSupportedIsAnArray: absent or [] is fine, else S256 or plain.
  const methods = m.code_challenge_methods_supported;
  if (methods !== undefined && !(Array.isArray(methods) && methods.length === 0)) {
    t.same(
      arrayProblems(m, 'code_challenge_methods_supported', ['S256', 'plain'], 1),
      [],
      'EnsureServerConfigurationCodeChallengeMethodsSupportedIsAnArray',
    );
  }

  // What the other plans' configure steps read from the same document (AbstractOIDCCServerTest.configure):
  // CheckServerConfiguration (authorization_endpoint, token_endpoint, issuer), and the client authentication
  // methods the Basic plan's clients use (EnsureServerConfigurationSupportsClientSecretBasic/Post).
  for (const key of ['authorization_endpoint', 'token_endpoint', 'issuer'])
    t.type(m[key], 'string', `CheckServerConfiguration: ${key}`);
  for (const method of ['client_secret_basic', 'client_secret_post']) {
    t.ok(
      (m.token_endpoint_auth_methods_supported as string[] | undefined)?.includes(method),
      `EnsureServerConfigurationSupports${method === 'client_secret_basic' ? 'ClientSecretBasic' : 'ClientSecretPost'}`,
    );
  }
  // The form-post plan's response mode (OAuth 2.0 Form Post Response Mode, advertised as issue 33 item 5 says).
  t.ok(
    (m.response_modes_supported as string[] | undefined)?.includes('form_post'),
    'response_modes_supported: form_post',
  );
});

t.test(
  'the same document is served for an http deployment, whose https checks then fail as the suite would',
  async (t) => {
    const plain = await buildTestApp(t, { env: { BASE_URL: 'http://localhost:3000' } });
    const m = (await plain.app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration' })).json();
    t.not(allEndpointsHttpsProblems(m).length, 0, 'CheckDiscEndpointAllEndpointsAreHttps fails on http');
    t.not(issuerUrlProblems(m).length, 0, 'CheckDiscEndpointIssuerIsValidUrl fails on http');
  },
);
