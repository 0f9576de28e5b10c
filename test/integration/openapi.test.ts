// /api/openapi.json: an OpenAPI 3.1 document of every /api route, generated from the route schemas.
import t from 'tap';
import { buildTestApp } from '../helpers/app.js';

const SPEC_PATHS = [
  ['get', '/api/auth/.well-known/openid-configuration'],
  ['get', '/api/auth/oauth2/authorize'],
  ['post', '/api/auth/oauth2/token'],
  ['post', '/api/auth/oauth2/introspect'],
  ['get', '/api/auth/oauth2/userinfo'],
  ['get', '/api/auth/jwks'],
  ['post', '/api/auth/request-password-reset'],
  ['get', '/api/auth/reset-password/{token}'],
  ['post', '/api/auth/reset-password'],
  ['post', '/api/auth/oauth2/token/cookie'],
  ['post', '/api/auth/oauth2/token/cookie-logout'],
  ['get', '/api/external/me'],
  ['get', '/api/public/oidc/scopes'],
  ['get', '/api/public/applications/{clientId}'],
  ['get', '/api/admin/applications'],
  ['get', '/api/admin/applications/{clientId}/secrets'],
  ['post', '/api/admin/applications/{clientId}/secrets'],
  ['delete', '/api/admin/applications/{clientId}/secrets/{secretId}'],
  ['get', '/api/admin/audit-events'],
  ['get', '/api/admin/users/{id}/factors'],
  ['delete', '/api/admin/users/{id}/factors'],
  ['delete', '/api/admin/users/{id}/factors/{factorId}'],
  ['get', '/api/admin/resource-servers'],
  ['post', '/api/admin/resource-servers'],
  ['get', '/api/admin/resource-servers/{identifier}'],
  ['patch', '/api/admin/resource-servers/{identifier}'],
  ['delete', '/api/admin/resource-servers/{identifier}'],
] as const;

t.test('the document covers every /api route, each with a response schema', async (t) => {
  const { app } = await buildTestApp(t);
  const res = await app.inject({ method: 'GET', url: '/api/openapi.json' });
  t.equal(res.statusCode, 200);
  t.match(res.headers['content-type'], /application\/json/);
  const doc = res.json();
  t.equal(doc.openapi, '3.1.0');
  t.equal(doc.servers[0].url, 'http://localhost:3000');
  for (const [method, path] of SPEC_PATHS)
    t.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`);

  t.ok(app.apiRoutes.length > 40, 'routes were collected');
  for (const route of app.apiRoutes) {
    const name = `${route.method} ${route.url}`;
    t.ok(route.schemaParts.includes('response'), `${name} has a response schema`);
    if (route.url.includes(':')) t.ok(route.schemaParts.includes('params'), `${name} describes its path parameters`);
    if (route.method === 'OPTIONS' && route.url.endsWith('*')) continue; // the catch-all CORS preflight is hidden
    const path = route.url.replace(/:(\w+)/g, '{$1}');
    const operation = doc.paths[path]?.[route.method.toLowerCase()];
    t.ok(operation, `${name} is in the document`);
    if (!operation) continue;
    const responses = Object.values(operation.responses ?? {}) as Array<{ description?: string; content?: unknown }>;
    t.ok(
      responses.some((r) => r.content || (r.description && r.description !== 'Default Response')),
      `${name} documents a response`,
    );
  }
  // The hosted HTML pages are not an API.
  t.notOk(
    Object.keys(doc.paths).some((p) => p.startsWith('/login')),
    'no hosted pages',
  );
  t.notOk(doc.paths['/api/openapi.json'], 'the document does not list itself');
  t.same(doc.paths['/api/admin/audit-events'].get.security, [{ adminToken: [] }]);
  t.same(doc.paths['/api/external/me'].get.security, [{ bearer: [] }]);
});

t.test('without ADMIN_API_TOKEN the admin API is neither served nor documented', async (t) => {
  const { app } = await buildTestApp(t, { env: { ADMIN_API_TOKEN: '' } });
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  t.notOk(Object.keys(doc.paths).some((p) => p.startsWith('/api/admin')));
  t.ok(doc.paths['/api/external/me']);
});

t.test('introspection and the client_credentials token response are described', async (t) => {
  const { app } = await buildTestApp(t);
  const doc = (await app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
  const introspect = doc.paths['/api/auth/oauth2/introspect'].post;
  const answer = introspect.responses['200'].content['application/json'].schema;
  t.same(answer.required, ['active'], 'only active is always there (RFC 7662 §2.2)');
  t.ok(answer.properties.sub && answer.properties.token_type && answer.properties.exp);
  for (const status of ['400', '401', '429']) t.ok(introspect.responses[status], `${status} documented`);
  const token = doc.paths['/api/auth/oauth2/token'].post.responses['200'].content['application/json'].schema;
  t.notOk(token.required.includes('scope'), 'a client_credentials answer may leave scope out');
  t.notOk(token.required.includes('id_token'), 'and id_token');
});
