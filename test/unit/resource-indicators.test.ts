// Resource indicators (RFC 8707) as pure rules (src/oauth/resource-indicators.ts) and in the authorize parameters:
// which resources a request may name, which scopes follow, and which one resource an access token is for.
import t from 'tap';
import { parseAuthorizeParams, type RawParams } from '../../src/oauth/authorize-params.js';
import { builtInResource, type ResourceServer } from '../../src/domain/resource-server.js';
import { OAuthError } from '../../src/oauth/errors.js';
import { s256Challenge } from '../../src/oauth/pkce.js';
import {
  accessTokenPlan,
  authorizeResources,
  chooseResource,
  type ResourceRegistry,
} from '../../src/oauth/resource-indicators.js';

const server = (identifier: string, over: Partial<ResourceServer> = {}): ResourceServer => ({
  identifier,
  name: identifier,
  description: null,
  scopes: [],
  accessTokenFormat: 'opaque',
  accessTokenTtl: null,
  allowedClients: ['rp'],
  allowSelfRegistered: false,
  introspectionClients: [],
  enabled: true,
  builtIn: false,
  createdAt: null,
  updatedAt: null,
  ...over,
});
const A = 'https://a.example';
const J = 'https://j.example/mcp';
const registry: ResourceRegistry = {
  builtIn: builtInResource('https://idp.example', 3600),
  registered: [
    server(A, { scopes: [{ name: 'a:read', label: 'r', consentDescription: 'r' }], accessTokenTtl: 600 }),
    server(J, { scopes: [{ name: 'j:x', label: 'x', consentDescription: 'x' }], accessTokenFormat: 'jwt' }),
    server('https://self.example', { allowedClients: [], allowSelfRegistered: true }),
    server('urn:off', { enabled: false }),
  ],
};
const rp = { clientId: 'rp', selfRegistered: false };

function refusal(fn: () => unknown): [string, string] | undefined {
  try {
    fn();
    return undefined;
  } catch (e) {
    if (!(e instanceof OAuthError)) throw e;
    return [e.error, e.error_description];
  }
}

t.test('authorize: each resource checked, deduplicated in order', async (t) => {
  t.same(authorizeResources([J, A, J], registry, rp), [J, A]);
  t.same(authorizeResources(undefined, registry, rp), []);
  t.same(authorizeResources('', registry, rp), [], 'sent once without a value: omitted (RFC 6749 §3.1)');
  t.same(
    refusal(() => authorizeResources('https://self.example', registry, rp))?.[1],
    'this client may not ask for this resource',
  );
  t.same(authorizeResources('https://self.example', registry, { clientId: 'dyn', selfRegistered: true }), [
    'https://self.example',
  ]);
  t.same(
    refusal(() => authorizeResources('urn:off', registry, rp))?.[1],
    'resource names a resource server that is disabled',
  );
  t.same(refusal(() => authorizeResources('ftp://a.example', registry, rp))?.[0], 'invalid_target');
  t.same(authorizeResources(registry.builtIn.identifier, registry, { clientId: 'any', selfRegistered: true }), [
    registry.builtIn.identifier,
  ]);
});

t.test('token endpoint: the audience out of the grant and the resource asked', async (t) => {
  t.equal(chooseResource([], undefined), null);
  t.equal(chooseResource([A], undefined), A);
  t.equal(chooseResource([A, J], J), J);
  t.same(refusal(() => chooseResource([A, J], undefined))?.[0], 'invalid_target');
  t.same(refusal(() => chooseResource([A], J))?.[1], 'resource is not one of the resources of the grant');
  t.same(refusal(() => chooseResource([A], `${A} ${J}`))?.[1], 'name at most one resource at the token endpoint');
});

t.test('the access token: its share of the scopes, its lifetime and format', async (t) => {
  const granted = ['openid', 'profile', 'a:read', 'j:x'];
  t.same(accessTokenPlan(granted, A, registry, rp, 3600), {
    audience: A,
    scope: ['a:read'],
    ttl: 600,
    format: 'opaque',
  });
  t.same(accessTokenPlan(granted, J, registry, rp, 3600), { audience: J, scope: ['j:x'], ttl: 3600, format: 'jwt' });
  t.same(accessTokenPlan(granted, null, registry, rp, 3600), {
    audience: null,
    scope: ['openid', 'profile'],
    ttl: 3600,
    format: 'opaque',
  });
  t.same(accessTokenPlan(granted, registry.builtIn.identifier, registry, rp, 3600).scope, ['openid', 'profile']);
  t.same(refusal(() => accessTokenPlan(granted, 'urn:off', registry, rp, 3600))?.[0], 'invalid_target');
});

t.test('authorize parameters: resource repeats, resource scopes follow the resources asked', async (t) => {
  const app = { clientId: 'rp', allowedScopes: ['openid', 'profile'] };
  const base: RawParams = {
    client_id: 'rp',
    redirect_uri: 'https://rp.example/cb',
    response_type: 'code',
    code_challenge: s256Challenge('v'.repeat(43)),
    code_challenge_method: 'S256',
  };
  const context = { registry, client: rp };
  const parsed = parseAuthorizeParams({ ...base, scope: 'profile a:read openid', resource: [A, A] }, app, 'x', context);
  t.same(parsed.resource, [A]);
  t.same(parsed.scope, ['openid', 'profile', 'a:read'], 'the scope table in order, then the resource scopes');
  const only = parseAuthorizeParams({ ...base, scope: 'a:read', resource: A }, app, 'x', context);
  t.same(only.scope, ['openid', 'a:read'], 'only resource scopes: the built-in part is absent, so openid');
  t.same(
    refusal(() => parseAuthorizeParams({ ...base, scope: 'openid j:x', resource: A }, app, 'x', context)),
    ['invalid_scope', `scope has a value of a resource server that was not requested; add resource=${J}`],
  );
  t.same(
    refusal(() => parseAuthorizeParams({ ...base, scope: ['openid', 'profile'] }, app, 'x', context)),
    ['invalid_request', 'scope must not be repeated'],
  );
  const none = parseAuthorizeParams({ ...base, scope: 'openid' }, app, 'x');
  t.notOk('resource' in none, 'no resource: none stored');
});
