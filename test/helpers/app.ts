// Test apps: real config parsing, a real database of the test file's own, logs captured in memory.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp, type BuildOptions } from '../../app/app.js';
import { loadConfig, type Config } from '../../src/config.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { CHEAP_PASSWORD_HASH_ENV } from './password-cost.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdefghijklmnop';

export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'info',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'idp-test-')),
    SECRET_KEY: 'test-secret-key-0123456789abcdefghijklmnop',
    ADMIN_API_TOKEN: ADMIN_TOKEN,
    BASE_URL: 'http://localhost:3000',
    // Rate limits would make suites that sign in many times from 127.0.0.1 flaky; the rate-limit
    // tests turn them on explicitly.
    RATE_LIMITS: 'off',
    // argon2's cheapest cost (./password-cost.ts); a test that checks a cost sets its own.
    ...CHEAP_PASSWORD_HASH_ENV,
    ...env,
  });
}

/** Collects log lines (parsed JSON) so tests can assert what was and was not logged. */
export function logCollector() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  return { stream, lines, text: () => lines.join('\n') };
}

interface TapLike {
  teardown(fn: () => unknown): void;
}

export interface TestApp {
  app: FastifyInstance;
  database: TestDatabase;
  config: Config;
  logs: ReturnType<typeof logCollector>;
}

export async function buildTestApp(
  t: TapLike,
  options: { env?: Record<string, string | undefined>; database?: TestDatabase } & Omit<
    BuildOptions,
    'database' | 'logStream'
  > = {},
): Promise<TestApp> {
  const config = testConfig(options.env);
  const database = options.database ?? (await createTestDatabase());
  const logs = logCollector();
  const app = await buildApp(config, {
    database,
    logStream: logs.stream,
    ...(options.staticApplications ? { staticApplications: options.staticApplications } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
  });
  t.teardown(async () => {
    await app.close();
    if (!options.database) await database.dispose();
  });
  return { app, database, config, logs };
}

export const adminHeaders = { authorization: `Bearer ${ADMIN_TOKEN}` };
