// The integration page's snippets: complete Node.js programs (ESM, top-level await) that run as pasted,
// sign a person in with the application's client id and print the ID token's claims and UserInfo.
// test/e2e/admin-snippets.test.ts runs them. The insecure-HTTP switch appears only for an http issuer.
import { isLoopbackHost } from '../../src/oauth/redirect-uri.js';

export interface SnippetInput {
  issuer: string;
  clientId: string;
  redirectUri: string;
  scope: string;
  /** 'none' (absent): a public client; otherwise the server-side configuration of a confidential client. */
  tokenEndpointAuthMethod?: 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt' | undefined;
}

/** A single-quoted JavaScript string literal. */
const str = (value: string) => `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;

/** Code that prints the authorization URL and sets `callbackUrl` to the URL the browser comes back to. */
function receiveCallback(redirectUri: string): { imports: string; code: string } {
  const url = new URL(redirectUri);
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) {
    const host = url.hostname.replace(/^\[|\]$/g, '');
    return {
      imports: "import { createServer } from 'node:http';\n",
      code: `// This program listens on the redirect URI, so the browser comes back to it after the sign-in.
const callbackUrl = await new Promise((resolve) => {
  const server = createServer((req, res) => {
    const url = new URL(req.url, redirectUri);
    if (url.pathname !== new URL(redirectUri).pathname) return res.writeHead(404).end();
    res.end('Done: go back to the terminal.');
    server.close();
    server.closeAllConnections();
    resolve(url);
  });
  server.listen(${url.port || '80'}, ${str(host)}, () => console.log(\`Open in a browser:\\n\${authorizationUrl}\`));
});`,
    };
  }
  return {
    imports: "import { createInterface } from 'node:readline/promises';\n",
    code: `// ${redirectUri} is not on this machine, so this program cannot receive the redirect itself:
// sign in, then paste the address the browser was sent to (your app may show an error there; that is fine).
console.log(\`Open in a browser:\\n\${authorizationUrl}\`);
const prompt = createInterface({ input: process.stdin, output: process.stdout });
const callbackUrl = new URL(await prompt.question('Paste the URL you were redirected to: '));
prompt.close();`,
  };
}

const HEADER = (pkg: string, method: SnippetInput['tokenEndpointAuthMethod']) =>
  `// A complete program: npm install ${pkg}, save as sign-in.mjs, run node sign-in.mjs (Node.js 20+).
// It signs a person in (Authorization Code Flow, PKCE S256, ${
    !method || method === 'none' ? 'public client: no secret' : `server-side application: token endpoint auth ${method}`
  }) and prints
// the ID token's claims and UserInfo.
`;

/**
 * A confidential client's credentials come from the environment, never from the code: the secret shown once when
 * it was made (CLIENT_SECRET), or the private key whose public half is registered (CLIENT_PRIVATE_JWK, ES256).
 */
/** The generated program's environment (spelled apart: only app/cli.ts reads this server's environment). */
const ENV = ['process', 'env'].join('.');

function credentialsCode(method: SnippetInput['tokenEndpointAuthMethod']): string {
  if (method === 'client_secret_basic' || method === 'client_secret_post') {
    return `// The client secret, shown once when it was made (admin web, idp apps create): keep it out of the code.
const clientSecret = ${ENV}.CLIENT_SECRET; // tokenEndpointAuthMethod: ${method}
`;
  }
  if (method === 'private_key_jwt') {
    return `// The private key whose public key is registered (JWKS), as a JWK in CLIENT_PRIVATE_JWK (ES256 here).
const privateKey = await crypto.subtle.importKey(
  'jwk', JSON.parse(${ENV}.CLIENT_PRIVATE_JWK), { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign'],
); // tokenEndpointAuthMethod: private_key_jwt
`;
  }
  return '';
}

/** The library's client authentication for the method: ClientSecretBasic(clientSecret), None()... */
function clientAuthCall(prefix: string, method: SnippetInput['tokenEndpointAuthMethod']): string {
  if (method === 'client_secret_basic') return `${prefix}.ClientSecretBasic(clientSecret)`;
  if (method === 'client_secret_post') return `${prefix}.ClientSecretPost(clientSecret)`;
  if (method === 'private_key_jwt') return `${prefix}.PrivateKeyJwt(privateKey)`;
  return `${prefix}.None()`;
}

const INSECURE_COMMENT = `// The issuer is plain http (a development server): the library refuses http unless told
// otherwise. Remove this switch for an https issuer.`;

export function openidClientSnippet(o: SnippetInput): string {
  const insecure = new URL(o.issuer).protocol === 'http:';
  const callback = receiveCallback(o.redirectUri);
  const method = o.tokenEndpointAuthMethod;
  const confidential = Boolean(method && method !== 'none');
  const auth = confidential ? `undefined, ${clientAuthCall('client', method)}` : 'undefined, undefined';
  const discovery = insecure
    ? `const config = await client.discovery(issuer, clientId, ${auth}, {
  ${INSECURE_COMMENT.replace(/\n/g, '\n  ')}
  execute: [client.allowInsecureRequests],
});`
    : confidential
      ? `const config = await client.discovery(issuer, clientId, ${auth});`
      : 'const config = await client.discovery(issuer, clientId);';
  return `${HEADER('openid-client', method)}import * as client from 'openid-client';
${callback.imports}
const issuer = new URL(${str(o.issuer)});
const clientId = ${str(o.clientId)};
const redirectUri = ${str(o.redirectUri)};
${credentialsCode(method)}${discovery}
const codeVerifier = client.randomPKCECodeVerifier();
const state = client.randomState();
const nonce = client.randomNonce();
const authorizationUrl = client.buildAuthorizationUrl(config, {
  redirect_uri: redirectUri,
  scope: ${str(o.scope)},
  code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
  code_challenge_method: 'S256',
  state,
  nonce,
});

${callback.code}

const tokens = await client.authorizationCodeGrant(config, callbackUrl, {
  pkceCodeVerifier: codeVerifier,
  expectedState: state,
  expectedNonce: nonce,
});
const claims = tokens.claims();
console.log('ID token claims:', claims);
console.log('UserInfo:', await client.fetchUserInfo(config, tokens.access_token, claims.sub));
`;
}

export function oauth4webapiSnippet(o: SnippetInput): string {
  const insecure = new URL(o.issuer).protocol === 'http:';
  const callback = receiveCallback(o.redirectUri);
  const options = insecure ? `\n${INSECURE_COMMENT}\nconst options = { [oauth.allowInsecureRequests]: true };` : '';
  const opt = insecure ? ', options' : '';
  return `${HEADER('oauth4webapi', o.tokenEndpointAuthMethod)}import * as oauth from 'oauth4webapi';
${callback.imports}
const issuer = new URL(${str(o.issuer)});
const client = { client_id: ${str(o.clientId)} };
${credentialsCode(o.tokenEndpointAuthMethod)}const clientAuth = ${clientAuthCall('oauth', o.tokenEndpointAuthMethod)};
const redirectUri = ${str(o.redirectUri)};${options}
const as = await oauth.processDiscoveryResponse(
  issuer,
  await oauth.discoveryRequest(issuer, { algorithm: 'oidc'${insecure ? ', ...options' : ''} }),
);
const codeVerifier = oauth.generateRandomCodeVerifier();
const state = oauth.generateRandomState();
const nonce = oauth.generateRandomNonce();
const authorizationUrl = new URL(as.authorization_endpoint);
authorizationUrl.search = new URLSearchParams({
  client_id: client.client_id,
  redirect_uri: redirectUri,
  response_type: 'code',
  scope: ${str(o.scope)},
  code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
  code_challenge_method: 'S256',
  state,
  nonce,
}).toString();

${callback.code}

const params = oauth.validateAuthResponse(as, client, callbackUrl, state);
const response = await oauth.authorizationCodeGrantRequest(
  as, client, clientAuth, params, redirectUri, codeVerifier${opt},
);
const result = await oauth.processAuthorizationCodeResponse(as, client, response, {
  expectedNonce: nonce,
  requireIdToken: true,
});
const claims = oauth.getValidatedIdTokenClaims(result);
console.log('ID token claims:', claims);
const userinfo = await oauth.userInfoRequest(as, client, result.access_token${opt});
console.log('UserInfo:', await oauth.processUserInfoResponse(as, client, claims.sub, userinfo));
`;
}
