// scripts/build-if-stale.js (npm start): a build only when dist/ is missing or older than what tsc reads.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error a plain JavaScript script without types
import { staleReason } from '../../scripts/build-if-stale.js';

t.test('missing build, no stamp, fresh, then a changed, a deleted file and package.json', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'idp-stale-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const past = new Date(Date.now() - 60_000);
  mkdirSync(join(dir, 'src', 'sub'), { recursive: true });
  for (const f of ['src/a.ts', 'src/sub/b.ts', 'package.json', 'tsconfig.json']) writeFileSync(join(dir, f), '');
  for (const f of ['src/a.ts', 'src/sub/b.ts', 'src/sub', 'src', 'package.json', 'tsconfig.json'])
    utimesSync(join(dir, f), past, past);
  t.match(staleReason(dir), /no build/);
  mkdirSync(join(dir, 'dist', 'app'), { recursive: true });
  writeFileSync(join(dir, 'dist', 'app', 'cli.js'), '');
  t.match(staleReason(dir), /not built by npm start/);
  writeFileSync(join(dir, 'dist', '.build-stamp'), JSON.stringify({ startedAt: Date.now() - 1000 }));
  t.equal(staleReason(dir), undefined, 'nothing changed since the build started');

  writeFileSync(join(dir, 'src', 'sub', 'b.ts'), 'export {};');
  t.match(staleReason(dir), /src\/sub\/b\.ts changed/);
  utimesSync(join(dir, 'src', 'sub', 'b.ts'), past, past);
  t.equal(staleReason(dir), undefined);
  rmSync(join(dir, 'src', 'a.ts'));
  t.match(staleReason(dir), /^src changed/, 'a deleted file changes its folder');
  utimesSync(join(dir, 'src'), past, past);
  writeFileSync(join(dir, 'package.json'), '{}');
  t.match(staleReason(dir), /package\.json changed/);
});
