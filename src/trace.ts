// W3C Trace Context (https://www.w3.org/TR/trace-context/): every request has a trace id, which is in
// each of its log lines (`traceId`). A valid incoming `traceparent` (version 00) gives the trace id; anything
// else is ignored and a new one is made, never an error. The answer carries `traceparent` with the same trace
// id and this server's own span id, so a caller can find the request's log lines.
import type { IncomingMessage } from 'node:http';
import { randomString } from './random.js';

export interface Trace {
  traceId: string;
  /** This server's span of the request (the parent id of anything it calls). */
  spanId: string;
  /** The caller's sampled flag (01), else 00: this server samples nothing itself. */
  flags: string;
}

// version 00: exactly four fields, lower-case hex (the specification's rule for version 00).
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_PARENT = '0'.repeat(16);

/** The trace of a request with this `traceparent` header (a new trace when it is missing or invalid). */
export function traceOf(header: string | string[] | undefined): Trace {
  const match = typeof header === 'string' && header.length === 55 ? TRACEPARENT.exec(header) : null;
  if (match && match[1] !== ZERO_TRACE && match[2] !== ZERO_PARENT) {
    return { traceId: match[1]!, spanId: newSpanId(), flags: Number.parseInt(match[3]!, 16) & 1 ? '01' : '00' };
  }
  // A new trace id and span id from one draw of 24 random bytes (one hex conversion per request).
  const hex = randomString(24, 'hex');
  const traceId = hex.slice(0, 32);
  const spanId = hex.slice(32);
  if (traceId === ZERO_TRACE || spanId === ZERO_PARENT) return traceOf(undefined);
  return { traceId, spanId, flags: '00' };
}

function newSpanId(): string {
  let id = randomString(8, 'hex');
  while (id === ZERO_PARENT) id = randomString(8, 'hex');
  return id;
}

/** The `traceparent` header of the answer: the trace id, this server's span. */
export function traceparent(trace: Trace): string {
  return `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;
}

const TRACE = Symbol('idp.trace');
type Traced = IncomingMessage & { [TRACE]?: Trace };

/** The request's trace, made once (Fastify's child-logger factory asks first, then the onRequest hook). */
export function traceRequest(raw: IncomingMessage): Trace {
  const traced = raw as Traced;
  let trace = traced[TRACE];
  if (!trace) {
    trace = traceOf(raw.headers.traceparent);
    traced[TRACE] = trace;
  }
  return trace;
}
