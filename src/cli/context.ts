// What a command that touches the database needs: its configuration (from the environment the entry point
// passed down), the database opened and migrated for the command's duration, and who acts (for audit).
import { userInfo } from 'node:os';
import { loadConfig, type Config } from '../config.js';
import type { ActorContext } from '../services/applications.js';
import { migrateToLatest, openConfiguredDatabase, type DatabaseHandle } from '../database.js';
import type { Io } from './io.js';

export function loadCliConfig(io: Io): Config {
  return loadConfig(io.env);
}

export async function withDatabase<T>(
  config: Config,
  purpose: string,
  run: (db: DatabaseHandle) => Promise<T>,
): Promise<T> {
  const database = await openConfiguredDatabase(config, purpose);
  try {
    await migrateToLatest(database.db);
    return await run(database);
  } finally {
    await database.close();
  }
}

/** The operator, as audit events name them: cli:<login name>. */
export function actor(): ActorContext {
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // no passwd entry (some containers)
  }
  return { actor: `cli:${name}` };
}
