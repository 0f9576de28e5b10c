// The main thread's side of the PGlite worker (db/pglite-worker.ts): starts the thread, sends statements,
// matches the answers, and fails every pending statement when the thread stops (a crash never hangs one).
import { Worker } from 'node:worker_threads';
import {
  deserializeError,
  type SerializedError,
  type WorkerInit,
  type WorkerReply,
  type WorkerRequest,
} from './pglite-protocol.js';

export interface WorkerResult {
  rows: unknown[];
  affectedRows: number | undefined;
}

interface Pending {
  resolve: (reply: WorkerReply) => void;
  reject: (error: Error) => void;
}

/**
 * Compiled (dist/db/*.js): the compiled worker next to this file. From the TypeScript sources (tsx, tap):
 * Node 20 applies neither tsx's nor ts-node's hooks to worker threads, so the thread registers tsx first.
 */
function spawnWorker(init: WorkerInit): Worker {
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./pglite-worker.js', import.meta.url), { workerData: init });
  }
  const pglite = JSON.stringify(import.meta.resolve('@electric-sql/pglite'));
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const entry = JSON.stringify(new URL('./pglite-worker.ts', import.meta.url).href);
  // PGlite first: loaded through tsx's hooks it takes ~0.4 s longer (measured), and it needs no transform.
  const boot = `await import(${pglite}); const { register } = await import(${tsx}); register();
    await import(${entry});`;
  return new Worker(new URL(`data:text/javascript,${encodeURIComponent(boot)}`), { workerData: init });
}

/** How long close() waits for running and queued statements before it stops the thread anyway. */
const CLOSE_TIMEOUT_MS = 15_000;

type Request = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

export class PGliteWorkerClient {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  /** Why the thread is gone: every new statement fails with it. */
  #stopped: Error | undefined;
  /** close() was called: only the statements of a transaction already begun may still be sent. */
  #closing = false;
  /** Connections between their `begin` and `end`. */
  readonly #openTransactions = new Set<number>();
  #exited: Promise<void>;

  #started: { resolve: () => void; reject: (error: Error) => void } | undefined;

  private constructor(worker: Worker) {
    this.#worker = worker;
    this.#exited = new Promise((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (message: WorkerReply) => this.#receive(message));
    worker.on('error', (error) => this.#fail(error));
    worker.on('exit', (code) => this.#fail(new Error(`the PGlite worker stopped (exit code ${code})`)));
  }

  /** Starts the thread and waits for PGlite to be ready (initdb or recovery can take seconds). */
  static async start(init: WorkerInit): Promise<PGliteWorkerClient> {
    const client = new PGliteWorkerClient(spawnWorker(init));
    try {
      await new Promise<void>((resolve, reject) => {
        client.#started = { resolve, reject };
      });
    } catch (error) {
      await client.terminate();
      throw error;
    }
    client.#started = undefined;
    // The thread keeps the process alive only while a statement is pending, as in-process PGlite did.
    client.#worker.unref();
    return client;
  }

  #receive(message: WorkerReply): void {
    if (message.type === 'ready' || message.type === 'init-error') {
      if (message.type === 'ready') this.#started?.resolve();
      else this.#started?.reject(deserializeError(message.error));
      return;
    }
    const pending = this.#pending.get(message.id);
    if (!pending) return;
    this.#settled(message.id);
    if (message.type === 'error') pending.reject(deserializeError(message.error));
    else pending.resolve(message);
  }

  #settled(id: number): void {
    this.#pending.delete(id);
    if (this.#pending.size === 0 && !this.#closing) this.#worker.unref();
  }

  #fail(error: Error): void {
    this.#stopped ??= error;
    this.#started?.reject(error);
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(error);
  }

  get closed(): boolean {
    return this.#closing || this.#stopped !== undefined;
  }

  /** Statements sent to the thread and not answered yet (its queue depth), for the metrics. */
  get pending(): number {
    return this.#pending.size;
  }

  #send(request: Request): Promise<WorkerReply> {
    if (this.#stopped) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise<WorkerReply>((resolve, reject) => {
      if (this.#pending.size === 0) this.#worker.ref();
      this.#pending.set(id, { resolve, reject });
      try {
        this.#worker.postMessage({ ...request, id });
      } catch (error) {
        // A parameter that cannot be cloned (a function, a symbol): this statement fails, nothing else.
        this.#settled(id);
        reject(error);
      }
    });
  }

  async query(conn: number, sql: string, params: readonly unknown[], tx?: 'begin' | 'end'): Promise<WorkerResult> {
    if (this.#closing && !(tx !== 'begin' && this.#openTransactions.has(conn))) {
      throw this.#stopped ?? new Error('database is closed');
    }
    if (tx === 'begin') this.#openTransactions.add(conn);
    const sent = this.#send({ type: 'query', conn, sql, params, ...(tx ? { tx } : {}) });
    if (tx === 'end') this.#openTransactions.delete(conn);
    let reply: WorkerReply;
    try {
      reply = await sent;
    } catch (error) {
      if (tx === 'begin') this.#openTransactions.delete(conn);
      throw error;
    }
    return reply.type === 'result' ? { rows: reply.rows, affectedRows: reply.affectedRows } : unexpected(reply);
  }

  /** PGlite's dumpDataDir, taken after every statement sent before it. */
  async dumpDataDir(compression: 'none' | 'gzip' | 'auto' = 'auto'): Promise<Blob> {
    if (this.#closing) throw this.#stopped ?? new Error('database is closed');
    const reply = await this.#send({ type: 'dump', compression });
    return reply.type === 'dump' ? reply.blob : unexpected(reply);
  }

  /**
   * Runs what was sent before (and waits for a transaction in progress), shuts PostgreSQL down cleanly
   * and ends the thread. After CLOSE_TIMEOUT_MS it stops the thread anyway: what was committed is in the
   * data directory's WAL already, and the next start replays it.
   */
  async close(timeoutMs = CLOSE_TIMEOUT_MS): Promise<void> {
    if (this.#stopped || this.#closing) return this.#exited;
    const closing = this.#send({ type: 'close' });
    this.#closing = true; // and the thread stays referenced until it has exited
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      await Promise.race([closing, timeout]);
    } finally {
      clearTimeout(timer);
      // PGlite is shut down (or did not finish in time): end the thread now. Left to end by itself, it
      // takes another 0.5-1 s (measured).
      await this.terminate();
    }
  }

  /** Stops the thread at once; pending statements fail. */
  async terminate(): Promise<void> {
    await this.#worker.terminate();
    await this.#exited;
  }
}

function unexpected(reply: WorkerReply): never {
  throw new Error(`unexpected answer from the PGlite worker: ${reply.type}`);
}

export type { SerializedError };
