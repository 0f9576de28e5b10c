// The README's CI recipe ("Seed file and throw-away servers"), run as written: the shell snippet between
// its markers, with the README's seed example as the seed file, IDP pointing at this checkout's CLI and a
// "test suite" that does what a pipeline's tests would: OIDC discovery, the seeded client at the public
// metadata endpoint and in an authorization request, and a password sign-in of the seeded user.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLI, cleanEnv, ROOT } from './fixtures/run-cli.js';

t.setTimeout(300_000);

function between(text: string, name: string): string {
  const match = new RegExp(`<!-- ${name}:start -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(
    text,
  );
  if (!match) throw new Error(`README.md has no ${name} block between markers`);
  return match[1]!;
}

// What the pipeline's tests do, against the provider the recipe started (node's fetch, no dependency).
const CHECKS = `
const base = 'http://127.0.0.1:' + process.env.PORT;
const fail = (m) => { console.error('CHECK FAILED: ' + m); process.exit(1); };
const discovery = await (await fetch(base + '/api/auth/.well-known/openid-configuration')).json();
if (!discovery.authorization_endpoint) fail('discovery: ' + JSON.stringify(discovery));
const app = await fetch(base + '/api/public/applications/ci-app');
if (app.status !== 200) fail('seeded application: ' + app.status);
const authorize = new URL(discovery.authorization_endpoint.replace(/^https?:\\/\\/[^/]+/, base));
for (const [k, v] of Object.entries({ client_id: 'ci-app', redirect_uri: 'http://localhost:8080/callback',
  response_type: 'code', scope: 'openid', state: 'xyz', code_challenge_method: 'S256',
  code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM' })) authorize.searchParams.set(k, v);
const a = await fetch(authorize, { redirect: 'manual' });
const location = a.headers.get('location') ?? '';
if (![302, 303].includes(a.status) || /error=/.test(location)) fail('authorize: ' + a.status + ' ' + location);
const json = { 'content-type': 'application/json' };
const signIn = await fetch(base + '/api/auth/sign-in', { method: 'POST', headers: json,
  body: JSON.stringify({ email: 'ci@example.com', password: process.env.CI_USER_PASSWORD }) });
if (signIn.status !== 200) fail('sign-in: ' + signIn.status + ' ' + (await signIn.text()));
const wrong = await fetch(base + '/api/auth/sign-in', { method: 'POST', headers: json,
  body: JSON.stringify({ email: 'ci@example.com', password: 'not-the-password' }) });
if (wrong.status !== 401) fail('a wrong password: ' + wrong.status);
console.log('ALL CHECKS PASSED');
`;

function runRecipe(dir: string, env: NodeJS.ProcessEnv): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    execFile(
      'sh',
      ['-c', readFileSync(join(dir, 'recipe.sh'), 'utf8')],
      { cwd: dir, env, timeout: 240_000 },
      (error, stdout, stderr) => {
        done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr });
      },
    );
  });
}

t.test('the README CI recipe: start, wait for /readyz, run the tests, stop', { timeout: 280_000 }, async (t) => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'idp-ci-recipe-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'ci'));
  writeFileSync(join(dir, 'ci', 'idp-seed.json'), between(readme, 'seed-example'));
  writeFileSync(join(dir, 'checks.mjs'), CHECKS);
  writeFileSync(join(dir, 'recipe.sh'), between(readme, 'ci-recipe'));
  const tsx = import.meta.resolve('tsx');
  const idp = CLI.endsWith('.js') ? `node ${CLI}` : `node --import ${tsx} ${CLI}`;
  // A port of its own (the recipe's 3000 may be taken on a shared machine); DATA_DIR stays the recipe's.
  const port = String(20000 + (process.pid % 20000));
  const result = await runRecipe(dir, cleanEnv({ IDP: idp, TESTS: 'node checks.mjs', PORT: port, NODE_ENV: '' }));
  t.equal(result.code, 0, 'the recipe exits 0', { output: result.output });
  t.match(result.output, /ALL CHECKS PASSED/);
  t.same(readdirSync(dir).sort(), ['checks.mjs', 'ci', 'idp.log', 'recipe.sh'], 'DATA_DIR=:memory: wrote nothing');
  t.match(readFileSync(join(dir, 'idp.log'), 'utf8'), /lost at exit/);

  // The same recipe with a bad seed file: it stops waiting at once and fails, showing why.
  writeFileSync(
    join(dir, 'ci', 'idp-seed.json'),
    JSON.stringify({ users: [{ email: 'x@example.com', password: 'p' }] }),
  );
  const failed = await runRecipe(dir, cleanEnv({ IDP: idp, TESTS: 'node checks.mjs', PORT: port, NODE_ENV: '' }));
  t.equal(failed.code, 1, 'a bad seed file fails the job');
  t.match(failed.output, /did not become ready/);
  t.match(failed.output, /users\[0\] \(email "x@example\.com"\): password: a literal password is not accepted/);
  t.notMatch(failed.output, /ALL CHECKS PASSED/);
});
