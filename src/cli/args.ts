// Command-line parsing shared by the commands: node:util parseArgs in strict mode, and the checks that
// turn a mistake into a UsageError (exit code 2) before any database is opened.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './errors.js';

export type Options = ParseArgsConfig['options'];
export type Values = Record<string, string | boolean | string[] | undefined>;

const COMMON = {
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  yes: { type: 'boolean' },
} as const;

export const LIST_OPTIONS = {
  search: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
} as const;

export function parse(args: string[], options: Options): { values: Values; positionals: string[] } {
  try {
    const all = { ...COMMON, ...options };
    const { values, positionals } = parseArgs({ args, options: all, allowPositionals: true, strict: true });
    return { values: values as Values, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

/** The subcommand is the first word after the command; an option there is --help or a mistake. */
export function splitSubcommand(command: string, rest: string[]): [string | undefined, string[]] {
  const first = rest[0];
  if (first === undefined || first === '--help' || first === '-h') return [undefined, rest];
  if (first.startsWith('-')) {
    const word = rest.find((a) => !a.startsWith('-'));
    const example = word
      ? `idp ${command} ${word} ${rest.filter((a) => a !== word).join(' ')}`
      : `idp ${command} <subcommand> ${rest.join(' ')}`;
    throw new UsageError(`put the subcommand first: ${example} (see idp ${command} --help)`);
  }
  return [first, rest.slice(1)];
}

export function checkSubcommand(command: string, sub: string, known: string[]): void {
  if (!known.includes(sub)) throw new UsageError(`unknown subcommand "${command} ${sub}" (see idp ${command} --help)`);
}

/** "" on update means "clear this field" (null); absent means "leave it". */
export const clearable = (v: unknown) => (v === undefined ? undefined : v === '' ? null : (v as string));

export function flagPair(values: Values, on: string, off: string): boolean | undefined {
  if (values[on] && values[off]) throw new UsageError(`--${on} and --${off} contradict each other`);
  return values[on] ? true : values[off] ? false : undefined;
}

export function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function limitOf(values: Values): number | undefined {
  if (values.limit === undefined) return undefined;
  const n = Number(values.limit);
  if (!Number.isInteger(n) || n < 1 || n > 200) throw new UsageError('--limit must be a whole number from 1 to 200');
  return n;
}

/** What `list --search --limit --cursor` asks the service for. */
export function listQuery(values: Values): { q?: string; limit?: number; cursor?: string } {
  return {
    q: values.search as string | undefined,
    limit: limitOf(values),
    cursor: values.cursor as string | undefined,
  };
}

export function one(positionals: string[], what: string): string {
  if (positionals.length !== 1) throw new UsageError(`expected exactly one ${what}`);
  return positionals[0]!;
}

export function noArguments(positionals: string[]): void {
  if (positionals.length) throw new UsageError(`unexpected argument ${positionals[0]}`);
}
