// The MCP TypeScript SDK (@modelcontextprotocol/sdk), unmodified, against this provider (issue 36). The MCP server
// is docs/integration.md's program ("Connect an MCP client"), run as written twice: once checking JWT access tokens
// with jose as RFC 9068 §4 says, once by introspection with its own client credentials. The SDK's client is given
// only the MCP server's URL: from the 401 it finds the protected-resource metadata (RFC 9728), the provider's metadata
// (RFC 8414), registers (a client ID metadata document served over https by this test, then RFC 7591 dynamic
// registration), sends the person to sign in and allow in headless Chromium, exchanges the code with `resource`
// (RFC 8707) and calls a tool. Then tokens meant for another API are refused by both MCP servers.
//
// Each browser step has a time limit and names what it waited for, so a missing piece fails with the page it
// stopped on, never a hang.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { decodeJwt, decodeProtectedHeader, generateKeyPair, SignJWT } from 'jose';
import { startTestServer } from '../helpers/server.js';
import { chromiumSkip, fileChromium, startCallbackServer } from '../helpers/chromium.js';
import { freePort, markedBlock, ROOT, runProgram, type Running } from '../helpers/programs.js';

t.setTimeout(420_000);
const doc = readFileSync(join(ROOT, 'docs', 'integration.md'), 'utf8');
const block = (name: string) => markedBlock(doc, `mcp:${name}`);

t.test('every MCP block of the document is run by this test', async (t) => {
  const names = [...doc.matchAll(/<!-- mcp:([\w-]+):start -->/g)].map((m) => m[1]);
  t.same(names.sort(), ['resource-server', 'server']);
});

// The client's metadata document is served over https (the SDK and the draft require an https client_id) with a
// certificate made here, which the provider is told to trust for these fetches (CLIENT_METADATA_CA_FILE). Loopback
// addresses are allowed for them outside production only.
const tls = (() => {
  const dir = mkdtempSync(join(tmpdir(), 'idp-mcp-tls-'));
  const [key, cert] = [join(dir, 'key.pem'), join(dir, 'cert.pem')];
  execFileSync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
    '-keyout',
    key,
    '-out',
    cert,
  ]);
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8'), certFile: cert };
})();

const ADMIN_API_TOKEN = 'mcp-test-admin-token-0123456789abcdefghijkl';
const ctx = await startTestServer(t, {
  ADMIN_API_TOKEN,
  REGISTRATION: 'open',
  CLIENT_ID_METADATA_DOCUMENTS: 'on',
  // The provider trusts the test's certificate for metadata-document fetches only (a private CA in production).
  CLIENT_METADATA_CA_FILE: tls.certFile,
});
const services = ctx.app.services;
const callback = await startCallbackServer(t);

// The agent's client ID metadata document, on an https server of its own.
const documentRequests: string[] = [];
const documentServer = createHttpsServer({ key: tls.key, cert: tls.cert }, (req, res) => {
  documentRequests.push(`${req.method} ${req.url}`);
  if (req.url !== '/agent/client.json') return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
  res.end(JSON.stringify(clientMetadataDocument));
});
await new Promise<void>((resolve) => documentServer.listen(0, '127.0.0.1', resolve));
t.teardown(() => new Promise<void>((resolve) => documentServer.close(() => resolve())));
const clientMetadataUrl = `https://127.0.0.1:${(documentServer.address() as AddressInfo).port}/agent/client.json`;
const agentMetadata: OAuthClientMetadata = {
  client_name: 'Test Agent',
  redirect_uris: [callback.redirectUri],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
};
const clientMetadataDocument = { client_id: clientMetadataUrl, ...agentMetadata };

// Two MCP servers, each a resource server of its own: one with JWT access tokens checked by jose, one with
// opaque tokens checked by introspection with the credentials of an application of the MCP server's.
const SCOPE = 'notes:search';
const jwtMcpUrl = `http://127.0.0.1:${await freePort()}/mcp`;
const introspectedMcpUrl = `http://127.0.0.1:${await freePort()}/mcp`;
const introspector = await services.applications.create(
  {
    clientName: 'Notes MCP server (introspection)',
    redirectUris: ['http://localhost:7001/callback'],
    tokenEndpointAuthMethod: 'client_secret_basic',
    grantTypes: ['client_credentials'],
    allowedScopes: ['openid'],
  },
  { actor: 'test' },
);
// An agent the operator registered by hand (MCP allows pre-registration): the path without self-registration.
const operatorAgent = await services.applications.create(
  { clientName: 'Operator Agent', redirectUris: [callback.redirectUri], allowedScopes: ['openid'] },
  { actor: 'test' },
);
const scopes = [{ name: SCOPE, label: 'Search your notes', consentDescription: 'Search your notes' }];
await services.resourceServers.create(
  {
    identifier: jwtMcpUrl,
    name: 'Notes (JWT)',
    scopes,
    accessTokenFormat: 'jwt',
    allowSelfRegistered: true,
    allowedClients: [operatorAgent.clientId],
  },
  { actor: 'test' },
);
await services.resourceServers.create(
  {
    identifier: introspectedMcpUrl,
    name: 'Notes (introspected)',
    scopes: [{ ...scopes[0]!, name: 'notes:list' }],
    accessTokenFormat: 'opaque',
    allowSelfRegistered: true,
    introspectionClients: [introspector.clientId],
  },
  { actor: 'test' },
);

/** docs/integration.md's MCP server, run as written; resolves when it listens. */
async function startMcpServer(url: string, env: Record<string, string>): Promise<Running> {
  const run = runProgram(t, `docs-mcp-server-${new URL(url).port}.mjs`, block('server'), 'node', {
    IDP_URL: ctx.baseUrl,
    MCP_URL: url,
    ...env,
  });
  await run.waitFor(/MCP server on \S+/);
  return run;
}
const jwtServer = await startMcpServer(jwtMcpUrl, { TOKEN_CHECK: 'jwt', SCOPE });
const introspectedServer = await startMcpServer(introspectedMcpUrl, {
  TOKEN_CHECK: 'introspection',
  SCOPE: 'notes:list',
  INTROSPECTION_CLIENT_ID: introspector.clientId,
  INTROSPECTION_CLIENT_SECRET: introspector.clientSecret!,
});

let users = 0;
async function person() {
  const email = `agent-owner${++users}@example.com`;
  const password = 'correct horse battery staple';
  const user = await services.users.create(
    { email, password, name: `Agent Owner ${users}`, emailVerified: true },
    { actor: 'test' },
  );
  return { id: user.id, email, password };
}

/**
 * The SDK's OAuthClientProvider, kept in memory: `redirectToAuthorization` is the person at the browser, who signs
 * in through the hosted pages and allows; the code the provider sends back is kept for `finishAuth`.
 */
class BrowserAuthProvider implements OAuthClientProvider {
  #client: OAuthClientInformationMixed | undefined;
  #tokens: OAuthTokens | undefined;
  #verifier: string | undefined;
  authorizationUrl: URL | undefined;
  code: string | undefined;
  consentText = '';

  constructor(
    readonly person: { email: string; password: string },
    readonly clientMetadataUrl?: string,
    preRegistered?: { client_id: string },
  ) {
    this.#client = preRegistered;
  }
  get redirectUrl() {
    return callback.redirectUri;
  }
  get clientMetadata() {
    return agentMetadata;
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.#client = information;
  }
  tokens() {
    return this.#tokens;
  }
  saveTokens(tokens: OAuthTokens) {
    this.#tokens = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    if (!this.#verifier) throw new Error('no code verifier saved');
    return this.#verifier;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    const answer = await signInAndAllow(url, this.person);
    this.code = answer.code;
    this.consentText = answer.consentText;
  }
}

/** The person in headless Chromium: sign-in page, consent page (always shown to self-registered clients), Allow. */
async function signInAndAllow(url: URL, who: { email: string; password: string }) {
  const browser = await fileChromium();
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    const step = async <T>(what: string, action: () => Promise<T>): Promise<T> => {
      try {
        return await action();
      } catch (error) {
        const text = await page
          .locator('body')
          .innerText({ timeout: 2000 })
          .catch(() => '');
        const first = (error as Error).message.split('\n')[0];
        throw new Error(`${what}: ${first}\n  the browser is at ${page.url()}\n  page text: ${text.slice(0, 800)}`);
      }
    };
    const atCallback = (u: URL) => u.href.startsWith(callback.redirectUri);
    /** Waits for `page` (or the client's redirect URI, which ends the flow: an error there is thrown as such). */
    const reach = async (what: string, path: RegExp) => {
      await step(`waiting for ${what}`, () => page.waitForURL((u) => path.test(u.href) || atCallback(u)));
      const here = new URL(page.url());
      const error = here.searchParams.get('error');
      if (atCallback(here) && error) {
        throw new Error(
          `waiting for ${what}, the provider redirected with ${error}: ${here.searchParams.get('error_description')}`,
        );
      }
    };
    await step('opening the authorization URL', () => page.goto(url.href));
    await reach('the sign-in page', /\/login\/sign-in\?request=/);
    await page.getByLabel('E-mail address').fill(who.email);
    await page.getByLabel(/^Password/).fill(who.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await reach('the consent page (self-registered clients always see it)', /\/login\/consent\?request=/);
    let consentText = '';
    if (!atCallback(new URL(page.url()))) {
      consentText = await page.locator('main').innerText();
      await page.getByRole('button', { name: 'Allow' }).click();
      await reach("the client's redirect URI", /^$/);
    }
    const code = new URL(page.url()).searchParams.get('code');
    if (!code) throw new Error(`no code in ${page.url()}`);
    return { code, consentText };
  } finally {
    await context.close();
  }
}

/** Every request the SDK's client makes (discovery, registration, token), with the answer's status. */
function recordingFetch(log: string[]): typeof fetch {
  return async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const response = await fetch(input, init);
    // A token request's resource indicator (RFC 8707 §2.2), which the SDK adds to the form.
    const resource = init?.body instanceof URLSearchParams ? init.body.get('resource') : null;
    log.push(`${init?.method ?? 'GET'} ${url} ${response.status}${resource ? ` resource=${resource}` : ''}`);
    return response;
  };
}

/** The SDK's client, as an MCP host runs it: connect; on UnauthorizedError finish with the code, connect again. */
async function connect(mcpUrl: string, authProvider: BrowserAuthProvider, log: string[]) {
  const transport = () =>
    new StreamableHTTPClientTransport(new URL(mcpUrl), { authProvider, fetch: recordingFetch(log) });
  const first = transport();
  try {
    await new Client({ name: 'test-agent', version: '1.0.0' }).connect(first);
    throw new Error('the MCP server let the client in without a token');
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  if (!authProvider.code) throw new Error('the SDK did not send the person to the authorization endpoint');
  await first.finishAuth(authProvider.code);
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  try {
    await client.connect(transport());
  } catch (error) {
    // Say why the MCP server (docs/integration.md's program) refused the token it was given.
    const server = mcpUrl === jwtMcpUrl ? jwtServer : introspectedServer;
    const refusals = server.output().match(/refused a token: .*/g) ?? [];
    throw new Error(
      `with the token from the provider, the MCP server still refused the client (${(error as Error).message}); ` +
        `its last refusal: ${refusals.at(-1) ?? 'none'}`,
    );
  }
  t.teardown(() => client.close());
  return client;
}

const toolText = (result: unknown) =>
  ((result as { content: Array<{ type: string; text?: string }> }).content[0]?.text ?? '').toString();

const asIssuer = (path: string) => `${new URL(ctx.issuer).origin}${path}`;

// What the SDK's client needs from the provider, named so that a missing piece reads as such.
t.test('what an MCP client needs from the provider', async (t) => {
  const oauthMetadata = await fetch(asIssuer('/.well-known/oauth-authorization-server/api/auth'));
  t.equal(oauthMetadata.status, 200, 'RFC 8414 metadata at the path-insertion URL (i36-resource)');
  const metadata = (await (await fetch(`${ctx.issuer}/.well-known/openid-configuration`)).json()) as Record<
    string,
    unknown
  >;
  t.equal(metadata.client_id_metadata_document_supported, true, 'advertises metadata documents (i36-registration)');
  t.equal(metadata.registration_endpoint, `${ctx.issuer}/register`, 'a registration endpoint (i36-registration)');
  t.ok((metadata.code_challenge_methods_supported as string[]).includes('S256'), 'PKCE S256');
});

t.test(
  'the SDK client: metadata document, sign-in in Chromium, JWT access token checked by jose, a tool call',
  { skip: chromiumSkip, timeout: 180_000 },
  async (t) => {
    const who = await person();
    const log: string[] = [];
    const auth = new BrowserAuthProvider(who, clientMetadataUrl);
    const client = await connect(jwtMcpUrl, auth, log);

    // Everything was found from the first 401.
    const metadataUrl = `${new URL(jwtMcpUrl).origin}/.well-known/oauth-protected-resource/mcp`;
    t.match(log[0], new RegExp(`^POST ${jwtMcpUrl} 401$`), 'the first call is refused');
    t.ok(log.includes(`GET ${metadataUrl} 200`), "the MCP server's metadata, named by the 401");
    t.ok(
      log.includes(`GET ${asIssuer('/.well-known/oauth-authorization-server/api/auth')} 200`),
      "the provider's RFC 8414 metadata",
    );
    t.notOk(
      log.some((l) => l.startsWith(`POST ${ctx.issuer}/register`)),
      'no dynamic registration: the metadata document is the client id',
    );
    t.ok(documentRequests.includes('GET /agent/client.json'), 'the provider fetched the metadata document');
    t.ok(
      log.includes(`POST ${ctx.issuer}/oauth2/token 200 resource=${jwtMcpUrl}`),
      'the code was exchanged with the resource (RFC 8707 §2.2)',
    );

    const authorization = auth.authorizationUrl!;
    t.equal(authorization.searchParams.get('client_id'), clientMetadataUrl);
    t.equal(authorization.searchParams.get('resource'), jwtMcpUrl, 'RFC 8707: the MCP server is the resource');
    t.equal(authorization.searchParams.get('scope'), SCOPE, "the scope of the MCP server's metadata");
    t.equal(authorization.searchParams.get('code_challenge_method'), 'S256');
    t.match(auth.consentText, 'Test Agent', 'the consent page names the agent');
    t.match(auth.consentText, '127.0.0.1', "and its metadata document's host");
    t.match(auth.consentText, /registered itself/, 'and says it registered itself');
    t.match(auth.consentText, 'Notes (JWT)', 'and names the API it asks for');
    t.match(auth.consentText, 'Search your notes', "and the API's scope");

    // The token: RFC 9068, for this MCP server only.
    const token = (await auth.tokens())!.access_token;
    t.equal(decodeProtectedHeader(token).typ, 'at+jwt');
    const claims = decodeJwt(token);
    t.equal(claims.aud, jwtMcpUrl);
    t.equal(claims.client_id, clientMetadataUrl);
    t.equal(claims.sub, who.id);
    t.equal(claims.scope, SCOPE);

    const tools = await client.listTools();
    t.same(
      tools.tools.map((tool) => tool.name),
      ['whoami'],
    );
    const answer = toolText(await client.callTool({ name: 'whoami', arguments: {} }));
    t.equal(answer, `user ${who.id} via ${clientMetadataUrl} (${SCOPE})`, "the tool's answer names the user");
    tokensFor.jwt = token;
  },
);

t.test(
  'the SDK client: dynamic registration, sign-in in Chromium, opaque token checked by introspection, a tool call',
  { skip: chromiumSkip, timeout: 180_000 },
  async (t) => {
    const who = await person();
    const log: string[] = [];
    const auth = new BrowserAuthProvider(who); // no metadata document: the SDK registers (RFC 7591)
    const client = await connect(introspectedMcpUrl, auth, log);

    t.match(log[0], new RegExp(`^POST ${introspectedMcpUrl} 401$`), 'the first call is refused');
    t.ok(log.includes(`POST ${ctx.issuer}/register 201`), 'registered at the registration endpoint');
    const registered = (await auth.clientInformation())!;
    t.not(registered.client_id, clientMetadataUrl);
    t.equal((registered as { client_secret?: string }).client_secret, undefined, 'a public client');
    const application = await services.applications.find(registered.client_id);
    t.equal(application?.registration, 'dynamic', 'recorded as dynamically registered');

    const authorization = auth.authorizationUrl!;
    t.equal(authorization.searchParams.get('client_id'), registered.client_id);
    t.equal(authorization.searchParams.get('resource'), introspectedMcpUrl);
    t.equal(authorization.searchParams.get('scope'), 'notes:list');
    t.match(auth.consentText, 'Test Agent', 'the consent page names the agent');
    t.match(auth.consentText, /registered itself/, 'and says it registered itself');
    t.match(auth.consentText, 'Notes (introspected)', 'and names the API it asks for');

    const token = (await auth.tokens())!.access_token;
    t.ok(log.includes(`POST ${ctx.issuer}/oauth2/token 200 resource=${introspectedMcpUrl}`), 'exchanged with resource');
    t.match(token, /^[A-Za-z0-9_-]{43}$/, 'opaque');
    const answer = toolText(await client.callTool({ name: 'whoami', arguments: {} }));
    t.equal(answer, `user ${who.id} via ${registered.client_id} (notes:list)`, "the tool's answer names the user");
    tokensFor.introspected = token;
    tokensFor.introspectedClient = registered.client_id;
  },
);

t.test(
  'the SDK client with an application the operator registered: sign-in, JWT access token, a tool call',
  { skip: chromiumSkip, timeout: 180_000 },
  async (t) => {
    const who = await person();
    const log: string[] = [];
    const auth = new BrowserAuthProvider(who, undefined, { client_id: operatorAgent.clientId });
    const client = await connect(jwtMcpUrl, auth, log);
    t.notOk(
      log.some((l) => l.startsWith(`POST ${ctx.issuer}/register`)),
      'no registration',
    );
    t.equal(auth.authorizationUrl!.searchParams.get('resource'), jwtMcpUrl);
    const claims = decodeJwt((await auth.tokens())!.access_token);
    t.same([claims.aud, claims.client_id, claims.sub], [jwtMcpUrl, operatorAgent.clientId, who.id]);
    const answer = toolText(await client.callTool({ name: 'whoami', arguments: {} }));
    t.equal(answer, `user ${who.id} via ${operatorAgent.clientId} (${SCOPE})`);
  },
);

const tokensFor: { jwt?: string; introspected?: string; introspectedClient?: string } = {};

t.test('a token for another resource is refused by the MCP servers', async (t) => {
  // A service allowed to ask for a third API's JWT tokens, and for /api/external's (no resource).
  const otherApi = 'https://other.example/api';
  const service = await services.applications.create(
    {
      clientName: 'Other service',
      redirectUris: ['http://localhost:7001/callback'],
      tokenEndpointAuthMethod: 'client_secret_basic',
      grantTypes: ['client_credentials'],
      allowedScopes: ['openid', 'profile'],
    },
    { actor: 'test' },
  );
  await services.resourceServers.create(
    {
      identifier: otherApi,
      name: 'Other API',
      scopes: [{ name: 'other:read', label: 'Read other things', consentDescription: 'Read other things' }],
      accessTokenFormat: 'jwt',
      allowedClients: [service.clientId],
    },
    { actor: 'test' },
  );
  const clientCredentials = async (form: Record<string, string>) => {
    const res = await fetch(`${ctx.issuer}/oauth2/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${service.clientId}:${service.clientSecret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'client_credentials', ...form }),
    });
    const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
    if (!body.access_token) throw new Error(`client_credentials ${JSON.stringify(form)}: ${JSON.stringify(body)}`);
    return body.access_token;
  };
  const otherJwt = await clientCredentials({ resource: otherApi, scope: 'other:read' });
  t.equal(decodeJwt(otherJwt).aud, otherApi, 'a JWT signed by the provider, for the other API');
  const externalToken = await clientCredentials({ scope: 'profile' });

  const call = async (mcpUrl: string, token: string) => {
    const res = await fetch(mcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await res.body?.cancel();
    return { status: res.status, challenge: res.headers.get('www-authenticate') };
  };
  const refused = (mcpUrl: string) => {
    const metadataUrl = `${new URL(mcpUrl).origin}/.well-known/oauth-protected-resource/mcp`;
    return { status: 401, challenge: `Bearer resource_metadata="${metadataUrl}", error="invalid_token"` };
  };
  const cases: Array<[string, string, string | undefined]> = [
    ['a JWT for another API', jwtMcpUrl, otherJwt],
    ["/api/external's token", jwtMcpUrl, externalToken],
    ["the introspected MCP server's token", jwtMcpUrl, tokensFor.introspected],
    ['a JWT for another API', introspectedMcpUrl, otherJwt],
    ["/api/external's token", introspectedMcpUrl, externalToken],
    ["the JWT MCP server's token", introspectedMcpUrl, tokensFor.jwt],
  ];
  for (const [what, mcpUrl, token] of cases) {
    if (!token) {
      t.fail(`${what} at ${mcpUrl}: no token (its sign-in test did not get one)`);
      continue;
    }
    t.same(await call(mcpUrl, token), refused(mcpUrl), `${what} is refused at ${mcpUrl}`);
  }
  // The positive controls: each MCP server's own token is taken.
  if (tokensFor.jwt) t.equal((await call(jwtMcpUrl, tokensFor.jwt)).status, 200, 'its own token is taken');
  if (tokensFor.introspected) {
    t.equal((await call(introspectedMcpUrl, tokensFor.introspected)).status, 200, 'its own token is taken');
  }
  // Revoked (RFC 7009, by the client that holds it): the MCP server that introspects sees it at once.
  if (tokensFor.introspected && tokensFor.introspectedClient) {
    const revoked = await fetch(`${ctx.issuer}/oauth2/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ token: tokensFor.introspected, client_id: tokensFor.introspectedClient }),
    });
    t.equal(revoked.status, 200, 'the agent revokes its token');
    t.same(await call(introspectedMcpUrl, tokensFor.introspected), refused(introspectedMcpUrl), 'then it is refused');
  }
  t.match(jwtServer.output(), /refused a token: unexpected "aud" claim value/, 'jose named the audience');
  t.match(introspectedServer.output(), /refused a token: the token is not active/, 'introspection says inactive');
});

// The document's JWT check, case by case, with tokens signed here by the provider's own current key (and others):
// only a token that passes every step of RFC 9068 §4 is taken.
t.test("the document's MCP server checks JWT access tokens as RFC 9068 §4 says", async (t) => {
  const key = await services.keys.currentKey();
  const { privateKey: strangerKey } = await generateKeyPair('RS256');
  const mint = async (
    change: {
      header?: Record<string, unknown>;
      claims?: Record<string, unknown>;
      key?: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
    } = {},
  ) => {
    const claims = {
      iss: ctx.issuer,
      sub: 'user-1',
      aud: jwtMcpUrl,
      client_id: 'agent',
      scope: SCOPE,
      iat: Math.floor(Date.now() / 1000),
      exp: Math.floor(Date.now() / 1000) + 300,
      jti: 'jti-1',
      ...change.claims,
    };
    for (const [name, value] of Object.entries(claims)) {
      if (value === undefined) delete (claims as Record<string, unknown>)[name];
    }
    return new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt', ...change.header })
      .sign(change.key ?? key.key);
  };
  const call = async (token: string) => {
    const res = await fetch(jwtMcpUrl, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    await res.body?.cancel();
    return res.status;
  };
  t.equal(await call(await mint()), 200, 'every check passes: taken');
  const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(
    JSON.stringify({ iss: ctx.issuer, aud: jwtMcpUrl, sub: 'u', client_id: 'a', scope: SCOPE, exp: 2e9 }),
  ).toString('base64url')}.`;
  const refused: Array<[string, string]> = [
    ['typ JWT (an ID token has it)', await mint({ header: { typ: 'JWT' } })],
    ['another audience', await mint({ claims: { aud: 'https://other.example/api' } })],
    ['another issuer', await mint({ claims: { iss: `${ctx.baseUrl}/elsewhere` } })],
    ['expired', await mint({ claims: { exp: Math.floor(Date.now() / 1000) - 120 } })],
    ['no jti', await mint({ claims: { jti: undefined } })],
    ['no client_id', await mint({ claims: { client_id: undefined } })],
    ['signed by a key the provider does not publish', await mint({ key: strangerKey })],
    ['alg none', unsigned],
  ];
  for (const [what, token] of refused) t.equal(await call(token), 401, `${what}: 401`);
  t.equal(
    await call(await mint({ claims: { scope: 'other:read' } })),
    403,
    'without its scope: 403 insufficient_scope',
  );
});

t.test("the operator's resource-server call of the document", async (t) => {
  const mcpUrl = `http://127.0.0.1:${await freePort()}/notes-mcp`;
  const run = runProgram(t, 'docs-mcp-resource-server.sh', block('resource-server'), 'bash', {
    IDP_URL: ctx.baseUrl,
    MCP_URL: mcpUrl,
    ADMIN_API_TOKEN,
  });
  t.equal(await run.exit, 0, 'exits 0 (the admin API for resource servers: i36-admin)', { output: run.output() });
  const created = await services.resourceServers.find(mcpUrl);
  t.equal(created?.accessTokenFormat, 'jwt');
  t.equal(created?.allowSelfRegistered, true);
  t.same(
    created?.scopes.map((s) => s.name),
    ['notes:read'],
  );
});
