// The admin web marks clients that registered themselves (issue 36): in the applications list and on the
// application's page, with what disabling does; an operator's application carries no such mark.
import t from 'tap';
import { applicationList, applicationView } from '../../plugins/admin-web/views-applications.js';
import type { Application } from '../../src/domain/application.js';

const frame = { adminPath: '/admin', csrf: 'c', email: 'admin@example.com', loginUrl: 'http://localhost:3000/login' };
const base: Application = {
  clientId: 'op-app',
  clientName: 'Operator app',
  clientDescription: null,
  clientLogoUrl: null,
  redirectUris: ['https://rp.example.com/cb'],
  allowedWebOrigins: [],
  postLogoutRedirectUris: [],
  postVerificationRedirectPath: null,
  allowedScopes: ['openid'],
  enabled: true,
  requireMfa: false,
  tokenEndpointAuthMethod: 'none',
  clientType: 'public',
  pkce: 'required',
  grantTypes: ['authorization_code'],
  jwks: null,
  jwksUri: null,
  registration: 'operator',
  source: 'database',
  createdAt: '2026-11-27T00:00:00.000Z',
  updatedAt: '2026-11-27T00:00:00.000Z',
};
const dynamic: Application = { ...base, clientId: 'dyn-1', clientName: 'Agent', registration: 'dynamic' };
const document: Application = {
  ...base,
  clientId: 'https://agent.example.com/client.json',
  clientName: 'Doc agent',
  registration: 'metadata_document',
};

t.test('the list marks self-registered clients', async (t) => {
  const page = applicationList(frame, { items: [base, dynamic, document], q: undefined, staticSource: undefined });
  t.match(page, /<span class="badge self-registered">self-registered \(dynamic\)<\/span>/);
  t.match(page, /<span class="badge self-registered">self-registered \(metadata document\)<\/span>/);
  t.equal(page.match(/badge self-registered/g)?.length, 2, "the operator's application is not marked");
  t.match(page, /href="\/admin\/applications\/https%3A%2F%2Fagent\.example\.com%2Fclient\.json"/, 'URL ids link');
});

t.test("the application's page says who registered it and what disabling does", async (t) => {
  const doc = applicationView(frame, { app: document, staticSource: undefined });
  t.match(doc, /id="self-registered"/);
  t.match(doc, /a client ID metadata document/);
  t.match(doc, /it stays refused when its document is fetched again/);
  const dyn = applicationView(frame, { app: dynamic, staticSource: undefined });
  t.match(dyn, /dynamic registration, RFC 7591/);
  t.notMatch(applicationView(frame, { app: base, staticSource: undefined }), /self-registered/);
});
