// The first admin: `idp serve` never writes the setup link (a token) into a log record. In development
// it prints it on the console as a line of its own; in production it issues none and logs how to create
// the first admin; `idp admin setup-link` prints a one-time link on the terminal instead.
import t from 'tap';
import { cliContext, exits, parseJson, startServe, type ServeHandle } from './fixtures/run-cli.js';
import { buildTestApp } from '../helpers/app.js';
import { PRODUCTION_PASSWORD_HASH_ENV } from '../helpers/password-cost.js';

t.setTimeout(300_000);

const LINK = /https?:\/\/[^\s"]+\/setup\?token=([A-Za-z0-9_-]{43})/;

async function waitFor(server: ServeHandle, pattern: RegExp, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!pattern.test(server.output())) {
    if (Date.now() > until) throw new Error(`never printed ${pattern}:\n${server.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stop(server: ServeHandle) {
  server.child.kill('SIGTERM');
  await server.exited;
}

/** The log records (JSON lines) and the other lines of a process's output. */
function split(output: string) {
  const records: string[] = [];
  const plain: string[] = [];
  for (const line of output.split('\n')) {
    try {
      JSON.parse(line);
      records.push(line);
    } catch {
      plain.push(line);
    }
  }
  return { records, plain };
}

t.test(
  'development: the setup link is printed on a line of its own, and no log record carries it',
  { timeout: 200_000 },
  async (t) => {
    const cli = await cliContext(t);
    const server = await startServe(t, {
      ...cli.env,
      NODE_ENV: 'development',
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    });
    await waitFor(server, /or run: idp users create --admin/);
    const { records, plain } = split(server.output());
    const line = plain.find((l) => LINK.test(l));
    t.ok(line, 'a console line carries the link');
    t.match(line!.trim(), new RegExp(`^${LINK.source}$`), 'the link alone on its line (trimmed)');
    const token = LINK.exec(line!)![1]!;
    t.notOk(
      records.some((r) => r.includes(token) || /setup\?token=/.test(r)),
      'no JSON log record carries the link or its token',
    );
    t.ok(
      records.some((r) => /No admin user exists yet/.test(r)),
      'the log says a link was printed on the console',
    );
    await stop(server);
  },
);

t.test(
  'production: no setup token anywhere in the output; idp admin setup-link prints one on the terminal',
  { timeout: 250_000 },
  async (t) => {
    const SECRET_KEY = 'production-secret-key-0123456789abcdef';
    const cli = await cliContext(t, {
      NODE_ENV: 'production',
      SECRET_KEY,
      BASE_URL: 'http://127.0.0.1:1',
      ...PRODUCTION_PASSWORD_HASH_ENV,
    });
    const server = await startServe(t, { ...cli.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' });
    await waitFor(server, /No admin user exists yet/);
    // Give a late print a chance to show up before looking.
    await new Promise((r) => setTimeout(r, 300));
    const output = server.output();
    t.notMatch(output, /setup\?token=/, 'no setup link');
    const { records } = split(output);
    const hint = records.find((r) => /No admin user exists yet/.test(r));
    t.match(hint, /idp admin setup-link/, 'the log names the CLI command that prints a link');
    t.match(hint, /idp users create --admin/, 'and the one that creates an admin');
    await stop(server);

    const open = () => cli.openDatabase();
    const before = await open();
    try {
      const rows = await before.db.selectFrom('admin_setup_tokens').select('token_hash').execute();
      t.equal(rows.length, 0, 'no setup token was even issued');
    } finally {
      await before.close();
    }

    const printed = await cli.run(['admin', 'setup-link']);
    if (!exits(t, printed, 0)) return;
    const link = printed.stdout.trim();
    t.match(link, new RegExp(`^${LINK.source}$`), 'stdout is the link alone');
    t.match(printed.stderr, /works once/);
    const json = await cli.run(['admin', 'setup-link', '--json']);
    exits(t, json, 0);
    const { link: second, expiresAt } = parseJson<{ link: string; expiresAt: string }>(json);
    t.match(second, LINK);
    t.ok(Date.parse(expiresAt) > Date.now(), 'expiresAt in the future');

    // Both links work (each once) until an admin exists.
    const handle = await open();
    const { app } = await buildTestApp(
      { teardown: () => {} },
      { env: { SECRET_KEY }, database: { ...handle, dispose: () => handle.close() } },
    );
    try {
      t.equal(await app.services.adminSetup.isUsable(LINK.exec(link)![1]!), true, 'the printed link is usable');
      await app.services.adminSetup.complete(
        LINK.exec(second)![1]!,
        { email: 'first@example.com', name: '', password: 'first admin passphrase' },
        { ip: null, userAgent: null },
      );
    } finally {
      await app.close();
      await handle.close();
    }
    const refused = await cli.run(['admin', 'setup-link']);
    exits(t, refused, 1, 'once an admin exists: exit 1');
    t.match(refused.stderr, /an admin exists already/);
    t.equal(refused.stdout, '');
  },
);

t.test('admin: usage', async (t) => {
  const cli = await cliContext(t);
  const help = await cli.run(['admin', '--help']);
  exits(t, help, 0);
  t.match(help.stdout, /setup-link/);
  const unknown = await cli.run(['admin', 'nope']);
  exits(t, unknown, 2);
  t.match(unknown.stderr, /unknown subcommand "admin nope"/);
});
