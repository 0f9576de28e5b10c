// Mail delivery: retries with backoff against a real SMTP server that refuses deliveries, the readiness
// detail, failures that never reach the requester, and the development outbox without SMTP.
import t from 'tap';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createServer, type AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerError } from 'smtp-server';
import { simpleParser, type ParsedMail } from 'mailparser';
import type { FastifyInstance } from 'fastify';
import { ADMIN_TOKEN, buildTestApp } from '../helpers/app.js';
import type { MailStats } from '../../src/mail/mailer.js';
import { createTestDatabase } from '../helpers/db.js';

// One database for the file's apps: each test has its own app, SMTP server, users (newUser) and DATA_DIR, and
// the mail queue and its counts live in the app.
const database = await createTestDatabase();
t.teardown(() => database.dispose());

const GENERIC = { status: true, message: 'If this email exists in our system, check your email for the reset link' };
const SMTP_USER = 'mail-user-x7';
const SMTP_PASS = 'smtp-Secret-Pass-93kq';

interface FlakySmtpOptions {
  /** Deliveries (DATA) refused with 451 before one is accepted; Infinity refuses all. */
  rejectFirst?: number;
  /** Requires AUTH with these credentials. */
  auth?: { user: string; pass: string };
  /** Refuses every AUTH. */
  authFails?: boolean;
  /** Accepted deliveries wait for this before the server answers 250. */
  gate?: Promise<void>;
}

/** A real SMTP server that refuses the first N deliveries (or all of them). */
async function startFlakySmtp(options: FlakySmtpOptions = {}) {
  const state = { attempts: 0, authAttempts: 0, dataStarted: 0, received: [] as ParsedMail[] };
  const server = new SMTPServer({
    logger: false,
    authOptional: !options.auth,
    allowInsecureAuth: true,
    disabledCommands: options.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    onAuth(auth, _session, callback) {
      state.authAttempts += 1;
      if (options.authFails || auth.username !== options.auth?.user || auth.password !== options.auth?.pass) {
        const err: SMTPServerError = new Error('Authentication failed');
        err.responseCode = 535;
        return callback(err);
      }
      callback(null, { user: auth.username });
    },
    onData(stream, _session, callback) {
      state.attempts += 1;
      state.dataStarted += 1;
      const attempt = state.attempts;
      simpleParser(stream).then(
        async (parsed) => {
          if (attempt <= (options.rejectFirst ?? 0)) {
            const err: SMTPServerError = new Error('try later');
            err.responseCode = 451;
            return callback(err);
          }
          await options.gate;
          state.received.push(parsed);
          callback();
        },
        (error: Error) => callback(error),
      );
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.server.address() as AddressInfo).port;
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port, url: `smtp://127.0.0.1:${port}`, state };
}

const postJson = (app: FastifyInstance, url: string, payload: unknown) =>
  app.inject({
    method: 'POST',
    url,
    payload: JSON.stringify(payload),
    headers: { 'content-type': 'application/json' },
  });

async function readiness(app: FastifyInstance) {
  // The mail counts are the operator's: shown with the admin token only (issue 31, item 6).
  const res = await app.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: res.statusCode, body: res.json() as { status: string; mail: MailStats } };
}

/** Waits for the background part of reset requests and for the mail queue (with its retries). */
async function settle(app: FastifyInstance) {
  await app.services.recovery.drain();
  await app.services.mailer.drain(5000);
}

let n = 0;
async function newUser(app: FastifyInstance) {
  const email = `mail${++n}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  await app.services.users.create({ email, password: 'mail-password-1', emailVerified: true }, { actor: 'test' });
  return email;
}

const resetRequest = (app: FastifyInstance, email: string) =>
  postJson(app, '/api/auth/request-password-reset', { email, redirectTo: '/login/reset-password' });

t.test('a refused delivery is retried until it gets through; /readyz shows the retries', async (t) => {
  const smtp = await startFlakySmtp({ rejectFirst: 2 });
  const { app } = await buildTestApp(t, { database, env: { SMTP_URL: smtp.url, MAIL_RETRY_DELAYS: '0.05,0.05,0.05' } });
  const before = await readiness(app);
  t.same(
    before.body.mail,
    { transport: 'smtp', sent: 0, failed: 0, retried: 0, pending: 0, lastFailure: null },
    'nothing sent yet',
  );

  const email = await newUser(app);
  const res = await resetRequest(app, email);
  t.equal(res.statusCode, 200);
  t.same(res.json(), GENERIC);
  await settle(app);

  t.equal(smtp.state.attempts, 3, 'two refusals, then the accepted delivery');
  t.equal(smtp.state.received.length, 1, 'the mail arrived once');
  const mail = smtp.state.received[0]!;
  t.equal(mail.subject, 'Reset your password');
  t.match(
    mail.text ?? '',
    /http:\/\/localhost:3000\/api\/auth\/reset-password\/[A-Za-z0-9_-]{43}\?redirectTo=/,
    'with its link',
  );
  const link = new URL(/https?:\/\/\S+/.exec(mail.text ?? '')![0]);
  const followed = await app.inject({ method: 'GET', url: link.pathname + link.search });
  t.ok(new URL(followed.headers.location as string).searchParams.get('token'), 'the link of the retried mail works');

  const after = await readiness(app);
  t.equal(after.status, 200);
  t.equal(after.body.status, 'ready');
  t.match(after.body.mail, { transport: 'smtp', sent: 1, failed: 0, retried: 2, pending: 0 });
  t.match(
    after.body.mail.lastFailure,
    { kind: 'password-reset', error: /451/ },
    'the last (recovered) failure is shown',
  );
});

t.test(
  'a server that always refuses: the mail is given up, the requester never notices, readiness stays 200',
  async (t) => {
    const smtp = await startFlakySmtp({ rejectFirst: Infinity, auth: { user: SMTP_USER, pass: SMTP_PASS } });
    const { app, logs } = await buildTestApp(t, {
      database,
      env: { SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${smtp.port}`, MAIL_RETRY_DELAYS: '0.05,0.05,0.05' },
    });
    const email = await newUser(app);
    const res = await resetRequest(app, email);
    t.equal(res.statusCode, 200, 'request-password-reset answers as usual');
    t.same(res.json(), GENERIC);
    await settle(app);
    t.ok(smtp.state.authAttempts >= 1, 'the client authenticated with the credentials of SMTP_URL');
    t.equal(smtp.state.attempts, 4, 'one attempt and three retries');
    t.equal(smtp.state.received.length, 0);

    const ready = await readiness(app);
    t.equal(ready.status, 200, 'failing mail does not make the instance unready');
    t.equal(ready.body.status, 'ready');
    t.match(ready.body.mail, { transport: 'smtp', sent: 0, failed: 1, retried: 3, pending: 0 });
    const failure = ready.body.mail.lastFailure!;
    t.ok(failure, 'lastFailure is set');
    t.equal(failure.kind, 'password-reset');
    t.match(failure.error, /451/);
    t.ok(!Number.isNaN(Date.parse(failure.at)), 'with a time');
    t.notOk(failure.error.includes(SMTP_PASS), 'no password in lastFailure');
    t.notOk(failure.error.includes(SMTP_USER), 'no user name in lastFailure');

    // Sign-up (its confirmation mail) answers 201 with its normal body too.
    const signUp = await postJson(app, '/api/auth/sign-up', { email: `new-${email}`, password: 'mail-password-2' });
    t.equal(signUp.statusCode, 201);
    t.match(signUp.json(), { status: true, message: /Check your inbox/ });
    t.notOk(
      signUp.cookies.some((c) => c.name === app.sessionCookieName),
      'and signs nobody in (issue 31: the account exists once the mailed link is confirmed)',
    );
    await settle(app);
    const later = await readiness(app);
    t.equal(later.status, 200);
    t.match(later.body.mail, { sent: 0, failed: 2, retried: 6, pending: 0 });
    t.equal(later.body.mail.lastFailure!.kind, 'sign-up-confirmation');

    const text = logs.text();
    t.match(text, 'mail could not be sent; giving up', 'the failure is logged');
    t.notOk(text.includes(SMTP_PASS), 'the SMTP password is not in the log');
  },
);

t.test('refused authentication: lastFailure names the problem without the credentials', async (t) => {
  const smtp = await startFlakySmtp({ auth: { user: SMTP_USER, pass: SMTP_PASS }, authFails: true });
  const { app, logs } = await buildTestApp(t, {
    database,
    env: { SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${smtp.port}`, MAIL_RETRY_DELAYS: '0.05' },
  });
  const email = await newUser(app);
  const res = await resetRequest(app, email);
  t.same([res.statusCode, res.json()], [200, GENERIC]);
  await settle(app);
  t.equal(smtp.state.authAttempts, 2, 'tried twice');
  t.equal(smtp.state.attempts, 0, 'never got to DATA');
  const ready = await readiness(app);
  t.equal(ready.status, 200);
  t.match(ready.body.mail, { sent: 0, failed: 1, retried: 1, pending: 0 });
  t.match(ready.body.mail.lastFailure!.error, /535|EAUTH/);
  t.notOk(ready.body.mail.lastFailure!.error.includes(SMTP_PASS));
  t.notOk(logs.text().includes(SMTP_PASS), 'nor in the log');
});

t.test('an unreachable SMTP server: given up after the retries, the response is unchanged', async (t) => {
  // A port that was just free and is closed again: connections to it are refused.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const { app } = await buildTestApp(t, {
    database,
    env: { SMTP_URL: `smtp://${SMTP_USER}:${SMTP_PASS}@127.0.0.1:${port}`, MAIL_RETRY_DELAYS: '0.05,0.05' },
  });
  const email = await newUser(app);
  const res = await resetRequest(app, email);
  t.same([res.statusCode, res.json()], [200, GENERIC]);
  await settle(app);
  const ready = await readiness(app);
  t.equal(ready.status, 200);
  t.match(ready.body.mail, { sent: 0, failed: 1, retried: 2, pending: 0 });
  t.match(ready.body.mail.lastFailure!.error, /ECONNREFUSED|ECONNECTION/);
  t.notOk(ready.body.mail.lastFailure!.error.includes(SMTP_PASS));
});

t.test('MAIL_RETRY_DELAYS=none: one attempt only', async (t) => {
  const smtp = await startFlakySmtp({ rejectFirst: 1 });
  const { app } = await buildTestApp(t, { database, env: { SMTP_URL: smtp.url, MAIL_RETRY_DELAYS: 'none' } });
  const email = await newUser(app);
  t.equal((await resetRequest(app, email)).statusCode, 200);
  await settle(app);
  t.equal(smtp.state.attempts, 1);
  t.match((await readiness(app)).body.mail, { sent: 0, failed: 1, retried: 0, pending: 0 });
});

t.test('sending never holds the HTTP response: the answer comes while the SMTP server is still busy', async (t) => {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const smtp = await startFlakySmtp({ gate });
  const { app } = await buildTestApp(t, { database, env: { SMTP_URL: smtp.url, MAIL_RETRY_DELAYS: '0.05' } });
  t.teardown(() => release());
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 8000).unref());
  const signUp = await Promise.race([
    postJson(app, '/api/auth/sign-up', { email: 'held@example.com', password: 'mail-password-3' }),
    timeout,
  ]);
  if (signUp === 'timeout') {
    t.fail('sign-up waited for the SMTP server');
    return;
  }
  t.equal(signUp.statusCode, 201, 'answered while the mail is held by the server');
  t.match(signUp.json(), { status: true, message: /Check your inbox/ });
  for (let i = 0; i < 100 && smtp.state.dataStarted === 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(smtp.state.dataStarted, 1, 'the mail is in the middle of its delivery');
  t.match((await readiness(app)).body.mail, { sent: 0, pending: 1 }, 'and shows as pending');
  release();
  await settle(app);
  t.equal(smtp.state.received.length, 1);
  t.equal(smtp.state.received[0]!.subject, 'Confirm your e-mail address to create your account');
  t.match((await readiness(app)).body.mail, { sent: 1, failed: 0, pending: 0 });
});

t.test('shutdown gives a waiting retry one last attempt instead of dropping it', async (t) => {
  const smtp = await startFlakySmtp({ rejectFirst: 1 });
  // A long wait before the retry: only the shutdown can make it happen within the test.
  const { app } = await buildTestApp(t, { database, env: { SMTP_URL: smtp.url, MAIL_RETRY_DELAYS: '600' } });
  const email = await newUser(app);
  t.equal((await resetRequest(app, email)).statusCode, 200);
  await app.services.recovery.drain();
  for (let i = 0; i < 200 && app.services.mailer.stats().retried === 0; i++)
    await new Promise((r) => setTimeout(r, 20));
  t.match(
    app.services.mailer.stats(),
    { retried: 1, pending: 1, sent: 0 },
    'the first delivery was refused, the retry waits',
  );
  await app.close();
  t.equal(smtp.state.received.length, 1, 'the retry was made at shutdown and got through');
  t.match(app.services.mailer.stats(), { sent: 1, pending: 0 });
});

t.test('without SMTP_URL mails go to DATA_DIR/outbox.jsonl', async (t) => {
  const { app, config } = await buildTestApp(t, { database, env: { SMTP_URL: undefined } });
  const email = await newUser(app);
  const res = await resetRequest(app, email);
  t.same([res.statusCode, res.json()], [200, GENERIC]);
  await settle(app);
  const file = join(config.dataDir, 'outbox.jsonl');
  const lines = readFileSync(file, 'utf8').trim().split('\n');
  t.equal(lines.length, 1, 'one mail written');
  const entry = JSON.parse(lines[0]!) as { at: string; from: string; to: string; subject: string; text: string };
  t.equal(entry.to, email);
  t.equal(entry.subject, 'Reset your password');
  t.equal(entry.from, config.mailFrom);
  const link = new URL(/https?:\/\/\S+/.exec(entry.text)![0]);
  t.match(link.pathname, /^\/api\/auth\/reset-password\/[A-Za-z0-9_-]{43}$/);
  const followed = await app.inject({ method: 'GET', url: link.pathname + link.search });
  t.equal(followed.statusCode, 302);
  t.ok(new URL(followed.headers.location as string).searchParams.get('token'), 'the outbox link works');
  t.equal(statSync(file).mode & 0o777, 0o600, 'the outbox (it holds live links) is readable by the owner only');

  const signUp = await postJson(app, '/api/auth/sign-up', {
    email: 'outbox-new@example.com',
    password: 'mail-password-4',
  });
  t.equal(signUp.statusCode, 201);
  await settle(app);
  const all = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { to: string; subject: string });
  t.same(
    all.map((m) => [m.to, m.subject]),
    [
      [email, 'Reset your password'],
      ['outbox-new@example.com', 'Confirm your e-mail address to create your account'],
    ],
    'appended',
  );
  const ready = await readiness(app);
  t.equal(ready.status, 200);
  t.match(ready.body.mail, { transport: 'outbox', sent: 2, failed: 0, retried: 0, pending: 0, lastFailure: null });
});
