import pg from 'pg';
import type { DataSource } from 'typeorm';
import type { AppConfig } from '#config/app-config.js';
import { ensureEmbeddedPostgres, type EmbeddedPostgresHandle } from './embedded-postgres.js';
import { ADVISORY_LOCKS } from './advisory-locks.js';

export const DATABASE_RUNTIME = Symbol('DATABASE_RUNTIME');

/** Where the database is for this process, and whether this process must stop it. */
export interface DatabaseRuntime {
  readonly url: string;
  /** Set when DATABASE_URL is unset and the embedded server is used. */
  readonly embedded?: EmbeddedPostgresHandle;
}

export type ProcessRole = 'api' | 'worker' | 'cli' | 'migrate';

/**
 * DATABASE_URL when set; otherwise the embedded server under DATA_DIR, started by the first process that needs
 * it and stopped by the last one that leaves it (API, worker, CLI or migrations alike).
 */
export async function resolveDatabase(
  config: AppConfig,
  log: (line: string) => void,
): Promise<DatabaseRuntime> {
  if (config.databaseUrl) return { url: config.databaseUrl };
  const embedded = await ensureEmbeddedPostgres({
    dataDir: config.dataDir,
    databaseName: 'wallet',
    // Its own session: a terminal's Ctrl-C reaches the process, which leaves the server (the last user stops it),
    // never the server itself, which other processes may be using.
    ownProcessGroup: true,
    log,
  });
  return { url: embedded.url, embedded };
}

/** How often a migration run that found the lock taken asks for it again. */
const MIGRATION_LOCK_POLL_MS = 250;

/**
 * Applies pending migrations under a cluster-wide advisory lock, so an API and
 * a CLI starting together never migrate twice. The lock is asked for with pg_try_advisory_lock between pauses,
 * never waited for inside a statement: a statement waiting on the lock holds a snapshot, and an index built
 * concurrently by the run holding the lock (decision 0070) waits for every snapshot older than it, so the two
 * runs would wait for each other for good, a cycle PostgreSQL's deadlock detector does not see.
 */
export async function migrateWithLock(dataSource: DataSource, url: string): Promise<string[]> {
  const lockClient = new pg.Client({ connectionString: url, application_name: 'wallet-migrate-lock' });
  // A connection terminated by the server fails the awaited query below; without a listener the same error
  // would also be emitted as an unhandled 'error' event and kill the process starting up.
  lockClient.on('error', () => undefined);
  await lockClient.connect();
  try {
    while (
      !(
        await lockClient.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [
          ADVISORY_LOCKS.migration,
        ])
      ).rows[0].locked
    ) {
      await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_POLL_MS));
    }
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((migration) => migration.name);
  } finally {
    await lockClient
      .query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.migration])
      .catch(() => undefined);
    await lockClient.end();
  }
}
