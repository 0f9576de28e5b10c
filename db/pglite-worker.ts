// The PGlite worker thread: owns the one PGlite instance (WASM PostgreSQL) so that its CPU time is not the
// server's JavaScript thread's. Started by db/pglite-client.ts with a WorkerInit as workerData.
//
// PGlite is one session, so the worker runs one statement at a time, in the order they arrive, with one
// exception: between a `begin` and its `end` (see WorkerRequest) only the transaction's own connection
// runs; everything else waits, queued here, until it ends (what kysely-pglite-dialect's connection mutex
// did on the main thread). Queueing here rather than on the main thread keeps the worker busy: the next
// statement is already waiting when one ends, instead of one round trip through a loaded event loop later.
import { parentPort, workerData } from 'node:worker_threads';
import { PGlite } from '@electric-sql/pglite';
import { trimArrayParsers } from './pglite-parsers.js';
import { createStatementCache } from './pglite-statements.js';
import { serializeError, type WorkerInit, type WorkerReply, type WorkerRequest } from './pglite-protocol.js';

if (!parentPort) throw new Error('db/pglite-worker.ts runs as a worker thread (see db/pglite-client.ts)');
const port = parentPort;
const reply = (message: WorkerReply) => port.postMessage(message);

/** Statements held back while a transaction runs, and the transaction's own, in arrival order. */
const waiting: WorkerRequest[] = [];
const ownQueue: WorkerRequest[] = [];
let owner: number | undefined;
let running = false;
let closed = false;
let pglite: PGlite | undefined;
let statements: ReturnType<typeof createStatementCache> | undefined;

port.on('message', (request: WorkerRequest) => {
  if (owner !== undefined && request.type === 'query' && request.conn === owner) ownQueue.push(request);
  else waiting.push(request);
  void pump();
});

async function pump(): Promise<void> {
  const db = pglite;
  if (running || !db) return;
  running = true;
  try {
    while (!closed) {
      const next = owner === undefined ? waiting.shift() : ownQueue.shift();
      if (!next) break;
      await run(db, next);
    }
  } finally {
    running = false;
  }
}

async function run(db: PGlite, request: WorkerRequest): Promise<void> {
  try {
    if (request.type === 'query') {
      if (request.tx === 'begin') owner = request.conn;
      try {
        const result = await statements!.run(request.sql, request.params);
        reply({ type: 'result', id: request.id, rows: result.rows, affectedRows: result.affectedRows });
      } catch (error) {
        // A failed begin opened nothing; commit and rollback end the transaction whatever they answer.
        if (request.tx === 'begin') owner = undefined;
        throw error;
      } finally {
        if (request.tx === 'end') {
          owner = undefined;
          waiting.unshift(...ownQueue.splice(0));
        }
      }
    } else if (request.type === 'dump') {
      reply({ type: 'dump', id: request.id, blob: await db.dumpDataDir(request.compression) });
    } else {
      await close(db, request.id);
    }
  } catch (error) {
    reply({ type: 'error', id: request.id, error: serializeError(error) });
  }
}

/** Closing shuts PostgreSQL down (a checkpoint: the data directory is complete); the client then ends the thread. */
async function close(db: PGlite, id: number): Promise<void> {
  closed = true;
  try {
    await db.close();
    reply({ type: 'done', id });
  } catch (error) {
    reply({ type: 'error', id, error: serializeError(error) });
  }
}

try {
  const init = workerData as WorkerInit;
  // NodeFS writes through to the directory on every commit (pwrite of the WAL, no fsync; PGlite's
  // relaxedDurability option only defers syncToFs, which is a no-op for NodeFS): a killed process loses
  // no committed transaction, the next start replays the WAL. An OS crash can lose the last ones.
  const instance = init.dataDir
    ? new PGlite(init.dataDir)
    : new PGlite(init.loadDataDir ? { loadDataDir: init.loadDataDir } : {});
  await instance.waitReady;
  await trimArrayParsers(instance);
  statements = createStatementCache(instance);
  pglite = instance;
  reply({ type: 'ready' });
  void pump();
} catch (error) {
  reply({ type: 'init-error', error: serializeError(error) });
  port.close();
}
