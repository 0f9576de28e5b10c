// A real server on a loopback port over the test file's own database, with mail to an in-process SMTP
// server, for end-to-end tests with relying-party libraries and browsers.
import type { BuildOptions } from '../../app/app.js';
import { startServer, type RunningServer } from '../../app/server.js';
import { logCollector, testConfig } from './app.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { startSmtp } from './smtp.js';

interface TapLike {
  teardown(fn: () => unknown): void;
}

/** `options.configure` runs last in buildApp: tests add routes of their own on the provider's origin. */
export async function startTestServer(
  t: TapLike,
  env: Record<string, string> = {},
  options: Pick<BuildOptions, 'configure' | 'clock'> = {},
) {
  const smtp = await startSmtp();
  const database: TestDatabase = await createTestDatabase();
  const logs = logCollector();
  // Bind first to learn the port, so BASE_URL (and so the issuer) names the real address.
  const probe = await import('node:net').then(
    ({ createServer }) =>
      new Promise<number>((resolve) => {
        const s = createServer().listen(0, '127.0.0.1', () => {
          const port = (s.address() as { port: number }).port;
          s.close(() => resolve(port));
        });
      }),
  );
  const config = testConfig({
    PORT: String(probe),
    HOST: '127.0.0.1',
    BASE_URL: `http://127.0.0.1:${probe}`,
    SMTP_URL: smtp.url,
    ...env,
  });
  // What the server prints on its console outside the log (the development setup link).
  const printed: string[] = [];
  const server: RunningServer = await startServer(config, {
    database,
    logStream: logs.stream,
    console: (text) => printed.push(...text.split('\n')),
    ...(options.configure ? { configure: options.configure } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  t.teardown(async () => {
    await server.shutdown('test done');
    await database.dispose();
    await smtp.close();
  });
  return {
    server,
    config,
    database,
    smtp,
    logs,
    printed,
    baseUrl: config.baseUrl,
    issuer: config.issuer,
    app: server.app,
  };
}
