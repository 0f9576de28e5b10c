// docs/upstreams.md ("Add Google, GitHub or your company's provider") as a reader follows it: its marked admin API
// examples run as written (bash and curl) against a real server, with only what the document tells the reader to
// set: BASE_URL, ADMIN_API_TOKEN, ISSUER (here node-oidc-provider standing in for Acme's Keycloak), the client ids
// and secrets, and GH (a GitHub-like server standing in for GitHub Enterprise Server). Then a person signs in
// through each provider the examples made: an Acme address typed on the sign-in page goes to Acme (single sign-on
// by domain) and comes back with an account made just in time; "Continue with GitHub" does the same from GitHub's
// verified primary address.
import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BrowserClient } from '../helpers/browser-client.js';
import { ROOT, runProgram } from '../helpers/programs.js';
import { startTestServer } from '../helpers/server.js';
import { startCompanyUpstream, startGitHubLike } from '../helpers/upstreams.js';

t.setTimeout(300_000);
const doc = readFileSync(join(ROOT, 'docs', 'upstreams.md'), 'utf8');

/** The block between <!-- example:NAME:start/end --> (inside a list item: indented), dedented. */
function example(name: string): string {
  const match = new RegExp(
    `<!-- example:${name}:start -->\\n( *)\`\`\`\\w+\\n([\\s\\S]*?)\\n *\`\`\`\\n *<!-- example:${name}:end -->`,
  ).exec(doc);
  if (!match) throw new Error(`no ${name} example between markers`);
  const indent = match[1]!.length;
  return `${match[2]!
    .split('\n')
    .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
    .join('\n')}\n`;
}

t.test('every example block in the document is run by this test', async (t) => {
  const names = [...doc.matchAll(/<!-- example:([\w-]+):start -->/g)].map((m) => m[1]);
  t.same(names.sort(), ['acme-api', 'github-api', 'github-enterprise-api']);
});

const ADMIN_API_TOKEN = 'upstreams-docs-admin-token-0123456789abcdef';
const ctx = await startTestServer(t, { ADMIN_API_TOKEN });
const login = `${ctx.baseUrl}/login`;
const acme = await startCompanyUpstream(t);
const github = await startGitHubLike(t, { clientId: 'Iv1.docs', clientSecret: 'github-docs-secret-0123456789' });
const env = {
  BASE_URL: ctx.baseUrl,
  ADMIN_API_TOKEN,
  ISSUER: acme.issuer,
  ACME_CLIENT_ID: 'idp-acme',
  ACME_CLIENT_SECRET: 'acme-docs-secret-0123456789',
  GITHUB_CLIENT_ID: 'Iv1.docs',
  GITHUB_CLIENT_SECRET: 'github-docs-secret-0123456789',
};
await acme.register([
  {
    client_id: env.ACME_CLIENT_ID,
    client_secret: env.ACME_CLIENT_SECRET,
    token_endpoint_auth_method: 'client_secret_basic',
    redirect_uris: [`${login}/upstream/acme/callback`],
  },
]);

async function runExample(t: Test, name: string, source: string) {
  const run = runProgram(t, `docs-upstreams-${name}.sh`, `set -euo pipefail\n${source}`, 'bash', env);
  t.equal(await run.exit, 0, `${name} exits 0`, { output: run.output() });
  return JSON.parse(run.output()) as Record<string, unknown>;
}

const signedInAs = async (browser: BrowserClient) => {
  const res = await browser.request(`${login}/`);
  return res.status === 200 ? /signed in as <strong>([^<]+)</.exec(res.body)?.[1] : undefined;
};

t.test('Acme (a company OpenID provider): the admin API example, then an Acme address signs in', async (t) => {
  const created = await runExample(t, 'acme', example('acme-api'));
  t.equal(created.id, 'acme');
  t.equal(created.callbackUrl, `${login}/upstream/acme/callback`, 'the callback URL the doc says to register');
  t.notOk(JSON.stringify(created).includes(env.ACME_CLIENT_SECRET), 'the secret is not echoed');

  acme.login({ sub: 'acme-alice', email: 'alice@acme.example', email_verified: true, name: 'Alice Acme' });
  const browser = new BrowserClient();
  const page = await browser.request(`${login}/sign-in`);
  const res = await browser.follow(`${login}/sign-in`, () => false, {
    form: { ...BrowserClient.hiddenFields(page.body, '/login/sign-in'), email: 'alice@acme.example', password: '' },
  });
  t.equal(res.url, `${login}/`, res.body.slice(0, 300));
  t.equal(await signedInAs(browser), 'alice@acme.example');
  const alice = await ctx.app.services.users.get('alice@acme.example');
  t.equal(alice.name, 'Alice Acme');
  t.same(
    (await ctx.app.services.upstreams.identities.listForUser(alice.id)).map((i) => [i.providerId, i.subject]),
    [['acme', 'acme-alice']],
  );
});

t.test(
  'GitHub: the preset from the admin API, pointed at an Enterprise server, then "Continue with GitHub"',
  async (t) => {
    const created = await runExample(t, 'github', example('github-api'));
    t.equal(created.id, 'github');
    t.equal(created.name, 'GitHub');
    t.equal(created.callbackUrl, `${login}/upstream/github/callback`);
    const enterprise = example('github-enterprise-api').replace(
      /^GH=https:\/\/github\.example\.com$/m,
      `GH=${github.origin}`,
    );
    t.not(enterprise, example('github-enterprise-api'), 'GH is the one line changed');
    const updated = await runExample(t, 'github-enterprise', enterprise);
    t.equal(updated.userinfoEndpoint, `${github.origin}/api/v3/user`);

    github.state.user = { id: 9001, login: 'octo', name: 'Octo Cat', email: null, avatar_url: 'https://x.test/a.png' };
    github.state.emails = [
      { email: 'octo@users.example', primary: false, verified: true, visibility: null },
      { email: 'octo@example.org', primary: true, verified: true, visibility: 'public' },
    ];
    const browser = new BrowserClient();
    const page = await browser.request(`${login}/sign-in`);
    const res = await browser.follow(`${login}/upstream/github/start`, () => false, {
      form: BrowserClient.hiddenFields(page.body, '/upstream/github/start'),
    });
    t.equal(res.url, `${login}/`, res.body.slice(0, 300));
    t.equal(await signedInAs(browser), 'octo@example.org');
    const octo = await ctx.app.services.users.get('octo@example.org');
    t.same(
      (await ctx.app.services.upstreams.identities.listForUser(octo.id)).map((i) => [i.providerId, i.subject]),
      [['github', '9001']],
    );
  },
);
