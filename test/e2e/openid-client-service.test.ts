// openid-client, unmodified, as a server-side service over HTTP (issue 33): the client_credentials grant with
// client_secret_basic and client_secret_post, token introspection (RFC 7662) and revocation (RFC 7009) of the token
// it got, and a resource request to UserInfo with that token (no user: refused with a Bearer challenge).
import t from 'tap';
import * as client from 'openid-client';
import { startTestServer } from '../helpers/server.js';

const ctx = await startTestServer(t);
const redirectUri = 'http://localhost:7001/callback';
const create = (clientName: string, tokenEndpointAuthMethod: 'client_secret_basic' | 'client_secret_post') =>
  ctx.app.services.applications.create(
    {
      clientName,
      redirectUris: [redirectUri],
      tokenEndpointAuthMethod,
      grantTypes: ['client_credentials'],
      allowedScopes: ['openid', 'profile', 'permissions'],
    },
    { actor: 'test' },
  );
const basicService = await create('Nightly export', 'client_secret_basic');
const postService = await create('Report builder', 'client_secret_post');

/** The library's configuration from discovery (which lists the introspection and revocation endpoints). */
async function configure(clientId: string, auth: client.ClientAuth) {
  return client.discovery(new URL(ctx.issuer), clientId, undefined, auth, { execute: [client.allowInsecureRequests] });
}

t.test('client_secret_basic: a token, introspected, refused by UserInfo, revoked', async (t) => {
  const config = await configure(basicService.clientId, client.ClientSecretBasic(basicService.clientSecret!));
  t.equal(config.serverMetadata().introspection_endpoint, `${ctx.issuer}/oauth2/introspect`, 'discovered');
  const tokens = await client.clientCredentialsGrant(config, { scope: 'permissions' });
  t.match(tokens.access_token, /^[A-Za-z0-9_-]{43}$/);
  t.equal(tokens.token_type, 'bearer', 'Bearer (the library lowercases it)');
  t.equal(tokens.scope, 'permissions');
  t.equal(tokens.refresh_token, undefined);
  t.equal(tokens.id_token, undefined);

  const introspected = await client.tokenIntrospection(config, tokens.access_token);
  t.equal(introspected.active, true);
  t.equal(introspected.client_id, basicService.clientId);
  t.equal(introspected.scope, 'permissions');
  t.equal(introspected.token_type, 'Bearer');
  t.equal(introspected.iss, ctx.issuer);
  t.equal(introspected.sub, undefined, 'no user');

  const userinfo = await client
    .fetchProtectedResource(config, tokens.access_token, new URL(`${ctx.issuer}/oauth2/userinfo`), 'GET')
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  t.ok(userinfo instanceof client.WWWAuthenticateChallengeError, 'a Bearer challenge');
  const challenge = userinfo as client.WWWAuthenticateChallengeError;
  t.equal(challenge.status, 401);
  t.equal(challenge.cause[0]?.scheme, 'bearer');
  t.equal(challenge.cause[0]?.parameters.error, 'invalid_token');

  await client.tokenRevocation(config, tokens.access_token);
  t.same(await client.tokenIntrospection(config, tokens.access_token), { active: false });
});

t.test('client_secret_post: its own token only; scope widening is an invalid_scope the library reports', async (t) => {
  const config = await configure(postService.clientId, client.ClientSecretPost(postService.clientSecret!));
  const tokens = await client.clientCredentialsGrant(config);
  t.equal(tokens.scope, undefined, 'no scope asked, none granted');
  t.equal((await client.tokenIntrospection(config, tokens.access_token)).active, true);

  const other = await configure(basicService.clientId, client.ClientSecretBasic(basicService.clientSecret!));
  t.same(await client.tokenIntrospection(other, tokens.access_token), { active: false }, "another client's token");

  const widened = await client.clientCredentialsGrant(config, { scope: 'email' }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(widened instanceof client.ResponseBodyError);
  t.equal((widened as client.ResponseBodyError).error, 'invalid_scope');
  t.equal((widened as client.ResponseBodyError).status, 400);
});
