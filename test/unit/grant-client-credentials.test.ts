// grant_type=client_credentials (src/oauth/grants/client-credentials.ts) against an in-memory store: no database, no
// HTTP. The refusals of RFC 6749 §4.4 / §5.2 (public client, disabled application, scope outside the allowed ones,
// scopes that need a user), their order, that a refusal records nothing, and the scope a token gets (none when none
// is asked, the scope table's order otherwise).
import t from 'tap';
import {
  type ClientCredentialsClient,
  clientCredentialsGrant,
  type ClientCredentialsStore,
} from '../../src/oauth/grants/client-credentials.js';
import type { TokenParams } from '../../src/oauth/grants/grant.js';
import { refused } from '../helpers/refused.js';

const said = {
  publicClient: 'client_credentials is for confidential clients only',
  disabled: 'this application is disabled',
  notAllowed: 'scope contains a value this client may not request',
  unknown: 'scope contains a value that is not known here',
  userScopes: 'openid and offline_access need a user; a client_credentials token has none',
  syntax: 'scope contains characters that RFC 6749 section 3.3 does not allow',
};

import { builtInResource } from '../../src/domain/resource-server.js';

function fakeStore() {
  const issued: Array<{ clientId: string; scope: string }> = [];
  const store: ClientCredentialsStore = {
    async issue(clientId, scope) {
      issued.push({ clientId, scope });
      return { accessToken: `token-${issued.length}`, scope, expiresIn: 3600 };
    },
    async registry() {
      return { builtIn: builtInResource('https://idp.example.com', 3600), registered: [] };
    },
  };
  return { store, issued };
}

const client = (over: Partial<ClientCredentialsClient> = {}): ClientCredentialsClient => ({
  clientId: 'job',
  enabled: true,
  clientType: 'confidential',
  allowedScopes: ['openid', 'profile', 'email', 'offline_access', 'permissions'],
  ...over,
});

const handle = (params: TokenParams, c = client(), store = fakeStore().store) =>
  clientCredentialsGrant.handle({ grant_type: 'client_credentials', ...params }, c, store);

t.test('the grant answers client_credentials and needs no parameter', async (t) => {
  t.equal(clientCredentialsGrant.grantType, 'client_credentials');
  t.same(clientCredentialsGrant.parameters, []);
});

t.test('success: the store records the token of this client with the asked scope, canonical order', async (t) => {
  const { store, issued } = fakeStore();
  const answer = await handle({ scope: 'permissions email profile email' }, client(), store);
  t.same(answer, { accessToken: 'token-1', scope: 'profile email permissions', expiresIn: 3600 });
  t.same(issued, [{ clientId: 'job', scope: 'profile email permissions' }]);
});

t.test('no scope, or a blank one: the empty scope (no default scope is granted)', async (t) => {
  for (const params of [{}, { scope: '' }, { scope: '   ' }]) {
    const { store, issued } = fakeStore();
    t.equal((await handle(params, client(), store)).scope, '', JSON.stringify(params));
    t.same(issued, [{ clientId: 'job', scope: '' }]);
  }
});

t.test('a public client is unauthorized_client, whatever it asks, and nothing is recorded', async (t) => {
  const { store, issued } = fakeStore();
  const spa = client({ clientType: 'public' });
  await refused(t, handle({}, spa, store), 'unauthorized_client', said.publicClient, 'public, no scope');
  await refused(t, handle({ scope: 'admin' }, spa, store), 'unauthorized_client', said.publicClient, 'before scope');
  await refused(
    t,
    handle({}, client({ clientType: 'public', enabled: false }), store),
    'unauthorized_client',
    said.publicClient,
    'before the enabled flag',
  );
  t.same(issued, []);
});

t.test('a disabled application is invalid_client (401), before its scope is read', async (t) => {
  const { store, issued } = fakeStore();
  const off = client({ enabled: false });
  await refused(t, handle({}, off, store), 'invalid_client', said.disabled, 'disabled', 401);
  await refused(t, handle({ scope: 'admin' }, off, store), 'invalid_client', said.disabled, 'disabled, bad scope', 401);
  t.same(issued, []);
});

t.test('scope: only known values within the allowed ones; openid and offline_access refused', async (t) => {
  const { store, issued } = fakeStore();
  const narrow = client({ allowedScopes: ['openid', 'profile'] });
  await refused(t, handle({ scope: 'profile email' }, narrow, store), 'invalid_scope', said.notAllowed, 'widening');
  await refused(t, handle({ scope: 'profile admin' }, narrow, store), 'invalid_scope', said.unknown, 'unknown');
  await refused(t, handle({ scope: 'profile\npermissions' }, narrow, store), 'invalid_scope', said.syntax, 'syntax');
  for (const scope of ['openid', 'offline_access', 'profile openid', 'email offline_access']) {
    await refused(t, handle({ scope }, client(), store), 'invalid_scope', said.userScopes, scope);
  }
  await refused(
    t,
    handle({ scope: 'offline_access' }, narrow, store),
    'invalid_scope',
    said.notAllowed,
    'not allowed comes before needs a user',
  );
  t.same(issued, []);
});
