// Runs a documented program as a reader would (node file.mjs, bash script.sh) and lets a test act as the
// person at the keyboard: read what it prints, open the authorization URL, paste a URL on its stdin.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BrowserClient } from './browser-client.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Inside the repository (git-ignored), so that `import 'openid-client'` resolves from node_modules. */
export const PROGRAMS_DIR = join(ROOT, '.tap', 'programs');

/**
 * A port free at the moment, for a program the test starts later. Taken below Linux's ephemeral range (32768 and
 * up, where every `listen(0)` of the other test files and every outgoing connection get theirs): a port handed out
 * by listen(0) and closed could be taken again by another file's server before the program listens (EADDRINUSE,
 * seen once in CI, 2026-11-27).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

export const unescapeHtml = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The text of the fenced block between `<!-- name:start -->` and `<!-- name:end -->`. */
export function markedBlock(text: string, name: string): string {
  const match = new RegExp(`<!-- ${name}:start -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`\\n<!-- ${name}:end -->`).exec(
    text,
  );
  if (!match) throw new Error(`no ${name} block between markers`);
  return match[1]!;
}

export interface Running {
  child: ChildProcessWithoutNullStreams;
  output: () => string;
  /** Resolves with the first match of `pattern` in stdout+stderr (rejects when the program exits first). */
  waitFor: (pattern: RegExp, ms?: number) => Promise<RegExpExecArray>;
  exit: Promise<number>;
}

/** Writes `source` to PROGRAMS_DIR/name and runs it with `command` (node, bash). Killed at teardown. */
export function runProgram(
  t: { teardown(fn: () => unknown): void },
  name: string,
  source: string,
  command: string,
  env: Record<string, string> = {},
): Running {
  mkdirSync(PROGRAMS_DIR, { recursive: true });
  const file = join(PROGRAMS_DIR, name);
  writeFileSync(file, source);
  const child = spawn(command, [file], { cwd: PROGRAMS_DIR, env: { ...process.env, ...env } });
  let out = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const l of listeners) l();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exit = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const waitFor = (pattern: RegExp, ms = 30000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const check = () => {
        const m = pattern.exec(out);
        if (m) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve(m);
        }
      };
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern}; output:\n${out}`)), ms);
      listeners.add(check);
      void exit.then(() => {
        check();
        if (listeners.has(check)) {
          listeners.delete(check);
          clearTimeout(timer);
          reject(new Error(`${name} exited before printing ${pattern}; output:\n${out}`));
        }
      });
      check();
    });
  return { child, output: () => out, waitFor, exit };
}

/**
 * The person in the browser: opens `authorizationUrl`, signs in with e-mail and password, allows the consent,
 * and returns the URL the provider redirects to (starting with `redirectUri`) without opening it.
 */
export async function signInAndConsent(
  baseUrl: string,
  authorizationUrl: string,
  redirectUri: string,
  email: string,
  password: string,
): Promise<string> {
  const browser = new BrowserClient();
  const back = (u: string) => u.startsWith(redirectUri);
  let res = await browser.follow(authorizationUrl, back);
  if (!res.location || !back(res.location)) {
    if (!/\/login\/sign-in/.test(res.url)) throw new Error(`not the sign-in page: ${res.status} ${res.url}`);
    res = await browser.follow(`${baseUrl}/login/sign-in`, back, {
      form: { ...BrowserClient.hiddenFields(res.body, '/login/sign-in'), email, password },
    });
  }
  if ((!res.location || !back(res.location)) && /\/login\/consent/.test(res.url)) {
    res = await browser.follow(`${baseUrl}/login/consent`, back, {
      form: { ...BrowserClient.hiddenFields(res.body, '/login/consent'), decision: 'allow' },
    });
  }
  if (!res.location || !back(res.location)) throw new Error(`did not reach the callback: ${res.status} ${res.url}`);
  return res.location;
}
