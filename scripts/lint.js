#!/usr/bin/env node
// Architecture lint: the layering rules of our style guide, checked on every file.
//  - only the entry point (src/cli.ts) reads process.env;
//  - src/oauth is pure protocol logic: no Fastify, no Kysely, no database;
//  - SQL (kysely imports, db.selectFrom...) lives in db/ only: plugins/ and schemas/ never write it;
//  - plugins are registered explicitly: no @fastify/autoload.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const files = [];
for (const dir of ['src', 'plugins', 'schemas', 'db']) walk(join(root, dir));
function walk(path) {
  for (const name of readdirSync(path)) {
    const full = join(path, name);
    if (statSync(full).isDirectory()) walk(full);
    else if (name.endsWith('.ts')) files.push(full);
  }
}

const problems = [];
for (const file of files) {
  const rel = relative(root, file);
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const report = (re, message) =>
    lines.forEach((line, i) => {
      if (re.test(line) && !/^\s*(\/\/|\*)/.test(line)) problems.push(`${rel}:${i + 1}: ${message}`);
    });
  if (rel !== 'src/cli.ts') report(/process\.env\b/, 'only src/cli.ts reads process.env; pass a Config instead');
  if (rel.startsWith('src/oauth/')) {
    report(/from ['"](fastify|kysely|pg|@electric-sql\/pglite)/, 'src/oauth is pure protocol logic: no Fastify or database imports');
    report(/from ['"]\.\.\/\.\.\/db\//, 'src/oauth must not import the database layer');
  }
  if (rel.startsWith('plugins/') || rel.startsWith('schemas/')) {
    report(/from ['"]kysely['"]/, 'no SQL outside db/: call a service or a repository');
    report(/\.(selectFrom|insertInto|updateTable|deleteFrom)\(/, 'no SQL outside db/: call a service or a repository');
  }
  report(/@fastify\/autoload/, 'register plugins explicitly in src/app.ts');
}

if (problems.length) {
  console.error(`lint: ${problems.length} problem(s)\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`lint: ${files.length} files checked, no problems`);
