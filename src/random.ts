// Random bytes for tokens, IVs and trace ids, from the CSPRNG in blocks: one randomFillSync per 4 KiB instead
// of one randomBytes call per value. A call into the CSPRNG costs ~2 us whatever its size (a job object, the
// provider's locks), a slice of the block ~0.1 us; a refresh or a code flow draws four or five values. Node does
// the same for randomUUID. Each byte is handed out once and then wiped from the block, so the block never holds
// the bytes of a token already issued.
import { randomFillSync } from 'node:crypto';

const BLOCK = 4096;
const pool = Buffer.alloc(BLOCK);
let offset = BLOCK;

function take(bytes: number): number {
  if (bytes > BLOCK) throw new RangeError(`at most ${BLOCK} random bytes at a time`);
  if (offset + bytes > BLOCK) {
    randomFillSync(pool);
    offset = 0;
  }
  const start = offset;
  offset += bytes;
  return start;
}

/** `bytes` fresh random bytes, encoded (base64url for tokens, hex for trace ids). */
export function randomString(bytes: number, encoding: 'base64url' | 'hex'): string {
  const start = take(bytes);
  const text = pool.toString(encoding, start, start + bytes);
  pool.fill(0, start, start + bytes);
  return text;
}

/** `bytes` fresh random bytes in a buffer of their own. */
export function randomBuffer(bytes: number): Buffer {
  const start = take(bytes);
  const copy = Buffer.allocUnsafe(bytes);
  pool.copy(copy, 0, start, start + bytes);
  pool.fill(0, start, start + bytes);
  return copy;
}
