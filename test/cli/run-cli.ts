// Runs the `idp` CLI as a real child process: the TypeScript source (src/cli.ts) through tsx, never a
// dist/ build. Each test gets a DATA_DIR of its own and, when DATABASE_URL is set, a PostgreSQL database
// of its own (created here, dropped in teardown).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { describeEnv } from '../../src/config.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'src', 'cli.ts');
export const BIN = join(ROOT, 'bin', 'idp.js');

/** The suite runs against PostgreSQL when DATABASE_URL is set, else against embedded PGlite. */
export const usingPostgres = Boolean(process.env.DATABASE_URL);

/** Generous: a CLI process loads the whole app through tsx (~3 s) and PGlite's initdb can add ~7 s. */
export const DEFAULT_TIMEOUT_MS = 60_000;

export interface CliResult {
  /** null when the process was killed (see signal / timedOut). */
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** Wall-clock milliseconds from spawn to exit. */
  ms: number;
}

export interface RunOptions {
  env?: NodeJS.ProcessEnv;
  /** Written to the child's stdin, which is then closed (it is closed at once when absent). */
  input?: string;
  timeoutMs?: number;
  /** Script to run: src/cli.ts (default) or bin/idp.js. */
  entry?: string;
}

interface TapLike {
  teardown(fn: () => unknown): void;
}

/**
 * process.env without any variable the CLI's configuration reads, so a developer's own PORT, SECRET_KEY,
 * DATABASE_URL... cannot leak into a test. Tap's own variables (NODE_OPTIONS and so on) are kept.
 */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const { name } of describeEnv()) delete env[name];
  return { ...env, NODE_ENV: 'test', LOG_LEVEL: 'silent', ...extra };
}

function nodeArgs(entry: string, args: string[]): string[] {
  // `--import tsx` (tsx >= 4) registers both the ESM and CommonJS hooks; bin/idp.js registers its own.
  return entry === BIN ? [entry, ...args] : ['--import', 'tsx', entry, ...args];
}

/** Runs the CLI to completion. Never rejects on a non-zero exit; kills the child after timeoutMs. */
export function runCli(args: string[], options: RunOptions = {}): Promise<CliResult> {
  const started = performance.now();
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, nodeArgs(options.entry ?? CLI, args), {
      cwd: ROOT,
      env: options.env ?? cleanEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on('error', () => {}); // EPIPE when the child exits without reading its input
    child.stdin.end(options.input ?? '');
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolvePromise({
        code,
        signal,
        timedOut,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        ms: Math.round(performance.now() - started),
      });
    });
  });
}

/** One line for assertion messages: what ran and what it printed. */
export function describe(result: CliResult): string {
  const cut = (s: string) => (s.length > 1500 ? `${s.slice(0, 1500)}…` : s);
  return `exit ${result.code}${result.signal ? ` (${result.signal})` : ''}${result.timedOut ? ' TIMED OUT' : ''} after ${result.ms} ms\n--- stdout\n${cut(result.stdout)}\n--- stderr\n${cut(result.stderr)}`;
}

/** Runs one statement on its own connection. */
export async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export function withDatabaseName(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Appends libpq's `options=-c search_path=<schema>` (pg passes it to the server at connect time). */
export function withSearchPath(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.delete('options');
  const query = u.search ? `${u.search}&` : '?';
  u.search = '';
  return `${u.toString()}${query}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * A fresh, empty PostgreSQL database on the DATABASE_URL server, dropped in teardown.
 * A database rather than a schema: Kysely's Migrator looks for its kysely_migration table in every schema
 * of the database, so a second schema cannot be migrated while another one holds those tables (see the
 * search_path test in database.test.ts).
 */
export async function createPostgresDatabase(t: TapLike): Promise<string> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('createPostgresDatabase needs DATABASE_URL');
  const name = `idp_cli_${process.pid}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `create database "${name}"`);
  t.teardown(() => adminQuery(serverUrl, `drop database if exists "${name}" with (force)`));
  return withDatabaseName(serverUrl, name);
}

export interface CliContext {
  dataDir: string;
  /** The PostgreSQL database of this test (when DATABASE_URL is set). */
  databaseUrl: string | undefined;
  env: NodeJS.ProcessEnv;
  run(args: string[], options?: Omit<RunOptions, 'env'> & { env?: NodeJS.ProcessEnv }): Promise<CliResult>;
}

/** A temporary DATA_DIR (removed in teardown) and, on PostgreSQL, a database of the test's own. */
export async function cliContext(t: TapLike, extraEnv: NodeJS.ProcessEnv = {}): Promise<CliContext> {
  const dataDir = mkdtempSync(join(tmpdir(), 'idp-cli-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const databaseUrl = usingPostgres ? await createPostgresDatabase(t) : undefined;
  const env = cleanEnv({ DATA_DIR: dataDir, ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), ...extraEnv });
  return {
    dataDir,
    databaseUrl,
    env,
    run: (args, options = {}) => runCli(args, { ...options, env: { ...env, ...options.env } }),
  };
}

export interface ServeHandle {
  child: ChildProcess;
  /** The address it listens on, from its "listening" log line. */
  url: string;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Spawns `idp serve` and resolves once it logs that it listens (a JSON log line whose msg contains
 * "listening"); needs LOG_LEVEL=info or more verbose. The process is killed in teardown if still alive.
 */
export function startServe(t: TapLike, env: NodeJS.ProcessEnv, timeoutMs = DEFAULT_TIMEOUT_MS): Promise<ServeHandle> {
  const child = spawn(process.execPath, nodeArgs(CLI, ['serve']), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => {
    child.on('exit', (code, signal) => done({ code, signal }));
  });
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  let text = '';
  return new Promise((resolvePromise, reject) => {
    let pending = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`idp serve did not report listening within ${timeoutMs} ms:\n${text}`));
    }, timeoutMs);
    const onData = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        let entry: { msg?: unknown; address?: unknown };
        try {
          entry = JSON.parse(line);
        } catch {
          continue; // not a log line (e.g. a WARNING on stderr)
        }
        if (typeof entry.msg === 'string' && entry.msg.includes('listening')) {
          // Fastify logs "Server listening at <url>"; the CLI's own line carries an address field too.
          const url = typeof entry.address === 'string' ? entry.address : /https?:\/\/[^\s)]+/.exec(entry.msg)?.[0];
          if (!url) continue;
          clearTimeout(timer);
          resolvePromise({
            child,
            url,
            output: () => text,
            exited,
          });
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`idp serve exited (code ${code}, signal ${signal}) before listening:\n${text}`));
    });
  });
}

/** Parses a CLI's JSON stdout, failing with the whole output when it is not JSON. */
export function parseJson<T = Record<string, unknown>>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON:\n${describe(result)}`);
  }
}
