// What `idp apps` and `idp users` share: the same seven subcommands over a service of the same shape (the
// one the admin API uses), with the same checks and output. Each group parses its own options into the
// service's input and describes its own records.
import type { ActorContext } from '../services/applications.js';
import { checkSubcommand, limitOf, listQuery, noArguments, one, type Values } from './args.js';
import { UsageError } from './errors.js';
import { actor } from './context.js';
import { printList, type Io, type ListView } from './io.js';

export interface RecordKind<T> {
  command: 'apps' | 'users';
  /** In messages: "Created application X", "Deleted user X". */
  noun: string;
  /** The one argument of show, update, enable, disable and delete ("expected exactly one client id"). */
  what: string;
  /** What `delete` without --yes suggests instead. */
  alternative: string;
  id: (item: T) => string;
  describe: (item: T) => string;
  list: ListView<T>;
}

export interface RecordService<T> {
  create(input: never, context: ActorContext): Promise<T>;
  list(query: ReturnType<typeof listQuery>): Promise<{ items: T[]; nextCursor?: string }>;
  get(ref: string): Promise<T>;
  update(ref: string, input: never, context: ActorContext): Promise<T>;
  remove(ref: string, context: ActorContext): Promise<void>;
}

export interface RecordRequest {
  sub: string;
  values: Values;
  positionals: string[];
  /** The service's input for create and update: only the options given. */
  input: Record<string, unknown>;
}

export function checkRecordSubcommand<T>(kind: RecordKind<T>, sub: string): void {
  checkSubcommand(kind.command, sub, ['create', 'list', 'show', 'update', 'enable', 'disable', 'delete']);
}

/** Usage mistakes are reported before the database is opened (and locked, and migrated). */
export function checkRecordRequest<T>(kind: RecordKind<T>, request: RecordRequest): void {
  const { sub, positionals, values, input } = request;
  if (sub === 'list') {
    noArguments(positionals);
    limitOf(values);
    return;
  }
  if (sub === 'create') return;
  const ref = one(positionals, kind.what);
  if (sub === 'update' && Object.keys(input).length === 0) {
    throw new UsageError('nothing to update: give at least one option (see --help)');
  }
  if (sub === 'delete' && !values.yes) {
    throw new UsageError(`deleting ${ref} cannot be undone: add --yes to confirm (or ${kind.alternative})`);
  }
}

/** Runs a request against the open database's service, once checkRecordRequest has passed it. */
export async function runRecordSubcommand<T>(
  io: Io,
  kind: RecordKind<T>,
  request: RecordRequest,
  service: RecordService<T>,
  setEnabled: (ref: string, enabled: boolean, context: ActorContext) => Promise<T>,
): Promise<void> {
  const { sub, values, positionals, input } = request;
  const json = Boolean(values.json);
  const print = (item: T) => io.out(json ? JSON.stringify(item, null, 2) : kind.describe(item));
  const ref = () => one(positionals, kind.what);
  switch (sub) {
    case 'create': {
      const created = await service.create(input as never, actor());
      if (!json) io.err(`Created ${kind.noun} ${kind.id(created)}`);
      return print(created);
    }
    case 'list':
      return printList(io, json, await service.list(listQuery(values)), kind.list);
    case 'show':
      return print(await service.get(ref()));
    case 'update':
      return print(await service.update(ref(), input as never, actor()));
    case 'enable':
    case 'disable':
      return print(await setEnabled(ref(), sub === 'enable', actor()));
    case 'delete': {
      const deleted = ref();
      await service.remove(deleted, actor());
      return io.out(json ? JSON.stringify({ deleted }) : `Deleted ${kind.noun} ${deleted}`);
    }
  }
}
