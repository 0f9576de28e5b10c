import type { FastifyInstance } from 'fastify';
import { isClusterPrimary, runPrimary, SHUTDOWN_MESSAGE, workerNumber } from '../cluster.js';
import { isInMemory } from '../../src/config.js';
import { type DatabaseHandle, type Db, migrateToLatest, openConfiguredDatabase } from '../../src/database.js';
import { createPasswordHasher, type PasswordHasher } from '../../src/passwords.js';
import { resolveSecretKey } from '../../src/secret-key.js';
import { loadSeedFile, type SeedPlan } from '../../src/seed.js';
import {
  applySeed,
  describeOutcome,
  resourceStoreFor,
  type SeedResourceStore,
  type SeedUpstreamStore,
} from '../../src/services/seed.js';
import { upstreamStoreFor } from '../../src/services/upstreams/providers.js';
import type { StaticApplications } from '../../src/services/applications.js';
import { loadStaticApplications } from '../../src/static-applications.js';
import { noArguments, parse } from '../../src/cli/args.js';
import { loadCliConfig } from '../../src/cli/context.js';
import type { Io } from '../../src/cli/io.js';
import { summarize } from '../../src/cli/seed.js';

export const SERVE_HELP = `Usage: idp serve

Starts the HTTP server on HOST:PORT. Applies pending migrations, generates a development SECRET_KEY
in DATA_DIR if none is set (refused when NODE_ENV=production), and shuts down gracefully on SIGTERM
or SIGINT (bounded by SHUTDOWN_TIMEOUT seconds). WORKERS=N (PostgreSQL only) runs N processes on the
one port, restarting any that dies. SEED_FILE=FILE applies a seed file after the migrations, before
listening (see idp seed --help); DATA_DIR=:memory: keeps the embedded database in memory, lost at exit.`;

/** SEED_FILE, applied once (by the primary when there are workers); a bad file stops the start. */
async function seed(
  plan: SeedPlan,
  deps: {
    db: Db;
    staticApplications: StaticApplications;
    passwords: PasswordHasher;
    upstreams: (db: Db) => SeedUpstreamStore;
    resourceServers: (db: Db) => SeedResourceStore;
  },
  say: (line: string) => void,
) {
  const outcomes = await applySeed(deps, plan, { actor: 'seed' });
  for (const o of outcomes) if (o.action !== 'unchanged') say(`seed: ${describeOutcome(o)}`);
  say(`seed file ${plan.file} applied: ${summarize(outcomes)}`);
}

export async function serveCommand(rest: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(rest, {});
  if (values.help) return io.out(SERVE_HELP);
  noArguments(positionals);
  let config = loadCliConfig(io);
  const worker = workerNumber(io.env);
  // Checked before anything opens (a worker leaves it to the primary, which seeded before forking).
  const plan = config.seedFile && worker === undefined ? loadSeedFile(config.seedFile, io.env) : undefined;
  if (isInMemory(config) && !config.databaseUrl) {
    io.err('WARNING: DATA_DIR=:memory:: the database lives in this process only; everything in it is lost at exit.');
  }
  // With WORKERS > 1 the primary resolves (and in development generates) the key before forking: one
  // key file, the same key in every worker.
  config = resolveSecretKey(config, { warn: (m) => (worker ?? 1) === 1 && io.err(`WARNING: ${m}`) });
  if (isClusterPrimary(config)) {
    const beforeFork =
      plan &&
      ((db: Db) => {
        const staticApplications = loadStaticApplications(config.staticApplicationsFile);
        const passwords = createPasswordHasher(config.passwordHash);
        const upstreams = upstreamStoreFor(config);
        const resourceServers = resourceStoreFor(config);
        return seed(plan, { db, staticApplications, passwords, upstreams, resourceServers }, io.out);
      });
    return runPrimary(config, io, beforeFork);
  }
  // Loaded here only: the other commands start without the HTTP server's modules.
  const { handleSignals, startServer } = await import('../server.js');
  // After the migrations, before listening: once /readyz answers, the seeded entries are there.
  const configure =
    plan &&
    (async (app: FastifyInstance) => {
      try {
        const { db, staticApplications, services } = app;
        const deps = {
          db,
          staticApplications,
          passwords: services.passwords,
          upstreams: upstreamStoreFor(config),
          // The server's own registry drops its cached list after each change the seed makes.
          resourceServers: resourceStoreFor(config, () => services.resourceServers.forget()),
        };
        await seed(plan, deps, (line) => app.log.info({ seedFile: plan.file }, line));
      } catch (error) {
        await app.database.close(); // the app never became ready: nothing else closes it
        throw error;
      }
    });
  // In memory, initdb and the migrations run before the app is built: on a busy machine they can take
  // longer than Fastify allows a plugin to start (10 s).
  let database: DatabaseHandle | undefined;
  if (isInMemory(config) && !config.databaseUrl) {
    database = await openConfiguredDatabase(config, 'server');
    await migrateToLatest(database.db);
  }
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    const options = { console: io.out, announceFirstAdmin: (worker ?? 1) === 1, configure, database };
    server = await startServer(config, options);
  } catch (error) {
    await database?.close();
    // A start that failed half-way (a seed file the database refuses, say) may leave a connection or a
    // listener open: the error is reported at once, and the process ends shortly after whatever holds it.
    setTimeout(() => process.exit(process.exitCode ?? 1), 2000).unref();
    throw error;
  }
  if (database) {
    const { shutdown } = server;
    server = { ...server, shutdown: (reason) => shutdown(reason).finally(() => database.close()) };
  }
  handleSignals(server);
  if (worker !== undefined) {
    process.on('message', (message) => {
      if (message === SHUTDOWN_MESSAGE) server.shutdown('asked by the primary process').then(() => process.exit(0));
    });
  }
}
