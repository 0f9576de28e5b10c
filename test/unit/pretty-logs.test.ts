// LOG_FORMAT and the development log lines: pretty only on a development terminal (or when asked), one short
// line per request, and still redacted (pino redacts before pino-pretty sees the record).
import t from 'tap';
import { prettyDestination, usePrettyLogs } from '../../src/logger.js';
import { buildApp } from '../../app/app.js';
import { testConfig } from '../helpers/app.js';
import { createTestDatabase } from '../helpers/db.js';

t.test('the decision: auto is pretty only in development on a terminal; pretty and json force it', async (t) => {
  t.equal(usePrettyLogs('auto', 'development', true), true);
  t.equal(usePrettyLogs('auto', 'development', false), false, 'piped: JSON');
  t.equal(usePrettyLogs('auto', 'production', true), false, 'production: JSON');
  t.equal(usePrettyLogs('auto', 'test', true), false, 'tests: JSON');
  t.equal(usePrettyLogs('pretty', 'production', false), true);
  t.equal(usePrettyLogs('json', 'development', true), false);
});

t.test('a request is one short line, its secrets masked; warnings and errors coloured', async (t) => {
  const lines: string[] = [];
  const plain = await prettyDestination({ write: (s: string) => lines.push(s) }, false);
  const database = await createTestDatabase();
  const app = await buildApp(testConfig({ LOG_LEVEL: 'info' }), { database, logStream: plain });
  t.teardown(async () => {
    await app.close();
    await database.dispose();
  });
  await app.inject({ method: 'GET', url: '/api/auth/.well-known/openid-configuration?code=very-secret-code&state=s1' });
  const line = lines.find((l) => l.includes('openid-configuration'));
  t.ok(line, 'the request line');
  const path = String.raw`\/api\/auth\/\.well-known\/openid-configuration`;
  t.match(line!, new RegExp(String.raw`^\d\d:\d\d:\d\d GET ${path}\?code=\[REDACTED\]&state=s1 200 \d+\.\dms\n$`));
  t.notOk(lines.join('').includes('very-secret-code'), 'the code is masked');

  const coloured: string[] = [];
  const colour = await prettyDestination({ write: (s: string) => coloured.push(s) }, true);
  const time = Date.now();
  colour.write(`${JSON.stringify({ level: 40, time, msg: 'careful' })}\n`);
  colour.write(`${JSON.stringify({ level: 50, time, msg: 'broken', password: '[REDACTED]' })}\n`);
  t.ok(coloured[0]!.includes('\x1b[33mWARN careful\x1b[39m'), 'warnings yellow');
  t.ok(coloured[1]!.includes('\x1b[31mERROR broken\x1b[39m'), 'errors red');
  t.match(coloured[1], /\[REDACTED\]/);
});
