// The admin web's integration snippets run as pasted: the page is rendered by a real server for an admin,
// each <code id="snippet-..."> is saved as a .mjs file in the repository (so `openid-client` and
// `oauth4webapi` resolve from node_modules) and run with node. The test is the person at the browser: it
// opens the printed authorization URL, signs in, allows, and either lets the browser come back to the
// program's own listener (a loopback redirect URI on a free port) or pastes the URL on the program's stdin
// (an https redirect URI the program cannot listen on). The program must print the ID token's claims and
// UserInfo and exit 0. The insecure-HTTP switch appears only for an http issuer.
import t from 'tap';
import { startTestServer } from '../helpers/server.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { freePort, runProgram, signInAndConsent, unescapeHtml } from '../helpers/programs.js';
import { oauth4webapiSnippet, openidClientSnippet } from '../../plugins/admin-web/snippets.js';

t.setTimeout(240_000);
const ctx = await startTestServer(t);
const admin = { email: 'snippet-admin@example.com', password: 'a long admin password' };
const person = { email: 'snippet-user@example.com', password: 'correct horse battery', name: 'Sam Snippet' };
await ctx.app.services.users.create({ ...admin, role: 'admin', emailVerified: true }, { actor: 'test' });
await ctx.app.services.users.create({ ...person, emailVerified: true }, { actor: 'test' });

const adminBrowser = new BrowserClient();
const signInPage = await adminBrowser.request(`${ctx.baseUrl}/login/sign-in`);
const signedIn = await adminBrowser.request(`${ctx.baseUrl}/login/sign-in`, {
  form: { ...BrowserClient.hiddenFields(signInPage.body, '/login/sign-in'), ...admin },
});
if (signedIn.status !== 303) throw new Error(`admin sign-in: ${signedIn.status}`);

/** The snippets of the integration page of a new application with this redirect URI. */
async function snippets(
  redirectUri: string,
  tokenEndpointAuthMethod: 'none' | 'client_secret_basic' | 'client_secret_post' = 'none',
) {
  const app = await ctx.app.services.applications.create(
    { clientName: 'Snippet App', redirectUris: [redirectUri], tokenEndpointAuthMethod },
    { actor: 'test' },
  );
  const page = await adminBrowser.request(`${ctx.config.adminUrl}/applications/${app.clientId}/created`);
  if (page.status !== 200) throw new Error(`integration page: ${page.status}`);
  const code = (id: string) =>
    unescapeHtml(new RegExp(`<code id="snippet-${id}">([\\s\\S]*?)</code>`).exec(page.body)![1]!);
  return {
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    'openid-client': code('openid-client'),
    oauth4webapi: code('oauth4webapi'),
  };
}

for (const library of ['openid-client', 'oauth4webapi'] as const) {
  t.test(`${library}: loopback redirect URI, the program receives the callback itself`, async (t) => {
    const redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
    const page = await snippets(redirectUri);
    const source = page[library];
    t.match(source, /allowInsecureRequests/, 'the http issuer needs the insecure switch');
    t.match(source, /The issuer is plain http/, 'with a comment saying why');
    const run = runProgram(t, `admin-${library}-loopback.mjs`, source, 'node');
    const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
    t.match(url, `${ctx.issuer}/oauth2/authorize?`);
    const callback = await signInAndConsent(ctx.baseUrl, url!, redirectUri, person.email, person.password);
    const answer = await fetch(callback);
    t.equal(answer.status, 200, 'the program answers the browser');
    t.match(await answer.text(), /go back to the terminal/);
    t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
    t.match(run.output(), /ID token claims:/);
    t.match(run.output(), new RegExp(`aud: '${page.clientId}'`));
    t.match(run.output(), /UserInfo:[\s\S]*email: 'snippet-user@example\.com'/);
    t.match(run.output(), /name: 'Sam Snippet'/);
  });

  t.test(`${library}: https redirect URI, the callback URL is pasted on stdin`, async (t) => {
    const redirectUri = 'https://rp.example.com/callback';
    const page = await snippets(redirectUri);
    const source = page[library];
    t.match(source, /is not on this machine/, 'says why it reads the URL from stdin');
    const run = runProgram(t, `admin-${library}-paste.mjs`, source, 'node');
    const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
    const callback = await signInAndConsent(ctx.baseUrl, url!, redirectUri, person.email, person.password);
    await run.waitFor(/Paste the URL/);
    run.child.stdin.end(`${callback}\n`);
    t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
    t.match(run.output(), /ID token claims:[\s\S]*UserInfo:[\s\S]*snippet-user@example\.com/);
  });
}

// A server-side application (issue 33): the snippet reads the secret from CLIENT_SECRET and authenticates with the
// application's method; the page (a GET, after the creation) holds no secret.
for (const library of ['openid-client', 'oauth4webapi'] as const) {
  for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
    t.test(`${library}, ${method}: the secret from the environment`, async (t) => {
      const redirectUri = `http://127.0.0.1:${await freePort()}/callback`;
      const page = await snippets(redirectUri, method);
      const source = page[library];
      t.notMatch(source, page.clientSecret!, 'the snippet holds no secret');
      t.match(source, /process\.env\.CLIENT_SECRET/);
      t.match(source, method === 'client_secret_basic' ? /ClientSecretBasic\(clientSecret\)/ : /ClientSecretPost/);
      t.match(source, `server-side application: token endpoint auth ${method}`);
      const run = runProgram(t, `admin-${library}-${method}.mjs`, source, 'node', {
        CLIENT_SECRET: page.clientSecret!,
      });
      const [, url] = await run.waitFor(/Open in a browser:\n(\S+)\n/);
      const callback = await signInAndConsent(ctx.baseUrl, url!, redirectUri, person.email, person.password);
      t.equal((await fetch(callback)).status, 200);
      t.equal(await run.exit, 0, 'exits 0', { output: run.output() });
      t.match(run.output(), new RegExp(`aud: '${page.clientId}'`));
      t.match(run.output(), /UserInfo:[\s\S]*email: 'snippet-user@example\.com'/);
    });
  }
}

t.test('an https issuer gets no insecure switch', async (t) => {
  const input = {
    issuer: 'https://id.example.com/api/auth',
    clientId: 'abc',
    redirectUri: 'https://rp.example.com/callback',
    scope: 'openid',
  };
  for (const source of [openidClientSnippet(input), oauth4webapiSnippet(input)]) {
    t.notMatch(source, /allowInsecureRequests|plain http|options/);
    t.match(source, "'https://id.example.com/api/auth'");
  }
  const quoted = openidClientSnippet({ ...input, redirectUri: "http://localhost:8080/cb?x='1'" });
  t.match(quoted, String.raw`const redirectUri = 'http://localhost:8080/cb?x=\'1\'';`, 'string literals are escaped');
  t.match(quoted, "server.listen(8080, 'localhost'");
});
