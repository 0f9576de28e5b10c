// What a command that touches the database needs: its configuration (from the environment the entry point
// passed down), the database opened and migrated for the command's duration, the domain services over it
// (built by createServices, as the server's are), and who acts (for audit).
import { userInfo } from 'node:os';
import { loadConfig, type Config } from '../config.js';
import type { ActorContext, StaticApplications } from '../services/applications.js';
import { closeServices, createServices, OPERATOR_LIMITS, type Services } from '../compose.js';
import { staticApplicationsFrom } from '../static-applications.js';
import { migrateToLatest, openConfiguredDatabase, type DatabaseHandle } from '../database.js';
import type { Io } from './io.js';
import { cliLog, cliMailer } from './mailer.js';

export function loadCliConfig(io: Io): Config {
  return loadConfig(io.env);
}

/** Opens the configured database for a command: io.openDatabase when the caller gave one (see Io). */
export function openDatabase(
  config: Config,
  purpose: string,
  io: Pick<Io, 'openDatabase'> = {},
): Promise<DatabaseHandle> {
  return (io.openDatabase ?? openConfiguredDatabase)(config, purpose);
}

export async function withDatabase<T>(
  config: Config,
  purpose: string,
  run: (db: DatabaseHandle) => Promise<T>,
  io: Pick<Io, 'openDatabase'> = {},
): Promise<T> {
  const database = await openDatabase(config, purpose, io);
  try {
    await migrateToLatest(database.db);
    return await run(database);
  } finally {
    await database.close();
  }
}

/**
 * withDatabase, with the domain services over it. Mail goes out in one attempt (cliMailer); the commands
 * count against no rate limit (OPERATOR_LIMITS). `staticApplications`: the commands that read
 * STATIC_APPLICATIONS_FILE load it before the database opens; for the others it stays unread (none).
 */
export async function withServices<T>(
  config: Config,
  purpose: string,
  io: Io,
  run: (services: Services) => Promise<T>,
  staticApplications: StaticApplications = staticApplicationsFrom([], undefined),
): Promise<T> {
  return withDatabase(
    config,
    purpose,
    async (database) => {
      const services = createServices(config, database.db, {
        staticApplications,
        log: cliLog(io),
        limits: OPERATOR_LIMITS,
        mailer: cliMailer(config, io),
      });
      try {
        return await run(services);
      } finally {
        await closeServices(services);
      }
    },
    io,
  );
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
