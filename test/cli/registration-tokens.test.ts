// `idp registration-tokens`: initial access tokens for REGISTRATION=token, in-process (run(argv, io)): made (shown
// once), listed (never shown), revoked. Their use at {issuer}/register: test/integration/dynamic-registration.test.ts.
import t from 'tap';
import { cliContext, exits, parseJson } from './fixtures/run-cli.js';

t.setTimeout(300_000);

interface Token {
  id: string;
  token?: string;
  usesLeft: number | null;
  description: string | null;
}

t.test('registration-tokens: create, list, revoke', { timeout: 280_000 }, async (t) => {
  const cli = await cliContext(t);
  const usage = await cli.run(['registration-tokens', 'revoke', 'rt_x']);
  exits(t, usage, 2);
  t.match(usage.stderr, /--yes/);
  exits(t, await cli.run(['registration-tokens', 'create', '--days', 'many']), 2);

  const created = await cli.run(['registration-tokens', 'create', '--description', 'ci', '--uses', '3', '--json']);
  exits(t, created, 0);
  const token = parseJson<Token>(created);
  t.match(token, { id: /^rt_/, token: /^[A-Za-z0-9_-]{43}$/, usesLeft: 3, description: 'ci' });

  const plain = await cli.run(['registration-tokens', 'create', '--days', '2']);
  exits(t, plain, 0);
  t.match(plain.stdout.trim(), /^[A-Za-z0-9_-]{43}$/, 'the token alone on stdout');
  t.match(plain.stderr, /It is not shown again/);

  const listed = await cli.run(['registration-tokens', 'list', '--json']);
  exits(t, listed, 0);
  const items = parseJson<{ items: Token[] }>(listed).items;
  t.equal(items.length, 2);
  t.notOk(
    items.some((i) => 'token' in i),
    'the list never shows a token',
  );
  t.match((await cli.run(['registration-tokens', 'list'])).stdout, /USES LEFT/);

  exits(t, await cli.run(['registration-tokens', 'revoke', token.id, '--yes']), 0);
  const after = parseJson<{ items: Token[] }>(await cli.run(['registration-tokens', 'list', '--json'])).items;
  t.same(after.map((i) => i.id).includes(token.id), false, 'revoked');
  exits(t, await cli.run(['registration-tokens', 'revoke', token.id, '--yes']), 1);
});
