import type { Logger } from 'pino';
import { DataSource } from 'typeorm';
import {
  migrateWithLock,
  resolveDatabase,
  type DatabaseRuntime,
  type ProcessRole,
} from '#common/database/database-runtime.js';
import { EmbeddedPostgresError } from '#common/database/embedded-postgres.js';
import { timeZoneMismatch } from '#common/database/time-zone.js';
import { rootLogger } from '#common/logging/logging.js';
import { ConfigError, loadConfig, type AppConfig } from '#config/app-config.js';
import { dataSourceOptions } from './data-source.js';

export interface PreparedRuntime {
  config: AppConfig;
  database: DatabaseRuntime;
  logger: Logger;
}

/**
 * Everything a process needs before Nest starts: validated config, the
 * database (embedded or DATABASE_URL) and an up-to-date schema. On the
 * embedded database every process applies pending migrations (under a lock);
 * with DATABASE_URL only `migration:run` does, and the others refuse to start
 * on a schema that is behind.
 */
export async function prepareRuntime(role: ProcessRole): Promise<PreparedRuntime> {
  const config = loadConfigOrExit();
  const logger = rootLogger(config, { service: 'wallet', role });
  startup = { logger, doing: config.databaseUrl ? 'opening the database' : 'starting the embedded database' };
  // A signal while the embedded server starts waits for it (a second one does not), so that the exit handler
  // below can leave a server this process has just started instead of orphaning it.
  let pending: NodeJS.Signals | undefined;
  const defer = (signal: NodeJS.Signals) => {
    if (pending) exitOnSignal(signal);
    pending = signal;
  };
  process.on('SIGINT', defer).on('SIGTERM', defer);
  let database: DatabaseRuntime;
  try {
    database = await resolveDatabase(config, (line) => logger.debug({ component: 'postgres' }, line));
  } catch (error) {
    // A signal sent to the terminal's process group just as initdb or the server was being spawned reaches that
    // child too (it is in the group until it starts its own session): the start failed because it was asked to
    // stop, so the process ends as the signal asks, not as a failure.
    if (pending) {
      logger.debug({ component: 'postgres', err: error }, 'embedded PostgreSQL start interrupted');
      exitOnSignal(pending);
    }
    // One line the operator can act on (folder, user, fix), never a stack trace; the server's words at debug.
    if (error instanceof EmbeddedPostgresError) {
      for (const line of error.detail) logger.debug({ component: 'postgres' }, line);
      process.stderr.write(`${error.message}\n`);
    } else {
      const reason = error instanceof Error ? error.message : String(error);
      process.stderr.write(`embedded PostgreSQL could not be started: ${reason.split('\n')[0]}\n`);
    }
    process.exit(1);
  }
  process.off('SIGINT', defer).off('SIGTERM', defer);
  leaveOnExit(database);
  if (pending) exitOnSignal(pending);
  if (database.embedded && (database.embedded.startedHere || role === 'api')) {
    const { port, clusterDir } = database.embedded;
    logger.info({ port, dataDir: config.dataDir, clusterDir }, 'embedded PostgreSQL running');
  }
  const earlierClusters = database.embedded?.earlierClusters;
  if (earlierClusters) {
    logger.warn(
      { dataDir: config.dataDir, clusterDir: database.embedded?.clusterDir, earlierClusters },
      'earlier PostgreSQL clusters of this DATA_DIR are kept and not used (it no longer points at them): remove them once their data is not needed',
    );
  }
  startup.doing =
    database.embedded || role === 'migrate' ? 'applying migrations' : 'checking the database schema';
  try {
    await ensureSchema(database, role, logger, config.dbStatementTimeoutMs, config.operationsTimeZone);
  } catch (error) {
    await leaveDatabase(database, logger);
    // A setting only the database could check (OPERATIONS_TIME_ZONE): the configuration's own message and exit.
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    // One log line that says what is wrong and where (host and port only: never the URL's password), instead of
    // Node's uncaught-exception dump; a supervisor restarts the process (docker-compose.yml).
    const { hostname, port } = new URL(database.url);
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    const what = role === 'migrate' ? 'migrations failed' : 'cannot start';
    logger.fatal({ err: error, database: `${hostname}:${port}` }, `${what}: ${reason}`);
    logger.flush?.();
    process.exit(1);
  }
  startup = undefined;
  return { config, database, logger };
}

/**
 * This process no longer uses the database: the last user of the embedded server stops it; one that leaves it
 * running for others says for whom (their PIDs).
 */
export async function leaveDatabase(
  database: DatabaseRuntime,
  logger: Logger,
  { shortLived = false }: { shortLived?: boolean } = {},
): Promise<void> {
  const others = await database.embedded?.stop();
  if (!others?.length) return;
  // A CLI command that found the server running leaves it as it found it: not news at the terminal.
  const level = shortLived && !database.embedded?.startedHere ? 'debug' : 'info';
  logger[level]({ users: others }, 'embedded PostgreSQL left running for its other users');
}

/**
 * A process that ends without its graceful stop (a CLI command's usage error, Ctrl-C on a CLI or a migration run,
 * a signal while the API or the worker starts, a crash) still leaves the embedded server: the last user asks it
 * for a fast shutdown. Until onShutdownSignal takes over (the API and the worker, once started, stop gracefully),
 * a signal ends the process through this path. The server runs in its own session, so a terminal's Ctrl-C
 * reaches only the process.
 */
function leaveOnExit(database: DatabaseRuntime): void {
  const embedded = database.embedded;
  if (embedded) process.once('exit', () => embedded.stopAtExit());
  process.on('SIGINT', exitOnSignal).on('SIGTERM', exitOnSignal);
}

/** What a process that is starting is doing (prepareRuntime, runUntilSignal): a signal meanwhile says so. */
let startup: { logger: Logger; doing: string } | undefined;

/**
 * Exits with the shell's status for the signal (128 + its number), through the exit handlers. A signal while the
 * process starts (before onShutdownSignal takes over) is logged first, with what the start was doing: without the
 * line, a process stopped while its migrations ran ended 143 with nothing in its log (decision 0102).
 */
function exitOnSignal(signal: NodeJS.Signals): never {
  if (startup) {
    startup.logger.warn({ signal, starting: startup.doing }, 'stopped during start-up');
    startup.logger.flush?.();
  }
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

/** The validated config; a bad setting ends the process with the list of problems (EX_CONFIG). */
export function loadConfigOrExit(): AppConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

async function ensureSchema(
  database: DatabaseRuntime,
  role: ProcessRole,
  logger: Logger,
  statementTimeoutMs: number,
  operationsTimeZone: string,
): Promise<void> {
  // The same statement timeout as the service: DB_STATEMENT_TIMEOUT_MS=0 lets a long migration run.
  const dataSource = new DataSource(
    dataSourceOptions(database.url, 2, `wallet-${role}-migrate`, statementTimeoutMs),
  );
  await dataSource.initialize();
  try {
    if (database.embedded || role === 'migrate') {
      const applied = await migrateWithLock(dataSource, database.url);
      if (applied.length > 0) logger.info({ migrations: applied }, 'migrations applied');
    } else if (await dataSource.showMigrations()) {
      throw new Error('the database schema is behind: run `npm run migration:run` first');
    }
    const mismatch = await timeZoneMismatch(dataSource, operationsTimeZone);
    if (mismatch) throw new ConfigError([`OPERATIONS_TIME_ZONE "${operationsTimeZone}": ${mismatch}`]);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * Starts a process's application on a prepared runtime: `start` brings it up and answers how to close it; then
 * a signal closes it and stops the embedded server last (onShutdownSignal). A start that fails is logged as
 * `<what> failed to start`, stops the embedded server and exits 1.
 */
export async function runUntilSignal(
  { database, logger }: { database: DatabaseRuntime; logger: Logger },
  what: string,
  start: () => Promise<() => Promise<void>>,
): Promise<void> {
  startup = { logger, doing: `starting the ${what}` };
  try {
    const close = await start();
    startup = undefined;
    onShutdownSignal(logger, async () => {
      await close();
      await leaveDatabase(database, logger);
    });
  } catch (error) {
    logger.fatal({ err: error }, `${what} failed to start`);
    await leaveDatabase(database, logger);
    process.exit(1);
  }
}

/**
 * Graceful shutdown on SIGTERM/SIGINT: run `close` once (stop accepting,
 * finish in-flight work, close pools, stop the embedded server last), then
 * exit. A second signal exits at once, unless it comes within a second of the
 * first: one Ctrl-C can arrive twice (from the terminal and from a wrapper
 * that forwards it).
 */
export function onShutdownSignal(logger: Logger, close: () => Promise<void>, timeoutMs = 25_000): void {
  let closingSince: number | undefined;
  const handler = (signal: NodeJS.Signals) => {
    if (closingSince !== undefined) {
      if (Date.now() - closingSince < 1_000) return;
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    closingSince = Date.now();
    logger.info({ signal }, 'shutting down');
    const timer = setTimeout(() => {
      logger.error('shutdown timed out');
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    close().then(
      () => {
        logger.info('stopped');
        logger.flush?.();
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error while shutting down');
        process.exit(1);
      },
    );
  };
  process.off('SIGINT', exitOnSignal).off('SIGTERM', exitOnSignal);
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
}
