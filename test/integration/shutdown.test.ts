// Graceful shutdown: in-flight requests finish, new connections are refused, the database is closed.
import t from 'tap';
import { request } from 'node:http';
import { startServer } from '../../app/server.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { logCollector, testConfig } from '../helpers/app.js';

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent: false }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

t.test('shutdown lets an in-flight request finish, then refuses connections and closes the database', async (t) => {
  // The server opens the configured database itself (embedded, file-backed in a fresh DATA_DIR), so
  // closing it is the server's job; the lock file disappears when it is closed.
  const config = testConfig({ PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' });
  const logs = logCollector();
  let releaseSlow!: () => void;
  const slowStarted = new Promise<void>((resolveStarted) => {
    // Register a slow route before the app is ready, through the build hook of the test.
    (globalThis as { __slowStarted?: () => void }).__slowStarted = resolveStarted;
  });
  const server = await startServer(config, {
    logStream: logs.stream,
    configure(app) {
      app.get('/slow', async () => {
        (globalThis as { __slowStarted?: () => void }).__slowStarted?.();
        await new Promise<void>((r) => (releaseSlow = r));
        return { finished: true };
      });
    },
  });
  const inFlight = get(`${server.url}/slow`);
  await slowStarted;
  const closing = server.shutdown('test');
  await new Promise((r) => setTimeout(r, 100));
  await t.rejects(get(`${server.url}/healthz`), { code: 'ECONNREFUSED' }, 'new connections are refused');
  releaseSlow();
  const finished = await inFlight;
  t.equal(finished.status, 200);
  t.same(JSON.parse(finished.body), { finished: true });
  await closing;
  t.notOk(existsSync(join(config.dataDir, 'idp.lock')), 'the database was closed and its lock released');
  t.match(logs.text(), /shut down cleanly/);
});
