// The CLI's argument parsing: values that start with a dash (key ids are base64url thumbprints) are values.
import t from 'tap';
import { parse } from '../../src/cli/args.js';
import { UsageError } from '../../src/cli/errors.js';

const KID = '-ExampleThumbprint_0123456789abcdefghijklmnopq';

t.test('a positional that starts with one dash is a positional, in its place', async (t) => {
  t.same(parse(['retire', KID, '--yes'], {}).positionals, ['retire', KID]);
  t.same(parse([KID, 'b', '-x_y'], {}).positionals, [KID, 'b', '-x_y']);
  t.equal(parse([KID, '--yes'], {}).values.yes, true);
});

t.test('a value that starts with one dash belongs to the string option before it', async (t) => {
  const { values, positionals } = parse(['sam@example.com', '--grant', KID, '--revoke'], {
    grant: { type: 'string' },
    revoke: { type: 'boolean' },
  });
  t.equal(values.grant, KID);
  t.equal(values.revoke, true);
  t.same(positionals, ['sam@example.com']);
  t.equal(parse(['--limit', '-5'], { limit: { type: 'string' } }).values.limit, '-5');
});

t.test('"--" still ends the options; short options and mistakes still fail clearly', async (t) => {
  t.same(parse(['--', '--yes', KID], {}).positionals, ['--yes', KID]);
  t.equal(parse(['-h'], {}).values.help, true);
  t.throws(() => parse(['-x'], {}), /Unknown option '-x'/);
  t.ok(thrown(() => parse(['-x'], {})) instanceof UsageError, 'a usage error (exit code 2)');
  t.throws(() => parse(['--nope'], {}), /Unknown option '--nope'/);
  t.throws(() => parse(['-yes'], {}), /unknown option -yes; did you mean --yes\?/);
  t.same(parse(['-constructor'], {}).positionals, ['-constructor'], 'not an option every object inherits');
  t.throws(() => parse(['--grant'], { grant: { type: 'string' } }), /argument missing/);
  t.throws(() => parse(['--grant', '--yes'], { grant: { type: 'string' } }), /ambiguous/);
});

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}
