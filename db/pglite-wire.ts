// The frontend messages of PostgreSQL's extended query protocol that db/pglite-statements.ts sends to PGlite
// (https://www.postgresql.org/docs/current/protocol-message-formats.html): Parse, Describe, Bind, Execute,
// Close and Sync, text format only. Written here rather than taken from pg-protocol, whose ES entry point
// cannot be loaded in the worker thread under the test loader (ERR_REQUIRE_CYCLE_MODULE).

/** One message: a type byte, then its length (itself included) and its body. */
function message(type: string, parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  const head = Buffer.allocUnsafe(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const cstring = (text: string) => Buffer.from(`${text}\0`, 'utf8');

function int16(value: number): Buffer {
  const b = Buffer.allocUnsafe(2);
  b.writeInt16BE(value, 0);
  return b;
}

function int32(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32BE(value, 0);
  return b;
}

const SYNC = Buffer.from([0x53, 0, 0, 0, 4]);
const EXECUTE_ALL = message('E', [cstring(''), int32(0)]);

export const serialize = {
  /** Parse: a named statement, parameter types left to the server. */
  parse: ({ name, text }: { name: string; text: string }) => message('P', [cstring(name), cstring(text), int16(0)]),
  describe: ({ type, name }: { type: 'S' | 'P'; name: string }) => message('D', [Buffer.from(type), cstring(name)]),
  /** Bind to the unnamed portal: every parameter and every result column in text format. */
  bind({ statement, values }: { statement: string; values: (string | null)[] }): Buffer {
    const parts = [cstring(''), cstring(statement), int16(0), int16(values.length)];
    for (const value of values) {
      if (value === null) parts.push(int32(-1));
      else {
        const bytes = Buffer.from(value, 'utf8');
        parts.push(int32(bytes.length), bytes);
      }
    }
    parts.push(int16(0));
    return message('B', parts);
  },
  /** Execute the unnamed portal, every row. */
  execute: () => EXECUTE_ALL,
  close: ({ type, name }: { type: 'S' | 'P'; name: string }) => message('C', [Buffer.from(type), cstring(name)]),
  sync: () => SYNC,
};
