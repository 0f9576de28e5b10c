// docs/integration.md "Protect your own API" runs as written against a real server: the register-api block (curl to
// the admin API), the access-token.ts helper and the api.ts server that uses it, with IDP_URL, API_URL and
// API_CLIENT_SECRET in the environment as the document says. The test is the client: it meets the API's 401, finds
// the provider from the API's protected-resource metadata (RFC 9728) and the provider's RFC 8414 metadata, signs a
// person in for a token for the API (RFC 8707 `resource`) and calls the API with it, opaque (introspection) and JWT
// (RFC 9068), and checks that each token works at its own API only.
//
import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as jose from 'jose';
import { sql } from 'kysely';
import { startTestServer } from '../helpers/server.js';
import { freePort, markedBlock, PROGRAMS_DIR, ROOT, runProgram, signInAndConsent } from '../helpers/programs.js';
import { hashToken } from '../../src/oauth/tokens.js';

t.setTimeout(240_000);
const doc = readFileSync(join(ROOT, 'docs', 'integration.md'), 'utf8');
const example = (name: string) => markedBlock(doc, `example:${name}`);

const ADMIN_API_TOKEN = 'protect-api-docs-admin-token-0123456789abcdef';
const ctx = await startTestServer(t, { ADMIN_API_TOKEN });
const issuer = ctx.config.issuer;
const API_URL = `http://127.0.0.1:${await freePort()}`;
const APP_URL = 'http://127.0.0.1:8080';
const env = { IDP_URL: ctx.baseUrl, API_URL };
const actor = { actor: 'test' };

// The application of section 1 (its own test runs that block), and a person who signs in.
await ctx.app.services.applications.create(
  { clientId: 'my-app', clientName: 'My App', redirectUris: [`${APP_URL}/callback`] },
  actor,
);
const person = { email: 'api-reader@example.com', password: 'correct horse battery staple' };
await ctx.app.services.users.create({ ...person, emailVerified: true }, actor);

let apiSecret = '';
t.test('register-api: the API and its introspection application', async (t) => {
  const run = runProgram(t, 'docs-register-api.sh', example('register-api'), 'bash', { ...env, ADMIN_API_TOKEN });
  const status = await run.exit;
  const [appJson, serverJson] = run.output().split('\n');
  const app = JSON.parse(appJson!);
  t.match(app, { clientId: 'my-api', tokenEndpointAuthMethod: 'client_secret_basic' });
  apiSecret = app.clientSecret;
  t.type(apiSecret, 'string', 'the secret is shown once');
  t.equal(status, 0, 'exits 0', { output: run.output() });
  t.match(JSON.parse(serverJson!), { identifier: API_URL, accessTokenFormat: 'jwt', introspectionClients: ['my-api'] });
  const server = await ctx.app.services.resourceServers.find(API_URL);
  t.same(
    server?.scopes.map((s) => s.name),
    ['notes:read'],
  );
  t.same(server?.allowedClients, ['my-app']);
});

// The helper next to the server, as the reader saves them (the test imports it too); the server is started, with
// tsx as the document says, once the API is registered and its secret known.
interface Options {
  issuer: string;
  audience: string;
}
interface Helper {
  verifyAccessToken(token: string, options: Options): Promise<{ sub: string; clientId: string; scopes: string[] }>;
  introspectAccessToken(
    token: string,
    options: Options & { clientId: string; clientSecret: string },
  ): Promise<{ sub: string; clientId: string; scopes: string[] }>;
  InvalidToken: new (message: string) => Error;
}
mkdirSync(PROGRAMS_DIR, { recursive: true });
writeFileSync(join(PROGRAMS_DIR, 'access-token.ts'), example('protect-api-helper'));
const helper = (await import(join(PROGRAMS_DIR, 'access-token.ts'))) as Helper;
const root = t;
let api: ReturnType<typeof runProgram> | undefined;
/** 'InvalidToken' when the helper refuses the token as it should, else what happened. */
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    () => 'accepted',
    (error: unknown) => (error instanceof helper.InvalidToken ? 'InvalidToken' : String(error)),
  );

const notes = (token?: string) =>
  fetch(`${API_URL}/notes`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

t.test('a client starts from the API: 401, then its metadata, then the provider’s', async (t) => {
  // `npx tsx api.ts` is node with tsx's loader; here in one process (tsx's CLI runs a second one, which a kill at
  // teardown would leave running).
  api = runProgram(root, 'api.ts', example('protect-api-server'), process.execPath, {
    ...env,
    API_CLIENT_SECRET: apiSecret,
    NODE_OPTIONS: '--import=tsx',
  });
  await api.waitFor(/Notes API on /);
  const res = await notes();
  t.equal(res.status, 401);
  const challenge = res.headers.get('www-authenticate')!;
  t.equal(challenge, `Bearer resource_metadata="${API_URL}/.well-known/oauth-protected-resource"`);
  const metadataUrl = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
  const metadata = (await (await fetch(metadataUrl)).json()) as { authorization_servers: string[] };
  t.same(metadata, {
    resource: API_URL,
    authorization_servers: [issuer],
    scopes_supported: ['notes:read'],
    bearer_methods_supported: ['header'],
  });
  // RFC 8414 §3 at the issuer's origin, with its path after the well-known segment (the MCP SDK looks there first).
  const as = new URL(metadata.authorization_servers[0]!);
  const asAnswer = await fetch(`${as.origin}/.well-known/oauth-authorization-server${as.pathname}`);
  const asMetadata = (await asAnswer.json()) as Record<string, string>;
  t.equal(asMetadata.issuer, issuer);
  t.equal(asMetadata.authorization_endpoint, `${issuer}/oauth2/authorize`);
  t.equal((await notes('not-a-real-token')).status, 401, 'an unknown token');
});

/** Signs the person in for my-app with these scopes and resource; the code exchanged. Undefined on an error. */
async function signIn(scope: string, resource?: string) {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: 'my-app',
    redirect_uri: `${APP_URL}/callback`,
    scope,
    state: randomBytes(16).toString('base64url'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...(resource && { resource }),
  });
  const url = `${issuer}/oauth2/authorize?${query}`;
  const callback = new URL(
    await signInAndConsent(ctx.baseUrl, url, `${APP_URL}/callback`, person.email, person.password),
  );
  if (callback.searchParams.get('error')) return { error: callback.searchParams.get('error')! };
  const res = await fetch(`${issuer}/oauth2/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: callback.searchParams.get('code')!,
      code_verifier: verifier,
      client_id: 'my-app',
      redirect_uri: `${APP_URL}/callback`,
    }),
  });
  if (res.status !== 200) throw new Error(`code exchange: ${res.status} ${await res.text()}`);
  return (await res.json()) as { access_token: string; id_token: string; scope?: string };
}

const audienceOf = async (token: string) =>
  (
    await sql<{
      audience: string | null;
    }>`select audience from access_tokens where token_hash = ${hashToken(token)}`.execute(ctx.database.db)
  ).rows[0]?.audience;

/** An access token for the API with the scope notes:read (or none), by the flow with `resource`. */
async function apiToken(t: Test, withScope: boolean): Promise<string> {
  const tokens = await signIn(withScope ? 'openid notes:read' : 'openid', API_URL);
  if ('error' in tokens) throw new Error(tokens.error);
  t.equal(await audienceOf(tokens.access_token), API_URL, 'stored with the API as its audience');
  return tokens.access_token;
}

t.test('an opaque token for the API: checked by introspection', async (t) => {
  await ctx.app.services.resourceServers.update(API_URL, { accessTokenFormat: 'opaque' }, actor);
  const token = await apiToken(t, true);
  t.equal(token.split('.').length, 1, 'opaque');
  const res = await notes(token);
  t.equal(res.status, 200, 'the API lets it in');
  const body = (await res.json()) as { client: string; notes: string[] };
  t.equal(body.client, 'my-app');
  t.match(body.notes[0], /^a note of [0-9a-f-]{36}$/);
  const external = await fetch(`${ctx.baseUrl}/api/external/me`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(external.status, 401, "the provider's own API refuses it");

  const forExternal = await signIn('openid');
  if ('error' in forExternal) throw new Error(forExternal.error);
  const refused = await notes(forExternal.access_token);
  t.equal(refused.status, 401, 'a token for /api/external is refused by the API');
  t.equal(
    refused.headers.get('www-authenticate'),
    `Bearer error="invalid_token", resource_metadata="${API_URL}/.well-known/oauth-protected-resource"`,
  );

  const noScope = await apiToken(t, false);
  const forbidden = await notes(noScope);
  t.equal(forbidden.status, 403, 'a token for the API without notes:read');
  t.match(forbidden.headers.get('www-authenticate'), /^Bearer error="insufficient_scope", scope="notes:read", /);

  const revoke = await fetch(`${issuer}/oauth2/revoke`, {
    method: 'POST',
    body: new URLSearchParams({ token, client_id: 'my-app' }),
  });
  t.equal(revoke.status, 200);
  t.equal((await notes(token)).status, 401, 'revoked at the provider: refused at once');
});

t.test('a JWT access token for the API: checked by the helper as RFC 9068 §4 says', async (t) => {
  await ctx.app.services.resourceServers.update(API_URL, { accessTokenFormat: 'jwt' }, actor);
  const tokens = await signIn('openid notes:read', API_URL);
  if ('error' in tokens) throw new Error(tokens.error);
  t.equal(tokens.access_token.split('.').length, 3, 'a JWT');
  const token = tokens.access_token;
  t.equal((await notes(token)).status, 200, 'the API lets it in without asking the provider');
  const verified = await helper.verifyAccessToken(token, { issuer, audience: API_URL });
  t.equal(verified.clientId, 'my-app');
  t.same(verified.scopes, ['notes:read']);
  const refuses = async (label: string, promise: Promise<unknown>) =>
    t.equal(await outcome(promise), 'InvalidToken', label);
  await refuses('another audience', helper.verifyAccessToken(token, { issuer, audience: `${API_URL}/` }));
  const idToken = helper.verifyAccessToken(tokens.id_token, { issuer, audience: 'my-app' });
  await refuses('an ID token, even with its own audience (typ JWT, not at+jwt)', idToken);
  const [header, payload, signature] = token.split('.');
  const tampered = JSON.parse(Buffer.from(payload!, 'base64url').toString());
  tampered.scope = 'notes:read notes:write';
  const forged = `${header}.${Buffer.from(JSON.stringify(tampered)).toString('base64url')}.${signature}`;
  await refuses('a changed payload', helper.verifyAccessToken(forged, { issuer, audience: API_URL }));
  t.equal((await notes(forged)).status, 401);
  const external = await fetch(`${ctx.baseUrl}/api/external/me`, { headers: { authorization: `Bearer ${token}` } });
  t.equal(external.status, 401, "the provider's own API refuses it");
  // Introspection still describes it to the API (revocation shows there), with its audience.
  const introspected = await helper.introspectAccessToken(token, {
    issuer,
    audience: API_URL,
    clientId: 'my-api',
    clientSecret: apiSecret,
  });
  t.equal(introspected.clientId, 'my-app');
});

t.test('the helper checks every rule of RFC 9068 §4 (JWTs made here with the provider’s key)', async (t) => {
  // The helper's refusals, each alone. The tokens are made here as RFC 9068 §2 and the design describe
  // them (header typ at+jwt, alg and kid of the current signing key; iss, aud, sub, client_id, iat, exp, jti,
  // scope), signed with the provider's own current key: what is under test is the helper, not the issuing.
  const current = await ctx.app.services.keys.currentKey();
  const now = Math.floor(Date.now() / 1000);
  const claims = {
    iss: issuer,
    aud: API_URL,
    sub: 'user-1',
    client_id: 'my-app',
    iat: now,
    exp: now + 300,
    jti: randomBytes(16).toString('hex'),
    scope: 'notes:read',
  };
  const make = (
    change: Record<string, unknown> = {},
    header: Record<string, unknown> = {},
    key: jose.CryptoKey | Uint8Array = current.key,
  ) =>
    new jose.SignJWT({ ...claims, ...change })
      .setProtectedHeader({ alg: current.alg, kid: current.kid, typ: 'at+jwt', ...header })
      .sign(key);
  const check = (token: string, audience = API_URL) => helper.verifyAccessToken(token, { issuer, audience });

  t.same(await check(await make()), { sub: 'user-1', clientId: 'my-app', scopes: ['notes:read'] }, 'a good one');
  t.equal((await notes(await make())).status, 200, 'the API lets it in');
  const forbidden = await notes(await make({ scope: 'notes:write' }));
  t.equal(forbidden.status, 403, 'the API checks the scope');
  const { privateKey: foreign } = await jose.generateKeyPair(current.alg);
  const unsigned = new jose.UnsecuredJWT({ ...claims }).encode();
  for (const [label, token] of [
    ['typ JWT (an ID token, say)', await make({}, { typ: 'JWT' })],
    ['no typ', await make({}, { typ: undefined })],
    ['another issuer', await make({ iss: `${issuer}x` })],
    ['another audience', await make({ aud: 'https://other.example.com' })],
    ['the built-in audience', await make({ aud: `${ctx.baseUrl}/api/external` })],
    ['expired', await make({ iat: now - 600, exp: now - 120 })],
    ['no exp', await make({ exp: undefined })],
    ['no client_id', await make({ client_id: undefined })],
    ['signed by another key under the same kid', await make({}, {}, foreign)],
    ['alg none', unsigned],
    ['HS256 (a shared secret)', await make({}, { alg: 'HS256' }, new TextEncoder().encode('secret'))],
  ] as const) {
    t.equal(await outcome(check(token)), 'InvalidToken', label);
    t.equal((await notes(token)).status, 401, `${label}: 401 at the API`);
  }
});
