// What a command may touch of the outside world. The entry point (app/cli.ts) builds it from the process:
// it is the only module that reads process.env, and passes the environment down here.
import type { Config } from '../config.js';
import type { DatabaseHandle } from '../database.js';

export interface Io {
  out: (line: string) => void;
  err: (line: string) => void;
  env: Record<string, string | undefined>;
  stdin: () => string;
  /**
   * Opens the configured database for one command, which closes the handle when it is done. Absent (app/cli.ts):
   * openConfiguredDatabase. The tests' in-process runs (test/cli/fixtures/run-cli.ts) hand down one that keeps a
   * DATA_DIR's embedded database open from one command to the next: starting PGlite costs more than most commands.
   */
  openDatabase?: (config: Config, purpose: string) => Promise<DatabaseHandle>;
}

/** Columns padded to their widest cell, two spaces apart; the first row is the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export interface ListView<T> {
  /** Printed instead of an empty table. */
  empty: string;
  header: string[];
  row: (item: T) => string[];
  /** `idp apps list`: how to ask for the next page when there is one. */
  command?: string;
}

/** A list: the page itself as JSON (--json), else a table, and where the next page is. */
export function printList<T>(
  io: Io,
  json: boolean,
  page: { items: T[]; nextCursor?: string | null },
  view: ListView<T>,
): void {
  if (json) io.out(JSON.stringify(page, null, 2));
  else if (page.items.length === 0) io.out(view.empty);
  else io.out(table([view.header, ...page.items.map(view.row)]));
  if (page.nextCursor) io.out(`\nMore: ${view.command} --cursor ${page.nextCursor}`);
}
