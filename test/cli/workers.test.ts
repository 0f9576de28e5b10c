// WORKERS=N: N server processes on one port (node:cluster). Refused on the embedded database; on
// PostgreSQL both workers serve, a worker that dies is replaced, and SIGTERM to the primary shuts every
// worker down gracefully.
import t from 'tap';
import { cliContext, exits, startServe, usingPostgres } from './fixtures/run-cli.js';

t.setTimeout(300_000);
const opts = { timeout: 200_000 };
const SECRET_KEY = 'cli-test-secret-key-0123456789abcdefghij';

t.test('WORKERS > 1 on the embedded database: refused at once, saying what to do', opts, async (t) => {
  const cli = await cliContext(t);
  const result = await cli.spawn(['serve'], { env: { WORKERS: '2', SECRET_KEY, DATABASE_URL: '' } });
  exits(t, result, 1);
  t.match(result.stderr, /WORKERS=2 needs DATABASE_URL/);
  t.match(result.stderr, /WORKERS=1/);
});

t.test('WORKERS=0 is a configuration error', opts, async (t) => {
  const cli = await cliContext(t);
  const result = await cli.spawn(['serve'], { env: { WORKERS: '0', SECRET_KEY } });
  exits(t, result, 1);
  t.match(result.stderr, /WORKERS/);
});

/** The pids of the processes that logged "listening" so far. */
function listeningPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    try {
      const entry = JSON.parse(line) as { msg?: string; pid?: number; address?: string };
      if (entry.msg?.includes('identity provider listening') && entry.pid) pids.add(entry.pid);
    } catch {
      // not a log line
    }
  }
  return pids;
}

async function waitFor(what: string, check: () => boolean, ms = 60_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test(
  'WORKERS=2 on PostgreSQL: two processes serve one port, a dead one is replaced, SIGTERM ends all',
  { ...opts, skip: usingPostgres ? false : 'needs PostgreSQL (DATABASE_URL); CI runs it there' },
  async (t) => {
    const cli = await cliContext(t);
    const server = await startServe(t, { ...cli.env, WORKERS: '2', LOG_LEVEL: 'info', PORT: '0', SECRET_KEY });
    await waitFor('two workers listening', () => listeningPids(server.output()).size === 2);
    const pids = [...listeningPids(server.output())];
    t.notOk(pids.includes(server.child.pid!), 'the workers are not the primary');
    const urls = new Set(
      server
        .output()
        .split('\n')
        .filter((l) => l.includes('identity provider listening'))
        .map((l) => (JSON.parse(l) as { address: string }).address),
    );
    t.equal(urls.size, 1, 'one address for both');
    for (let i = 0; i < 10; i++) {
      const res = await fetch(`${server.url}/readyz`, { headers: { connection: 'close' } });
      t.equal(res.status, 200);
    }
    t.match(server.output(), /started 2 worker processes/);

    // A worker killed outright is replaced.
    process.kill(pids[0]!, 'SIGKILL');
    await waitFor('a replacement worker', () => listeningPids(server.output()).size === 3);
    t.match(server.output(), new RegExp(`worker \\d \\(pid ${pids[0]}\\) exited \\(code null, signal SIGKILL\\)`));
    t.equal((await fetch(`${server.url}/readyz`)).status, 200, 'still serving');

    server.child.kill('SIGTERM');
    const exit = await server.exited;
    t.same(exit, { code: 0, signal: null }, 'the primary exits 0 after its workers', { output: server.output() });
    const shutDown = server.output().match(/"msg":"shut down cleanly"/g) ?? [];
    t.equal(shutDown.length, 2, 'both workers shut down gracefully');
    for (const pid of listeningPids(server.output())) {
      t.throws(() => process.kill(pid, 0), 'no worker is left running');
    }
  },
);
