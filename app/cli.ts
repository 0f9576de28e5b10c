#!/usr/bin/env node
// `idp`: the entry point. It and nothing else reads process.env: the environment goes down to the commands
// (src/cli/, dispatched by app/cli/main.ts) inside their Io. Exit codes: 0 success, 1 the operation failed
// (bad configuration, not found, conflict, invalid value, database busy), 2 usage error.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { run, type Io } from './cli/main.js';

export { run };

const isMain = process.argv[1] && /(?:^|[\\/])(?:cli\.(?:ts|js)|idp(?:\.js)?)$/.test(process.argv[1]);
if (isMain) {
  // argon2id hashes and RS256 signatures run on libuv's thread pool, 4 threads unless told: at least one
  // per core, so that sign-ins use every core (read when the pool first starts, after this line).
  process.env.UV_THREADPOOL_SIZE ??= String(Math.max(4, availableParallelism()));
  const io: Io = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    env: process.env,
    stdin: () => readFileSync(0, 'utf8'),
  };
  run(process.argv.slice(2), io).then((code) => {
    // serve keeps running; everything else ends here.
    if (process.argv[2] !== 'serve' || code !== 0) process.exitCode = code;
  });
}
