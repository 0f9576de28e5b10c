// /metrics with WORKERS > 1: the primary balances connections over the workers, so a scrape reaches any
// one of them. The worker that answers asks the primary, which asks every worker for its registry's
// figures (prom-client's JSON form) and hands them all back; the answering worker adds them up with
// prom-client's AggregatorRegistry (counters and histograms summed, each default metric by its own rule).
// So every scrape shows the whole server, whichever worker it reached. Messages go over the cluster's
// IPC channel; nothing else listens on them.
import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** One registry's figures, as registry.getMetricsAsJSON() gives them. */
type Figures = object[];
/** worker → primary: a scrape wants everyone's figures. */
const REQUEST = 'idp:metrics-request';
/** primary → each worker: send your figures. */
const COLLECT = 'idp:metrics-collect';
/** worker → primary: my figures. */
const PART = 'idp:metrics-part';
/** primary → the asking worker: everyone's figures. */
const ANSWER = 'idp:metrics-answer';

/** How long a scrape waits for the other workers (Prometheus's own timeout is 10 s by default). */
const WAIT_MS = 3000;

type Message = { type?: unknown; id?: unknown; figures?: unknown; parts?: unknown };

/** The primary's side: relays a scrape's request to every worker and the answers back. */
export function relayClusterMetrics(workers: () => Iterable<Worker>): (from: Worker, message: unknown) => void {
  let next = 0;
  const collecting = new Map<number, { parts: Figures[]; waiting: number; finish: () => void }>();
  return (from, message) => {
    const m = message as Message;
    if (m?.type === PART && typeof m.id === 'number') {
      const round = collecting.get(m.id);
      if (!round) return;
      round.parts.push(m.figures as Figures);
      if (--round.waiting === 0) round.finish();
      return;
    }
    if (m?.type !== REQUEST) return;
    const id = next++;
    const connected = [...workers()].filter((w) => w.isConnected());
    const round = {
      parts: [] as Figures[],
      waiting: connected.length,
      finish: () => {
        clearTimeout(timer);
        collecting.delete(id);
        // A worker that did not answer in time is left out rather than failing the scrape.
        if (from.isConnected()) from.send({ type: ANSWER, id: m.id, parts: round.parts });
      },
    };
    const timer = setTimeout(round.finish, WAIT_MS);
    collecting.set(id, round);
    for (const worker of connected) worker.send({ type: COLLECT, id });
    if (connected.length === 0) round.finish();
  };
}

export interface ClusterMetricsWorker {
  /** The Prometheus text of every worker's figures added up (this worker's alone if the primary is silent). */
  text(): Promise<string>;
  stop(): void;
}

/** A worker's side: answers the primary's collections, and asks for everyone's figures on a scrape. */
export function clusterMetricsWorker(registry: Registry): ClusterMetricsWorker {
  let next = 0;
  const pending = new Map<number, (parts: Figures[]) => void>();
  const onMessage = (message: unknown) => {
    const m = message as Message;
    if (m?.type === COLLECT) {
      registry.getMetricsAsJSON().then(
        (figures) => process.send?.({ type: PART, id: m.id, figures }),
        () => process.send?.({ type: PART, id: m.id, figures: [] }),
      );
    } else if (m?.type === ANSWER && typeof m.id === 'number') {
      pending.get(m.id)?.(m.parts as Figures[]);
    }
  };
  process.on('message', onMessage);
  return {
    async text() {
      const id = next++;
      const parts = await new Promise<Figures[] | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), WAIT_MS + 1000);
        pending.set(id, (answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        process.send?.({ type: REQUEST, id });
      });
      pending.delete(id);
      if (!parts?.length) return registry.metrics();
      return AggregatorRegistry.aggregate(parts).metrics();
    },
    stop() {
      process.off('message', onMessage);
      for (const resolve of pending.values()) resolve([]);
      pending.clear();
    },
  };
}
