// The in-process caches (the CORS origin list, applications by client id, bearer authentications) are
// told of every change that may make an entry wrong, by one bus:
//  - In this process, at once, after the change commits: the services write through observeWrites(db),
//    which sees every UPDATE/DELETE that can end a token or change what a cached entry says (a revoked
//    token, grant or session; any change of a user's claims, password or disabled flag; a deleted user;
//    any application change) and tells the bus once the transaction has committed. Watching the writes
//    rather than asking each service to call afterRevocation() makes the call impossible to forget: a
//    new revoking path (a grant revoked on code replay or refresh-token reuse, an admin revocation, a
//    password reset) is covered by the repository it writes with. Explicit notices remain where the
//    service knows more (applications: which client id).
//  - On every other instance (and for writes by other processes: the CLI, an operator in psql): the
//    database triggers of migration 0008 pg_notify in the same transaction, so a notice is delivered
//    if and only if the change commits; one LISTEN connection per process (connectInvalidationListener)
//    carries them, on the channel application changes already used. On (re)connect everything is
//    dropped, since changes may have been missed; each cache also has a TTL for a listener that is down.
// PGlite is one process: its changes are all made here, so the first path is complete there.
import { createHash } from 'node:crypto';
import type { CompiledQuery, KyselyPlugin, OperationNode, QueryId, RootOperationNode } from 'kysely';
import { executePrepared, type DatabaseHandle, type Db, type Listener, type Tx } from '../../db/create-db.js';
import { APPLICATIONS_CHANNEL } from '../../db/repositories/applications.js';

/** The channel of every notice between instances (application changes have used it from the start). */
export const INVALIDATION_CHANNEL = APPLICATIONS_CHANNEL;
/**
 * The payload the triggers send for token, grant, session and user changes. A ':' is outside the
 * client-id alphabet, so it cannot be an application's client id (the payload of application changes).
 */
export const ACCESS_PAYLOAD = ':access';
/** The payload of signing-key changes (migration 0010's trigger): every key store reloads. */
export const KEYS_PAYLOAD = ':keys';
/** The payload of resource-server changes (migration 0020's trigger): every cached list is dropped. */
export const RESOURCES_PAYLOAD = ':resources';

export type InvalidationEvent =
  /** An application changed (clientId undefined: any of them may have). */
  | { kind: 'application'; clientId?: string | undefined }
  /** A token, grant or session ended, or a user changed: authentications may be stale. */
  | { kind: 'access' }
  /** The signing keys changed (a rotation, possibly on another instance): reload them. */
  | { kind: 'keys' }
  /** A resource server was added, changed or removed (here or on another instance): reload the list. */
  | { kind: 'resources' }
  /** Notices may have been missed (the listener (re)connected): drop everything. */
  | { kind: 'reset' };

export interface InvalidationBus {
  on(listener: (event: InvalidationEvent) => void): void;
  emit(event: InvalidationEvent): void;
}

export function createInvalidationBus(): InvalidationBus {
  const listeners: Array<(event: InvalidationEvent) => void> = [];
  return {
    on(listener) {
      listeners.push(listener);
    },
    emit(event) {
      for (const listener of listeners) listener(event);
    },
  };
}

/** A notice from another instance, by its payload: an application's client id, or a kind. */
export function eventOfPayload(payload: string): InvalidationEvent {
  if (payload === ACCESS_PAYLOAD) return { kind: 'access' };
  if (payload === KEYS_PAYLOAD) return { kind: 'keys' };
  if (payload === RESOURCES_PAYLOAD) return { kind: 'resources' };
  if (payload === '' || payload.startsWith(':')) return { kind: 'reset' };
  return { kind: 'application', clientId: payload };
}

/**
 * The one LISTEN connection of this process (PostgreSQL only), feeding the bus. Resolves once the first
 * LISTEN succeeded or 5 s passed (listening before serving, so no change slips between start and LISTEN).
 */
export async function connectInvalidationListener(
  database: Pick<DatabaseHandle, 'listen'>,
  bus: InvalidationBus,
  log: { warn(object: object, message: string): void },
): Promise<Listener | undefined> {
  if (!database.listen) return undefined;
  const listener = database.listen(INVALIDATION_CHANNEL, {
    onMessage: (payload) => bus.emit(eventOfPayload(payload)),
    onReconnect: () => bus.emit({ kind: 'reset' }),
    onError: (error) =>
      log.warn(
        { err: error },
        'cache invalidation listener lost its connection; retrying (cache expiries still apply)',
      ),
  });
  await Promise.race([listener.ready, new Promise((r) => setTimeout(r, 5000).unref())]);
  return listener;
}

// ------------------------------------------------------------------------------------ write observer

/** The columns of users whose change makes a cached authentication wrong (claims, password, disabled). */
const USER_COLUMNS = new Set([
  'email',
  'email_verified',
  'name',
  'given_name',
  'family_name',
  'picture',
  'permissions',
  'disabled',
  'password_hash',
]);
/** Tables where setting revoked_at ends tokens (a session's last_seen_at touch does not). */
const REVOCABLE = new Set(['access_tokens', 'grants', 'sessions']);
/** Tables whose deleted rows may take live tokens with them. */
const DELETABLE = new Set(['access_tokens', 'grants', 'sessions', 'users', 'applications']);

type Node = OperationNode & Record<string, unknown>;

function tableName(node: Node | undefined): string | undefined {
  if (!node) return undefined;
  if (node.kind === 'AliasNode') return tableName(node.node as Node);
  if (node.kind === 'TableNode') return ((node.table as Node).identifier as { name: string }).name;
  return undefined;
}

function columnName(node: Node): string | undefined {
  return node.kind === 'ColumnNode' ? (node.column as { name: string }).name : undefined;
}

/** What a statement may invalidate, or undefined for a statement that cannot (reads, inserts, touches). */
export function classifyWrite(root: RootOperationNode): InvalidationEvent | undefined {
  const node = root as unknown as Node;
  if (node.kind === 'UpdateQueryNode') {
    const table = tableName(node.table as Node);
    const columns = ((node.updates as Node[] | undefined) ?? []).map((u) => columnName(u.column as Node));
    if (!table || columns.includes(undefined)) return { kind: 'reset' };
    return classifyTableWrite('update', table, columns as string[]);
  }
  if (node.kind === 'DeleteQueryNode') {
    const tables = ((node.from as Node | undefined)?.froms as Node[] | undefined)?.map(tableName) ?? [];
    if (tables.length === 0 || tables.includes(undefined)) return { kind: 'reset' };
    const events = tables.map((t) => classifyTableWrite('delete', t!, []));
    return events.find((e) => e?.kind === 'application') ?? events.find(Boolean);
  }
  if (node.kind === 'RawNode') return classifySqlOnce((node.sqlFragments as readonly string[]).join(' '));
  return undefined;
}

// Hand-written statements are fixed texts (their values are parameters, not fragments): each is judged once.
// Bounded all the same, for sql.raw() texts built at run time.
const judged = new Map<string, InvalidationEvent | undefined>();
function classifySqlOnce(text: string): InvalidationEvent | undefined {
  if (judged.has(text)) return judged.get(text);
  const event = classifySql(text);
  if (judged.size >= 1000) judged.clear();
  judged.set(text, event);
  return event;
}

const UPDATE =
  /\bupdate\s+(?:only\s+)?"?(\w*)"?(?:\s+(?:as\s+)?\w+)?\s+set\s+([\s\S]*?)(?=\bwhere\b|\bfrom\b|\breturning\b|$)/gi;
const DELETE = /\bdelete\s+from\s+(?:only\s+)?"?(\w*)"?/gi;
/** Words where a table name should be: the name was a parameter (sql.table(...)), so unknown. */
const KEYWORDS = new Set(['set', 'where', 'using', 'returning', 'as', 'only']);
const SET_COLUMN = /(?:^|,)\s*"?(\w+)"?\s*=/g;

/**
 * Hand-written SQL (sql`...`, CompiledQuery.raw): judged by its update and delete clauses with the same
 * rules as built queries; one it cannot read (a table given as a parameter) counts as a reset.
 */
export function classifySql(text: string): InvalidationEvent | undefined {
  if (!/\b(update|delete)\b/i.test(text)) return undefined;
  const events: InvalidationEvent[] = [];
  for (const [, table, set] of text.matchAll(UPDATE)) {
    const columns = [...set!.matchAll(SET_COLUMN)].map((m) => m[1]!);
    if (!table || KEYWORDS.has(table.toLowerCase()) || columns.length === 0) return { kind: 'reset' };
    const event = classifyTableWrite('update', table, columns);
    if (event) events.push(event);
  }
  for (const [, table] of text.matchAll(DELETE)) {
    if (!table || KEYWORDS.has(table.toLowerCase())) return { kind: 'reset' };
    const event = classifyTableWrite('delete', table, []);
    if (event) events.push(event);
  }
  // "update" or "delete" somewhere without a clause we could read (a word in a string, say): a reset.
  if (events.length === 0 && !UPDATE_OR_DELETE_READ.test(text)) return { kind: 'reset' };
  return events.find((e) => e.kind === 'application') ?? events[0];
}
const UPDATE_OR_DELETE_READ = /\bupdate\s+(?:only\s+)?"?\w+"?(?:\s+(?:as\s+)?\w+)?\s+set\b|\bdelete\s+from\b/i;

function classifyTableWrite(op: 'update' | 'delete', table: string, columns: string[]): InvalidationEvent | undefined {
  if (table === 'applications') return { kind: 'application' };
  if (op === 'delete') return DELETABLE.has(table) ? { kind: 'access' } : undefined;
  if (REVOCABLE.has(table) && columns.includes('revoked_at')) return { kind: 'access' };
  if (table === 'users' && columns.some((c) => USER_COLUMNS.has(c))) return { kind: 'access' };
  return undefined;
}

/** Records the writes of one transaction (or marks autocommit statements by query id). */
class WriteObserver implements KyselyPlugin {
  readonly seen: InvalidationEvent[] = [];
  readonly #pending = new WeakMap<QueryId, InvalidationEvent>();
  constructor(private readonly afterStatement?: (event: InvalidationEvent) => void) {}
  transformQuery(args: { queryId: QueryId; node: RootOperationNode }): RootOperationNode {
    const event = classifyWrite(args.node);
    if (event) {
      if (this.afterStatement) this.#pending.set(args.queryId, event);
      else this.seen.push(event);
    }
    return args.node;
  }
  async transformResult<R>(args: { queryId: QueryId; result: R }): Promise<R> {
    const event = this.afterStatement && this.#pending.get(args.queryId);
    if (event) this.afterStatement!(event);
    return args.result;
  }
}

function emitAll(bus: InvalidationBus, events: InvalidationEvent[]) {
  // One notice per kind is enough: an 'application' without a client id drops every application.
  const kinds = new Set(events.map((e) => e.kind));
  if (kinds.has('reset')) return bus.emit({ kind: 'reset' });
  if (kinds.has('application')) bus.emit({ kind: 'application' });
  if (kinds.has('access')) bus.emit({ kind: 'access' });
}

/**
 * The database as the services see it: the same Kysely, whose writes tell the bus once they commit
 * (an autocommit statement once it returns; a transaction's statements once `transaction().execute()`
 * committed, and also when it failed: a superfluous notice costs a cache miss, a missing one a stale
 * entry). Read paths (the bearer lookup, with its prepared statement) keep the plain instance.
 * `startTransaction()` and `connection()` are not wrapped: their writes tell the bus per statement,
 * before the commit, and the PostgreSQL trigger notices follow the commit.
 */
export function observeWrites(db: Db, bus: InvalidationBus): Db {
  const autocommit = db.withPlugin(new WriteObserver((event) => emitAll(bus, [event])));
  const wrapBuilder = (builder: ReturnType<Db['transaction']>): ReturnType<Db['transaction']> =>
    new Proxy(builder, {
      get(target, prop) {
        if (prop === 'execute') {
          return async (callback: (trx: Tx) => Promise<unknown>) => {
            const observer = new WriteObserver();
            try {
              return await target.execute((trx) => callback(observeCompiled(trx.withPlugin(observer), observer.seen)));
            } finally {
              emitAll(bus, observer.seen);
            }
          };
        }
        const value = Reflect.get(target, prop, target);
        if (typeof value !== 'function') return value;
        // setIsolationLevel / setAccessMode return a new builder: observed as well.
        return (...args: unknown[]) => {
          const result = value.apply(target, args);
          return result?.constructor === target.constructor ? wrapBuilder(result) : result;
        };
      },
    });
  return new Proxy(autocommit, {
    get(target, prop) {
      if (prop === 'transaction') return () => wrapBuilder(db.transaction());
      if (prop === 'executeQuery') {
        // A compiled statement (executePrepared's way in, since this proxy is not the instance that
        // create-db registered): run it prepared on the plain instance, under a name derived from its
        // text, and judge its SQL (plugins never see compiled statements).
        return async (query: CompiledQuery) => {
          const event = classifyWrite(query.query);
          const result =
            query.query.kind === 'RawNode'
              ? { rows: await executePrepared(db, preparedName(query.sql), query) }
              : await db.executeQuery(query);
          if (event) emitAll(bus, [event]);
          return result;
        };
      }
      const value = Reflect.get(target, prop, target);
      // Kysely keeps its state in private fields: its methods must run on the instance itself.
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** A transaction whose compiled statements (executeQuery) are judged too. */
function observeCompiled(trx: Tx, seen: InvalidationEvent[]): Tx {
  return new Proxy(trx, {
    get(target, prop) {
      if (prop === 'executeQuery') {
        return (query: CompiledQuery) => {
          const event = classifyWrite(query.query);
          if (event) seen.push(event);
          return target.executeQuery(query);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

const preparedNames = new Map<string, string>();
function preparedName(text: string): string {
  let name = preparedNames.get(text);
  if (!name) {
    name = `idp_w_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  return name;
}
