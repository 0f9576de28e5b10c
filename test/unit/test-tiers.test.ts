// The three test tiers (README, "Testing") keep every test file in a run: a file that package.json's tap
// "exclude" keeps out of npm test (and so out of .ci/run) exists, is run by npm run test:heavy
// (scripts/test-heavy.sh) and is in the README's list of what moved there, with why; CI's PostgreSQL run
// names none of them; every file the heavy tier names exists.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/programs.js';

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const pkg = JSON.parse(read('package.json')) as {
  scripts: Record<string, string>;
  tap: { include: string[]; exclude: string[] };
};
const heavyScript = read('scripts/test-heavy.sh');
const ci = read('.ci/run');
const readme = read('README.md');
const testing = /\n## Testing\n([\s\S]*?)(?=\n## |$)/.exec(readme)?.[1] ?? '';

const TAP_DEFAULT_EXCLUDE = '**/@(fixture*(s)|dist)/**';
const heavyOnly = pkg.tap.exclude.filter((pattern) => pattern !== TAP_DEFAULT_EXCLUDE);

t.test('tap keeps its default exclusions and names the heavy-only files one by one', async (t) => {
  t.ok(pkg.tap.exclude.includes(TAP_DEFAULT_EXCLUDE), 'fixtures and dist are still excluded');
  for (const file of heavyOnly) t.match(file, /^test\/[\w/-]+\.test\.ts$/, `${file}: a file, not a pattern`);
  t.ok(heavyOnly.length > 0);
});

t.test('every heavy-only file exists, runs in test:heavy and is listed in the README with why', async (t) => {
  t.equal(pkg.scripts['test:heavy'], 'scripts/test-heavy.sh');
  t.ok(testing, 'the README has a "Testing" section');
  for (const file of heavyOnly) {
    t.ok(existsSync(join(ROOT, file)), `${file} exists`);
    t.ok(heavyScript.includes(file), `scripts/test-heavy.sh runs ${file}`);
    t.match(testing, new RegExp(`\`${file.replaceAll('.', '\\.')}\`[^\\n]*: `), `the README says why ${file} moved`);
  }
});

t.test('every file the heavy tier names exists; CI names no heavy-only file', async (t) => {
  const named = [...heavyScript.matchAll(/\btest\/[\w/-]+\.test\.ts\b/g)].map((m) => m[0]);
  t.ok(named.length >= heavyOnly.length);
  for (const file of new Set(named)) t.ok(existsSync(join(ROOT, file)), `${file} exists`);
  // .ci/run's PostgreSQL list: whole folders by glob, and CLI files by name.
  const globs = [...ci.matchAll(/\btest\/(\w+)\/\*\.test\.ts\b/g)].map((m) => `test/${m[1]}/`);
  const cliNames = /for f in ([\w -]+); do pg_files\+=\("test\/cli\/\$f\.test\.ts"\)/.exec(ci)?.[1]?.split(' ') ?? [];
  t.ok(globs.length > 0 && cliNames.length > 0, 'the PostgreSQL list of .ci/run is read');
  for (const file of heavyOnly) {
    t.notOk(
      globs.some((dir) => file.startsWith(dir) && !file.slice(dir.length).includes('/')),
      `${file} is in no folder .ci/run names`,
    );
    t.notOk(cliNames.map((n) => `test/cli/${n}.test.ts`).includes(file), `.ci/run does not name ${file}`);
  }
});
