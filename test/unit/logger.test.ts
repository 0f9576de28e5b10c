import t from 'tap';
import pino from 'pino';
import { Writable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger, loggerOptions, redactUrl } from '../../src/logger.js';

t.test('secret query values and reset tokens are masked in logged URLs', async (t) => {
  t.equal(redactUrl('/cb?code=abc&state=xyz'), '/cb?code=[REDACTED]&state=xyz');
  t.equal(
    redactUrl('/x?access_token=a&Refresh_Token=b&id_token_hint=c'),
    '/x?access_token=[REDACTED]&Refresh_Token=[REDACTED]&id_token_hint=[REDACTED]',
  );
  t.equal(redactUrl('/api/auth/reset-password/s3cr3t?x=1'), '/api/auth/reset-password/[REDACTED]?x=1');
  t.equal(redactUrl('/setup?token=abc'), '/setup?token=[REDACTED]');
  t.equal(redactUrl('/plain'), '/plain');
  t.equal(redactUrl('/x?%63ode=abc'), '/x?%63ode=[REDACTED]', 'percent-encoded names are recognised');
});

t.test('secret fields of logged objects are redacted at any depth up to three levels', async (t) => {
  const lines: string[] = [];
  const stream = new Writable({
    write(c, _e, done) {
      lines.push(c.toString());
      done();
    },
  });
  const log = pino(loggerOptions('info'), stream);
  log.info(
    {
      password: 'p1',
      body: { newPassword: 'p2', refresh_token: 'r1' },
      headers: { authorization: 'Bearer a1', cookie: 'c=1' },
      req: { method: 'GET', url: '/cb?code=c0de', headers: { authorization: 'Bearer a2' } },
    },
    'x',
  );
  const text = lines.join('');
  for (const secret of ['p1', 'p2', 'r1', 'Bearer a1', 'c=1', 'c0de', 'Bearer a2']) t.notMatch(text, secret);
  t.match(text, /\[REDACTED\]/);
});

t.test("a request's logger is made only when it logs at an enabled level, with its bindings", async (t) => {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const parent = pino({ ...loggerOptions('warn') }, stream);
  let made = 0;
  const child = parent.child.bind(parent);
  parent.child = ((...args: Parameters<typeof child>) => {
    made++;
    return child(...args);
  }) as typeof parent.child;
  const log = lazyChildLogger(parent as unknown as FastifyBaseLogger, { reqId: 'r1' }, {});
  log.info({ password: 'x' }, 'not logged');
  log.debug('not logged');
  t.equal(made, 0, 'nothing logged at an enabled level: no child made');
  t.equal(log.level, 'warn');
  log.warn({ password: 'hunter2' }, 'logged');
  log.error('again');
  t.equal(made, 1, 'made once, on the first enabled call');
  t.equal(lines.length, 2);
  const first = JSON.parse(lines[0]!);
  t.equal(first.reqId, 'r1', 'the bindings are there');
  t.equal(first.password, '[REDACTED]', 'and redaction');
  // A route's own level (Fastify passes it in the options).
  const quiet = lazyChildLogger(parent as unknown as FastifyBaseLogger, { reqId: 'r2' }, { level: 'error' });
  quiet.warn('below the route level');
  t.equal(made, 1);
  t.equal(lines.length, 2);
  const loud = lazyChildLogger(parent as unknown as FastifyBaseLogger, { reqId: 'r3' }, { level: 'info' });
  loud.info('at the route level');
  t.equal(lines.length, 3);
  t.equal(JSON.parse(lines[2]!).reqId, 'r3');
});
