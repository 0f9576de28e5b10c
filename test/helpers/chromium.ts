// Headless Chromium for the end-to-end tests: Debian's /usr/bin/chromium (or CHROMIUM_PATH) driven by
// playwright-core, never a downloaded browser; tests skip with a reason when it is missing.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import tap from 'tap';

interface TapLike {
  teardown(fn: () => unknown): void;
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** For tap's `skip` option: false, or why the real-browser test cannot run here. */
export const chromiumSkip: false | string = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is not installed (apt-get install chromium) — the real-browser test needs it`;

/** A headless browser, closed when the test ends. */
export async function launchChromium(t: TapLike): Promise<Browser> {
  const browser = await launch();
  t.teardown(() => browser.close());
  return browser;
}

let shared: Promise<Browser> | undefined;
/**
 * One headless browser for every test of the file that calls it (launched at the first call, closed when the
 * file's tests are done): for files with several browser tests. Each test makes its own contexts (they share
 * no cookie or storage) and closes them when it ends.
 */
export function fileChromium(): Promise<Browser> {
  if (!shared) {
    shared = launch();
    tap.teardown(async () => (await shared!).close());
  }
  return shared;
}

function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    timeout: 90000,
  });
}

/** A relying party's callback: answers 200 "callback ok" and records each query it receives. */
export async function startCallbackServer(t: TapLike) {
  const received: URLSearchParams[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/callback') received.push(url.searchParams);
    res.writeHead(url.pathname === '/callback' ? 200 : 404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(url.pathname === '/callback' ? 'callback ok' : 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, redirectUri: `http://127.0.0.1:${port}/callback`, received };
}

const axeSource = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

interface AxeResult {
  violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: unknown[] }> }>;
}

/** The page's width as laid out (more than the viewport means a horizontal scroll); run with page.evaluate. */
export const scrollWidth = () =>
  (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
    .scrollWidth;

/** axe-core's violations of WCAG 2.x A/AA and best practice on the page as it is now. */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: the page's CSP (no inline script) does not apply to it.
  await page.evaluate(axeSource);
  const result = (await page.evaluate(() =>
    (globalThis as unknown as { axe: { run(o: unknown): Promise<unknown> } }).axe.run({
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'] },
    }),
  )) as AxeResult;
  return result.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help} at ${JSON.stringify(v.nodes.map((n) => n.target))}`,
  );
}
