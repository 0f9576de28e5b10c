#!/usr/bin/env node
// `npm start`: runs `npm run build` only when dist/ is missing or older than what the build reads (the .ts
// files of app/, src/, plugins/, schemas/ and db/, their folders, so that a deleted or renamed file counts, and
// tsconfig*.json and package.json). The time a build through here started is kept in dist/.build-stamp: a
// file saved during that build is newer and makes the next start build again. `npm run build` always
// builds (it leaves the stamp alone, so the next start after it may build once more). --check: print
// whether a build is needed (exit 0 fresh, 1 stale), build nothing.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = join(root, 'dist', '.build-stamp');

/** The newest modification time among the build's inputs, and the path that has it. */
export function newestInput(dir = root) {
  let newest = { mtimeMs: 0, path: '' };
  const see = (path, mtimeMs) => {
    if (mtimeMs > newest.mtimeMs) newest = { mtimeMs, path };
  };
  const walk = (folder) => {
    see(folder, statSync(folder).mtimeMs);
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const full = join(folder, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) see(full, statSync(full).mtimeMs);
    }
  };
  for (const folder of ['app', 'src', 'plugins', 'schemas', 'db']) {
    if (existsSync(join(dir, folder))) walk(join(dir, folder));
  }
  for (const name of readdirSync(dir)) {
    if (name === 'package.json' || /^tsconfig.*\.json$/.test(name))
      see(join(dir, name), statSync(join(dir, name)).mtimeMs);
  }
  return newest;
}

/** Why a build is needed, or undefined when dist/ is up to date. */
export function staleReason(dir = root) {
  const stamp = join(dir, 'dist', '.build-stamp');
  if (!existsSync(join(dir, 'dist', 'app', 'cli.js'))) return 'dist/ has no build';
  if (!existsSync(stamp)) return 'dist/ was not built by npm start before';
  let startedAt;
  try {
    startedAt = JSON.parse(readFileSync(stamp, 'utf8')).startedAt;
  } catch {
    return 'dist/.build-stamp is unreadable';
  }
  if (typeof startedAt !== 'number') return 'dist/.build-stamp is unreadable';
  const newest = newestInput(dir);
  if (newest.mtimeMs >= startedAt) return `${newest.path.slice(dir.length + 1)} changed since the last build`;
  return undefined;
}

const isMain = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (isMain) {
  const reason = staleReason();
  if (process.argv.includes('--check')) {
    console.log(reason ? `stale: ${reason}` : 'fresh');
    process.exit(reason ? 1 : 0);
  }
  if (reason) {
    console.error(`building (${reason}): npm run build`);
    // Taken before the build: a source saved while tsc runs is newer than the stamp.
    const startedAt = Date.now();
    const r = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) {
      console.error(`npm run build failed (exit ${r.status ?? r.signal}); not starting`);
      process.exit(1);
    }
    writeFileSync(STAMP, `${JSON.stringify({ startedAt })}\n`);
  }
}
