// Named prepared statements for the PGlite worker (db/pglite-worker.ts): every statement is parsed, analysed
// and planned once, then only bound and executed, as node-postgres's named statements do on PostgreSQL.
//
// Why: PGlite's query() sends Parse, Describe, Bind, Describe, Execute and Sync as six calls into WASM and
// parses and plans the statement every time. Planning the one-statement CTEs of single sign-on costs more
// than running them (measured on a migrated database, per call: authorize 3.4 ms -> 0.76 ms, code exchange
// 5.9 ms -> 0.73 ms as a prepared statement; EXPLAIN ANALYZE: planning 0.75 and 1.9 ms, execution 0.36 and
// 0.50 ms). Here a statement seen for the first time costs one call (Parse, Describe, Sync) and every call
// one more (Bind, Execute, Sync), with the parameter and result types learnt once.
//
// Rules that keep it exact:
//  - Values are serialized and rows parsed with PGlite's own serializers and parsers, by the types
//    PostgreSQL described, as query() does; affectedRows is read from CommandComplete as query() reads it.
//  - Only data statements and transaction control are prepared (select, insert, update, delete, with,
//    values, begin, commit, rollback, ...). Anything else (DDL in migrations, SET, DO) runs as query() runs
//    it and then drops every prepared statement: a cached plan must never outlive the schema it was made
//    for ("cached plan must not change result type"). PGlite is one session, so every schema change of
//    the database passes through here.
//  - At most MAX_STATEMENTS (200) are kept (statements with IN lists of varying length differ in text); the least
//    recently used is closed.
//  - Prepared statements are not transactional: one parsed inside a transaction that rolls back stays valid.
import type { PGlite } from '@electric-sql/pglite';
import { serialize } from './pglite-wire.js';

export const MAX_STATEMENTS = 200;

const PREPARABLE =
  /^\s*(select|insert|update|delete|with|values|table|begin|start|commit|end|rollback|savepoint|release)\b/i;

interface Field {
  name: string;
  dataTypeID: number;
}

interface Prepared {
  name: string;
  paramTypes: number[];
  fields: Field[];
}

interface Message {
  name: string;
  fields?: unknown[];
  dataTypeIDs?: number[];
  text?: string;
}

export interface StatementResult {
  rows: Record<string, unknown>[];
  affectedRows: number;
}

/** PGlite's reading of CommandComplete (`INSERT 0 3`, `UPDATE 2`, ...). */
function affectedBy(tag: string): number {
  const parts = tag.split(' ');
  switch (parts[0]) {
    case 'INSERT':
      return Number.parseInt(parts[2]!, 10);
    case 'UPDATE':
    case 'DELETE':
    case 'COPY':
    case 'MERGE':
      return Number.parseInt(parts[1]!, 10);
    default:
      return 0;
  }
}

export function createStatementCache(db: PGlite, maxStatements = MAX_STATEMENTS) {
  const prepared = new Map<string, Prepared>();
  let counter = 0;

  const exec = async (...messages: Buffer[]) =>
    (await db.execProtocol(Buffer.concat(messages), { syncToFs: false })).messages as unknown as Message[];

  async function prepare(sql: string): Promise<Prepared> {
    const name = `idp_${++counter}`;
    const messages = await exec(
      serialize.parse({ name, text: sql }),
      serialize.describe({ type: 'S', name }),
      serialize.sync(),
    );
    const params = messages.find((m) => m.name === 'parameterDescription');
    const row = messages.find((m) => m.name === 'rowDescription');
    const statement: Prepared = {
      name,
      paramTypes: params?.dataTypeIDs ?? [],
      fields: ((row?.fields ?? []) as Field[]).map((f) => ({ name: f.name, dataTypeID: f.dataTypeID })),
    };
    if (prepared.size >= maxStatements) {
      const [oldestSql, oldest] = prepared.entries().next().value!;
      prepared.delete(oldestSql);
      await exec(serialize.close({ type: 'S', name: oldest.name }), serialize.sync());
    }
    prepared.set(sql, statement);
    return statement;
  }

  async function forgetAll(): Promise<void> {
    if (prepared.size === 0) return;
    prepared.clear();
    // In a transaction that the statement aborted this fails too: the names are never used again (each
    // Parse takes a new one), so what stays allocated is only memory, and the statement's own error is the
    // one to report.
    await db.exec('deallocate all').catch(() => undefined);
  }

  async function runPrepared(sql: string, params: readonly unknown[]): Promise<StatementResult> {
    let statement = prepared.get(sql);
    if (statement) {
      // Most recently used last: the first entry is the one to close when the cache is full.
      prepared.delete(sql);
      prepared.set(sql, statement);
    } else {
      statement = await prepare(sql);
    }
    const { paramTypes, fields } = statement;
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = db.serializers[paramTypes[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const messages = await exec(
      serialize.bind({ statement: statement.name, values }),
      serialize.execute(),
      serialize.sync(),
    );
    const parsers = db.parsers;
    const rows: Record<string, unknown>[] = [];
    let affectedRows = 0;
    for (const message of messages) {
      if (message.name === 'dataRow') {
        const row: Record<string, unknown> = {};
        const cells = message.fields as (string | null)[];
        for (let i = 0; i < fields.length; i++) {
          const cell = cells[i] ?? null;
          const { name, dataTypeID } = fields[i]!;
          const parse = parsers[dataTypeID];
          row[name] = cell === null ? null : parse ? parse(cell, dataTypeID) : cell;
        }
        rows.push(row);
      } else if (message.name === 'commandComplete') {
        affectedRows += affectedBy(message.text ?? '');
      }
    }
    await db.syncToFs();
    return { rows, affectedRows };
  }

  return {
    /** Runs one statement with its parameters: rows parsed as PGlite's query() parses them. */
    async run(sql: string, params: readonly unknown[]): Promise<StatementResult> {
      if (PREPARABLE.test(sql)) return runPrepared(sql, params);
      try {
        const result = await db.query<Record<string, unknown>>(sql, params as unknown[]);
        return { rows: result.rows, affectedRows: result.affectedRows ?? 0 };
      } finally {
        await forgetAll();
      }
    },
    /** How many statements are prepared now (tests). */
    size: () => prepared.size,
  };
}
