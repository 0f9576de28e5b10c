// Messages between the main thread (db/pglite-client.ts) and the PGlite worker (db/pglite-worker.ts).
// Everything crosses by structured clone, which keeps Date, Uint8Array, bigint, Blob and plain objects.

export interface WorkerInit {
  /** Directory of a file-backed database (PGlite's NodeFS); absent = in memory. */
  dataDir?: string | undefined;
  /** A data-directory dump (PGlite dumpDataDir) to start an in-memory database from. */
  loadDataDir?: Blob | undefined;
}

/**
 * `tx` marks the statements that open and close a transaction: from a `begin` until its `end` the worker
 * runs only that connection's statements and holds every other one back (PGlite is one session).
 */
export type WorkerRequest =
  | { type: 'query'; id: number; conn: number; sql: string; params: readonly unknown[]; tx?: 'begin' | 'end' }
  | { type: 'dump'; id: number; compression: 'none' | 'gzip' | 'auto' }
  | { type: 'close'; id: number };

export interface SerializedError {
  name: string;
  message: string;
  /** PostgreSQL's fields (code, detail, constraint, table, ...): every own primitive property. */
  fields: Record<string, string | number | boolean | null>;
}

export type WorkerReply =
  | { type: 'ready' }
  | { type: 'init-error'; error: SerializedError }
  | { type: 'result'; id: number; rows: unknown[]; affectedRows: number | undefined }
  | { type: 'dump'; id: number; blob: Blob }
  | { type: 'done'; id: number }
  | { type: 'error'; id: number; error: SerializedError };

export function serializeError(error: unknown): SerializedError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error), fields: {} };
  const fields: SerializedError['fields'] = {};
  for (const [key, value] of Object.entries(error)) {
    if (value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      fields[key] = value;
    }
  }
  return { name: error.name, message: error.message, fields };
}

/** An Error carrying PostgreSQL's fields again (services test `error.code`, e.g. 23505). */
export function deserializeError(serialized: SerializedError): Error {
  const error = new Error(serialized.message);
  Object.assign(error, serialized.fields);
  error.name = serialized.name;
  return error;
}
