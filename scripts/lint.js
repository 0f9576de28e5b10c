#!/usr/bin/env node
// Architecture lint: the layering rules of the README's "How the code is laid out", checked on every
// file of app/, src/, plugins/, schemas/ and db/.
//  - the library layers (src/, db/, schemas/) import nothing of plugins/ or app/, and plugins/ nothing of
//    app/: the assembly (app/) sits on top, the HTTP plugins below it, the library under both;
//  - only the entry point (app/cli.ts) reads process.env;
//  - src/oauth is pure protocol logic: no Fastify, no Kysely, no database, no services, no plugins;
//  - src/domain and src/services never import Fastify or plugins/; src/domain never imports db/;
//  - db/ imports nothing of src/, plugins/ or schemas/;
//  - plugins/ and schemas/ never import db/ and never write SQL: they call services;
//  - SQL (kysely, db.selectFrom...) lives in db/ only;
//  - no import cycles between folders (a file directly in src/ or app/ counts as a folder of its own);
//  - plugins are registered explicitly: no @fastify/autoload;
//  - no line over 120 characters (app, src, plugins, schemas, db, scripts, bench, test).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const files = [];
for (const dir of ['app', 'src', 'plugins', 'schemas', 'db']) walk(join(root, dir));
function walk(path) {
  for (const name of readdirSync(path)) {
    const full = join(path, name);
    if (statSync(full).isDirectory()) walk(full);
    else if (name.endsWith('.ts')) files.push(full);
  }
}

const problems = [];
/** Folder-level import graph: folder -> folder -> first import seen (for the message). */
const edges = new Map();
const unitOf = (rel) => (dirname(rel) === 'src' || dirname(rel) === 'app' ? rel : dirname(rel));
/** The layers above each layer: what it must never import (the top folder of the imported file). */
const ABOVE = {
  src: ['plugins', 'app'],
  db: ['plugins', 'app'],
  schemas: ['plugins', 'app'],
  plugins: ['app'],
};

for (const file of files) {
  const rel = relative(root, file);
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  const report = (re, message) =>
    lines.forEach((line, i) => {
      if (re.test(line) && !/^\s*(\/\/|\*)/.test(line)) problems.push(`${rel}:${i + 1}: ${message}`);
    });
  const layer = (prefix) => rel.startsWith(prefix);
  const importsOf = (re) => new RegExp(`(from|import)\\s*\\(?\\s*['"]${re.source}`);
  if (rel !== 'app/cli.ts') report(/process\.env\b/, 'only app/cli.ts reads process.env; pass a Config instead');
  if (layer('src/oauth/')) {
    report(
      importsOf(/(fastify|kysely|pg|@electric-sql\/pglite)['"/]/),
      'src/oauth is pure protocol logic: no Fastify or database imports',
    );
    report(importsOf(/(\.\.\/)+(db|plugins)\//), 'src/oauth must not import the database layer or plugins');
    report(importsOf(/(\.\.\/)+services\//), 'src/oauth must not import services: declare the store it needs');
  }
  if (layer('src/domain/') || layer('src/services/')) {
    report(importsOf(/(fastify|@fastify\/[\w-]+)['"]/), 'src/domain and src/services do not import Fastify');
    report(importsOf(/(\.\.\/)+plugins\//), 'src/domain and src/services do not import plugins');
  }
  if (layer('src/domain/')) report(importsOf(/(\.\.\/)+db\//), 'src/domain does not import the database layer');
  if (layer('db/')) report(importsOf(/(\.\.\/)+(src|plugins|schemas)\//), 'db/ imports nothing above it');
  if (layer('plugins/') || layer('schemas/')) {
    report(importsOf(/(\.\.\/)+db\//), 'plugins and schemas never import db/: call a service');
    report(/from ['"]kysely['"]/, 'no SQL outside db/: call a service or a repository');
    report(/\.(selectFrom|insertInto|updateTable|deleteFrom)\(/, 'no SQL outside db/: call a service or a repository');
  }
  if (layer('src/'))
    report(/\.(selectFrom|insertInto|updateTable|deleteFrom)\(/, 'no SQL outside db/: call a repository');
  report(/@fastify\/autoload/, 'register plugins explicitly in app/app.ts');

  for (const m of text.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = relative(root, resolve(dirname(file), m[1])).replace(/\.js$/, '.ts');
    const layerOf = (path) => path.split(/[\\/]/)[0];
    if (ABOVE[layerOf(rel)]?.includes(layerOf(target))) {
      const line = text.slice(0, m.index).split('\n').length;
      problems.push(
        `${rel}:${line}: ${layerOf(rel)}/ must not import ${layerOf(target)}/ (${target}): ` +
          'app/ sits above plugins/, plugins/ above src/, schemas/ and db/; pass what it needs in instead',
      );
    }
    const from = unitOf(rel);
    const to = unitOf(target);
    if (from === to) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    if (!edges.get(from).has(to)) edges.get(from).set(to, `${rel} imports ${target}`);
  }
}

// No line over 120 characters in code, tests and benchmarks (Biome formats to 120; strings and comments
// it cannot wrap are wrapped by hand).
const codeFiles = [];
for (const dir of ['app', 'src', 'plugins', 'schemas', 'db', 'scripts', 'bench', 'test']) collect(join(root, dir));
function collect(path) {
  for (const name of readdirSync(path)) {
    const full = join(path, name);
    if (statSync(full).isDirectory()) collect(full);
    else if (/\.(ts|js|mjs)$/.test(name)) codeFiles.push(full);
  }
}
for (const file of codeFiles) {
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.length > 120)
        problems.push(`${relative(root, file)}:${i + 1}: line of ${line.length} characters (at most 120)`);
    });
}

// Cycles between folders: strongly connected components of the folder graph (Tarjan).
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function visit(v) {
  index.set(v, counter);
  low.set(v, counter++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) !== index.get(v)) return;
  const component = [];
  let w;
  do {
    w = stack.pop();
    onStack.delete(w);
    component.push(w);
  } while (w !== v);
  if (component.length < 2) return;
  const examples = component.flatMap((a) => component.map((b) => edges.get(a)?.get(b)).filter(Boolean));
  problems.push(`import cycle between folders ${component.sort().join(', ')}: ${examples.join('; ')}`);
}
for (const v of edges.keys()) if (!index.has(v)) visit(v);

if (problems.length) {
  console.error(`lint: ${problems.length} problem(s)\n${problems.join('\n')}`);
  process.exit(1);
}
console.log(`lint: ${files.length} files checked, no problems`);
