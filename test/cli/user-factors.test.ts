// `idp users factors` and `idp users reset-factors` (issue 34): an operator lists a user's second factors (never a
// secret), removes one (--remove ID --yes) or all of them (--yes), each audited with the CLI's actor, ending the
// user's sessions and mailing the user (DATA_DIR/outbox.jsonl without SMTP_URL). The commands run in-process;
// the factors are rows inserted through an app opened on the same database between runs.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliContext, exits } from './fixtures/run-cli.js';
import { buildTestApp } from '../helpers/app.js';

t.setTimeout(240_000);

t.test('users factors, factors --remove, reset-factors', { timeout: 220_000 }, async (t) => {
  const cli = await cliContext(t);
  const email = 'dana@example.com';
  const created = await cli.run(['users', 'create', '--email', email, '--verified', '--password-stdin'], {
    input: 'dana-password-long-1\n',
  });
  if (!exits(t, created, 0)) return;

  /** The same database, opened here between CLI runs (the context's: cli.openDatabase). */
  async function withApp<T>(fn: (app: Awaited<ReturnType<typeof buildTestApp>>['app']) => Promise<T>): Promise<T> {
    const handle = await cli.openDatabase();
    const { app } = await buildTestApp(
      { teardown: () => {} },
      { database: { ...handle, dispose: () => handle.close() } },
    );
    try {
      return await fn(app);
    } finally {
      await app.close();
      await handle.close();
    }
  }

  const passkeyId = randomUUID();
  const userId = await withApp(async (app) => {
    const user = await app.services.users.get(email);
    await app.services.sessions.signedIn(user.id, { ip: null, userAgent: null });
    await app.db
      .insertInto('webauthn_credentials')
      .values({
        id: passkeyId,
        user_id: user.id,
        credential_id: 'cred-1',
        public_key: 'DummyPublicKeyNotASecret',
        device_type: 'multiDevice',
        backed_up: true,
        name: 'Phone',
      })
      .execute();
    await app.db
      .insertInto('totp_factors')
      .values({ user_id: user.id, secret: 'sealed-secret-never-shown', confirmed_at: new Date() })
      .execute();
    for (let i = 0; i < 10; i++) {
      await app.db
        .insertInto('recovery_codes')
        .values({ id: randomUUID(), user_id: user.id, code_hash: `hash-${i}` })
        .execute();
    }
    return user.id;
  });

  const list = await cli.run(['users', 'factors', email]);
  exits(t, list, 0);
  t.match(list.stdout, /^ID\s+TYPE\s+NAME\s+CREATED\s+LAST USED\s+DETAILS/m);
  t.match(list.stdout, new RegExp(`^${passkeyId}\\s+passkey\\s+Phone\\s+\\S+\\s+-\\s+synced`, 'm'));
  t.match(list.stdout, /^totp\s+totp\s+Authenticator app/m);
  t.match(list.stdout, /^recovery-codes\s+recovery_code\s+Recovery codes\s+\S+\s+-\s+10 unused/m);
  t.notMatch(list.stdout, /sealed-secret|DummyPublicKey|hash-\d/, 'never a secret');
  const json = await cli.run(['users', 'factors', userId, '--json']);
  exits(t, json, 0);
  t.same(
    (JSON.parse(json.stdout) as { items: Array<{ id: string }> }).items.map((f) => f.id),
    [passkeyId, 'totp', 'recovery-codes'],
  );

  const unconfirmed = await cli.run(['users', 'factors', email, '--remove', 'totp']);
  exits(t, unconfirmed, 2, 'removing without --yes is a usage error');
  t.match(unconfirmed.stderr, /add --yes to confirm/);
  exits(t, await cli.run(['users', 'reset-factors', email]), 2, 'reset without --yes too');
  exits(t, await cli.run(['users', 'factors']), 2, 'no user given');

  const removed = await cli.run(['users', 'factors', email, '--remove', 'totp', '--yes']);
  exits(t, removed, 0);
  t.match(removed.stdout, /Removed the second factor totp of dana@example\.com/);
  const again = await cli.run(['users', 'factors', email, '--remove', 'totp', '--yes']);
  exits(t, again, 1, 'a factor the user does not hold');
  t.match(again.stderr, /no second factor totp/);
  exits(t, await cli.run(['users', 'reset-factors', 'nobody@example.com', '--yes']), 1, 'an unknown user');

  const reset = await cli.run(['users', 'reset-factors', email, '--yes', '--json']);
  exits(t, reset, 0);
  t.same(JSON.parse(reset.stdout), { passkeys: 1, totp: 0, recoveryCodes: 10 });
  const empty = await cli.run(['users', 'factors', email]);
  exits(t, empty, 0);
  t.equal(empty.stdout.trim(), 'No second factors.');

  await withApp(async (app) => {
    const removedEvents = (await app.services.audit.list({ type: 'mfa.factor_removed', userId })).items;
    t.equal(removedEvents.length, 1);
    t.match(removedEvents[0]!.actor, /^cli:/, 'the CLI is the actor');
    t.match(removedEvents[0]!.detail, { kind: 'totp', sessionsRevoked: 1 });
    const resetEvents = (await app.services.audit.list({ type: 'mfa.factors_reset', userId })).items;
    t.match(resetEvents[0]?.actor, /^cli:/);
    t.equal((await app.services.access.listSessions(userId)).filter((s) => s.active).length, 0, 'sessions ended');
  });
  const outbox = readFileSync(join(cli.dataDir, 'outbox.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { to: string; subject: string });
  t.equal(
    outbox.filter((m) => m.to === email && m.subject === 'The sign-in methods of your account changed').length,
    2,
    'the user was told twice',
  );
});
