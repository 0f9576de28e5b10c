// The README's quick start, from a clean clone, as a new user runs it: `git clone` of this checkout's HEAD
// into a temporary folder, the quick start's command as written (`npm install && npm start`; only PORT set,
// to a free port, and npm told to prefer its cache), then /readyz, the welcome page, and the demo's
// sign-in as a newcomer: the demo → the hosted sign-in → sign up → the verification link from
// data/outbox.jsonl (no SMTP in development) → consent → back on /demo, signed in.
// Slow (an install and a build: a minute or two), so it runs only with IDP_TEST_QUICKSTART=1 (.ci/run sets
// it for the PGlite run). The server's process group is killed at the end, whatever happened.
import t from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeEnv } from '../../src/config.js';
import { BrowserClient } from '../helpers/browser-client.js';
import { freePort, ROOT } from '../helpers/programs.js';

t.setTimeout(600_000);
const skip =
  process.env.IDP_TEST_QUICKSTART === '1'
    ? false
    : 'set IDP_TEST_QUICKSTART=1 to run the README quick start from a clean clone (npm install, build: slow)';

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

/** The quick start's first command, as the README shows it (without its comment). */
function quickStartCommand(): string {
  const block = /## Quick start\n[\s\S]*?```sh\n([^\n]*)\n/.exec(README);
  if (!block) throw new Error('README.md has no quick start block');
  return block[1]!.replace(/\s+#.*$/, '').trim();
}

/** The README's "To use the admin API, start with a token" command. */
function adminTokenCommand(): string {
  const block = /To use the admin API, start with a token:\n\n```sh\n([^\n]*)\n```/.exec(README);
  if (!block) throw new Error('README.md has no admin-token start block');
  return block[1]!.trim();
}

/** The environment of a new user's shell: none of the provider's settings, no test runner hooks. */
function userEnv(port: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const { name } of describeEnv()) delete env[name];
  for (const name of Object.keys(env))
    if (/^(TAP|npm_|NODE_OPTIONS|NODE_V8_COVERAGE|_TAP)/.test(name)) delete env[name];
  return { ...env, PORT: String(port), npm_config_prefer_offline: 'true', npm_config_audit: 'false' };
}

t.test(
  'README quick start from a clean clone: install, start, /readyz, the demo sign-in',
  { skip, timeout: 600_000 },
  async (t) => {
    const command = quickStartCommand();
    t.equal(command, 'npm install && npm start', 'the command the README shows');
    const dir = mkdtempSync(join(tmpdir(), 'idp-quickstart-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const clone = join(dir, 'idp');
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, clone]);
    t.notOk(existsSync(join(clone, 'node_modules')), 'a clean clone: no node_modules');
    t.notOk(existsSync(join(clone, 'dist')), 'no build');

    const port = await freePort();
    const base = `http://localhost:${port}`;
    /** Runs `command` in the clone as a shell would; resolves once /readyz answers 200 (or it exits). */
    async function start(command: string) {
      const started = Date.now();
      const child = spawn('sh', ['-c', command], { cwd: clone, env: userEnv(port), detached: true });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
      let done = false;
      void exited.then(() => (done = true));
      // The whole group: sh, npm, the build and the server; SIGTERM first (a graceful shutdown).
      const stop = async () => {
        const group = (signal: NodeJS.Signals) => {
          try {
            process.kill(-child.pid!, signal);
          } catch {}
        };
        if (!done) group('SIGTERM');
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
        group('SIGKILL');
      };
      t.teardown(stop);
      let ready = false;
      while (!ready && !done && Date.now() - started < 420_000) {
        ready = await fetch(`${base}/readyz`)
          .then((r) => r.status === 200)
          .catch(() => false);
        if (!ready) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      return { ready, seconds: (Date.now() - started) / 1000, output: () => output, stop };
    }

    // Install, build, start; /readyz within the install and the first build.
    const first = await start(command);
    if (!first.ready) {
      t.fail('the server did not become ready', { output: first.output().slice(-4000) });
      return;
    }
    t.pass(`ready after ${Math.round(first.seconds)} s`);
    // Without ADMIN_API_TOKEN /readyz says ready and nothing else (issue 31, item 6); the demo sign-in
    // below shows the embedded database at work, with nothing to set up.
    t.same(await (await fetch(`${base}/readyz`)).json(), { status: 'ready' }, 'ready, no details for anyone');
    const welcome = await fetch(`${base}/`);
    t.equal(welcome.status, 200, 'the welcome page');
    t.match(await welcome.text(), '/demo', 'which links to the demo');

    // The demo's sign-in, as a newcomer: sign up on the hosted page.
    const email = 'newcomer@example.com';
    const browser = new BrowserClient();
    let res = await browser.follow(`${base}/demo/login`);
    t.match(res.url, /\/login\/sign-in\?request=/, 'the demo sends the browser to the hosted sign-in');
    const request = new URL(res.url).searchParams.get('request')!;
    res = await browser.request(`${base}/login/sign-up?request=${encodeURIComponent(request)}`);
    t.equal(res.status, 200, 'the sign-up page');
    res = await browser.follow(`${base}/login/sign-up`, () => false, {
      form: {
        ...BrowserClient.hiddenFields(res.body, '/login/sign-up'),
        name: 'New Comer',
        email,
        password: 'a newcomer passphrase',
      },
    });
    t.match(res.body, /Check your inbox/);

    // The sign-up's confirmation link, from the development outbox (issue 31: the account is created
    // when its button is pressed).
    const outbox = join(clone, 'data', 'outbox.jsonl');
    let link: string | undefined;
    for (let i = 0; i < 50 && !link; i++) {
      const mails = existsSync(outbox) ? readFileSync(outbox, 'utf8').trim().split('\n') : [];
      for (const line of mails) link ??= /https?:\/\/\S+sign-up\/confirm\S*/.exec(JSON.parse(line).text)?.[0];
      if (!link) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    t.ok(link, 'the sign-up mail is in data/outbox.jsonl');
    res = await browser.follow(link!);
    t.match(res.body, `Create your account for ${email}`, 'the link opens a page with a button');
    res = await browser.follow(`${base}/login/sign-up/confirm`, () => false, {
      form: BrowserClient.hiddenFields(res.body, '/login/sign-up/confirm'),
    });
    if (/\/login\/consent/.test(res.url)) {
      t.match(res.body, /Demo application/);
      res = await browser.follow(`${base}/login/consent`, () => false, {
        form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision: 'allow' },
      });
    }
    t.equal(res.url, `${base}/demo`, 'back on the demo');
    t.equal(res.status, 200);
    t.match(res.body, `Signed in as <strong>${email}</strong>`, 'signed in');
    t.match(res.body, /UserInfo/);

    // Without ADMIN_API_TOKEN there is no admin API; the README's restart with a token enables it, and a
    // restart with nothing changed skips the build.
    t.equal((await fetch(`${base}/api/admin/applications`)).status, 404, 'no admin API without a token');
    await first.stop();
    const withToken = adminTokenCommand();
    t.match(withToken, /^ADMIN_API_TOKEN=\$\(openssl rand -base64 32\) npm start$/, 'the README admin-token start');
    const second = await start(withToken);
    t.ok(second.ready, 'ready again', { output: second.output().slice(-4000) });
    t.match(first.output(), /building \(/, 'the first start built');
    t.notMatch(second.output(), /building \(/, `restarted without a build, in ${second.seconds.toFixed(1)} s`);
    const admin = await fetch(`${base}/api/admin/applications`);
    t.equal(admin.status, 401, 'the admin API exists and wants the token');
    const demo = await fetch(`${base}/api/public/applications/demo`);
    t.equal(demo.status, 200, 'the data survived the restart (./data)');
  },
);
