import { describeEnv } from '../config.js';
import type { Io } from './io.js';

/** `idp env`: every variable the configuration reads, its default and what it does. */
export function envCommand(io: Io): void {
  for (const v of describeEnv()) {
    io.out(`${v.name.padEnd(28)}${String(v.default ?? '(unset)').padEnd(24)}${v.description}`);
  }
}
