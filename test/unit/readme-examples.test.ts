// The README's code blocks that are not run elsewhere stay true:
// - the quick start and the admin-token start run in test/e2e/quickstart.test.ts (a clean clone), the
//   seed example and the CI recipe in test/cli/seed-ci-recipe.test.ts, docs/integration.md's examples in
//   test/e2e/integration-docs.test.ts and test/e2e/protect-api-docs.test.ts;
// - here: the static-applications example is a valid STATIC_APPLICATIONS_FILE; every `idp` command and
//   option of the CLI synopsis is one the CLI knows (its --help text, asked in-process); every `npm run X`
//   in a code block is a script of package.json; every block is accounted for.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run, type Io } from '../../app/cli/main.js';
import { parseStaticApplications } from '../../src/static-applications.js';
import { ResourceServerCreateSchema, resourceServerProblems } from '../../src/domain/resource-server.js';
import { schemaProblems } from '../../src/validate.js';
import { ROOT } from '../helpers/programs.js';

const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));

async function help(args: string[]): Promise<{ code: number; text: string }> {
  let text = '';
  const io: Io = { out: (l) => (text += `${l}\n`), err: (l) => (text += `${l}\n`), env: {}, stdin: () => '' };
  const code = await run([...args, '--help'], io);
  return { code, text };
}

t.test('every code block is one of the known examples', async (t) => {
  const kinds = blocks.map((b) => {
    if (b.text.startsWith('npm install && npm start')) return 'quick start';
    if (b.text.startsWith('ADMIN_API_TOKEN=')) return 'admin-token start';
    if (b.text.startsWith('DATABASE_URL=postgres')) return 'tests on PostgreSQL';
    if (b.text.startsWith('idp serve')) return 'CLI synopsis';
    if (b.text.includes('"conformance-rp"')) return 'static applications';
    if (b.text.includes('"ci-app"')) return 'seed example';
    if (b.text.startsWith('IDP=')) return 'CI recipe';
    if (b.text.startsWith('npm run dev')) return 'development commands';
    if (b.text.includes('/api/admin/resource-servers')) return 'register an API';
    return `unknown: ${b.text.slice(0, 60)}`;
  });
  t.same(
    kinds.filter((k) => k.startsWith('unknown')),
    [],
    'a new block needs a test (add it here and run it)',
  );
});

t.test('the static-applications example is a valid STATIC_APPLICATIONS_FILE', async (t) => {
  const block = blocks.find((b) => b.text.includes('"conformance-rp"'))!;
  const apps = parseStaticApplications(JSON.parse(block.text), 'README.md');
  t.equal(apps.length, 1);
  t.equal(apps[0]!.clientId, 'conformance-rp');
  t.same(apps[0]!.redirectUris, ['http://localhost:8080/callback']);
});

t.test("the API registration example's body is a valid resource server", async (t) => {
  const block = blocks.find((b) => b.text.includes('/api/admin/resource-servers'))!;
  const body = JSON.parse(/-d '(\{[\s\S]*\})'/.exec(block.text)![1]!);
  t.same(schemaProblems(ResourceServerCreateSchema, body), []);
  const server = { scopes: [], allowedClients: [], introspectionClients: [], ...body };
  t.same(resourceServerProblems(server, 'http://localhost:3000/api/external'), []);
  t.equal(body.accessTokenFormat, 'jwt');
});

t.test('every command and option of the CLI synopsis exists', async (t) => {
  const synopsis = blocks.find((b) => b.text.startsWith('idp serve'))!.text;
  const lines = synopsis
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l.startsWith('idp '));
  t.ok(lines.length >= 20, `${lines.length} commands`);
  for (const line of lines) {
    const words = line.split(/\s+/).slice(1);
    const command = [words[0]!];
    // The subcommand (`enable|disable` names two), unless the next word is an argument or an option.
    const sub = words[1] && /^[a-z|-]+$/.test(words[1]) ? words[1] : undefined;
    for (const name of sub ? sub.split('|') : [undefined]) {
      const args = name ? [...command, name] : command;
      const { code, text } = await help(args);
      t.equal(code, 0, `idp ${args.join(' ')} --help`, { text });
      for (const option of line.match(/--[a-z][a-z-]*/g) ?? []) {
        t.ok(text.includes(option) || option === '--help', `idp ${args.join(' ')} knows ${option}`, { text });
      }
    }
  }
});

t.test('every npm script the README runs exists', async (t) => {
  const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>;
  const named = blocks.flatMap((b) => [...b.text.matchAll(/\bnpm run ([\w:-]+)/g)].map((m) => m[1]!));
  t.ok(named.length >= 5);
  for (const name of new Set(named)) t.ok(scripts[name], `npm run ${name}`);
  for (const plain of ['start', 'test']) t.ok(scripts[plain], `npm ${plain}`);
});
