// A Kysely dialect over the PGlite worker (db/pglite-client.ts). Every acquired connection is a label, not
// a lock: its statements go to the worker at once, and the worker keeps PGlite's one session consistent
// (a transaction runs alone from begin to commit/rollback; see db/pglite-worker.ts). So, as with
// kysely-pglite-dialect, a statement on `db` inside `db.transaction()` waits for that transaction: use `trx`.
// Statements outside a transaction on a kept connection (`db.connection()`) may interleave with other
// connections' (they share one session): nothing here relies on session state.
import {
  CompiledQuery,
  IdentifierNode,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  RawNode,
  createQueryId,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type { PGliteWorkerClient } from './pglite-client.js';

export class PGliteWorkerDialect implements Dialect {
  readonly #client: PGliteWorkerClient;

  constructor(client: PGliteWorkerClient) {
    this.#client = client;
  }

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteWorkerDriver(this.#client);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }
}

class PGliteWorkerConnection implements DatabaseConnection {
  inTransaction = false;

  constructor(
    readonly client: PGliteWorkerClient,
    readonly id: number,
  ) {}

  async executeQuery<R>(query: CompiledQuery, tx?: 'begin' | 'end'): Promise<QueryResult<R>> {
    const { rows, affectedRows } = await this.client.query(this.id, query.sql, query.parameters, tx);
    return {
      rows: rows as R[],
      ...(affectedRows ? { numAffectedRows: BigInt(affectedRows) } : {}),
    };
  }

  async *streamQuery<R>(query: CompiledQuery, chunkSize: number): AsyncIterableIterator<QueryResult<R>> {
    if (!Number.isInteger(chunkSize) || chunkSize <= 0) throw new Error('chunkSize must be a positive integer');
    const { rows } = await this.executeQuery<R>(query);
    for (let i = 0; i < rows.length; i += chunkSize) yield { rows: rows.slice(i, i + chunkSize) };
  }
}

function savepointCommand(command: string, name: string) {
  return RawNode.createWithChildren([RawNode.createWithSql(`${command} `), IdentifierNode.create(name)]);
}

class PGliteWorkerDriver implements Driver {
  readonly #client: PGliteWorkerClient;
  #nextConnection = 1;

  constructor(client: PGliteWorkerClient) {
    this.#client = client;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#client.closed) throw new Error('database is closed');
    return new PGliteWorkerConnection(this.#client, this.#nextConnection++);
  }

  async beginTransaction(connection: PGliteWorkerConnection, settings: TransactionSettings): Promise<void> {
    let text = 'begin';
    if (settings.isolationLevel || settings.accessMode) {
      text = 'start transaction';
      if (settings.isolationLevel) text += ` isolation level ${settings.isolationLevel}`;
      if (settings.accessMode) text += ` ${settings.accessMode}`;
    }
    await connection.executeQuery(CompiledQuery.raw(text), 'begin');
    connection.inTransaction = true;
  }

  async commitTransaction(connection: PGliteWorkerConnection): Promise<void> {
    connection.inTransaction = false;
    await connection.executeQuery(CompiledQuery.raw('commit'), 'end');
  }

  async rollbackTransaction(connection: PGliteWorkerConnection): Promise<void> {
    connection.inTransaction = false;
    await connection.executeQuery(CompiledQuery.raw('rollback'), 'end');
  }

  async savepoint(connection: PGliteWorkerConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(compile(savepointCommand('savepoint', name), createQueryId()));
  }

  async rollbackToSavepoint(connection: PGliteWorkerConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(compile(savepointCommand('rollback to', name), createQueryId()));
  }

  async releaseSavepoint(connection: PGliteWorkerConnection, name: string, compile: QueryCompiler['compileQuery']) {
    await connection.executeQuery(compile(savepointCommand('release', name), createQueryId()));
  }

  async releaseConnection(connection: PGliteWorkerConnection): Promise<void> {
    // A transaction left open (a controlled transaction never committed) would hold every other statement.
    if (connection.inTransaction) await this.rollbackTransaction(connection).catch(() => {});
  }

  async destroy(): Promise<void> {
    await this.#client.close();
  }
}
