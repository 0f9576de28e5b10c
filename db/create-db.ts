// One Kysely instance over PostgreSQL (pg) when a URL is given, otherwise over embedded PGlite
// (file-backed in a directory, or in memory for tests), which runs in a worker thread (db/pglite-worker.ts).
import { CompiledQuery, Kysely, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { PGliteWorkerClient } from './pglite-client.js';
import { PGliteWorkerDialect } from './pglite-dialect.js';
import type { Database } from './tables.js';

// int8 (count(*), bigserial) arrives as a string from pg and a number from PGlite: make it a number on both.
pg.types.setTypeParser(20, (value: string) => Number(value));

export type Db = Kysely<Database>;
/** A transaction: functions that lock rows or write several statements that belong together take it. */
export type Tx = Transaction<Database>;

type PreparedExecutor = (name: string, query: CompiledQuery) => Promise<unknown[]>;
const preparedExecutors = new WeakMap<object, PreparedExecutor>();

/** Runs fixed SQL text with its parameters ($1, $2, ...), unnamed: no query building, and `*` stays safe. */
export async function executeText<R>(db: Db, text: string, parameters: unknown[]): Promise<R[]> {
  return (await db.executeQuery(CompiledQuery.raw(text, parameters) as CompiledQuery<R>)).rows;
}

/**
 * Runs a hot query as a named prepared statement on PostgreSQL (parsed and planned once per pooled
 * connection instead of on every call); elsewhere (PGlite, transactions) like any query. Only for
 * queries that select explicit columns: a prepared `select *` fails once a migration adds a column.
 */
export async function executePrepared<R>(db: Db, name: string, query: CompiledQuery<R>): Promise<R[]> {
  const run = preparedExecutors.get(db);
  if (run) return (await run(name, query)) as R[];
  return (await db.executeQuery(query)).rows;
}

export interface DatabaseHandle {
  db: Db;
  engine: 'postgres' | 'pglite';
  /** Where the data lives, without credentials, for logs and CLI output. */
  location: string;
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
  /** PostgreSQL only: the connection pool (shared rate limits query it through rate-limiter-flexible). */
  pool?: pg.Pool;
  /** PostgreSQL only: LISTEN on a channel (see listenPostgres). */
  listen?: (channel: string, handlers: ListenHandlers) => Listener;
  /** How busy the database is now (the metrics): PostgreSQL's pool, or PGlite's statement queue. */
  stats?: () => DatabaseStats;
}

export type DatabaseStats =
  | { engine: 'postgres'; max: number; total: number; idle: number; waiting: number }
  | { engine: 'pglite'; pending: number };

export interface Listener {
  /** Settles once the first LISTEN succeeded or failed (the listener keeps retrying either way). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

export interface ListenHandlers {
  onMessage: (payload: string) => void;
  onReconnect: () => void;
  onError: (error: unknown) => void;
}

export interface DatabaseOptions {
  /** postgres:// URL. When absent, the embedded database is used. */
  databaseUrl?: string | undefined;
  /** Directory of the embedded database; absent = in memory. */
  dataDir?: string | undefined;
  /** A PGlite data-directory dump to start from (tests start from a migrated snapshot). */
  loadDataDir?: Blob | undefined;
  poolSize?: number;
  /** PostgreSQL only: run every connection with this search_path (the tests: a schema per test). */
  searchPath?: string | undefined;
  /**
   * PostgreSQL only: the server cancels a statement after this many ms (statement_timeout; 0 = never), and
   * the client gives up on an answer 5 s later (query_timeout: a connection whose server went silent).
   * Default 30 s: far above any statement on the request path, short enough that no request hangs.
   */
  statementTimeoutMs?: number | undefined;
}

export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    return `postgres://${u.hostname}${u.port ? `:${u.port}` : ''}${u.pathname}`;
  } catch {
    return 'postgres://<unparseable URL>';
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export async function createDatabase(options: DatabaseOptions): Promise<DatabaseHandle> {
  let closed = false;
  if (options.databaseUrl) {
    const statementTimeoutMs = options.statementTimeoutMs ?? 30_000;
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      // Fail fast, never hang (README, "When PostgreSQL is down"): connecting gives up after 5 s (above),
      // a statement after statementTimeoutMs; dead peers are noticed by TCP keep-alive.
      keepAlive: true,
      ...(statementTimeoutMs > 0
        ? { statement_timeout: statementTimeoutMs, query_timeout: statementTimeoutMs + 5000 }
        : {}),
      ...(options.searchPath ? { options: `-c search_path=${options.searchPath}` } : {}),
    });
    // An idle client losing its server must not crash the process; the next query reports it.
    pool.on('error', () => {});
    // Nor one that is checked out between two statements (inside a transaction): pg emits 'error' on the
    // client itself, which has no listener then, and an unheard 'error' event is an uncaught exception.
    // The statement that follows fails (503), and the pool discards the client when it is released.
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    preparedExecutors.set(
      db,
      async (name, query) => (await pool.query({ name, text: query.sql, values: query.parameters as unknown[] })).rows,
    );
    const url = options.databaseUrl;
    return {
      db,
      engine: 'postgres',
      location: describeDatabaseUrl(options.databaseUrl),
      pool,
      listen: (channel, handlers) => listenPostgres(url, channel, handlers),
      stats: () => ({
        engine: 'postgres',
        max: options.poolSize ?? 10,
        total: pool.totalCount,
        idle: pool.idleCount,
        waiting: pool.waitingCount,
      }),
      async ping(timeoutMs = 2000) {
        if (closed) throw new Error('database is closed');
        await withTimeout(sql`select 1`.execute(db), timeoutMs, 'PostgreSQL');
      },
      async close() {
        if (closed) return;
        closed = true;
        await db.destroy();
      },
    };
  }

  // PGlite runs in a worker thread of its own (db/pglite-worker.ts): its WASM PostgreSQL then uses the
  // second core instead of sharing the server's JavaScript thread.
  const client = await PGliteWorkerClient.start({ dataDir: options.dataDir, loadDataDir: options.loadDataDir });
  const db = new Kysely<Database>({ dialect: new PGliteWorkerDialect(client) });
  return {
    db,
    engine: 'pglite',
    location: options.dataDir ? `embedded PGlite in ${options.dataDir}` : 'embedded PGlite in memory',
    stats: () => ({ engine: 'pglite', pending: client.pending }),
    async ping(timeoutMs = 2000) {
      if (closed || client.closed) throw new Error('database is closed');
      await withTimeout(sql`select 1`.execute(db), timeoutMs, 'PGlite');
    },
    async close() {
      if (closed) return;
      closed = true;
      await db.destroy();
      // Kysely skips its driver's destroy when nothing ran: close the thread here too (a no-op when done).
      await client.close(); // PGlite shuts down with a checkpoint: the data directory is complete
    },
  };
}

/**
 * LISTEN on a PostgreSQL channel with a dedicated connection, reconnecting with backoff. Returns a
 * stop function. (PGlite is one process: its changes are seen in-process, no listener needed.)
 */
export function listenPostgres(databaseUrl: string, channel: string, handlers: ListenHandlers): Listener {
  let client: pg.Client | undefined;
  let stopped = false;
  let delay = 500;
  let timer: NodeJS.Timeout | undefined;
  let settle: () => void = () => {};
  const ready = new Promise<void>((resolve) => (settle = resolve));
  const connect = async () => {
    if (stopped) return settle();
    const c = new pg.Client({ connectionString: databaseUrl });
    c.on('notification', (n) => {
      if (n.channel === channel) handlers.onMessage(n.payload ?? '');
    });
    c.on('error', (error) => {
      handlers.onError(error);
      retry();
    });
    try {
      await c.connect();
      await c.query(`listen ${channel}`);
      if (stopped) {
        await c.end().catch(() => {});
        return settle();
      }
      client = c;
      delay = 500;
      // Anything may have changed while we were not listening.
      handlers.onReconnect();
    } catch (error) {
      handlers.onError(error);
      c.end().catch(() => {});
      retry();
    }
    settle();
  };
  const retry = () => {
    if (stopped || timer) return;
    client = undefined;
    timer = setTimeout(() => {
      timer = undefined;
      void connect();
    }, delay);
    timer.unref();
    delay = Math.min(delay * 2, 30_000);
  };
  void connect();
  return {
    ready,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await client?.end().catch(() => {});
      client = undefined;
    },
  };
}
