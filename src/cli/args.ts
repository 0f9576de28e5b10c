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
    const all: NonNullable<Options> = { ...COMMON, ...options };
    const { words, dashed } = shieldDashedWords(args, all);
    const parsed = parseArgs({ args: words, options: all, allowPositionals: true, strict: true });
    const positionals = parsed.positionals.map((p) => dashed.get(p) ?? p);
    return { values: parsed.values as Values, positionals };
  } catch (error) {
    throw new UsageError((error as Error).message.replace(/^TypeError \[[A-Z_]+\]: /, ''));
  }
}

const PLACEHOLDER = '\u0000';

/**
 * Our options are long ones (and -h), so a longer word with a single dash is a value, not a cluster of short
 * options: key ids are RFC 7638 thumbprints in base64url and one in 64 starts with "-". parseArgs would reject
 * `idp keys retire -Exyz…` as an unknown option -E, and `--password -abc` as ambiguous. A single-dash word right
 * after a string option (no "=") becomes its value; any other longer than two characters becomes a positional,
 * carried through parseArgs under a placeholder (argv cannot hold NUL) so the positionals keep their order.
 * "--" still ends the options; "-yes" for "--yes" is named as the mistake it is.
 */
function shieldDashedWords(
  args: string[],
  options: NonNullable<Options>,
): { words: string[]; dashed: Map<string, string> } {
  const words: string[] = [];
  const dashed = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--') {
      words.push(...args.slice(i));
      break;
    }
    const next = args[i + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : undefined;
    if (name !== undefined && own(options, name)?.type === 'string' && next !== undefined && /^-[^-]/.test(next)) {
      words.push(`${arg}=${next}`);
      i++;
    } else if (isDashedWord(arg)) {
      if (own(options, arg.slice(1))) throw new UsageError(`unknown option ${arg}; did you mean -${arg}?`);
      const placeholder = `${PLACEHOLDER}${dashed.size}`;
      dashed.set(placeholder, arg);
      words.push(placeholder);
    } else {
      words.push(arg);
    }
  }
  return { words, dashed };
}

const isDashedWord = (arg: string) => arg.length > 2 && arg[0] === '-' && arg[1] !== '-';
/** The option of that name, if the command has one (not a property every object inherits). */
const own = (options: NonNullable<Options>, name: string) => (Object.hasOwn(options, name) ? options[name] : undefined);

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
